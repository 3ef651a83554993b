// The model-guided strategy: measure what the analytic model ranks best, then walk to better
// one-parameter neighbours of the leader, within a hard budget (see strategy.hpp).
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
}  // namespace

StrategyResult run_model_guided(const std::vector<KernelConfig>& ranked, const MeasureBatch& measure,
                                const StrategyOptions& options) {
  StrategyResult result;
  if (ranked.empty()) return result;
  const std::size_t budget = model_budget(ranked.size(), options);
  std::set<std::string> seen;
  auto unmeasured = [&](const KernelConfig& c) { return seen.count(to_string(c)) == 0; };
  auto left = [&] { return budget - result.measured.size(); };

  measure_into(result, seen,
               std::vector<KernelConfig>(ranked.begin(), ranked.begin() + model_initial_count(ranked.size(), options)),
               measure);
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
