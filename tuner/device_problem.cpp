// DeviceProblem, timing and verification (see device_problem.hpp).
#include "tuner/device_problem.hpp"

#include <algorithm>

namespace gemvtune {

DeviceProblem::DeviceProblem(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed,
                             std::int64_t rotate_bytes, int m, std::int64_t ldx, std::int64_t ldy)
    : dtype_(t), inputs_(random_inputs(t, s, ld, seed, m, ldx)), ldy_(ldy ? ldy : s.n),
      x_(inputs_.x.bytes.size()),
      y_(static_cast<std::size_t>((m - 1) * ldy_ + s.n) * dtype_size(t)) {
  const std::size_t wbytes = inputs_.w.bytes.size();
  const std::int64_t copies =
      std::max<std::int64_t>(1, (rotate_bytes + static_cast<std::int64_t>(wbytes) - 1) / static_cast<std::int64_t>(wbytes));
  weights_.emplace_back(wbytes);
  weights_[0].upload(inputs_.w.bytes.data(), wbytes);
  for (std::int64_t i = 1; i < copies; ++i) {
    weights_.emplace_back(wbytes);
    GEMVTUNE_CU(cuMemcpyDtoD, weights_.back().get(), weights_[0].get(), wbytes);
  }
  x_.upload(inputs_.x.bytes.data(), inputs_.x.bytes.size());
}

jit::GemvOperands DeviceProblem::operands(int copy) const {
  jit::GemvOperands op;
  op.w = weights_[static_cast<std::size_t>(copy) % weights_.size()].get();
  op.x = x_.get();
  op.y = y_.get();
  op.shape = inputs_.shape;
  op.ld = inputs_.ld;
  op.m = inputs_.m;
  op.ldx = inputs_.ldx;
  op.ldy = ldy_;
  return op;
}

double DeviceProblem::bytes_per_call() const {
  const double e = static_cast<double>(dtype_size(dtype_));
  const Shape& s = inputs_.shape;
  return e * (static_cast<double>(s.n) * s.k + static_cast<double>(inputs_.m) * (s.k + s.n));
}

void DeviceProblem::poison_y() { y_.fill_bytes(0xff); }  // 0xffff.. is NaN in every dtype

HostArray DeviceProblem::read_y() const {
  const std::size_t n = static_cast<std::size_t>(inputs_.shape.n), e = dtype_size(dtype_);
  HostArray all(dtype_, y_.bytes() / e);
  y_.download(all.bytes.data(), all.bytes.size());
  HostArray y(dtype_, n * static_cast<std::size_t>(inputs_.m));
  for (int i = 0; i < inputs_.m; ++i)
    std::copy_n(all.bytes.data() + i * ldy_ * e, n * e, y.bytes.data() + i * n * e);
  return y;
}

const std::vector<double>& DeviceProblem::reference() {
  if (reference_.empty()) reference_ = reference_gemv(inputs_);
  return reference_;
}

CallTiming time_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream,
                      LaunchMode mode, int replays) {
  // Enough calls per measurement that launch-to-launch steady state dominates, and at least
  // one pass over every weight copy.
  const int calls = std::max(p.copies(), std::max(8, static_cast<int>(2e8 / p.bytes_per_call())));
  const int capped = std::min(calls, std::max(p.copies(), 2000));
  auto enqueue = [&] {
    for (int i = 0; i < capped; ++i) launch(i, stream.get());
  };
  jit::Event start, stop;
  std::vector<double> ms;
  if (mode == LaunchMode::graph) {
    jit::CapturedGraph::begin_capture(stream.get());
    try {
      enqueue();
    } catch (...) {
      try { jit::CapturedGraph::end_capture(stream.get()); } catch (...) {}
      throw;
    }
    jit::CapturedGraph graph = jit::CapturedGraph::end_capture(stream.get());
    graph.replay(stream.get());  // warm-up
    stream.synchronize();
    for (int r = 0; r < replays; ++r) {
      start.record(stream.get());
      graph.replay(stream.get());
      stop.record(stream.get());
      ms.push_back(stop.elapsed_ms_since(start));
    }
  } else {
    enqueue();  // warm-up
    stream.synchronize();
    for (int r = 0; r < replays; ++r) {
      start.record(stream.get());
      enqueue();
      stop.record(stream.get());
      ms.push_back(stop.elapsed_ms_since(start));
    }
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  CallTiming t;
  t.us_per_call = ms[ms.size() / 2] * 1e3 / capped;
  t.gbps = p.bytes_per_call() / (t.us_per_call * 1e-6) / 1e9;
  return t;
}

Comparison verify_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream) {
  p.poison_y();
  launch(0, stream.get());
  stream.synchronize();
  return compare_output(p.read_y(), p.reference());
}

}  // namespace gemvtune
