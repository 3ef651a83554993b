// decode_chain: every GEMV of one Llama-3.1-8B decode step (32 layers of fused qkv 6144x4096,
// o 4096x4096, fused gate_up 28672x4096, down 4096x14336, then lm_head 128256x4096: 15.01 GB
// of bf16 weights in distinct buffers) captured in one CUDA graph, through gemvtune with
// programmatic dependent launch, without it, and through cuBLAS, in one run. Each GEMV reads
// the previous one's output, as in the model (at batch M, M rows of it: the next GEMV reads the
// first K elements of each row, so X's row stride is the previous N). Prints whole-chain time,
// GB/s of weights and percent of the read ceiling.
// Usage: decode_chain [--db PATH] [--batch M] [--layers 32] [--replays 7]
// Exits 77 (skipped, for ctest) with a message where there is no GPU (the test that runs it then skips).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/cublas_gemv.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/runtime.hpp"
#include "jit/cuda_handles.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

namespace {
struct Step {
  Shape shape;
  int weight;        // index into the weight buffers
  CUdeviceptr x, y;  // activations: each step reads the previous step's output
  std::int64_t ldx;  // row stride of x: the previous step's N
};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) try {
  std::string db;
  int layers = 32, replays = 7, batch = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--db")) db = argv[i + 1];
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--layers")) layers = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--replays")) replays = std::max(1, std::atoi(argv[i + 1]));
  }
  check_batch(batch);
  std::string why;
  if (!jit::driver_available(&why)) {
    std::printf("decode_chain: skipped, no GPU: %s\n", why.c_str());
    return 77;  // ctest: skipped
  }
  RuntimeOptions with_pdl;
  with_pdl.cache_path = db;
  // One chain on one stream: split-K plans never overlap themselves, so they run as tuned.
  RuntimeOptions without_pdl = with_pdl;
  without_pdl.allow_pdl = false;
  Runtime rt(with_pdl), rt_plain(without_pdl);
  jit::Context ctx(0);
  const DType t = DType::bf16;

  // One layer's weights are drawn on the host and copied into every layer's own buffers, so
  // the 15 GB are distinct memory (nothing is served from L2) without drawing 15 GB.
  const Shape layer_shapes[] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  const Shape lm_head{128256, 4096};
  std::vector<jit::DeviceBuffer> weights;
  std::vector<Shape> weight_shapes;
  double total_bytes = 0;
  auto add_weight = [&](const Shape& s, const GemvInputs& in) {
    weights.emplace_back(in.w.bytes.size());
    weights.back().upload(in.w.bytes.data(), in.w.bytes.size());
    weight_shapes.push_back(s);
    total_bytes += static_cast<double>(in.w.bytes.size());
  };
  std::vector<GemvInputs> first_layer;
  for (int i = 0; i < 4; ++i)
    first_layer.push_back(random_inputs(t, layer_shapes[i], layer_shapes[i].k, 11 + i, i == 0 ? batch : 1));
  // Scale so activations keep their size through 129 products: weights ~ U(-1,1) * sqrt(3/K).
  for (auto& in : first_layer)
    for (std::size_t j = 0; j < in.w.size(); ++j) in.w.set(j, in.w.get(j) * std::sqrt(3.0 / in.shape.k));
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < 4; ++i) {
      if (l == 0) add_weight(layer_shapes[i], first_layer[i]);
      else {
        weights.emplace_back(weights[i].bytes());
        GEMVTUNE_CU(cuMemcpyDtoD, weights.back().get(), weights[i].get(), weights[i].bytes());
        weight_shapes.push_back(layer_shapes[i]);
        total_bytes += static_cast<double>(weights[i].bytes());
      }
    }
  {
    GemvInputs head = random_inputs(t, lm_head, lm_head.k, 99);
    for (std::size_t j = 0; j < head.w.size(); ++j) head.w.set(j, head.w.get(j) * std::sqrt(3.0 / lm_head.k));
    add_weight(lm_head, head);
  }
  // Activations: x0, then one output buffer per step kind (each next step reads the first K
  // elements of the previous output).
  const std::size_t m = static_cast<std::size_t>(batch);
  jit::DeviceBuffer x0(m * 4096 * 2), y_qkv(m * 6144 * 2), y_o(m * 4096 * 2), y_gu(m * 28672 * 2),
      y_down(m * 4096 * 2), y_head(m * 128256 * 2);
  x0.upload(first_layer[0].x.bytes.data(), first_layer[0].x.bytes.size());
  const CUdeviceptr outs[] = {y_qkv.get(), y_o.get(), y_gu.get(), y_down.get()};
  std::vector<Step> steps;
  CUdeviceptr x = x0.get();
  std::int64_t ldx = 4096;
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < 4; ++i) {
      steps.push_back({layer_shapes[i], l * 4 + i, x, outs[i], ldx});
      x = outs[i];
      ldx = layer_shapes[i].n;
    }
  steps.push_back({lm_head, static_cast<int>(weights.size()) - 1, x, y_head.get(), ldx});

  jit::Stream stream;
  bench::CublasGemv cublas;
  const char* names[] = {"gemvtune, PDL", "gemvtune, no PDL", "cuBLAS"};
  std::vector<double> ms(3);
  std::vector<std::vector<unsigned char>> results(3, std::vector<unsigned char>(m * 128256 * 2));
  for (int variant = 0; variant < 3; ++variant) {
    Runtime& r = variant == 0 ? rt : rt_plain;
    std::vector<std::shared_ptr<const Plan>> plans;
    for (const Step& s : steps) plans.push_back(variant < 2 ? r.plan(s.shape, t, batch) : nullptr);
    ctx.make_current();
    jit::CapturedGraph::begin_capture(stream.get());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (variant < 2) {
        Operands op;
        op.w = weights[s.weight].get();
        op.x = s.x;
        op.y = s.y;
        op.ldx = s.ldx;
        plans[i]->launch(op, stream.get());
      } else {
        cublas.launch(t, {weights[s.weight].get(), s.x, s.y, s.shape, s.shape.k, batch, s.ldx, s.shape.n}, stream.get());
      }
    }
    jit::CapturedGraph graph = jit::CapturedGraph::end_capture(stream.get());
    graph.replay(stream.get());
    stream.synchronize();
    y_head.download(results[variant].data(), results[variant].size());
    jit::Event start, stop;
    std::vector<double> runs;
    for (int i = 0; i < replays; ++i) {
      start.record(stream.get());
      graph.replay(stream.get());
      stop.record(stream.get());
      runs.push_back(stop.elapsed_ms_since(start));
    }
    ms[variant] = median(runs);
  }
  // The chain's logits through gemvtune must match cuBLAS's (both accumulate in fp32 and round
  // each output to bf16; 129 roundings in sequence leave a few percent of difference).
  HostArray ours(t, m * 128256), theirs(t, m * 128256);
  ours.bytes = results[0];
  theirs.bytes = results[2];
  std::vector<double> ref(m * 128256);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = theirs.get(i);
  double err = 0, norm = 0;
  bool finite = true;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = ours.get(i) - ref[i];
    finite = finite && std::isfinite(ours.get(i)) && std::isfinite(ref[i]);
    err += d * d;
    norm += ref[i] * ref[i];
  }
  const double rel = std::sqrt(err / norm);
  std::printf("decode chain: %zu GEMVs at batch M=%d, %.2f GB of bf16 weights, %s, %d replays (median)\n",
              steps.size(), batch, total_bytes / 1e9, rt.gpu().id.name.c_str(), replays);
  double ceiling = 0;
  try {
    TuningCache cache(rt.cache_path(), CacheMode::read_only);
    if (auto p = cache.peak(rt.gpu().id)) ceiling = p->gbps;
  } catch (const std::exception&) {
  }
  for (int v = 0; v < 3; ++v) {
    const double gbps = total_bytes / (ms[v] * 1e-3) / 1e9;
    std::printf("  %-18s %8.3f ms  %6.0f GB/s", names[v], ms[v], gbps);
    if (ceiling > 0) std::printf("  %5.1f%% of the %.0f GB/s read ceiling", 100 * gbps / ceiling, ceiling);
    std::printf("\n");
  }
  std::printf("  logits: gemvtune vs cuBLAS relative L2 difference %.4f (%s)\n", rel,
              finite && rel < 0.1 ? "ok" : "MISMATCH");
  return finite && rel < 0.1 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "decode_chain: %s\n", e.what());
  return 1;
}
