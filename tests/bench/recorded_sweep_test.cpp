// The model-guided strategy against a recorded table of real timings: every config of the
// search space measured on an H200 (bench/results/sweeps/h200_bf16.csv). Checks the issue's
// bar offline: the model-guided winner is within 2% of the exhaustive winner's time while
// measuring at most 15% of the space, and prints the model's rank correlation per shape.
#include <gtest/gtest.h>

#include <map>

#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"
#include "tuner/strategy.hpp"
#include "recorded_sweep.hpp"

using namespace gemvtune;

namespace {
std::map<std::string, std::map<std::string, double>> read_sweep(const std::string& path) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& r : recorded::read_sweep_rows(path)) out[r.shape][r.config] = r.us;
  return out;
}
}  // namespace

TEST(RecordedSweep, ModelGuidedWithinTwoPercentOfExhaustiveOnH200Table) {
  const auto sweep = read_sweep(GEMVTUNE_H200_SWEEP);
  ASSERT_GE(sweep.size(), 7u) << "recorded table missing: " << GEMVTUNE_H200_SWEEP;
  for (const auto& entry : sweep) {
    // Not a structured binding: the lambda below captures `times` (C++17 allows no capture of
    // a binding; GCC takes it, clang does not).
    const Shape shape = parse_shape(entry.first);
    const auto& times = entry.second;
    std::vector<KernelConfig> space;
    std::vector<double> model_us, measured_us;
    for (const auto& [config, us] : times) {
      space.push_back(parse_config(config));
      model_us.push_back(estimate(space.back(), DType::bf16, shape, {}).time_us);
      measured_us.push_back(us);
    }
    const MeasureBatch lookup = [&](const std::vector<KernelConfig>& batch) {
      std::vector<Measured> out;
      for (const auto& c : batch) out.push_back({c, true, times.at(to_string(c))});
      return out;
    };
    const StrategyResult exhaustive = run_exhaustive(space, lookup);
    const StrategyResult guided = run_model_guided(rank_by_model(space, DType::bf16, shape, {}), lookup);
    ASSERT_TRUE(exhaustive.best && guided.best);
    const double best = exhaustive.measured[*exhaustive.best].time_us;
    const double found = guided.measured[*guided.best].time_us;
    const double share = double(guided.measured.size()) / space.size();
    std::printf("[gemvtune] %-12s space %4zu  exhaustive %8.2f us  model-guided %8.2f us (+%.1f%%) measuring %4.1f%%  spearman %.2f\n",
                entry.first.c_str(), space.size(), best, found, 100 * (found / best - 1), 100 * share,
                spearman_rank_correlation(model_us, measured_us));
    EXPECT_LE(found, best * 1.02) << entry.first;
    EXPECT_LE(share, 0.15) << entry.first;
  }
}
