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

// The first round: `count` configs of `ranked`, in model order, each family present holding at
// least ceil(kFamilyShare x count) of them (fewer only if it has fewer configs).
std::vector<KernelConfig> first_round(const std::vector<KernelConfig>& ranked, std::size_t count) {
  std::size_t of_family[2] = {0, 0};
  for (const KernelConfig& c : ranked) ++of_family[c.family == Family::tensor_core];
  const auto reserve_for = [&](int f) {
    if (of_family[0] == 0 || of_family[1] == 0) return std::size_t{0};  // one family only
    const auto share = static_cast<std::size_t>(std::ceil(kFamilyShare * static_cast<double>(count) - 1e-9));
    return std::min(of_family[f], share);
  };
  const std::size_t reserve[2] = {reserve_for(0), reserve_for(1)};
  // Walk the ranking; a config is taken while the family still needs its reserve, or while
  // the places not reserved for the other family are not yet full.
  std::vector<bool> take(ranked.size(), false);
  std::size_t taken[2] = {0, 0};
  for (std::size_t i = 0; i < ranked.size() && taken[0] + taken[1] < count; ++i) {
    const int f = ranked[i].family == Family::tensor_core;
    const std::size_t other_left = reserve[1 - f] > taken[1 - f] ? reserve[1 - f] - taken[1 - f] : 0;
    if (taken[f] < reserve[f] || taken[0] + taken[1] + other_left < count) {
      take[i] = true;
      ++taken[f];
    }
  }
  std::vector<KernelConfig> out;
  for (std::size_t i = 0; i < ranked.size(); ++i)
    if (take[i]) out.push_back(ranked[i]);
  return out;
}
}  // namespace

StrategyResult run_model_guided(const std::vector<KernelConfig>& ranked, const MeasureBatch& measure,
                                const StrategyOptions& options) {
  StrategyResult result;
  if (ranked.empty()) return result;
  const std::size_t budget = model_budget(ranked.size(), options);
  std::set<std::string> seen;
  auto unmeasured = [&](const KernelConfig& c) { return seen.count(to_string(c)) == 0; };
  auto left = [&] { return budget - result.measured.size(); };

  measure_into(result, seen, first_round(ranked, model_initial_count(ranked.size(), options)), measure);
  std::optional<std::size_t> leader = fastest_passing(result.measured);
  while (left() > 0) {
    std::vector<KernelConfig> batch;
    if (leader) {
      // neighbours() keeps the order of `ranked`, so a budget cut drops the model's worst.
      for (const KernelConfig& c : neighbours(result.measured[*leader].config, ranked))
        if (unmeasured(c) && batch.size() < left()) batch.push_back(c);
      if (batch.empty()) break;  // the leader is a local optimum among what is allowed
    } else {
      // Nothing passed yet: there is no leader to walk from, so go on down the ranking.
      const std::size_t round = std::max<std::size_t>(1, model_initial_count(ranked.size(), options) / 2);
      for (const KernelConfig& c : ranked)
        if (unmeasured(c) && batch.size() < std::min(round, left())) batch.push_back(c);
      if (batch.empty()) break;
    }
    measure_into(result, seen, batch, measure);
    const std::optional<std::size_t> next = fastest_passing(result.measured);
    const bool changed = next && (!leader || *next != *leader);
    leader = next;
    if (leader && !changed) break;  // the neighbours did not beat the leader: done
  }
  result.best = leader;
  return result;
}

}  // namespace gemvtune
