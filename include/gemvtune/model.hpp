// The analytic performance model: ranks configs for a shape without running them, and gives
// the untuned default config.
//
// Little's law for memory: a GEMV streams at min(ceiling, bytes in flight / latency). Bytes in
// flight come from the warps resident at once (limited by the grid, by threads and registers
// per SM) times the loads each keeps outstanding (rows x unroll x vector x 32 lanes, fewer when
// a warp's K range is shorter). Added to the streaming time: a fixed launch and ramp cost, the
// last partial wave, and split-K's partial-sum traffic and fix-up. At batch M > 1 on CUDA
// cores, the conversions and FMAs per weight can cost more than the stream (tensor cores not).
// Batch M is taken from the config's m tile.
#pragma once
#include <vector>

#include "gemvtune/config.hpp"

namespace gemvtune {

struct GpuModelParams {
  int sm_count = 132;
  double read_ceiling_gbps = 4470;   // measured by `gemvtune peak`
  double latency_ns = 800;           // loaded memory latency
  double launch_us = 2.2;            // launch + ramp + drain of one kernel in a graph
  double pdl_launch_us = 0.8;        // the same when it overlaps the previous kernel (PDL)
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
};

struct ModelEstimate {
  double time_us = 0;
  double bytes_in_flight = 0;  // across the GPU, at steady state
  double waves = 0;            // blocks over resident block slots
};

// Quantized weights (w != dense): the packed bytes (weight_bytes) stream, and an issue-rate term
// for the dequantizing arithmetic of the quantized family (see model.cpp).
ModelEstimate estimate(const KernelConfig& c, DType t, const Shape& s, const GpuModelParams& gpu,
                       WeightFormat w = WeightFormat::dense);

// Configs sorted by estimated time, fastest first.
std::vector<KernelConfig> rank_by_model(std::vector<KernelConfig> configs, DType t, const Shape& s,
                                        const GpuModelParams& gpu, WeightFormat w = WeightFormat::dense);

// The untuned default: the model's best config of the default search space for this shape
// and batch M.
KernelConfig default_config(DType t, const Shape& s, const GpuModelParams& gpu = {}, int m = 1,
                            WeightFormat w = WeightFormat::dense);

}  // namespace gemvtune
