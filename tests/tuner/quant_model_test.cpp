// The model on quantized weights (issue 12), checked offline on the recorded H200 sweeps
// (bench/results/raw/q-run2_*, q-run3_*, 5b5fbfb*_sweep_int4g128_tc*, f4d6825_h200_sweep_int4_tc,
// 8b65322_h200_sweep_int4_tc; shape,dtype:weights,config,us,...; M = 1, bf16 activations):
//   - the shipped quantized issue constants (share and warps) are the fit of those sweeps;
//   - on every recorded (sweep, shape), the model strategy's first round on today's full space
//     holds a swept config within kWithin of the best swept config of that space, and
//     the whole strategy (the walk included) ends within kStrategyWithin of it (configs the sweep
//     lacks, split-K and later additions, count as failed);
//   - on a quantized space the first round keeps configs with few and with many rows per warp.
// The tensor-core sweeps of earlier kernels (pre-5b5fbfb 1chain and 2chain, 5b5fbfb's before
// the whole-line copies of f4d6825, and f4d6825's before the ring addressing of b9473e7, which
// made two tiles per warp slower at 128 threads) are checked but not fitted; "both" points join
// the CUDA-core sweep of q-run2 with a tensor-core sweep (two leases) so that the two families
// compete.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <optional>
#include <sstream>
#include <string>

#include "gemvtune/model.hpp"
#include "gemvtune/search_space.hpp"
#include "gemvtune/weights.hpp"
#include "tuner/model_fit.hpp"
#include "tuner/strategy.hpp"
#include "recorded_sweep.hpp"

using namespace gemvtune;

namespace {
const std::string kRaw = std::string(GEMVTUNE_SOURCE_DIR) + "/bench/results/raw/";
const std::string kSweeps = std::string(GEMVTUNE_SOURCE_DIR) + "/bench/results/sweeps/";

enum class Keep { all, cuda_core, tensor_core };

struct Source {
  const char* file;
  Keep keep;
};

struct Point {
  std::string name;
  WeightFormat weights = WeightFormat::dense;
  DType dtype = DType::bf16;
  Shape shape;
  std::map<std::string, double> us;
};

void read_sweep(const Source& src, const std::string& shape_text, Point& p) {
  const auto rows = recorded::read_sweep_rows(kRaw + src.file);
  EXPECT_FALSE(rows.empty()) << "missing " << kRaw + src.file;
  for (const auto& r : rows) {
    if (r.shape != shape_text) continue;
    const auto colon = r.dtype.find(':');
    p.dtype = parse_dtype(r.dtype.substr(0, colon));
    p.weights = parse_weight_format(r.dtype.substr(colon + 1));
    const bool tc = r.config.rfind("tc_", 0) == 0;
    if ((src.keep == Keep::cuda_core && tc) || (src.keep == Keep::tensor_core && !tc)) continue;
    p.us[r.config] = r.us;
  }
  p.shape = parse_shape(shape_text);
}

struct PointSpec {
  const char* name;
  const char* shape;
  std::vector<Source> sources;
};

const std::vector<PointSpec>& specs() {
  static const std::vector<PointSpec> s = {
      {"int8 q-run2", "4096x4096", {{"q-run2_h200_sweep_int8.csv", Keep::all}}},
      {"int8 q-run2", "28672x4096", {{"q-run2_h200_sweep_int8.csv", Keep::all}}},
      {"fp8 q-run2", "4096x4096", {{"q-run2_h200_sweep_fp8.csv", Keep::all}}},
      {"fp8 q-run2", "28672x4096", {{"q-run2_h200_sweep_fp8.csv", Keep::all}}},
      {"int4 cc q-run2", "4096x4096", {{"q-run2_h200_sweep_int4g128_cudacore.csv", Keep::all}}},
      {"int4 cc q-run2", "28672x4096", {{"q-run2_h200_sweep_int4g128_cudacore.csv", Keep::all}}},
      {"int4 cc q-run3", "4096x4096", {{"q-run3_h200_sweep_int4g128_4096x4096.csv", Keep::cuda_core}}},
      {"int4 cc q-run3", "28672x4096", {{"q-run3_h200_sweep_int4g128_28672x4096.csv", Keep::cuda_core}}},
      {"int4 tc pre-f4d6825", "4096x4096", {{"5b5fbfb_h200_sweep_int4g128_tc.csv", Keep::all}}},
      {"int4 tc pre-f4d6825", "28672x4096", {{"5b5fbfb_h200_sweep_int4g128_tc.csv", Keep::all}}},
      {"int4 tc pre-f4d6825", "4096x14336", {{"5b5fbfb_h200_sweep_int4g128_tc.csv", Keep::all}}},
      {"int4 tc pre-b9473e7", "28672x4096", {{"f4d6825_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc pre-b9473e7", "4096x14336", {{"f4d6825_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc pre-b9473e7", "14336x4096", {{"f4d6825_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc pre-b9473e7", "6144x4096", {{"f4d6825_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc pre-b9473e7", "128256x4096", {{"f4d6825_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc 8b65322", "28672x4096", {{"8b65322_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc 8b65322", "4096x14336", {{"8b65322_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc 8b65322", "14336x4096", {{"8b65322_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc 8b65322", "6144x4096", {{"8b65322_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc 8b65322", "128256x4096", {{"8b65322_h200_sweep_int4_tc.csv", Keep::all}}},
      {"int4 tc pre-1chain", "28672x4096", {{"5b5fbfb-pre_h200_sweep_int4g128_tc_1chain.csv", Keep::all}}},
      {"int4 tc pre-1chain", "4096x14336", {{"5b5fbfb-pre_h200_sweep_int4g128_tc_1chain.csv", Keep::all}}},
      {"int4 tc pre-2chain", "28672x4096", {{"5b5fbfb-pre_h200_sweep_int4g128_tc_2chain.csv", Keep::all}}},
      {"int4 tc pre-2chain", "4096x14336", {{"5b5fbfb-pre_h200_sweep_int4g128_tc_2chain.csv", Keep::all}}},
      {"int4 both q-run2+5b5fbfb",
       "4096x4096",
       {{"q-run2_h200_sweep_int4g128_cudacore.csv", Keep::all}, {"5b5fbfb_h200_sweep_int4g128_tc.csv", Keep::all}}},
      {"int4 both q-run2+8b65322",
       "28672x4096",
       {{"q-run2_h200_sweep_int4g128_cudacore.csv", Keep::all}, {"8b65322_h200_sweep_int4_tc.csv", Keep::all}}},
  };
  return s;
}

std::vector<Point> load() {
  std::vector<Point> out;
  for (const PointSpec& s : specs()) {
    Point p;
    p.name = std::string(s.name) + " " + s.shape;
    for (const Source& src : s.sources) read_sweep(src, s.shape, p);
    out.push_back(p);
  }
  return out;
}

// The first round of run_model_guided on `ranked`, as the tuner would measure it for a problem
// of that weight format.
std::vector<KernelConfig> first_round_of(const std::vector<KernelConfig>& ranked, bool quantized = true) {
  StrategyOptions options;
  options.quantized = quantized;
  std::vector<KernelConfig> first;
  run_model_guided(
      ranked,
      [&](const std::vector<KernelConfig>& batch) {
        if (first.empty()) first = batch;
        std::vector<Measured> out;
        for (const KernelConfig& c : batch) out.push_back({c, true, 1.0});
        return out;
      },
      options);
  return first;
}

std::vector<FitRow> fit_rows_of(const std::vector<Point>& points) {
  std::vector<FitRow> rows;
  for (const Point& p : points) {
    if (p.name.find("pre-") != std::string::npos || p.name.find("both") != std::string::npos) continue;
    for (const auto& [config, us] : p.us) {
      FitRow r;
      r.config = parse_config(config);
      r.dtype = p.dtype;
      r.shape = p.shape;
      r.us = us;
      r.weights = p.weights;
      rows.push_back(r);
    }
  }
  return rows;
}

// The first round's best swept config over the best swept config of today's space. With the
// constants and first round before 5b5fbfb the data gave up to 1.168 (int8 28672x4096, the
// 39.70 us tune of raw/5b5fbfb_h200_bench_int8.txt against 33.85 swept) and 1.060 (fp8). With
// the tensor-core issue term of 2df8805 (1 + 1 / rows per warp per weight) the b9473e7 kernel's
// sweeps gave 1.037-1.082 on four of five shapes (the tune of 28672x4096 measured 22.2 us where
// 20.6 was swept); with 1.5 per weight, 1.000 on four of them and 1.061 on 4096x14336, whose best
// tensor-core config is a no-PDL split-K one that the model (PDL always ahead) ranks low, and whose
// M = 1 winner is a CUDA-core config anyway (13.9 us against 15.0); at most 1.040 on older kernels.
constexpr double kWithin = 1.065;
}  // namespace

TEST(QuantModel, FitRecoversSyntheticIssueConstants) {
  GpuModelParams truth;
  truth.quantized_issue_share = 0.50;
  truth.quantized_issue_warps = 12;
  std::vector<FitRow> rows;
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::int4_g128})
    for (const char* shape : {"4096x4096", "28672x4096"})
      for (const KernelConfig& c : search_space_for(DType::bf16, parse_shape(shape), 1, w)) {
        if (c.split_k != 1) continue;  // fewer rows, a faster test
        FitRow r;
        r.config = c;
        r.shape = parse_shape(shape);
        r.weights = w;
        r.us = estimate(c, r.dtype, r.shape, truth, w).time_us;
        rows.push_back(r);
      }
  const QuantizedIssueFit f = fit_quantized_issue(rows);
  EXPECT_NEAR(f.share, 0.50, 1e-9);
  EXPECT_NEAR(f.warps, 12, 1e-9);
  EXPECT_LT(f.rms_log_error, 1e-9);
  const GpuModelParams fitted = fit_model(rows);
  EXPECT_EQ(fitted.quantized_issue_share, f.share);
  EXPECT_EQ(fitted.quantized_issue_warps, f.warps);
  EXPECT_EQ(fitted.cuda_core_issue_share, GpuModelParams{}.cuda_core_issue_share);  // no dense M > 1 rows
  // Dense rows do not inform it.
  std::vector<FitRow> dense = {rows.front()};
  dense.front().weights = WeightFormat::dense;
  EXPECT_EQ(fit_quantized_issue(dense).rows, 0u);
}

TEST(QuantModel, ShippedIssueConstantsAreTheFitOfTheRecordedSweeps) {
  const std::vector<FitRow> rows = fit_rows_of(load());
  const QuantizedIssueFit f = fit_quantized_issue(rows);
  GpuModelParams before;
  before.quantized_issue_share = 0.35;  // the constants before the fit
  before.quantized_issue_warps = 0;
  before.launch_us = 2.2;
  before.pdl_launch_us = 0.8;
  const double err_before = quantized_rms_log_error(rows, before);
  std::printf("[gemvtune] quantized issue: fit share %.2f, warps %.0f over %zu rows, RMS log error %.3f (at 0.35, "
              "no warp term: %.3f)\n",
              f.share, f.warps, f.rows, f.rms_log_error, err_before);
  EXPECT_GE(f.rows, 2000u);
  EXPECT_NEAR(GpuModelParams{}.quantized_issue_share, f.share, 0.005)
      << "the shipped share (include/gemvtune/model.hpp) is not the fit of the recorded sweeps";
  EXPECT_EQ(GpuModelParams{}.quantized_issue_warps, f.warps)
      << "the shipped warps (include/gemvtune/model.hpp) are not the fit of the recorded sweeps";
  EXPECT_LT(f.rms_log_error, 0.8 * err_before);
}

// Today's space of a recorded point, less the tensor-core family where the sweep swept none of
// it: the 8-bit sweeps predate 8-bit tensor cores (6acccbf), and their configs would count as
// failed, so these checks judge the model among the CUDA-core configs the sweep measured.
// Likewise the int4 tensor-core register loads (configs without ring, 2026-12-01), which no
// recorded int4 sweep but today's holds.
std::vector<KernelConfig> space_of(const Point& p) {
  const bool swept_tc = std::any_of(p.us.begin(), p.us.end(), [](const auto& e) { return e.first.rfind("tc_", 0) == 0; });
  const bool swept_registers = std::any_of(p.us.begin(), p.us.end(), [](const auto& e) {
    return e.first.rfind("tc_", 0) == 0 && e.first.find("_ring") == std::string::npos;
  });
  std::vector<KernelConfig> out;
  for (const KernelConfig& c : search_space_for(p.dtype, p.shape, 1, p.weights)) {
    const bool tc = c.family == Family::tensor_core;
    if (tc && (!swept_tc || (is_int4(p.weights) && !c.ring && !swept_registers))) continue;
    out.push_back(c);
  }
  return out;
}

// The model strategy's first round on today's space for a recorded point holds a swept config
// within kWithin of the best swept config of that space.
void expect_first_round_near_best(const Point& p) {
  ASSERT_GE(p.us.size(), 100u) << p.name;
  const std::vector<KernelConfig> space = space_of(p);
  double best = INFINITY;
  std::string best_config;
  std::size_t swept = 0;
  for (const KernelConfig& c : space) {
    const auto it = p.us.find(to_string(c));
    if (it == p.us.end()) continue;
    ++swept;
    if (it->second < best) best = it->second, best_config = it->first;
  }
  ASSERT_GE(swept, 100u) << p.name << ": the sweep hardly covers today's space";
  const std::vector<KernelConfig> ranked = rank_by_model(space, p.dtype, p.shape, {}, p.weights);
  std::size_t rank = 0;
  for (std::size_t i = 0; i < ranked.size() && !rank; ++i)
    if (to_string(ranked[i]) == best_config) rank = i + 1;
  const std::vector<KernelConfig> first = first_round_of(ranked);
  double first_best = INFINITY;
  std::string first_config;
  std::size_t first_swept = 0, near = 0;
  for (const KernelConfig& c : first) {
    const auto it = p.us.find(to_string(c));
    if (it == p.us.end()) continue;
    ++first_swept;
    near += it->second <= 1.03 * best;
    if (it->second < first_best) first_best = it->second, first_config = it->first;
  }
  std::printf("[gemvtune] %-34s space %4zu swept %3zu best %7.2f us %-34s model rank %3zu | first round %2zu "
              "(%2zu swept, %2zu within 3%%): %.3fx %s\n",
              p.name.c_str(), space.size(), swept, best, best_config.c_str(), rank, first.size(), first_swept, near,
              first_best / best, first_config.c_str());
  EXPECT_GE(first_swept * 4, first.size()) << p.name << ": too little of the first round was swept to judge it";
  EXPECT_LE(first_best, kWithin * best) << p.name << ": the first round's best swept config " << first_config
                                        << " is " << first_best / best << "x the best " << best_config;
}

TEST(QuantModel, FirstRoundHoldsANearBestConfigOnEveryRecordedSweep) {
  const std::vector<Point> points = load();
  ASSERT_EQ(points.size(), specs().size());
  for (const Point& p : points) expect_first_round_near_best(p);
}

// The model strategy (the space ranked by the analytic model, then the walk) on recorded
// times `us` (config -> us); configs the sweep lacks count as failed.
StrategyResult model_strategy_on(const std::map<std::string, double>& us, const std::vector<KernelConfig>& space,
                                 DType t, const Shape& shape, WeightFormat w, const StrategyOptions& options) {
  return run_model_guided(
      rank_by_model(space, t, shape, {}, w),
      [&](const std::vector<KernelConfig>& batch) {
        std::vector<Measured> out;
        for (const KernelConfig& c : batch) {
          const auto it = us.find(to_string(c));
          out.push_back({c, it != us.end(), it != us.end() ? it->second : 0.0});
        }
        return out;
      },
      options);
}

// The sweeps of the 8-bit ring (bench/results/raw/ring_h200_sweep_{int8,fp8}.csv: every PDL
// config of the register trips and of the ring, H200, one lease, 2026-12-01; not part of the
// issue-rate fit above, whose constants predate the ring). The whole model strategy, first round
// and walk (configs the sweep lacks count as failed), ends within kRingStrategyWithin of the best
// swept config of today's space. Its first round alone does not: on 128256x4096 the model ranks
// 8 rows per warp first (its issue term shares the dequantizing work per x element across rows)
// where 2 rows with 4 stages win, and the first round's best is 1.22-1.30x the best; the walk
// from there reaches it (rows, unroll and ring are one move each).
constexpr double kRingStrategyWithin = 1.035;  // the worst, fp8 4096x14336: 1.031
TEST(QuantModel, ModelStrategyNearTheBestOnTheRingSweeps) {
  for (const char* w : {"int8", "fp8"})
    for (const char* shape : {"4096x4096", "28672x4096", "4096x14336", "128256x4096"}) {
      Point p;
      p.name = std::string(w) + " ring " + shape;
      read_sweep({(std::string("ring_h200_sweep_") + w + ".csv").c_str(), Keep::all}, shape, p);
      const std::vector<KernelConfig> space = space_of(p);
      double best = INFINITY;
      std::size_t rings = 0;
      for (const KernelConfig& c : space) {
        const auto it = p.us.find(to_string(c));
        if (it != p.us.end()) best = std::min(best, it->second), rings += c.ring;
      }
      ASSERT_GE(rings, 50u) << p.name << ": the sweep hardly covers the ring configs of today's space";
      StrategyOptions options;
      options.quantized = true;
      const StrategyResult r = model_strategy_on(p.us, space, p.dtype, p.shape, p.weights, options);
      ASSERT_TRUE(r.best) << p.name;
      const Measured& got = r.measured[*r.best];
      std::printf("[gemvtune] %-26s best %7.2f us, model strategy %7.2f us (%.3fx, %zu measured) %s\n", p.name.c_str(),
                  best, got.time_us, got.time_us / best, r.measured.size(), to_string(got.config).c_str());
      EXPECT_LE(got.time_us, kRingStrategyWithin * best) << p.name << ": the model strategy ended at "
                                                         << to_string(got.config);
    }
}

TEST(QuantModel, FirstRoundKeepsFewAndManyRowsPerWarp) {
  // On a quantized space each group (family, each ring counted as one, x rows per warp 1-2 or 4-8) holds a share of the
  // first round; a dense M = 1 space keeps the model's top configs.
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::int4_g128}) {
    const Shape shape = parse_shape("28672x4096");
    const std::vector<KernelConfig> ranked = rank_by_model(search_space_for(DType::bf16, shape, 1, w), DType::bf16, shape, {}, w);
    const std::vector<KernelConfig> first = first_round_of(ranked);
    ASSERT_EQ(first.size(), model_initial_count(ranked.size()));
    std::map<int, std::size_t> in_space, in_first;
    const auto group = [](const KernelConfig& c) {
      return 2 * (c.family == Family::tensor_core ? (c.ring ? 3 : 1) : c.ring ? 2 : 0) + (c.rows_per_warp > 2);
    };
    for (const KernelConfig& c : ranked) ++in_space[group(c)];
    for (const KernelConfig& c : first) ++in_first[group(c)];
    const std::size_t share = static_cast<std::size_t>(std::ceil(0.5 / static_cast<double>(in_space.size()) * static_cast<double>(first.size()) - 1e-9));
    for (const auto& [g, n] : in_space)
      EXPECT_GE(in_first[g], std::min(n, share)) << to_string(w) << " group " << g;
    // In model order: the first round is a subsequence of the ranking.
    std::size_t j = 0;
    for (const KernelConfig& c : ranked)
      if (j < first.size() && c == first[j]) ++j;
    EXPECT_EQ(j, first.size()) << to_string(w);
  }
  const Shape shape = parse_shape("4096x4096");
  const std::vector<KernelConfig> ranked = rank_by_model(search_space_for(DType::bf16, shape, 1), DType::bf16, shape, {});
  const std::vector<KernelConfig> first = first_round_of(ranked, /*quantized=*/false);
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i], ranked[i]) << i;
}

// Int4 on tensor cores at M > 1 (bench/results/sweeps/h200_int4g128_m{4,8,16}_6223e09_pdl.csv:
// every PDL config of today's int4g128 space on the preset's shapes, H200, 2026-12-01). The
// shipped batch constants pick within 1% of the best picks the grid fit finds; with the term
// counted per batch row (as before) the picks ran 1.25x the best (1.27x at M = 16,
// 16x14336x4096 1.93x, its default 0.78x bf16 cuBLAS). Of the points that near, the lowest RMS
// log error (1.25, 0.375, 1 us, 0.1) left the tuner's walk at 1.115x the best on 8x1024x4096;
// the shipped point keeps it within kInt4BatchStrategyWithin on every pair, planned as the tuner
// plans it (before: 1.178x on 8x28672x4096), and improves the borrowing at every M
// (Defaults.BorrowedInt4ConfigsOnTheRecordedSweeps).
constexpr double kInt4BatchStrategyWithin = 1.085;  // the worst, 8x14336x4096: 1.082
// The rows of recorded sweeps of weight format w (shape column NxK at M = 1, MxNxK otherwise).
std::vector<FitRow> sweep_rows(WeightFormat w, const std::vector<std::string>& files) {
  std::vector<FitRow> rows;
  for (const std::string& name : files) {
    const auto swept = recorded::read_sweep_rows(kSweeps + name);
    EXPECT_FALSE(swept.empty()) << "missing " << kSweeps + name;
    for (const auto& s : swept) {
      FitRow r;
      const bool batched = std::count(s.shape.begin(), s.shape.end(), 'x') == 2;
      const auto [batch, shape] = batched ? recorded::split_batched_shape(s.shape) : std::make_pair(1, s.shape);
      r.m = batch;
      r.shape = parse_shape(shape);
      r.config = parse_config(s.config);
      r.weights = w;
      r.us = s.us;
      rows.push_back(r);
    }
  }
  return rows;
}

std::vector<FitRow> int4_batch_rows() {
  return sweep_rows(WeightFormat::int4_g128, {"h200_int4g128_m4_6223e09_pdl.csv", "h200_int4g128_m8_6223e09_pdl.csv",
                                              "h200_int4g128_m16_6223e09_pdl.csv"});
}

// The whole model strategy, planned as the tuner plans it (the configs worth compiling, the
// options for the problem's bytes; configs the sweep lacks count as failed), on every (M, shape)
// of `rows`: it ends within `within` of the best swept config. Returns the worst ratio.
double expect_strategy_near_best(const std::vector<FitRow>& rows, WeightFormat w, double within) {
  std::map<std::pair<int, std::string>, std::map<std::string, double>> pairs;
  bool swept_registers = false;
  for (const FitRow& r : rows) {
    pairs[{r.m, std::to_string(r.shape.n) + "x" + std::to_string(r.shape.k)}][to_string(r.config)] = r.us;
    swept_registers = swept_registers || (r.config.family == Family::tensor_core && !r.config.ring);
  }
  double worst = 0;
  for (const auto& [key, us] : pairs) {
    const auto& [m, text] = key;
    const Shape shape = parse_shape(text);
    double best = INFINITY;
    for (const auto& e : us) best = std::min(best, e.second);
    const double bytes = static_cast<double>(weight_bytes(w, DType::bf16, shape.n, shape.k).total()) +
                         2.0 * m * static_cast<double>(shape.n + shape.k);
    // Without the int4 register loads where the sweep has none (space_of).
    std::vector<KernelConfig> space;
    for (const KernelConfig& c : worth_compiling(search_space_for(DType::bf16, shape, m, w), DType::bf16, shape, bytes, {}))
      if (!(is_int4(w) && c.family == Family::tensor_core && !c.ring && !swept_registers)) space.push_back(c);
    const StrategyOptions options = strategy_options_for(space.size(), bytes, /*quantized=*/true);
    const StrategyResult r = model_strategy_on(us, space, DType::bf16, shape, w, options);
    EXPECT_TRUE(r.best) << m << "x" << text;
    if (!r.best) continue;
    const Measured& got = r.measured[*r.best];
    worst = std::max(worst, got.time_us / best);
    EXPECT_LE(got.time_us, within * best) << to_string(w) << " " << m << "x" << text << ": the model strategy ended at "
                                          << to_string(got.config);
  }
  return worst;
}

TEST(QuantModel, Int4TensorCoreBatchConstantsAreTheFitOfTheRecordedSweeps) {
  const std::vector<FitRow> rows = int4_batch_rows();
  const Int4TcBatchFit f = fit_int4_tc_batch(rows);
  std::size_t groups = 0;
  const double shipped = picks_over_best(rows, {}, informs_int4_tc_batch, &groups);
  std::printf("[gemvtune] int4 tensor cores at M > 1: fit issue %.3f + %.3f per n-tile / tiles, turnover %.1f us, "
              "split %.2f of the stream: picks %.3fx the best over %zu pairs; shipped %.3fx\n",
              f.issue, f.tile_issue, f.turnover_us, f.split_share, f.picks_over_best, f.groups, shipped);
  EXPECT_EQ(groups, 21u);
  EXPECT_EQ(f.groups, 21u);
  EXPECT_LE(shipped, 1.01 * f.picks_over_best) << "the shipped int4 batch constants pick more than 1% worse than the fit";
  EXPECT_LT(shipped, 1.17);
  // Each pair's pick at most 1.45x its best (16x14336x4096: 1.44x, 30.9 us against cuBLAS's 32.6).
  for (const char* m : {"4", "8", "16"})
    for (const char* shape : {"4096x4096", "1024x4096", "6144x4096", "14336x4096", "28672x4096", "4096x14336", "128256x4096"}) {
      std::vector<FitRow> pair;
      for (const FitRow& r : rows)
        if (r.m == std::stoi(m) && r.shape == parse_shape(shape)) pair.push_back(r);
      ASSERT_GE(pair.size(), 200u) << m << "x" << shape;
      EXPECT_LE(picks_over_best(pair, {}, informs_int4_tc_batch), 1.45) << m << "x" << shape;
    }
}

TEST(QuantModel, ModelStrategyNearTheBestOnTheInt4BatchSweeps) {
  const double worst = expect_strategy_near_best(int4_batch_rows(), WeightFormat::int4_g128, kInt4BatchStrategyWithin);
  std::printf("[gemvtune] int4g128 at M = 4, 8, 16: the model strategy's worst pair %.3fx the best\n", worst);
}

// The same on the sweeps with the wide int4 blocks in the space (8 warps along K in 256 threads,
// 16 in 512; sweeps/h200_int4g128_m{4,8,16}_wide_pdl.csv: every PDL tensor-core config of the
// preset's shapes, H200, 2026-12-02 19:02), where they are the best of 13 of the 21 pairs: the
// tuner's walk ends within 1.10x the best on every pair (the worst 1.094x).
TEST(QuantModel, ModelStrategyNearTheBestOnTheWideInt4BatchSweeps) {
  const std::vector<FitRow> rows = sweep_rows(
      WeightFormat::int4_g128, {"h200_int4g128_m4_wide_pdl.csv", "h200_int4g128_m8_wide_pdl.csv", "h200_int4g128_m16_wide_pdl.csv"});
  std::size_t wide = 0;
  for (const FitRow& r : rows) wide += wide_k_block(r.config);
  ASSERT_GE(wide, 300u);
  const double worst = expect_strategy_near_best(rows, WeightFormat::int4_g128, 1.10);
  std::printf("[gemvtune] int4g128 at M = 4, 8, 16 with wide blocks: the model strategy's worst pair %.3fx the best\n", worst);
}

// 8-bit weights, both families (sweeps/h200_{int8,fp8}_m{1,16}_ebcb001_pdl.csv: every PDL config
// of the preset's shapes, H200, 2026-12-01; the first recorded sweeps with the 8-bit tensor-core
// family): the tuner's walk ends within kEightBitStrategyWithin of the best on every pair (the
// worst, int8 4096x4096 at M = 1: 6.71 us against 6.09, a CUDA-core config where the best is
// another; 1.000-1.019x on 24 of the 28 pairs).
constexpr double kEightBitStrategyWithin = 1.105;
TEST(QuantModel, ModelStrategyNearTheBestOnTheEightBitSweeps) {
  for (const char* f : {"int8", "fp8"}) {
    const WeightFormat w = parse_weight_format(f);
    const std::string stem = std::string("h200_") + f + "_m";
    const std::vector<FitRow> rows = sweep_rows(w, {stem + "1_ebcb001_pdl.csv", stem + "16_ebcb001_pdl.csv"});
    ASSERT_GE(rows.size(), 7000u) << f;
    const double worst = expect_strategy_near_best(rows, w, kEightBitStrategyWithin);
    std::printf("[gemvtune] %s at M = 1, 16: the model strategy's worst pair %.3fx the best\n", f, worst);
  }
}

// int4g128 on tensor cores with both kernels (sweeps/h200_int4g128_m{1,8,16}_ring_and_registers.csv:
// the ring configs of the 09:58 and 10:07 sweeps, every PDL register-load config swept at 10:51
// on the same machine, 2026-12-01). The register loads are their own group of the first round
// (tuner/strategy_model.cpp), so the walk reaches them where they win: on 16x28672x4096 their
// best (31.89 us) against the ring's 38.46, where a first round of ring configs alone ended.
TEST(QuantModel, ModelStrategyFindsTheInt4RegisterLoadsWhereTheyWin) {
  const std::vector<FitRow> rows =
      sweep_rows(WeightFormat::int4_g128, {"h200_int4g128_m1_ring_and_registers.csv", "h200_int4g128_m8_ring_and_registers.csv",
                                           "h200_int4g128_m16_ring_and_registers.csv"});
  std::size_t registers = 0;
  for (const FitRow& r : rows) registers += r.config.family == Family::tensor_core && !r.config.ring;
  ASSERT_GE(registers, 500u);
  const double worst = expect_strategy_near_best(rows, WeightFormat::int4_g128, 1.085);  // 4096x14336 at M = 1: 1.081
  std::printf("[gemvtune] int4g128, ring and register loads: the model strategy's worst pair %.3fx the best\n", worst);
}

// The same on the sweep of templates/gemv_q4l.cu (the register loads at M = 1 since 2026-12-02)
// beside the ring, every PDL tensor-core config of 6 preset shapes in one H200 lease: the walk
// ends within 3% of the best tensor-core config of each shape (at b89be9d: 1.001x at worst; at
// 04a5625, x of a slice loaded in one trip to L2: 1.000x; with 256 threads at two stages or two
// tiles a warp in the space, 7 shapes: 1.006x; with the wide blocks too, 8 warps along K in 256
// threads and 16 in 512, the sweep recorded here: 1.000x).
TEST(QuantModel, ModelStrategyOnTheWholeLineRegisterLoadsSweep) {
  const std::vector<FitRow> rows = sweep_rows(WeightFormat::int4_g128, {"h200_int4g128_m1_q4l_wide_pdl.csv"});
  std::size_t registers = 0;
  for (const FitRow& r : rows) registers += r.config.family == Family::tensor_core && !r.config.ring;
  ASSERT_GE(registers, 300u);
  const double worst = expect_strategy_near_best(rows, WeightFormat::int4_g128, 1.03);
  std::printf("[gemvtune] int4g128 M = 1, ring and whole-line register loads: the model strategy's worst pair %.3fx the best\n", worst);
}

// The model's untuned default for int4g128 at M = 1 (what a shape gets with nothing in the cache
// to borrow from), on the recorded sweep of every PDL tensor-core config (and, on 4096x4096 and
// 1024x4096, where the CUDA cores win, every PDL config) of the preset's 7 shapes: a geometric
// mean of 1.239x the best swept config on the sweep with the wide q4l blocks (2026-12-02 18:42;
// 1.236x on the sweep before them, 1.296x before int4_line_block_turnover_us). Before the
// deeper rings left the M = 1 space (2026-12-01) it was
// 1.400x: the default took a two-stage ring on 4096x4096 (9.53 us against the best 4.96) and
// 4096x14336 (23.04 against 12.95).
TEST(QuantModel, Int4DefaultAtMOneOnTheRecordedSweeps) {
  const std::vector<FitRow> rows = sweep_rows(WeightFormat::int4_g128, {"h200_int4g128_m1_q4l_wide_pdl.csv"});
  std::map<std::string, std::map<std::string, double>> by_shape;
  for (const FitRow& r : rows)
    if (r.m == 1 && r.us > 0) by_shape[to_string(r.shape)][to_string(r.config)] = r.us;
  ASSERT_EQ(by_shape.size(), 7u);
  double log_sum = 0;
  for (const auto& [text, times] : by_shape) {
    double best = 1e30;
    for (const auto& [config, us] : times) best = std::min(best, us);
    const KernelConfig d = default_config(DType::bf16, parse_shape(text), GpuModelParams{}, 1, WeightFormat::int4_g128);
    EXPECT_FALSE(d.ring && d.unroll > 1) << text << ": " << to_string(d);
    const auto found = times.find(to_string(d));
    ASSERT_NE(found, times.end()) << text << ": the default " << to_string(d) << " is not in the sweep";
    log_sum += std::log(found->second / best);
    std::printf("[gemvtune] int4g128 default at M = 1 on %s: %s %.2f us, best %.2f\n", text.c_str(),
                to_string(d).c_str(), found->second, best);
  }
  const double geomean = std::exp(log_sum / by_shape.size());
  std::printf("[gemvtune] int4g128 default at M = 1: %.3fx the best swept config (geometric mean)\n", geomean);
  EXPECT_LE(geomean, 1.30);
}


// The sweep of every PDL config of int4g128 28672x4096 at M = 1 (raw/76dd171_next_h200_s149_*,
// H200, 2026-12-04; no-PDL configs count as failed): a ring config leads the walk (19.69 us) and
// no single move from it helps, while the best (18.32, register loads in 256-thread blocks) is
// one move from the fastest register-load config measured (20.06, 2 warps along K). The walk
// from each other family's fastest, within 5% of the leader, reaches it; the tuner picked the
// ring before (`gemvtune bench` twice, 19.76 us).
TEST(QuantModel, ModelStrategyWalksFromTheRunnerUpFamilyOnTheInt4RegisterSweep) {
  Point p;
  p.name = "int4g128 s149 28672x4096";
  read_sweep({"76dd171_next_h200_s149_sweep_int4g128_m1_28672x4096_pdl.csv", Keep::all}, "28672x4096", p);
  const std::vector<KernelConfig> space = search_space_for(p.dtype, p.shape, 1, p.weights);
  double best = INFINITY;
  std::string best_config;
  for (const KernelConfig& c : space) {
    const auto it = p.us.find(to_string(c));
    if (it != p.us.end() && it->second < best) best = it->second, best_config = it->first;
  }
  const double bytes = static_cast<double>(weight_bytes(p.weights, p.dtype, p.shape.n, p.shape.k).total());
  const StrategyOptions options = strategy_options_for(space.size(), bytes, /*quantized=*/true);
  const StrategyResult r = model_strategy_on(p.us, space, p.dtype, p.shape, p.weights, options);
  ASSERT_TRUE(r.best);
  const Measured& got = r.measured[*r.best];
  std::printf("[gemvtune] %s: best %7.2f us %s, model strategy %7.2f us (%.3fx, %zu measured) %s\n", p.name.c_str(),
              best, best_config.c_str(), got.time_us, got.time_us / best, r.measured.size(),
              to_string(got.config).c_str());
  EXPECT_LE(got.time_us, 1.02 * best) << "the model strategy ended at " << to_string(got.config);
  EXPECT_LE(r.measured.size(), model_budget(space.size(), options));
}
