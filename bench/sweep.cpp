// gemvtune-sweep: a developer's tool. Measures every config of the search space on each shape
// (graph mode, each checked first), prints the fastest few beside cuBLAS, and writes every
// measurement as CSV (shape,dtype,config,us,gbps,model_us) for studying the model offline.
// Usage: [GEMVTUNE_SWEEP_FILTER=text] gemvtune-sweep OUT.csv DTYPE[:WEIGHTS] SHAPE...
// (WEIGHTS: a quantized format such as int4g128; cuBLAS then runs the dense DTYPE problem.)
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>

#include "bench/cublas_gemv.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/search_space.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

using namespace gemvtune;

int main(int argc, char** argv) try {
  if (argc < 4) {
    std::cerr << "usage: gemvtune-sweep OUT.csv DTYPE[:WEIGHTS] SHAPE...\n";
    return 2;
  }
  std::ofstream csv(argv[1]);
  csv << "shape,dtype,config,us,gbps,model_us\n";
  const std::string type_arg = argv[2];
  const auto colon = type_arg.find(':');
  const DType t = parse_dtype(type_arg.substr(0, colon));
  const WeightFormat w = colon == std::string::npos ? WeightFormat::dense : parse_weight_format(type_arg.substr(colon + 1));
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  std::vector<std::future<void>> jobs;
  const char* filter = std::getenv("GEMVTUNE_SWEEP_FILTER");  // only configs containing this text
  const auto wanted = [filter](const KernelConfig& c) { return !filter || to_string(c).find(filter) != std::string::npos; };
  for (const KernelConfig& c : distinct_kernels(default_search_space(t, 1, w)))
    if (wanted(c)) jobs.push_back(std::async(std::launch::async, [&kernels, c, t, w] { kernels.get(c, t, w); }));
  for (auto& j : jobs) j.get();
  jit::Stream stream;
  bench::CublasGemv cublas;
  GpuModelParams gpu;
  gpu.sm_count = ctx.info().id.sm_count;
  for (int a = 3; a < argc; ++a) {
    const Shape s = parse_shape(argv[a]);
    DeviceProblem p(t, s, s.k, kMeasureSeed, rotation_bytes(ctx.info()), 1, 0, 0, w);
    std::optional<DeviceProblem> dense;  // cuBLAS's problem when W is quantized
    if (is_quantized(w)) dense.emplace(t, s, s.k, kMeasureSeed, rotation_bytes(ctx.info()));
    DeviceProblem& pc = dense ? *dense : p;
    std::vector<std::pair<double, std::string>> results;
    for (const KernelConfig& c : runnable_space(p)) {  // misaligned rows: narrowed loads, as the tuner
      if (!wanted(c)) continue;
      auto k = kernels.get(c, t, w);
      p.workspace().reserve(c, s);
      const LaunchFn launch = [&](int copy, CUstream st) { jit::launch_gemv(*k, c, p.operands(copy), p.workspace(), st); };
      const Comparison cmp = verify_calls(launch, p, stream);
      if (!cmp.ok) {
        std::printf("WRONG %s %s: %s\n", argv[a], to_string(c).c_str(), cmp.describe().c_str());
        continue;
      }
      const CallTiming tm = time_calls(launch, p, stream, LaunchMode::graph, 5);
      results.emplace_back(tm.us_per_call, to_string(c));
      csv << argv[a] << "," << argv[2] << "," << to_string(c) << "," << tm.us_per_call << "," << tm.gbps << ","
          << (is_quantized(w) ? 0.0 : estimate(c, t, s, gpu).time_us) << "\n";
    }
    std::sort(results.begin(), results.end());
    const LaunchFn cub = [&](int copy, CUstream st) { cublas.launch(t, pc.operands(copy), st); };
    const Comparison cc = verify_calls(cub, pc, stream);
    const CallTiming cg = time_calls(cub, pc, stream, LaunchMode::graph);
    const CallTiming ce = time_calls(cub, pc, stream, LaunchMode::eager);
    const KernelConfig def = default_config(t, s, gpu);
    std::printf("== %s %s: cuBLAS graph %.2f us (%.0f GB/s) eager %.2f us, check %s; default %s\n", argv[a], argv[2],
                cg.us_per_call, cg.gbps, ce.us_per_call, cc.ok ? "ok" : "WRONG", to_string(def).c_str());
    for (std::size_t i = 0; i < results.size() && i < 8; ++i)
      std::printf("  %-32s %8.2f us %6.0f GB/s  x%.2f\n", results[i].second.c_str(), results[i].first,
                  p.bytes_per_call() / results[i].first / 1e3, cg.us_per_call / results[i].first);
    for (auto& r : results)
      if (r.second == to_string(def)) std::printf("  default %-24s %8.2f us\n", r.second.c_str(), r.first);
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "gemvtune-sweep: " << e.what() << "\n";
  return 1;
}
