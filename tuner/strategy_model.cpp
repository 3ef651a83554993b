// The model-guided strategy: measure what the analytic model ranks best (each kernel family
// keeping a share of that first round), then walk to better one-parameter neighbours of the
// leader, within a hard budget (see strategy.hpp).
#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>

#include "tuner/strategy.hpp"

namespace gemvtune {

std::size_t model_budget(std::size_t space_size, const StrategyOptions& options) {
  const auto cap = static_cast<std::size_t>(std::floor(options.budget_fraction * static_cast<double>(space_size) + 1e-9));
  return std::min(space_size, std::max<std::size_t>(1, cap));
}

std::size_t model_initial_count(std::size_t space_size, const StrategyOptions& options) {
  const auto first = static_cast<std::size_t>(std::ceil(options.initial_fraction * static_cast<double>(space_size) - 1e-9));
  return std::min(model_budget(space_size, options), std::max<std::size_t>(1, first));
}

namespace {
// Measures a batch and appends it, checking the callback kept its promise of one result each.
void measure_into(StrategyResult& result, std::set<std::string>& seen,
                  const std::vector<KernelConfig>& batch, const MeasureBatch& measure) {
  if (batch.empty()) return;
  std::vector<Measured> got = measure(batch);
  if (got.size() != batch.size())
    throw std::logic_error("measure callback returned " + std::to_string(got.size()) +
                           " results for " + std::to_string(batch.size()) + " configs");
  for (std::size_t i = 0; i < got.size(); ++i) {
    got[i].config = batch[i];
    seen.insert(to_string(batch[i]));
    result.measured.push_back(got[i]);
  }
}

// Share of the first round each kernel family (CUDA cores, tensor cores) is sure of when the
// space holds both (M = 2 and 4 for bf16/fp16). The model's ranking across families is the
// least certain part of it: with the issue rate refitted (tuner/model.cpp) tensor cores fill
// the whole top 8% at M = 2, yet on the H200 a CUDA-core config won 4096x4096 and 4096x14336
// at M = 2 by 5 to 7% (bench/results/h200.md). So the first round is the model's top configs,
// except that each family present gets at least this share of it (its own best-ranked ones).
constexpr double kFamilyShare = 0.25;

// Quantized weights: the groups are the family and whether a warp holds few rows (1 or 2) or
// many (4 or 8), and the groups present share half of the first round equally (a quarter each
// with one family, an eighth with two). The model's issue term favours many rows per warp
// (the dequantizing work per x element is shared by the rows), which holds for int4 on CUDA
// cores but not for int8 and fp8: on the H200 sweeps (bench/results/raw/q-run2_*) their best
// configs on 28672x4096 hold 1 or 2 rows and 8 rows are 25-30% slower, while the model ranks
// 8 rows first (tests/tuner/quant_model_test.cpp).
// The 8-bit ring (its bytes in flight held in shared memory) is a family of its own here: the
// model's issue term ranks it with the register trips of the same rows, and on the H200 sweeps of
// 128256x4096 (raw/ring_h200_sweep_{int8,fp8}.csv) the first round then held no config within 20%
// of the ring's best and the walk stopped at a register-trip config 1.22x slower (fp8).
// So is each kind of int4g128 tensor-core kernel (the ring, and register loads): the model
// estimates the two alike, and with one group for both the first round held the ring's configs
// and the walk stopped 1.21x slower on 16x28672x4096, where the register loads win
// (QuantModel.ModelStrategyFindsTheInt4RegisterLoadsWhereTheyWin).
constexpr int kFamilies = 4;  // CUDA cores, tensor cores, and the ring of each
int group_of(const KernelConfig& c, bool quantized) {
  const bool tc = c.family == Family::tensor_core;
  const int family = tc ? (c.ring ? 3 : 1) : c.ring ? 2 : 0;
  return quantized ? 2 * family + (c.rows_per_warp > 2) : family;
}

// The first round: `count` configs of `ranked`, in model order, each group present holding at
// least its reserve of them (fewer only if it has fewer configs).
std::vector<KernelConfig> first_round(const std::vector<KernelConfig>& ranked, std::size_t count, bool quantized) {
  constexpr int kGroups = 2 * kFamilies;  // group_of's most, for quantized weights
  std::size_t of_group[kGroups] = {};
  for (const KernelConfig& c : ranked) ++of_group[group_of(c, quantized)];
  const auto groups = static_cast<double>(std::count_if(of_group, of_group + kGroups, [](std::size_t n) { return n > 0; }));
  std::size_t reserve[kGroups] = {};
  if (groups > 1) {
    const double share = quantized ? 0.5 / groups : kFamilyShare;
    for (int g = 0; g < kGroups; ++g)
      reserve[g] = std::min(of_group[g], static_cast<std::size_t>(std::ceil(share * static_cast<double>(count) - 1e-9)));
  }
  // Walk the ranking; a config is taken while its group still needs its reserve, or while the
  // places not reserved for the other groups are not yet full.
  std::vector<bool> take(ranked.size(), false);
  std::size_t taken[kGroups] = {}, total = 0;
  for (std::size_t i = 0; i < ranked.size() && total < count; ++i) {
    const int g = group_of(ranked[i], quantized);
    std::size_t others_left = 0;
    for (int o = 0; o < kGroups; ++o)
      if (o != g && reserve[o] > taken[o]) others_left += reserve[o] - taken[o];
    if (taken[g] < reserve[g] || total + others_left < count) {
      take[i] = true;
      ++taken[g];
      ++total;
    }
  }
  std::vector<KernelConfig> out;
  for (std::size_t i = 0; i < ranked.size(); ++i)
    if (take[i]) out.push_back(ranked[i]);
  return out;
}

// `ranked` with the first config of each block shape (the config with the load hint and the L2
// prefetch folded) ahead of the others, each part in model order.
std::vector<KernelConfig> block_shapes_first(const std::vector<KernelConfig>& ranked) {
  std::vector<KernelConfig> firsts, others;
  std::set<std::string> shapes;
  for (const KernelConfig& c : ranked) {
    KernelConfig shape = c;
    shape.hint = LoadHint::streaming;
    shape.prefetch_l2 = false;
    (shapes.insert(to_string(shape)).second ? firsts : others).push_back(c);
  }
  firsts.insert(firsts.end(), others.begin(), others.end());
  return firsts;
}

// The ranking the model strategy works through: the model's, or block_shapes_first of it.
std::vector<KernelConfig> strategy_order(const std::vector<KernelConfig>& ranked, const StrategyOptions& options) {
  return options.block_shapes_first ? block_shapes_first(ranked) : ranked;
}

// The first round of a ranking already in strategy_order.
std::vector<KernelConfig> first_round_of_order(const std::vector<KernelConfig>& ordered, const StrategyOptions& options) {
  return first_round(ordered, model_initial_count(ordered.size(), options), options.quantized);
}
}  // namespace

std::vector<KernelConfig> model_first_round(const std::vector<KernelConfig>& ranked, const StrategyOptions& options) {
  return first_round_of_order(strategy_order(ranked, options), options);
}

StrategyResult run_model_guided(const std::vector<KernelConfig>& model_ranked, const MeasureBatch& measure,
                                const StrategyOptions& options) {
  const std::vector<KernelConfig> ranked = strategy_order(model_ranked, options);
  StrategyResult result;
  if (ranked.empty()) return result;
  const std::size_t budget = model_budget(ranked.size(), options);
  std::set<std::string> seen;
  auto unmeasured = [&](const KernelConfig& c) { return seen.count(to_string(c)) == 0; };
  auto left = [&] { return budget - result.measured.size(); };

  measure_into(result, seen, first_round_of_order(ranked, options), measure);
  // Walks from `from` to its fastest unmeasured neighbour while that is faster (by more than
  // walk_margin to go on); returns where it stopped. The first batch also holds the unmeasured
  // neighbours of `also`, and a faster one of those is walked from like the others.
  const auto walk = [&](std::size_t from, std::optional<std::size_t> also = std::nullopt) {
    while (left() > 0) {
      std::vector<KernelConfig> batch;
      for (const KernelConfig& c : neighbours(result.measured[from].config, ranked))
        if (unmeasured(c) && batch.size() < left()) batch.push_back(c);
      if (also) {  // the runner-up's neighbours in the same batch: the same compile wait
        for (const KernelConfig& c : neighbours(result.measured[*also].config, ranked))
          if (unmeasured(c) && batch.size() < left() && std::find(batch.begin(), batch.end(), c) == batch.end())
            batch.push_back(c);
        also.reset();
      }
      if (batch.empty()) break;  // a local optimum among what is allowed
      const std::size_t first_new = result.measured.size();
      measure_into(result, seen, batch, measure);
      std::optional<std::size_t> better;
      for (std::size_t i = first_new; i < result.measured.size(); ++i)
        if (result.measured[i].passed && result.measured[i].time_us < result.measured[better ? *better : from].time_us)
          better = i;
      if (!better) break;  // the neighbours did not beat it: done
      const bool clear_gain =
          result.measured[*better].time_us < (1.0 - options.walk_margin) * result.measured[from].time_us;
      from = *better;
      if (!clear_gain) break;  // within the margin (timing noise): no trend to follow
    }
    return from;
  };
  std::optional<std::size_t> leader = fastest_passing(result.measured);
  while (!leader && left() > 0) {  // nothing passed yet: the next configs in model order
    const std::size_t round = std::max<std::size_t>(1, model_initial_count(ranked.size(), options) / 2);
    std::vector<KernelConfig> batch;
    for (const KernelConfig& c : ranked)
      if (unmeasured(c) && batch.size() < std::min(round, left())) batch.push_back(c);
    if (batch.empty()) break;
    measure_into(result, seen, batch, measure);
    leader = fastest_passing(result.measured);
  }
  if (leader) {
    // The first round's runner-up, where it is within runner_up_walk of the leader, has its
    // neighbours measured in the walk's first batch too.
    std::optional<std::size_t> runner_up;
    if (options.runner_up_walk > 0) {
      const std::vector<std::size_t> top = top_passing(result.measured, 2);  // top[0] is the leader
      if (top.size() == 2 &&
          result.measured[top[1]].time_us <= (1.0 + options.runner_up_walk) * result.measured[*leader].time_us)
        runner_up = top[1];
    }
    walk(*leader, runner_up);
    // A walk stops where no single move helps, and the kernel families (CUDA cores, tensor
    // cores, each ring) are far apart in moves: for quantized weights the fastest of each other
    // family, where it is within kRunnerUp of the leader, walks too. On 28672x4096 int4g128 at
    // M = 1 (H200, s149) a ring config led at 19.69 us and the walk stopped there, while the
    // register-load tile at 20.06 was one move (warps along K) from the best, 18.32. Not for
    // dense weights: each walk round waits for its compiles, and with these walks for every
    // format `tune --preset llama-3.1-8b --batch 1,2,4,8,16` took 60.5 s where it had taken
    // 44.6 (H200, s151 and s136; the split-K finish changed in between too, and the share of each
    // was not measured).
    constexpr double kRunnerUp = 1.05;
    const std::size_t walked = *fastest_passing(result.measured);
    const int walked_family = group_of(result.measured[walked].config, false);
    for (int family = 0; options.quantized && family < kFamilies; ++family) {
      if (family == walked_family) continue;
      std::optional<std::size_t> start;
      for (std::size_t i = 0; i < result.measured.size(); ++i)
        if (result.measured[i].passed && group_of(result.measured[i].config, false) == family &&
            (!start || result.measured[i].time_us < result.measured[*start].time_us))
          start = i;
      if (start && result.measured[*start].time_us <= kRunnerUp * result.measured[walked].time_us) walk(*start);
    }
  }
  result.best = fastest_passing(result.measured);
  return result;
}

}  // namespace gemvtune
