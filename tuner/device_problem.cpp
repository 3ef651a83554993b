// DeviceProblem, timing and verification (see device_problem.hpp).
#include "tuner/device_problem.hpp"

#include <algorithm>

#include "gemvtune/error.hpp"
#include "gemvtune/search_space.hpp"

namespace gemvtune {

// Rotation alone needs rotate_bytes / copy_bytes copies: tens of thousands for weights of a few
// KB, each of them allocated, copied and launched on in every timed graph. Past
// kMaxRotationCopies, copies read once per run and an eviction pass before each run keep the
// same guarantee: between two reads of one copy, at least rotate_bytes of other data
// are read (the other copies with rotation, the pass with l2_flush), so no weight line is still
// in L2 when it is read again.
TimingPlan plan_timing(std::int64_t copy_bytes, std::int64_t rotate_bytes, TimingMethod method) {
  TimingPlan plan;
  if (rotate_bytes <= 0) return plan;
  const std::int64_t rotation_copies = (rotate_bytes + copy_bytes - 1) / std::max<std::int64_t>(1, copy_bytes);
  if (method == TimingMethod::automatic)
    method = rotation_copies <= kMaxRotationCopies ? TimingMethod::rotation : TimingMethod::l2_flush;
  plan.method = method;
  if (method == TimingMethod::rotation) {
    plan.copies = std::max<std::int64_t>(1, rotation_copies);
  } else {
    // As many calls as the rotation's ~200 MB per run, within bounds: a run starts from an idle
    // GPU after the pass, and its fixed start-up cost (a few us) must be spread over enough calls.
    plan.copies = std::clamp<std::int64_t>(200'000'000 / std::max<std::int64_t>(1, copy_bytes), kMinFlushCopies,
                                           kMaxFlushCopies);
    plan.flush_bytes = rotate_bytes;
  }
  return plan;
}

int calls_per_run(const TimingPlan& plan, double bytes_per_call) {
  const int copies = static_cast<int>(plan.copies);
  if (plan.method == TimingMethod::l2_flush) return copies;
  // Enough calls that launch-to-launch steady state dominates, and at least one pass over every
  // weight copy.
  const int calls = std::max(copies, std::max(8, static_cast<int>(2e8 / bytes_per_call)));
  return std::min(calls, std::max(copies, 2000));
}

int search_replays(const TimingPlan& plan, double bytes_per_call) {
  return calls_per_run(plan, bytes_per_call) * bytes_per_call >= 4e9 ? 5 : 9;
}

namespace {
std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

// Uploads `bytes` once and copies it on the device until there are `count` copies (the timing
// plan's, from the whole problem's bytes per copy: weights + scales + zeros).
template <typename Bytes>
void upload_copies(std::vector<jit::DeviceBuffer>& copies, const Bytes& bytes, std::int64_t count) {
  if (bytes.empty()) return;
  copies.emplace_back(bytes.size());
  copies[0].upload(bytes.data(), bytes.size());
  for (std::int64_t i = 1; i < count; ++i) {
    copies.emplace_back(bytes.size());
    GEMVTUNE_CU(cuMemcpyDtoD, copies.back().get(), copies[0].get(), bytes.size());
  }
  jit::finish_legacy_stream();  // the copies land before the first timed launch reads them
}
}  // namespace

DeviceProblem::DeviceProblem(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed,
                             std::int64_t rotate_bytes, int m, std::int64_t ldx, std::int64_t ldy,
                             WeightFormat weights)
    : dtype_(t), weights_(weights), inputs_{HostArray(t, 0), HostArray(t, 0), s, ld, 1, s.k}, ldy_(s.n) {
  if (is_quantized(weights)) {
    const std::int64_t per16 = is_int4(weights) ? 32 : 16;  // weights in 16 bytes
    inputs_.ld = std::max(round_up(s.k, per16), round_up(ld, per16));
    packed_ = random_packed_weights(weights, t, s, inputs_.ld, seed);
  } else {
    inputs_ = random_inputs(t, s, ld, seed);
  }
  rotate_bytes_ = rotate_bytes;
  requested_ld_ = ld;
  seed_ = seed;
  draw_batch(m, ldx, ldy);
  set_timing(TimingMethod::automatic);
}

bool DeviceProblem::same_weights(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed,
                                 std::int64_t rotate_bytes, WeightFormat weights) const {
  return t == dtype_ && s == inputs_.shape && ld == requested_ld_ && seed == seed_ && rotate_bytes == rotate_bytes_ &&
         weights == weights_;
}

void DeviceProblem::rebatch(int m) {
  check_batch(m);
  draw_batch(m, 0, 0);
}

// X and Y for m rows: X drawn as random_inputs draws it (batch row 0 is what batch 1 draws), so
// a problem re-batched to m holds what one constructed at m holds.
void DeviceProblem::draw_batch(int m, std::int64_t ldx, std::int64_t ldy) {
  const Shape& s = inputs_.shape;
  const std::int64_t old_ldx = inputs_.ldx;
  inputs_.m = m;
  inputs_.ldx = ldx ? ldx : s.k;
  if (is_quantized(weights_) && m > 1) inputs_.ldx = round_up(inputs_.ldx, 16 / static_cast<std::int64_t>(dtype_size(dtype_)));
  inputs_.x = random_x(dtype_, s.k, m, inputs_.ldx, seed_);
  x_ = jit::DeviceBuffer(inputs_.x.bytes.size());
  x_.upload(inputs_.x.bytes.data(), inputs_.x.bytes.size());
  ldy_ = ldy ? ldy : s.n;
  y_ = jit::DeviceBuffer(static_cast<std::size_t>((m - 1) * ldy_ + s.n) * dtype_size(dtype_));
  // X's row i depends on the seed, i and ldx, not on m, so with the same ldx the reference's
  // rows below m stay: the preset's M = 1, 2, 4, 8, 16 compute 16 rows between them, not 31.
  if (inputs_.ldx == old_ldx)
    reference_.resize(std::min(reference_.size(), static_cast<std::size_t>(m * s.n)));  // whole rows
  else
    reference_.clear();
}

void DeviceProblem::set_timing(TimingMethod method) {
  const std::int64_t total = is_quantized(weights_)
                                 ? static_cast<std::int64_t>(packed_.q.size() + packed_.scales.size() + packed_.zeros.size())
                                 : static_cast<std::int64_t>(inputs_.w.bytes.size());
  timing_ = plan_timing(total, rotate_bytes_, method);
  w_copies_.clear();
  scale_copies_.clear();
  zero_copies_.clear();
  flush_.reset();
  if (is_quantized(weights_)) {
    upload_copies(w_copies_, packed_.q, timing_.copies);
    upload_copies(scale_copies_, packed_.scales, timing_.copies);
    upload_copies(zero_copies_, packed_.zeros, timing_.copies);
  } else {
    upload_copies(w_copies_, inputs_.w.bytes, timing_.copies);
  }
  if (timing_.method == TimingMethod::l2_flush) flush_.emplace(timing_.flush_bytes);
}

jit::GemvOperands DeviceProblem::operands(int copy) const {
  const std::size_t i = static_cast<std::size_t>(copy) % w_copies_.size();
  jit::GemvOperands op;
  op.w = w_copies_[i].get();
  op.x = x_.get();
  op.y = y_.get();
  op.shape = inputs_.shape;
  op.ld = inputs_.ld;
  op.m = inputs_.m;
  op.ldx = inputs_.ldx;
  op.ldy = ldy_;
  op.weights = weights_;
  if (!scale_copies_.empty()) op.scales = scale_copies_[i].get();
  if (!zero_copies_.empty()) op.zeros = zero_copies_[i].get();
  return op;
}

double DeviceProblem::bytes_per_call() const { return problem_bytes(dtype_, inputs_.shape, inputs_.m, weights_); }

void DeviceProblem::poison_y() { y_.fill_bytes(0xff); }  // 0xffff.. is NaN in every dtype

HostArray DeviceProblem::read_y() const {
  const std::size_t n = static_cast<std::size_t>(inputs_.shape.n), e = dtype_size(dtype_);
  HostArray all = HostArray::uninitialised(dtype_, y_.bytes() / e);  // downloaded whole
  y_.download(all.bytes.data(), all.bytes.size());
  HostArray y(dtype_, n * static_cast<std::size_t>(inputs_.m));
  for (int i = 0; i < inputs_.m; ++i)
    std::copy_n(all.bytes.data() + i * ldy_ * e, n * e, y.bytes.data() + i * n * e);
  return y;
}

const std::vector<double>& DeviceProblem::reference() {
  const int have = static_cast<int>(reference_.size() / static_cast<std::size_t>(inputs_.shape.n));  // rows
  if (have < inputs_.m) {
    const std::vector<double> more = is_quantized(weights_)
                                         ? reference_gemv(packed_, inputs_.x, inputs_.m, inputs_.ldx, have)
                                         : reference_gemv(inputs_, have);
    reference_.insert(reference_.end(), more.begin(), more.end());
  }
  return reference_;
}

CallTiming time_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream,
                      LaunchMode mode, int replays) {
  const int calls = calls_per_run(p.timing(), p.bytes_per_call());
  auto enqueue = [&] {
    for (int i = 0; i < calls; ++i) launch(i, stream.get());
  };
  // The eviction pass (l2_flush) is enqueued before the run, so it is never timed.
  auto flush = [&] {
    if (p.flush()) p.flush()->enqueue(stream.get());
  };
  // In graph mode the events are nodes of the graph, around its calls: the GPU records them as
  // it reaches them, so a replay's time is the GPU's alone, whatever the host does between
  // recording and launching (during a tune the compile pool keeps every core busy). On the
  // H200, a tune's candidates of 28672x4096 int4 came within 1.7% of an unloaded sweep's
  // times this way and within 2.3% with events recorded from the host (bench/results/h200.md,
  // "Tune time").
  jit::Event start, stop;
  std::optional<jit::CapturedGraph> graph;
  if (mode == LaunchMode::graph) {
    jit::CapturedGraph::begin_capture(stream.get());
    try {
      start.record_in_capture(stream.get());
      enqueue();
      stop.record_in_capture(stream.get());
    } catch (...) {
      try { jit::CapturedGraph::end_capture(stream.get()); } catch (...) {}
      throw;
    }
    graph = jit::CapturedGraph::end_capture(stream.get());
  }
  auto run = [&] {
    if (graph) {
      graph->replay(stream.get());
    } else {
      start.record(stream.get());
      enqueue();
      stop.record(stream.get());
    }
  };
  flush();
  run();  // warm-up
  stream.synchronize();
  std::vector<double> ms;
  for (int r = 0; r < replays; ++r) {
    flush();
    run();
    ms.push_back(stop.elapsed_ms_since(start));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  CallTiming t;
  t.us_per_call = ms[ms.size() / 2] * 1e3 / calls;
  t.gbps = p.bytes_per_call() / (t.us_per_call * 1e-6) / 1e9;
  return t;
}

Comparison verify_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream) {
  p.poison_y();
  launch(0, stream.get());
  stream.synchronize();
  return compare_output(p.read_y(), p.reference());
}

namespace {
// runnable_space's rule for operands at these addresses and strides.
std::vector<KernelConfig> runnable(DType t, const Shape& s, int m, WeightFormat weights, std::uintptr_t w,
                                   std::int64_t ld, std::uintptr_t x, std::int64_t ldx) {
  std::vector<KernelConfig> space;
  for (KernelConfig c : search_space_for(t, s, m, weights)) {
    if (is_quantized(weights)) {  // DeviceProblem pads ld and ldx for 16-byte loads
      space.push_back(c);
      continue;
    }
    if (why_misaligned(c, t, w, ld, x, ldx)) c.vec_bytes = widest_aligned_vec_bytes(c, t, w, ld, x, ldx);
    if (!why_invalid_for(c, t, s, m) && std::find(space.begin(), space.end(), c) == space.end()) space.push_back(c);
  }
  if (space.empty())
    throw Error("no config of the search space can run " + to_string(s, m) + " " + std::string(to_string(t)));
  return space;
}
}  // namespace

std::vector<KernelConfig> runnable_space(const DeviceProblem& problem) {
  const jit::GemvOperands op0 = problem.operands(0);
  return runnable(problem.dtype(), problem.shape(), problem.batch(), problem.weights(), op0.w, op0.ld, op0.x, op0.ldx);
}

std::vector<KernelConfig> runnable_space(DType t, const Shape& s, int m, WeightFormat weights) {
  constexpr std::uintptr_t kFreshAllocation = 256;  // cudaMalloc's alignment, at least
  return runnable(t, s, m, weights, kFreshAllocation, s.k, kFreshAllocation, s.k);
}

double problem_bytes(DType t, const Shape& s, int m, WeightFormat weights) {
  const double e = static_cast<double>(dtype_size(t));
  const double w = is_quantized(weights) ? static_cast<double>(weight_bytes(weights, t, s.n, s.k).total())
                                         : e * static_cast<double>(s.n) * s.k;
  return w + e * static_cast<double>(m) * (s.k + s.n);
}

CallTiming time_calls_after(const LaunchFn& before, double before_us, const LaunchFn& launch, DeviceProblem& p,
                            const jit::Stream& stream, int replays) {
  const LaunchFn pair = [&](int copy, CUstream st) {
    before(copy, st);
    launch(copy, st);
  };
  CallTiming t = time_calls(pair, p, stream, LaunchMode::graph, replays);
  t.us_per_call -= before_us;
  t.gbps = p.bytes_per_call() / (t.us_per_call * 1e-6) / 1e9;
  return t;
}

}  // namespace gemvtune
