// The tune run's JSON (`tune --json` and gemvtune_tune print the same, tuner/report_json.hpp)
// without a GPU: counts by status, every job in order, and the tuned jobs' phases summed.
#include <gtest/gtest.h>

#include <vector>

#include "tuner/report_json.hpp"

using namespace gemvtune;

namespace {
JobOutcome tuned_job(std::int64_t n, double setup, double compile_wait, double timing) {
  JobOutcome o;
  o.job.shape = {n, 4096};
  o.status = JobStatus::tuned;
  ShapeResult r;
  r.record.config = "t128_r1_kw1_v16_u4_sk1_cs_pdl";
  r.record.time_us = 10;
  r.phases.setup = setup;
  r.phases.compile_wait = compile_wait;
  r.phases.timing = timing;
  r.phases.verify = 0.25;
  r.seconds = setup + compile_wait + timing + 0.25;
  o.result = r;
  return o;
}
}  // namespace

TEST(ReportJson, TuneRunCountsJobsAndSumsTheTunedJobsPhases) {
  std::vector<JobOutcome> outcomes{tuned_job(4096, 0.5, 1.0, 2.0), tuned_job(1024, 0.25, 0.0, 1.5)};
  JobOutcome skipped;
  skipped.job.shape = {6144, 4096};
  skipped.status = JobStatus::skipped;
  TuneRecord existing;
  existing.config = "t64_r1_kw1_v16_u4_sk1_cs_pdl";
  skipped.existing = existing;
  outcomes.push_back(skipped);
  JobOutcome failed;
  failed.job.shape = {7, 4096};
  failed.error = "no config passed";
  outcomes.push_back(failed);

  const TunePhases total = report::total_phases(outcomes);
  EXPECT_DOUBLE_EQ(total.setup, 0.75);
  EXPECT_DOUBLE_EQ(total.compile_wait, 1.0);
  EXPECT_DOUBLE_EQ(total.timing, 3.5);
  EXPECT_DOUBLE_EQ(total.verify, 0.5);
  EXPECT_DOUBLE_EQ(total.finalists, 0.0);

  const report::Json doc = report::tune_run_json(outcomes, "/tmp/c.sqlite", Strategy::model, 7.5);
  EXPECT_EQ(doc["db"], "/tmp/c.sqlite");
  EXPECT_EQ(doc["strategy"], "model");
  EXPECT_EQ(doc["tuned"], 2);
  EXPECT_EQ(doc["skipped"], 1);
  EXPECT_EQ(doc["failed"], 1);
  EXPECT_DOUBLE_EQ(doc["seconds"].get<double>(), 7.5);
  EXPECT_DOUBLE_EQ(doc["phases"]["setup"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(doc["phases"]["timing"].get<double>(), 3.5);
  ASSERT_EQ(doc["shapes"].size(), 4u);
  EXPECT_EQ(doc["shapes"][0]["shape"], "4096x4096");
  EXPECT_DOUBLE_EQ(doc["shapes"][0]["phases"]["compile_wait"].get<double>(), 1.0);
  EXPECT_EQ(doc["shapes"][2]["status"], "skipped");
  EXPECT_EQ(doc["shapes"][3]["status"], "failed");
}
