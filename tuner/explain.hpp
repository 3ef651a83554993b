// `gemvtune explain`: why a config runs as fast as it does on a shape. Grid, waves, residency,
// bytes in flight against Little's law, the cubin's registers, stack and spills, split-K's
// cost and the analytic model's time, and one line naming what limits the config. The numbers
// are the model's own (ModelEstimate, tuner/model.cpp); explain only adds the cubin's
// residency, a measured time when there is one, and the verdict. No GPU needed (NVRTC compiles
// for the arch without one).
#pragma once
#include <optional>
#include <string>

#include "gemvtune/config.hpp"
#include "gemvtune/model.hpp"
#include "tuner/warp_steps.hpp"

namespace gemvtune {

// What the compiled kernel uses, from the cubin (jit::CompiledKernel).
struct KernelResources {
  int registers = -1;  // per thread; -1 when the cubin did not say
  int stack_frame_bytes = 0;
  int shared_bytes = 0;  // shared memory a block takes: static + the system's 1 KB (sm_90)
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
};

// The verdict. The model's time is the weights' stream at the read ceiling plus what each cause
// adds to it (LimiterCosts); the limiter is the cause that adds the most, unless the stream is
// close enough to the call's time to leave the call bandwidth-bound (choose_limiter):
//   grid             blocks unevenly spread: fewer blocks than SMs, or a last wave mostly empty
//   bytes_in_flight  in flight per SM below what Little's law needs at the ceiling
//   launch           the launch + ramp term
//   issue            the arithmetic term (CUDA cores at M > 1, quantized) beyond the transfer
//   split_k          split-K's partials and fix-up
//   repeated_loads   loads a warp's last trip repeats past its share of a row (ModelEstimate::issued_loads)
//   bandwidth        the stream itself
enum class Limiter { grid, bytes_in_flight, launch, issue, split_k, repeated_loads, bandwidth, unmodelled };
// "grid", "bytes in flight", "launch and ramp", "issue", "split-K fix-up", "repeated loads", "bandwidth",
// "not modelled" (measured below the ceiling by more than any cost the model names explains)
const char* to_string(Limiter l);

// What the model says each cause adds to the weights' stream at the read ceiling, in us.
struct LimiterCosts {
  double grid = 0, bytes_in_flight = 0, launch = 0, issue = 0, split_k = 0, repeated_loads = 0;
};
// The call is bandwidth-bound when the stream at the read ceiling is at least this share of its time.
constexpr double kBandwidthShare = 0.85;
// The cause adding the most (on a tie the first of grid, bytes in flight, launch, issue, split-K,
// repeated loads).
Limiter largest_cost(const LimiterCosts& costs);
// The limiter. With a measured time (measured_share: the measured rate over the read ceiling,
// i.e. the call's bytes at the ceiling over the measured time) the measurement decides:
// bandwidth when measured_share >= kBandwidthShare, else the model's largest cost. Without one,
// the model decides the same way with model_share (the weights' stream at the ceiling over the
// model's predicted time). With a measurement, unexplained_us is the measured time beyond the
// model's prediction: when the call is below kBandwidthShare and that excess is larger than the
// model's largest cost, the model cannot say what binds, and the limiter is `unmodelled`
// rather than a cost too small to account for the time.
//
// PDL overlaps exactly a call's launch, ramp and drain with its neighbours, so with a PDL config's
// time without PDL measured too (pdl_saving: the share of that no-PDL time PDL saves) the
// measurement also decides that cause: launch and ramp when PDL saves at least kPdlSavingShare
// (and no more than kPdlOverlapMaxUs, pdl_saved_us), and not launch and ramp when it saves less,
// even where the model's launch term is its largest cost (the largest of the others then, or
// unmodelled as above). A saving past kPdlOverlapMaxUs is not that overlap (a PDL build's other
// code: fp32 at M >= 4 reads x by coherent loads after the wait) and decides nothing.
Limiter choose_limiter(const LimiterCosts& costs, double model_share, std::optional<double> measured_share,
                       double unexplained_us = 0, std::optional<double> pdl_saving = std::nullopt,
                       double pdl_saved_us = 0);
// PDL saving at least this share of the no-PDL call names launch and ramp (choose_limiter).
constexpr double kPdlSavingShare = 0.10;
// The most per call that overlapping launch, ramp and drain can save (the model's launch terms:
// 2.8 us without PDL, 1.2 with); a larger saving is other code, not the overlap.
constexpr double kPdlOverlapMaxUs = 5.0;

// A time measured for the config, microseconds per call (graph mode), and where it came from
// ("given with --measured-us", "measured on device 0 ...").
struct MeasuredTime {
  double us = 0;
  std::string source;
  // A PDL config's twin without PDL (and pf), timed the same way, or given with
  // --measured-no-pdl-us: what PDL saves decides launch and ramp (choose_limiter).
  std::optional<double> no_pdl_us;
};
// `--measured-us` (or the option named) text to microseconds: a number, > 0 and finite, or
// InvalidArgument naming the option and saying why.
double parse_measured_us(const std::string& text, const std::string& option = "--measured-us");

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
  // With a cubin: the CUDA-core twin capped at the registers that let one more block onto an SM
  // (cuda_core_capped_twin; the tuner measures such twins beside its CUDA-core candidates near
  // the fastest), its residency at the cap and its waves. None where c has no such twin.
  std::optional<KernelConfig> capped_twin;
  Residency capped_residency;
  double capped_waves = 0;
  // Little's law per SM: what the busiest SM keeps in flight (the model's) and what the
  // ceiling needs (ceiling / SMs x latency); with a cubin, in flight at its residency too.
  double in_flight_per_sm = 0, needed_per_sm = 0;
  std::optional<double> cubin_in_flight_per_sm;
  // Split-K: fp32 partials written and read back (split_k x M x N x 4 bytes each way) and the
  // model's cost for them and the fix-up.
  double split_partial_bytes = 0;
  double split_us = 0;
  // The dense tensor-core kernels: the steps along K of a row set's warps (tuner/warp_steps.hpp).
  std::optional<WarpSteps> warp_steps;
  // The model's time and the rate it implies.
  double predicted_us = 0, predicted_gbps = 0, moved_bytes = 0;

  // What the model says each cause adds to the stream, the largest of them, and the weights'
  // stream at the read ceiling over the predicted time.
  LimiterCosts costs;
  Limiter largest = Limiter::grid;
  double model_share = 0;
  // A measured time when there is one: its rate (moved_bytes over it) and that rate over the
  // read ceiling, which then decides the limiter instead of model_share.
  std::optional<MeasuredTime> measured;
  double measured_gbps = 0;
  std::optional<double> measured_share;
  // With measured->no_pdl_us: the share of the no-PDL time PDL saves ((no PDL - PDL) / no PDL).
  std::optional<double> pdl_saving;

  Limiter limiter = Limiter::bandwidth;
  std::string verdict;  // one line: the limiter and the numbers behind it
};

// Everything from the model; `cubin` (registers etc.) adds the compiled kernel's residency and
// `measured` a measured time, which then decides the limiter (choose_limiter). Throws
// InvalidArgument when the config is invalid for the shape, M or weight format, or the measured
// time is not > 0 and finite.
Explanation explain(const KernelConfig& c, DType t, const Shape& s, int m, WeightFormat w,
                    const GpuModelParams& gpu, const std::optional<KernelResources>& cubin = std::nullopt,
                    const std::optional<MeasuredTime>& measured = std::nullopt);

// Compiles the config's kernel with NVRTC for `arch` ("sm_90"; needs no GPU) and reads its
// resources. Throws CompileError on failure.
KernelResources compile_resources(const KernelConfig& c, DType t, WeightFormat w, const std::string& arch);

}  // namespace gemvtune
