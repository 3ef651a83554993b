// Search strategies: which configs of a shape's space to measure, and in what batches.
// A strategy sees configs only through a measure callback, so it runs the same against the
// GPU (tuner/tuner.cpp) and against a recorded or synthetic timing table (tests/tuner).
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/model.hpp"

namespace gemvtune {

// What measuring one config taught the strategy.
struct Measured {
  KernelConfig config;
  bool passed = false;  // verified and timed; failures are never chosen
  double time_us = 0;   // meaningful when passed
};

// Measures a batch of configs and returns one result per config, in the same order. A whole
// batch at once lets the measuring side compile all its kernels in parallel while it times
// the first ones.
using MeasureBatch = std::function<std::vector<Measured>(const std::vector<KernelConfig>&)>;

struct StrategyOptions {
  double initial_fraction = 0.08;  // model: share of the space measured in the first round
  double budget_fraction = 0.15;   // model: hard cap on the share of the space measured
  bool quantized = false;          // model: the first round keeps few and many rows per warp
  // model: the ranking puts the first config of each block shape (configs that differ only in
  // the load hint and the L2 prefetch) ahead of the rest, so the first round spans more block
  // shapes and the walk then tries the leader's hints (a tiny problem's; strategy_options_for)
  bool block_shapes_first = false;
  // model: the walk goes on from a neighbour only if it beat the config walked from by more than
  // this share of its time (a smaller gain is still kept as the best found)
  double walk_margin = 0.0;
  // model: the first round's runner-up, where it is within this share of the leader's time, has
  // its neighbours measured in the walk's first batch beside the leader's (0: never)
  double runner_up_walk = 0.0;
  bool capped_twins = true;        // the tuner: register-capped twins after the strategy
};

// The options for a space of space_size configs and a problem of bytes_per_call: the defaults,
// with the first round and budget capped in configs for a problem of at most a few MB (fewer,
// and no capped twins, for one of about 1 MB), and `quantized` for quantized weights.
StrategyOptions strategy_options_for(std::size_t space_size, double bytes_per_call, bool quantized = false);

// The configs of `space` worth compiling for a problem of dtype t and shape s, bytes_per_call in
// all, on `gpu`: all of them but
//  - for a problem of at most a few MB (compile-bound, as for strategy_options_for), those whose
//    kernel is compiled once per x offset (compiles_per_x_offset), 2-4 compiles' time each;
//  - the wide tensor-core blocks (wide_k_block) whose grid takes more than one wave of the
//    model's block slots: one or two such blocks per SM expose each block's turnover, and past
//    one wave they lost every pair of the recorded sweep (h200_batch_4316d86_kw_pdl.csv) while
//    the winners there all fit one wave; measuring them cost a third of the preset's tune time.
std::vector<KernelConfig> worth_compiling(std::vector<KernelConfig> space, DType t, const Shape& s,
                                          double bytes_per_call, const GpuModelParams& gpu);

struct StrategyResult {
  std::vector<Measured> measured;   // every config measured, in measuring order, no repeats
  std::optional<std::size_t> best;  // index into measured of the fastest passing config
};

// Measures every candidate (one batch, in the order given).
StrategyResult run_exhaustive(const std::vector<KernelConfig>& candidates, const MeasureBatch& measure,
                              const StrategyOptions& options = {});

// `ranked` is the space ordered by the analytic model, best first. Measures the first
// initial_fraction of it, then the unmeasured neighbours of the leader (neighbours(), taken
// in model order), again while the leader changes, never measuring more than budget_fraction
// of the space. While nothing has passed, the next configs in model order are measured
// instead of neighbours. Then, for quantized weights (options.quantized), the fastest of each
// other kernel family (CUDA cores, tensor cores, each ring), where within 5% of the leader,
// walks the same way.
StrategyResult run_model_guided(const std::vector<KernelConfig>& ranked, const MeasureBatch& measure,
                                const StrategyOptions& options = {});

// The configs run_model_guided measures first: the top of `ranked`, each kernel family (and for
// quantized weights few or many rows per warp) keeping its share.
std::vector<KernelConfig> model_first_round(const std::vector<KernelConfig>& ranked, const StrategyOptions& options);

// Configs measured at most by run_model_guided on a space of this size (at least 1), and in
// its first round.
std::size_t model_budget(std::size_t space_size, const StrategyOptions& options = {});
std::size_t model_initial_count(std::size_t space_size, const StrategyOptions& options = {});

// The configs of `space` that differ from `leader` in exactly one of threads, rows_per_warp,
// k_warps, unroll, split_k (moved to the next smaller or larger value that occurs in the
// space), the load hint or the overlap choice (no PDL, PDL, PDL with L2 prefetch), and, for a
// PDL leader, each of those integer moves with the L2 prefetch flipped as well. In the order
// they appear in `space`.
std::vector<KernelConfig> neighbours(const KernelConfig& leader, const std::vector<KernelConfig>& space);

// Index of the fastest passing entry (the first on a tie), or none.
std::optional<std::size_t> fastest_passing(const std::vector<Measured>& measured);

// Up to `count` indices of passing entries, fastest first.
std::vector<std::size_t> top_passing(const std::vector<Measured>& measured, std::size_t count);

// The register-capped CUDA-core twins (cuda_core_capped_twin) a tune measures after its
// strategy: of the passing uncapped CUDA-core candidates within `range` times the fastest time,
// the `count` twins predicted fastest, fastest first, one a block shape (threads, rows, warps
// along K, unroll, vector, lanes a row). The prediction is the candidate's time
// scaled by how much fuller the twin's waves are (blocks over the slots of ceil(waves) waves,
// at the candidate's compiled registers from `registers`, one that throws being skipped, and
// at the twin's cap), so among twins whose waves fill the same, the leaders' come first. The
// twin that matters need not be a leader's: at 88 registers 6144x4096's t256_r2_kw1_u4 (1.45
// waves) ran 10% behind the best of a sweep (4a71088) where round 1's 80-register kernel (one
// wave) had led; the model saw 1% between the two (its tail term is for the dense tensor cores).
std::vector<KernelConfig> cuda_core_twins_to_measure(const std::vector<Measured>& measured,
                                                     const std::function<int(const KernelConfig&)>& registers, DType t,
                                                     const Shape& s, int m, const GpuModelParams& model,
                                                     WeightFormat weights = WeightFormat::dense, double range = 1.2,
                                                     std::size_t count = 8);

}  // namespace gemvtune
