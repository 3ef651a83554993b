// The exhaustive strategy: measure every candidate, keep the fastest that passed.
#include "tuner/strategy.hpp"

namespace gemvtune {

StrategyResult run_exhaustive(const std::vector<KernelConfig>& candidates, const MeasureBatch& measure,
                              const StrategyOptions& /*options*/) {
  StrategyResult result;
  if (!candidates.empty()) result.measured = measure(candidates);
  result.best = fastest_passing(result.measured);
  return result;
}

}  // namespace gemvtune
