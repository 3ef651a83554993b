// What the strategies share: picking the fastest passing measurement and the one-parameter
// neighbourhood of a config (see strategy.hpp).
#include <algorithm>
#include <cmath>
#include <set>

#include "gemvtune/search_space.hpp"
#include "tuner/strategy.hpp"

namespace gemvtune {

std::optional<std::size_t> fastest_passing(const std::vector<Measured>& measured) {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (measured[i].passed && (!best || measured[i].time_us < measured[*best].time_us)) best = i;
  return best;
}

std::vector<std::size_t> top_passing(const std::vector<Measured>& measured, std::size_t count) {
  std::vector<std::size_t> passing;
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (measured[i].passed) passing.push_back(i);
  std::stable_sort(passing.begin(), passing.end(), [&](std::size_t a, std::size_t b) {
    return measured[a].time_us < measured[b].time_us;
  });
  if (passing.size() > count) passing.resize(count);
  return passing;
}

std::vector<KernelConfig> cuda_core_twins_to_measure(const std::vector<Measured>& measured,
                                                     const std::function<int(const KernelConfig&)>& registers, DType t,
                                                     const Shape& s, int m, const GpuModelParams& model,
                                                     WeightFormat weights, double range, std::size_t count) {
  std::vector<std::pair<double, KernelConfig>> predicted;
  const std::vector<std::size_t> order = top_passing(measured, measured.size());
  for (std::size_t i : order) {
    const KernelConfig& c = measured[i].config;
    if (measured[i].time_us > measured[order.front()].time_us * range) break;
    if (c.family != Family::cuda_core || c.reg_cap) continue;
    try {
      const int regs = registers(c);
      const auto twin = cuda_core_capped_twin(c, t, s, m, regs, weights);
      if (!twin) continue;
      // The share of the block slots of all its waves (ceil(waves) x slots) a grid fills.
      const double blocks = static_cast<double>(c.row_blocks(s.n)) * c.split_k;
      const auto filled = [&](int per_thread) {
        const double slots = resident_blocks_per_sm(c.threads, per_thread, model).blocks * static_cast<double>(model.sm_count);
        return blocks / (slots * std::ceil(blocks / slots));
      };
      predicted.emplace_back(measured[i].time_us * filled(regs) / filled(twin->reg_cap), *twin);
    } catch (const std::exception&) {
    }
  }
  std::stable_sort(predicted.begin(), predicted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // One twin a block shape: variants that differ in load hints, PDL or split-K alone rank
  // together and would crowd out other shapes.
  std::vector<KernelConfig> out;
  const auto same_shape = [](const KernelConfig& a, const KernelConfig& b) {
    return a.threads == b.threads && a.rows_per_warp == b.rows_per_warp && a.k_warps == b.k_warps &&
           a.unroll == b.unroll && a.vec_bytes == b.vec_bytes && a.lanes_per_row == b.lanes_per_row;
  };
  for (const auto& prediction : predicted) {
    if (out.size() == count) break;
    // Not a structured binding: C++17 lets no lambda capture one (GCC allows it, clang does not).
    const KernelConfig& twin = prediction.second;
    if (std::none_of(out.begin(), out.end(), [&](const KernelConfig& o) { return same_shape(o, twin); })) out.push_back(twin);
  }
  return out;
}

namespace {
// The tunable integer parameters a neighbour may move, one at a time.
constexpr int KernelConfig::*kSteppedFields[] = {
    &KernelConfig::threads, &KernelConfig::rows_per_warp, &KernelConfig::k_warps,
    &KernelConfig::unroll, &KernelConfig::split_k, &KernelConfig::lanes_per_row};

// The values of `field` next to `value` (below and above) among those in the space.
std::vector<int> adjacent_values(const std::set<int>& values, int value) {
  std::vector<int> out;
  auto it = values.find(value);
  if (it == values.end()) return out;
  if (it != values.begin()) out.push_back(*std::prev(it));
  if (std::next(it) != values.end()) out.push_back(*std::next(it));
  return out;
}
}  // namespace

std::vector<KernelConfig> neighbours(const KernelConfig& leader, const std::vector<KernelConfig>& space) {
  std::vector<KernelConfig> wanted;
  for (auto field : kSteppedFields) {
    std::set<int> values;
    for (const KernelConfig& c : space) values.insert(c.*field);
    for (int v : adjacent_values(values, leader.*field)) {
      KernelConfig n = leader;
      n.*field = v;
      wanted.push_back(n);
      // With PDL, the same move with the L2 prefetch flipped too: the prefetch interacts with
      // the other knobs, so the best config can be two steps from a leader. On the H200,
      // 4096x4096 bf16 (bench/results/sweeps/h200_bf16_4a71088.csv): kw2 with prefetch 8.92 us,
      // kw1 with it 11.01, kw2 without 9.45, kw1 without 8.67; the walk stopped at the first.
      if (n.pdl) {
        n.prefetch_l2 = !n.prefetch_l2;
        wanted.push_back(n);
      }
    }
  }
  // 8-bit quantized weights: the same knobs with and without the shared-memory ring (its stages
  // ahead are the unroll knob), so a register-trip leader reaches the ring and back.
  KernelConfig other_ring = leader;
  other_ring.ring = !leader.ring;
  wanted.push_back(other_ring);
  // Tensor cores: the same knobs on the other tile (16 or 8 rows of W, w8).
  KernelConfig other_tile = leader;
  other_tile.tile_rows = leader.tile_rows == 16 ? 8 : 16;
  wanted.push_back(other_tile);
  KernelConfig other_hint = leader;
  other_hint.hint = leader.hint == LoadHint::streaming ? LoadHint::readonly : LoadHint::streaming;
  wanted.push_back(other_hint);
  // At M > 1 the same knobs on the other family (CUDA cores <-> tensor cores), where valid.
  KernelConfig other_family = leader;
  other_family.family = leader.family == Family::tensor_core ? Family::cuda_core : Family::tensor_core;
  wanted.push_back(other_family);
  // The three overlap choices: none, pdl, pdl with L2 prefetch.
  for (int overlap : {0, 1, 2}) {
    KernelConfig n = leader;
    n.pdl = overlap > 0;
    n.prefetch_l2 = overlap == 2;
    if (n != leader) wanted.push_back(n);
  }

  // Keep only those in the space (the others break a validity rule), in the space's order.
  std::vector<KernelConfig> out;
  for (const KernelConfig& c : space)
    if (std::find(wanted.begin(), wanted.end(), c) != wanted.end()) out.push_back(c);
  return out;
}

// The model strategy's shares of the space. A small problem (a few MB per call) runs for a few
// microseconds, mostly launch and latency, so its candidates differ less and each costs far
// more to compile (about 20 ms of a 16-core machine) than to time (about 6 ms): its first round
// and budget are capped in configs, which keeps a 4 MB shape's tune to about 80 NVRTC compiles
// instead of a few hundred. A tiny one (1 MB and less) is capped further: 256x2048 waited 1.8 of
// its 3.04 s for 64 compiles as a fresh H200 machine's first tune (issue 14's bar is 3 s).
// Replayed on the recorded sweeps of eight such shapes (h200_bf16_small.csv, the space the tuner
// compiles there), 48 and 80 find every best; 32 and 48 measure 30% fewer and find the best but
// on 384x1000 (1.015x) and 1024x512 (1.001x); 24 and 32 lose 6% (512x1024, 1024x512), and a
// budget of 32 after a first round of 32 loses 11% (1024x512): the walk needs its rounds.
// Nor does a tiny shape measure register-capped twins: they were 7 of those 64 compiles, and in
// the tunes of s43's families sweeps (six tiny shapes on the H200 and the H100, and 256x2048
// alone) the fastest twin was slower than the fastest uncapped candidate on 12 of 13 and 0.7%
// faster on one (128x896, H100, 1.14 us).
// Since 2026-12-06 a tiny problem's first round takes one config of each block shape
// (StrategyOptions::block_shapes_first): the model's top 32 had been 8 block shapes in 4 hint
// and prefetch variants each, while the walk tries the leader's variants anyway. Replayed the
// same way, 16 and 32 so find every best but 1024x512's (1.001x), 384x1000's included, and
// measure 236 configs of the eight shapes against 326 (16 and 40: every best, 257; 16 and 28:
// 1.001x, 219); on the preset's larger shapes (h200_bf16.csv, h200_bf16_4a71088.csv) the same
// order missed 6144x4096's best by 1.9%, so larger problems keep the model's order.
// A tiny problem's walk also stops at a gain within kTinyWalkMargin (StrategyOptions::walk_margin):
// its calls take about 1.3 us, a percent of that is timing noise, and each walk step waits for
// its compiles (0.3-0.5 s on the H200 machine, where a 1 MB tune took 2.0-3.2 s with every
// compile for real; bench/results/h200.md, 2026-12-06 04:57). Replayed on the small sweeps with
// 1% noise, 200 runs a shape: 2.43 -> 2.27 measure batches and 29.6 -> 29.1 configs a tune, the
// same winners (mean 1.0003x the best, 2 of 1600 over 1% either way).
constexpr double kTinyWalkMargin = 0.01;
// The first round's runner-up within kRunnerUpWalk of its leader has its neighbours measured in
// the walk's first batch (StrategyOptions::runner_up_walk): the same compile wait, a few more
// configs. On an H100's whole-space sweep of 6144x4096 at M = 2-16 (sweeps/h100_batch_6144x4096_
// c76eeb8.csv; the tune there picked 3.4% off the best at M = 4) the first round's leader,
// tc_t64_r2_kw2_u4_sk4, had no faster neighbour, while the runner-up 0.3% behind it,
// tc_t128_r2_kw4_u4_sk2, is one split from the best. Replayed with 1% noise (100 runs a pair):
// picks more than 2% off the best 51 -> 10 of 400 there, 2.18 -> 2.37 batches, 53.6 -> 55.8
// configs; on the five recorded H200 batched sweeps the same picks with 0.0-0.06 more batches
// and 0.4-1.5 more configs, on the M = 1 sweeps mean picks 1.0042 -> 1.0035x (h200_bf16.csv).
// Not for tiny problems, whose every config counts against issue 14's 3 s.
constexpr double kRunnerUpWalk = 0.02;
constexpr double kSmallProblemBytes = 4e6, kTinyProblemBytes = 1.5e6;
constexpr std::size_t kSmallFirstRound = 48, kSmallBudget = 80, kTinyFirstRound = 16, kTinyBudget = 32;
StrategyOptions strategy_options_for(std::size_t space_size, double bytes_per_call, bool quantized) {
  StrategyOptions o;
  o.quantized = quantized;
  o.runner_up_walk = kRunnerUpWalk;
  if (bytes_per_call > kSmallProblemBytes || space_size == 0) return o;
  const bool tiny = bytes_per_call <= kTinyProblemBytes;
  o.capped_twins = !tiny;
  o.block_shapes_first = tiny;
  if (tiny) {
    o.walk_margin = kTinyWalkMargin;
    o.runner_up_walk = 0.0;
  }
  const double n = static_cast<double>(space_size);
  o.initial_fraction = std::min(o.initial_fraction, static_cast<double>(tiny ? kTinyFirstRound : kSmallFirstRound) / n);
  o.budget_fraction = std::min(o.budget_fraction, static_cast<double>(tiny ? kTinyBudget : kSmallBudget) / n);
  return o;
}

// A misaligned 256x2047 (1 MB) waited 3.2 of its 4.2 s for NVRTC on the H200 machine: 8 of its
// first 48 configs were aligned-body kernels compiled once per x offset (1.1-1.8 s of a core
// each on the development machine, against 0.3-0.8 for the others). What they buy there is
// small: in the recorded sweep of 256x2047 (bench/results/sweeps/h200_bf16_small.csv) the best
// of them took 1.597 us and the best of the rest 1.618 (1.3%), a few instructions a load of a
// launch-bound call.
std::vector<KernelConfig> worth_compiling(std::vector<KernelConfig> space, DType t, const Shape& s,
                                          double bytes_per_call, const GpuModelParams& gpu) {
  const bool small = bytes_per_call <= kSmallProblemBytes;
  space.erase(std::remove_if(space.begin(), space.end(),
                             [&](const KernelConfig& c) {
                               return (small && compiles_per_x_offset(c)) ||
                                      (wide_k_block(c) && estimate(c, t, s, gpu).waves > 1);
                             }),
              space.end());
  return space;
}

}  // namespace gemvtune
