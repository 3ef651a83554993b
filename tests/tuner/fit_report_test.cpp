// `gemvtune fit`'s report (tuner/fit_report.hpp) without a GPU: rows drawn from the model with
// known constants are fitted back to them, and a cache gives exactly its GPU's passed
// candidates at this build's templates.
#include <gtest/gtest.h>

#include "cache/cache_test_util.hpp"
#include "gemvtune/generator.hpp"
#include "tuner/fit_report.hpp"
#include "tuner/model_rows.hpp"

namespace gemvtune {
namespace {

// Rows whose times are the model's own with `truth`: every fp32 config of the space (CUDA cores,
// whose issue share M > 1 informs) on two shapes at M = 1 (PDL and not: the launch terms) and 4.
std::vector<FitRow> rows_of(const GpuModelParams& truth) {
  return model_rows::fp32_rows_of(truth, {"4096x4096", "14336x4096"}, {1, 4});
}

TEST(FitReport, RecoversTheConstantsTheRowsWereDrawnWith) {
  GpuModelParams truth;
  truth.cuda_core_issue_share = 0.25;  // where the term binds on these rows (above ~0.44 it does not)
  truth.launch_us = 3.5;
  truth.pdl_launch_us = 1.7;
  const FitReport report = fit_report(rows_of(truth), GpuModelParams{});
  EXPECT_NEAR(report.fitted.cuda_core_issue_share, 0.25, 1e-9);
  EXPECT_NEAR(report.fitted.launch_us, 3.5, 1e-6);
  EXPECT_NEAR(report.fitted.pdl_launch_us, 1.7, 1e-6);
  EXPECT_LT(report.error_fitted, 1e-6);
  EXPECT_GT(report.error_shipped, 0.01);
  EXPECT_NEAR(report.picks_fitted, 1.0, 1e-9) << "the true model picks the best of every problem";
  EXPECT_EQ(report.problems, 4u);
  ASSERT_EQ(report.constants.size(), 5u);
  EXPECT_EQ(report.constants[0].name, "cuda_core_issue_share");
  EXPECT_GT(report.constants[0].rows, 0u);
  EXPECT_EQ(report.constants[1].rows, 0u) << "no quantized rows: the shipped value stays";
  EXPECT_EQ(report.fitted.quantized_issue_share, GpuModelParams{}.quantized_issue_share);
}

TEST(FitReport, RowsAreTheGpusPassedCandidatesAtThisBuildsTemplates) {
  cache_test::TempDir dir;
  TuningCache cache(dir.file("c.sqlite"), CacheMode::read_write);
  const GpuIdentity h200 = cache_test::h200(), other{"NVIDIA H100", 132, 9, 0};
  TuneRecord r = cache_test::make_record(cache_test::make_key(4096, 4096, h200, DType::bf16, 4, template_version()),
                                         "t128_r2_kw1_v16_u4_sk1_cs", 10.0);
  r.candidates = {{"t128_r2_kw1_v16_u4_sk1_cs", Outcome::passed, "", 10.0, 3000, 70},
                  {"t256_r1_kw2_v16_u2_sk1_cs", Outcome::passed, "", 12.5, 2500, 60},
                  {"t64_r1_kw1_v16_u1_sk1_cs", Outcome::incorrect, "wrong", 0, 0, 0}};
  cache.store(r);
  TuneRecord old = r;
  old.key.template_version = "an-older-template";
  cache.store(old);
  TuneRecord elsewhere = r;
  elsewhere.key.gpu = other;
  cache.store(elsewhere);
  cache.store_peak(PeakRecord{h200, 4600, 1LL << 32, 13000, 1});

  const std::vector<FitRow> rows = fit_rows(cache, h200);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(to_string(rows[1].config), "t256_r1_kw2_v16_u2_sk1_cs");
  EXPECT_EQ(rows[1].us, 12.5);
  EXPECT_EQ(rows[1].m, 4);
  EXPECT_EQ(rows[1].shape, (Shape{4096, 4096}));
  EXPECT_EQ(rows[1].ceiling_gbps, 4600);
  EXPECT_TRUE(fit_rows(cache, GpuIdentity{"NVIDIA A100", 108, 8, 0}).empty());
}

}  // namespace
}  // namespace gemvtune
