// decode_chain: every GEMV of one Llama-3.1-8B decode step (32 layers of fused qkv 6144x4096,
// o 4096x4096, fused gate_up 28672x4096, down 4096x14336, then lm_head 128256x4096: 15.01 GB
// of bf16 weights in distinct buffers) captured in one CUDA graph, through gemvtune with
// programmatic dependent launch, without it, and through cuBLAS, in one run. Each GEMV reads
// the previous one's output, as in the model (at batch M, M rows of it: the next GEMV reads the
// first K elements of each row, so X's row stride is the previous N). Prints whole-chain time,
// GB/s of weights and percent of the read ceiling.
// With --weights FORMAT (int8, fp8, int4g128, ...) gemvtune runs the chain on quantized weights
// (each distinct matrix quantized on the host with gemvtune::quantize) and cuBLAS on those
// weights dequantized to bf16, so both compute the same product and the logits compare; the
// time ratio is what the format buys over the bf16 chain.
// Usage: decode_chain [--db PATH] [--batch M] [--weights FORMAT] [--layers 32] [--replays 7]
// Exits 77 (skipped, for ctest) with a message where there is no GPU (the test that runs it then skips).
// Built against gemvtune's public headers only, with cuBLAS linked directly (CUDA::cublas) and
// the CUDA driver API through example_cuda.hpp.
#include <cublas_v2.h>
#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "example_cuda.hpp"
#include "example_options.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/config.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/resolve.hpp"
#include "gemvtune/runtime.hpp"
#include "gemvtune/weights.hpp"

using namespace gemvtune;
using example::CapturedGraph;
using example::DeviceBuffer;
using example::Event;
using example::Stream;

namespace {
void cublas_check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + " failed with cuBLAS status " + std::to_string(s));
}

// cuBLAS on the current context, with its own workspace (so graph capture needs no allocation).
class Cublas {
 public:
  Cublas() {
    cublas_check(cublasCreate(&handle_), "cublasCreate");
    try {
      cublas_check(cublasSetWorkspace(handle_, reinterpret_cast<void*>(workspace_.get()), workspace_.bytes()),
                   "cublasSetWorkspace");
    } catch (...) {
      cublasDestroy(handle_);
      throw;
    }
  }
  ~Cublas() { cublasDestroy(handle_); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // Y = X W^T in bf16 with fp32 compute: W row-major N x K (row stride K) is, to column-major
  // cuBLAS, K x N with leading dimension K; X (m rows, stride ldx) is K x m with leading
  // dimension ldx and Y (m rows of N) is N x m: Y^T = W X^T, one GEMM with n = m.
  void gemv(CUdeviceptr w, CUdeviceptr x, CUdeviceptr y, const Shape& s, int m, std::int64_t ldx, CUstream stream) {
    const float alpha = 1.f, beta = 0.f;
    cublas_check(cublasSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
    cublas_check(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.n), m, static_cast<int>(s.k),
                              &alpha, reinterpret_cast<const void*>(w), CUDA_R_16BF, static_cast<int>(s.k),
                              reinterpret_cast<const void*>(x), CUDA_R_16BF, static_cast<int>(ldx), &beta,
                              reinterpret_cast<void*>(y), CUDA_R_16BF, static_cast<int>(s.n), CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
  }

 private:
  DeviceBuffer workspace_{32u << 20};
  cublasHandle_t handle_ = nullptr;
};

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

constexpr const char* kUsage = "usage: decode_chain [--db PATH] [--batch M] [--weights FORMAT] [--layers 32] [--replays 7]\n";

int main(int argc, char** argv) try {
  const example::Options args(argc, argv, {"db", "batch", "weights", "layers", "replays"});
  if (args.help()) {
    std::printf("%s", kUsage);
    return 0;
  }
  const std::string db = args.text("db", "");
  const int batch = static_cast<int>(args.integer("batch", 1, 1, kMaxBatch));
  const int layers = static_cast<int>(args.integer("layers", 32, 1, 128));
  const int replays = static_cast<int>(args.integer("replays", 7, 1, 1000));
  WeightFormat format;
  try {
    format = parse_weights_option(args.text("weights", "dense"), DType::bf16);
  } catch (const InvalidArgument& e) {
    throw example::UsageError(std::string("--weights: ") + e.what());
  }
  const bool quantized = is_quantized(format);
  std::string why;
  if (!example::driver_available(&why)) {
    std::printf("decode_chain: skipped, no GPU: %s\n", why.c_str());
    return 77;  // ctest: skipped
  }
  RuntimeOptions with_pdl;
  with_pdl.cache_path = db;
  // One chain on one stream: split-K plans never overlap themselves, so they run as tuned.
  RuntimeOptions without_pdl = with_pdl;
  without_pdl.allow_pdl = false;
  Runtime rt(with_pdl), rt_plain(without_pdl);
  // Our own hold on the primary context the runtimes use, made current for our buffers,
  // stream and graphs (docs/runtime.md, "The primary context").
  example::PrimaryContext ctx(with_pdl.device);
  const DType t = DType::bf16;

  // One layer's weights are drawn on the host and copied into every layer's own buffers, so
  // the 15 GB are distinct memory (nothing is served from L2) without drawing 15 GB.
  const Shape layer_shapes[] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}};
  const Shape lm_head{128256, 4096};
  std::vector<DeviceBuffer> weights;                 // bf16 (dequantized when quantized): cuBLAS's
  std::vector<DeviceBuffer> packed, scales, zeros;   // quantized: gemvtune's, same indices
  std::vector<Shape> weight_shapes;
  double total_bytes = 0, packed_bytes = 0;
  auto upload = [](std::vector<DeviceBuffer>& to, const void* data, std::size_t bytes) {
    to.emplace_back(std::max<std::size_t>(bytes, 16));
    if (bytes) to.back().upload(data, bytes);
  };
  auto copy_of = [](std::vector<DeviceBuffer>& v, std::size_t i) {
    v.emplace_back(v[i].bytes());
    EXAMPLE_CU(cuMemcpyDtoD, v.back().get(), v[i].get(), v[i].bytes());
    EXAMPLE_CU(cuStreamSynchronize, nullptr);  // on the legacy stream, as upload's copies
  };
  // Quantized: gemvtune's packed weights, and cuBLAS's bf16 weights replaced by their exact
  // dequantized values rounded to bf16.
  auto add_weight = [&](const Shape& s, std::vector<std::uint16_t> w) {
    if (quantized) {
      const PackedWeights p = quantize(host_matrix(w.data(), DType::bf16, s.n, s.k), format, DType::bf16);
      upload(packed, p.q.data(), p.q.size());
      upload(scales, p.scales.data(), p.scales.size());
      upload(zeros, p.zeros.data(), p.zeros.size());
      const std::vector<double> d = dequantize(p);
      for (std::size_t j = 0; j < w.size(); ++j) w[j] = example::float_to_bf16(static_cast<float>(d[j]));
      packed_bytes += static_cast<double>(weight_bytes(format, DType::bf16, s.n, s.k).total());
    }
    const std::size_t bytes = w.size() * sizeof w[0];
    upload(weights, w.data(), bytes);
    weight_shapes.push_back(s);
    total_bytes += static_cast<double>(bytes);
  };
  // Scale so activations keep their size through 129 products: weights ~ U(-1,1) * sqrt(3/K).
  std::vector<std::vector<std::uint16_t>> first_layer;
  for (int i = 0; i < 4; ++i)
    first_layer.push_back(example::random_weights(layer_shapes[i].n, layer_shapes[i].k, 11 + i,
                                                  std::sqrt(3.0 / layer_shapes[i].k)));
  const std::vector<std::uint16_t> x0_host = example::random_activations(batch, layer_shapes[0].k, 11);
  for (int l = 0; l < layers; ++l)
    for (int i = 0; i < 4; ++i) {
      if (l == 0) add_weight(layer_shapes[i], first_layer[i]);
      else {
        copy_of(weights, static_cast<std::size_t>(i));
        if (quantized) {
          copy_of(packed, static_cast<std::size_t>(i));
          copy_of(scales, static_cast<std::size_t>(i));
          copy_of(zeros, static_cast<std::size_t>(i));
          packed_bytes += static_cast<double>(weight_bytes(format, DType::bf16, layer_shapes[i].n, layer_shapes[i].k).total());
        }
        weight_shapes.push_back(layer_shapes[i]);
        total_bytes += static_cast<double>(weights[i].bytes());
      }
    }
  add_weight(lm_head, example::random_weights(lm_head.n, lm_head.k, 99, std::sqrt(3.0 / lm_head.k)));
  // Activations: x0, then one output buffer per step kind (each next step reads the first K
  // elements of the previous output).
  const std::size_t m = static_cast<std::size_t>(batch);
  DeviceBuffer x0(m * 4096 * 2), y_qkv(m * 6144 * 2), y_o(m * 4096 * 2), y_gu(m * 28672 * 2),
      y_down(m * 4096 * 2), y_head(m * 128256 * 2);
  x0.upload(x0_host.data(), x0_host.size() * sizeof x0_host[0]);
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

  Stream stream;
  Cublas cublas;
  const char* names[] = {"gemvtune, PDL", "gemvtune, no PDL", "cuBLAS"};
  std::vector<double> ms(3);
  std::vector<std::vector<unsigned char>> results(3, std::vector<unsigned char>(m * 128256 * 2));
  int from[3] = {0, 0, 0};  // plans of the PDL variant by ConfigSource: exact, nearest, default
  for (int variant = 0; variant < 3; ++variant) {
    Runtime& r = variant == 0 ? rt : rt_plain;
    std::vector<std::shared_ptr<const Plan>> plans;
    for (const Step& s : steps) plans.push_back(variant < 2 ? r.plan(s.shape, t, batch, format) : nullptr);
    if (variant == 0)
      for (const auto& p : plans) ++from[static_cast<int>(p->source())];
    ctx.make_current();
    CapturedGraph::begin_capture(stream.get());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Step& s = steps[i];
      if (variant < 2) {
        Operands op;
        op.w = (quantized ? packed : weights)[s.weight].get();
        if (quantized) {
          op.scales = scales[s.weight].get();
          op.zeros = is_int4(format) ? zeros[s.weight].get() : 0;
        }
        op.x = s.x;
        op.y = s.y;
        op.ldx = s.ldx;
        plans[i]->launch(op, stream.get());
      } else {
        cublas.gemv(weights[s.weight].get(), s.x, s.y, s.shape, batch, s.ldx, stream.get());
      }
    }
    CapturedGraph graph = CapturedGraph::end_capture(stream.get());
    graph.replay(stream.get());
    stream.synchronize();
    y_head.download(results[variant].data(), results[variant].size());
    Event start, stop;
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
  auto logit = [&](int variant, std::size_t i) {
    std::uint16_t b;
    std::memcpy(&b, results[variant].data() + 2 * i, 2);
    return static_cast<double>(example::bf16_to_float(b));
  };
  std::vector<double> ref(m * 128256);
  for (std::size_t i = 0; i < ref.size(); ++i) ref[i] = logit(2, i);
  double err = 0, norm = 0;
  bool finite = true;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double ours = logit(0, i), d = ours - ref[i];
    finite = finite && std::isfinite(ours) && std::isfinite(ref[i]);
    err += d * d;
    norm += ref[i] * ref[i];
  }
  const double rel = std::sqrt(err / norm);
  std::printf("decode chain: %zu GEMVs at batch M=%d, %.2f GB of bf16 weights", steps.size(), batch, total_bytes / 1e9);
  if (quantized)
    std::printf(" (gemvtune: %.2f GB of %s weights, scales and zeros; cuBLAS: them dequantized to bf16)", packed_bytes / 1e9,
                std::string(to_string(format)).c_str());
  std::printf(", %s, %d replays (median)\n", rt.gpu().id.name.c_str(), replays);
  // Which kernels ran: a chain of untuned plans, or a binary older than the cache, shows here.
  std::printf("  templates %s; plans: %d tuned for the shape, %d borrowed from the nearest, %d the model's default\n",
              template_version().c_str(), from[static_cast<int>(ConfigSource::exact)],
              from[static_cast<int>(ConfigSource::nearest)], from[static_cast<int>(ConfigSource::model_default)]);
  double ceiling = 0;
  try {
    TuningCache cache(rt.cache_path(), CacheMode::read_only);
    if (auto p = cache.peak(rt.gpu().id)) ceiling = p->gbps;
  } catch (const std::exception&) {
  }
  for (int v = 0; v < 3; ++v) {
    const double gbps = (v < 2 && quantized ? packed_bytes : total_bytes) / (ms[v] * 1e-3) / 1e9;
    std::printf("  %-18s %8.3f ms  %6.0f GB/s", names[v], ms[v], gbps);
    if (ceiling > 0) std::printf("  %5.1f%% of the %.0f GB/s read ceiling", 100 * gbps / ceiling, ceiling);
    if (v < 2) std::printf("  %.2fx cuBLAS", ms[2] / ms[v]);
    std::printf("\n");
  }
  std::printf("  logits: gemvtune vs cuBLAS relative L2 difference %.4f (%s)\n", rel,
              finite && rel < 0.1 ? "ok" : "MISMATCH");
  return finite && rel < 0.1 ? 0 : 1;
} catch (const example::UsageError& e) {
  std::fprintf(stderr, "decode_chain: %s\n%s", e.what(), kUsage);
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "decode_chain: %s\n", e.what());
  return 1;
}
