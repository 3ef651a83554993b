// gemvtune run: check one config against the float64 reference, then time it (CUDA graph of
// back-to-back calls and eager launches, weights rotated through more than twice the L2), at
// one or more batch sizes.
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/batch_option.hpp"
#include "cli/weights_option.hpp"
#include "cli/cli_common.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

namespace gemvtune::cli {

int cmd_run(const std::vector<std::string>& args) {
  po::options_description desc("run options");
  std::string shape_text, dtype_text, config_text, weights_text;
  std::vector<std::string> batch_texts;
  std::int64_t ld = 0, ldx = 0;
  int device = 0;
  desc.add_options()
      ("shape", po::value(&shape_text)->required(), "NxK, e.g. 4096x14336")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "fp32, fp16 or bf16")
      ("config", po::value(&config_text), "config text (default: the analytic model's choice)")
      ("batch", po::value(&batch_texts), kBatchHelp)
      ("weights", po::value(&weights_text)->default_value(kWeightsDefault), kWeightsHelp)
      ("ld", po::value(&ld)->default_value(0), "row stride of W in elements (default K)")
      ("ldx", po::value(&ldx)->default_value(0), "row stride of X in elements (default K)")
      ("device", po::value(&device)->default_value(0), "GPU ordinal");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune run --shape NxK [--batch M] [--dtype bf16] [--weights FORMAT] [--config CONFIG] [--ld LD] [--ldx LDX] [--device 0]"))
    return kOk;
  const Shape shape = parse_shape(shape_text);
  const DType dtype = parse_dtype(dtype_text);
  const WeightFormat weights = parse_weights(weights_text, dtype);
  const std::vector<int> batches = parse_batches(batch_texts);
  if (ld == 0) ld = shape.k;
  if (ld < shape.k) throw UsageError("--ld " + std::to_string(ld) + " is smaller than K=" + std::to_string(shape.k));
  if (ldx == 0) ldx = shape.k;
  if (ldx < shape.k) throw UsageError("--ldx " + std::to_string(ldx) + " is smaller than K=" + std::to_string(shape.k));
  check_weights_fit("run", to_string(TuneJob{shape, dtype, 1, weights}), weights, dtype, shape, ld);
  // A given config is checked against every M before the GPU is touched, as the other arguments are.
  std::optional<KernelConfig> given;
  if (vm.count("config")) {
    given = parse_config(config_text);
    for (int m : batches) check_config(*given, dtype, shape, m, weights);
  }

  jit::Context ctx(device);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  bool all_ok = true;
  for (int m : batches) {
    KernelConfig config;
    if (given) {
      config = *given;
    } else {
      GpuModelParams gpu;
      gpu.sm_count = ctx.info().id.sm_count;
      config = default_config(dtype, shape, gpu, m, weights);
    }
    check_config(config, dtype, shape, m, weights);

    // Quantized W: DeviceProblem pads ld and ldx to 16 bytes where needed.
    DeviceProblem problem(dtype, shape, ld, kMeasureSeed, rotation_bytes(ctx.info()), m, ldx, 0, weights);
    const auto op0 = problem.operands(0);
    if (auto why = is_quantized(weights) ? std::nullopt : why_misaligned(config, dtype, op0.w, ld, op0.x, m > 1 ? ldx : 0)) {
      const KernelConfig narrower =
          misaligned_variant(config, widest_aligned_vec_bytes(config, dtype, op0.w, ld, op0.x, m > 1 ? ldx : 0));
      std::cout << "note: " << *why << "; using " << to_string(narrower) << " instead\n";
      config = narrower;
      check_config(config, dtype, shape, m);
    }
    auto kernel = kernels.get(config, dtype, weights);
    problem.workspace().reserve(config, shape);
    const LaunchFn launch = [&](int copy, CUstream s) {
      jit::launch_gemv(*kernel, config, problem.operands(copy), problem.workspace(), s);
    };
    jit::check_operands(config, dtype, problem.operands(0));

    std::cout << "M " << m << " shape " << to_string(shape) << " ld " << op0.ld
              << (m > 1 ? " ldx " + std::to_string(op0.ldx) : "") << " " << to_string(dtype)
              << (is_quantized(weights) ? " activations, " + std::string(to_string(weights)) + " weights" : "")
              << ", config " << to_string(config) << " (kernel " << kernel->compiled().name
              << ", " << kernel->compiled().registers << " registers, " << kernel->compiled().spill_store_bytes
              << " bytes spilled)\n";
    const Comparison check = verify_calls(launch, problem, stream);
    std::cout << "check against float64 reference: " << check.describe() << "\n";
    if (!check.ok) {
      all_ok = false;
      continue;
    }
    const CallTiming graph = time_calls(launch, problem, stream, LaunchMode::graph);
    const CallTiming eager = time_calls(launch, problem, stream, LaunchMode::eager);
    std::printf("graph: %.2f us per call, %.0f GB/s\n", graph.us_per_call, graph.gbps);
    std::printf("eager: %.2f us per call, %.0f GB/s\n", eager.us_per_call, eager.gbps);
    std::printf("(%d weight copies, %.1f MB moved per call, rotated so L2 holds none)\n", problem.copies(),
                problem.bytes_per_call() / 1e6);
  }
  if (!all_ok) return kRuntimeError;
  return kOk;
}

}  // namespace gemvtune::cli
