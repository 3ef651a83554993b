// `gemvtune explain`: why a config runs as fast as it does on a shape. Grid, waves, residency,
// bytes in flight against Little's law, the cubin's registers, stack and spills, split-K's
// cost and the analytic model's time, and one line naming what limits the config. The numbers
// are the model's own (ModelEstimate, tuner/model.cpp); explain only adds the cubin's
// residency and the verdict. No GPU needed (NVRTC compiles for the arch without one).
#pragma once
#include <optional>
#include <string>

#include "gemvtune/config.hpp"
#include "gemvtune/model.hpp"

namespace gemvtune {

// What the compiled kernel uses, from the cubin (jit::CompiledKernel).
struct KernelResources {
  int registers = -1;  // per thread; -1 when the cubin did not say
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
};

// The verdict, the first of these that holds (the model's terms):
//   grid             the model's balance factor < 0.8: fewer blocks than SMs, or the busiest SM
//                    holding more than its share (a last wave mostly empty)
//   bytes_in_flight  in flight per SM < 95% of what Little's law needs at the ceiling
//   launch           the launch + ramp term >= a third of the transfer time
//   issue            the arithmetic term (CUDA cores at M > 1, quantized) > the transfer time
//   bandwidth        none of those: enough bytes in flight, the stream itself
enum class Limiter { grid, bytes_in_flight, launch, issue, split_k, bandwidth };
// "grid", "bytes in flight", "launch and ramp", "issue", "split-K fix-up", "bandwidth"
const char* to_string(Limiter l);

struct Explanation {
  KernelConfig config;
  DType dtype = DType::bf16;
  Shape shape{};
  int batch = 1;
  WeightFormat weights = WeightFormat::dense;
  GpuModelParams gpu;
  ModelEstimate model;  // estimate(config, dtype, shape, gpu, weights)

  // Grid: row blocks (ceil(N / block_rows)) x split-K.
  long long row_blocks = 0, blocks = 0;
  int block_rows = 0;
  // Residency: the model's (from its register estimate) and, with a cubin, the compiled one's.
  Residency model_residency;
  std::optional<KernelResources> cubin;
  std::optional<Residency> cubin_residency;
  // Waves over the SMs at the residency used (the cubin's when known, else the model's):
  // full_waves complete waves plus a last one holding last_wave_blocks of wave_slots slots.
  int resident_per_sm = 0;
  long long wave_slots = 0;  // resident_per_sm x SMs
  double waves = 0;          // blocks / wave_slots
  long long wave_count = 0;  // ceil(waves)
  long long last_wave_blocks = 0;
  double last_wave_fill = 0;  // last_wave_blocks / wave_slots
  // Little's law per SM: what the busiest SM keeps in flight (the model's) and what the
  // ceiling needs (ceiling / SMs x latency); with a cubin, in flight at its residency too.
  double in_flight_per_sm = 0, needed_per_sm = 0;
  std::optional<double> cubin_in_flight_per_sm;
  // Split-K: fp32 partials written and read back (split_k x M x N x 4 bytes each way) and the
  // model's cost for them and the fix-up.
  double split_partial_bytes = 0;
  double split_us = 0;
  // The model's time and the rate it implies.
  double predicted_us = 0, predicted_gbps = 0, moved_bytes = 0;

  Limiter limiter = Limiter::bandwidth;
  std::string verdict;  // one line: the limiter and the numbers behind it
};

// Everything from the model; `cubin` (registers etc.) adds the compiled kernel's residency.
// Throws InvalidArgument when the config is invalid for the shape, M or weight format.
Explanation explain(const KernelConfig& c, DType t, const Shape& s, int m, WeightFormat w,
                    const GpuModelParams& gpu, const std::optional<KernelResources>& cubin = std::nullopt);

// Compiles the config's kernel with NVRTC for `arch` ("sm_90"; needs no GPU) and reads its
// resources. Throws CompileError on failure.
KernelResources compile_resources(const KernelConfig& c, DType t, WeightFormat w, const std::string& arch);

}  // namespace gemvtune
