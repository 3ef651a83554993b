// gemvtune run: check one config against the float64 reference, then time it (CUDA graph of
// back-to-back calls and eager launches, weights rotated through more than twice the L2).
#include <cstdio>
#include <iostream>

#include "cli/cli_common.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/model.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

namespace gemvtune::cli {

int cmd_run(const std::vector<std::string>& args) {
  po::options_description desc("run options");
  std::string shape_text, dtype_text, config_text;
  std::int64_t ld = 0;
  int device = 0;
  desc.add_options()
      ("shape", po::value(&shape_text)->required(), "NxK, e.g. 4096x14336")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "fp32, fp16 or bf16")
      ("config", po::value(&config_text), "config text (default: the analytic model's choice)")
      ("ld", po::value(&ld)->default_value(0), "row stride of W in elements (default K)")
      ("device", po::value(&device)->default_value(0), "GPU ordinal");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune run --shape NxK [--dtype bf16] [--config CONFIG] [--ld LD] [--device 0]"))
    return kOk;
  const Shape shape = parse_shape(shape_text);
  const DType dtype = parse_dtype(dtype_text);
  if (ld == 0) ld = shape.k;
  if (ld < shape.k) throw UsageError("--ld " + std::to_string(ld) + " is smaller than K=" + std::to_string(shape.k));

  jit::Context ctx(device);
  KernelConfig config;
  if (vm.count("config")) {
    config = parse_config(config_text);
  } else {
    GpuModelParams gpu;
    gpu.sm_count = ctx.info().id.sm_count;
    config = default_config(dtype, shape, gpu);
  }
  check_config(config, dtype, shape);

  const std::int64_t rotate = 2 * ctx.info().l2_bytes + ctx.info().l2_bytes / 2;
  DeviceProblem problem(dtype, shape, ld, /*seed=*/12345, rotate);
  const auto op0 = problem.operands(0);
  if (auto why = why_misaligned(config, dtype, op0.w, ld, op0.x)) {
    KernelConfig narrower = config;
    narrower.vec_bytes = widest_aligned_vec_bytes(config, dtype, op0.w, ld, op0.x);
    std::cout << "note: " << *why << "; using " << to_string(narrower) << " instead\n";
    config = narrower;
  }
  jit::LoadedKernels kernels(ctx);
  auto kernel = kernels.get(config, dtype);
  problem.workspace().reserve(config, shape);
  jit::Stream stream;
  const LaunchFn launch = [&](int copy, CUstream s) {
    jit::launch_gemv(*kernel, config, problem.operands(copy), problem.workspace(), s);
  };
  jit::check_operands(config, dtype, problem.operands(0));

  std::cout << "shape " << to_string(shape) << " ld " << ld << " " << to_string(dtype) << ", config "
            << to_string(config) << " (kernel " << kernel->compiled().name << ", "
            << kernel->compiled().registers << " registers, " << kernel->compiled().spill_store_bytes
            << " bytes spilled)\n";
  const Comparison check = verify_calls(launch, problem, stream);
  std::cout << "check against float64 reference: " << check.describe() << "\n";
  if (!check.ok) return kRuntimeError;
  const CallTiming graph = time_calls(launch, problem, stream, LaunchMode::graph);
  const CallTiming eager = time_calls(launch, problem, stream, LaunchMode::eager);
  std::printf("graph: %.2f us per call, %.0f GB/s\n", graph.us_per_call, graph.gbps);
  std::printf("eager: %.2f us per call, %.0f GB/s\n", eager.us_per_call, eager.gbps);
  std::printf("(%d weight copies, %.1f MB each, rotated so L2 holds none)\n", problem.copies(),
              problem.bytes_per_call() / 1e6);
  return kOk;
}

}  // namespace gemvtune::cli
