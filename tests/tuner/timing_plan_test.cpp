// plan_timing without a GPU: which method, how many weight copies and how many calls per timed
// run each weight size gets (an H200's 60 MiB L2 and others), and that either way no copy is
// read again before rotate_bytes of other data have been read.
#include <gtest/gtest.h>

#include <utility>

#include "tuner/device_problem.hpp"

using namespace gemvtune;

namespace {
constexpr std::int64_t kKiB = 1024, kMiB = 1024 * kKiB;
constexpr std::int64_t kH200Rotate = 60 * kMiB * 5 / 2;  // rotation_bytes of an H200: 150 MiB
}  // namespace

TEST(TunerTimingPlan, RotateBytesIsTwoAndAHalfL2) {
  GpuInfo h200;
  h200.l2_bytes = 60 * kMiB;
  EXPECT_EQ(rotation_bytes(h200), kH200Rotate);
}

TEST(TunerTimingPlan, SmallWeightsGetBoundedCopiesAndAnEvictionPass) {
  // Weights, then copies: one call per copy in a run, about 200 MB of them, 64 to 256.
  const std::pair<std::int64_t, std::int64_t> cases[] = {
      {4 * kKiB, 256}, {64 * kKiB, 256}, {kMiB, 190}, {2 * kMiB, 95}, {kH200Rotate / 64 - 1, 81}};
  for (const auto& [w, copies] : cases) {
    const TimingPlan p = plan_timing(w, kH200Rotate);
    EXPECT_EQ(p.method, TimingMethod::l2_flush) << w;
    EXPECT_EQ(p.copies, copies) << w;
    EXPECT_EQ(p.flush_bytes, kH200Rotate) << w;
    EXPECT_EQ(calls_per_run(p, static_cast<double>(w)), copies) << w;
  }
}

TEST(TunerTimingPlan, LargeWeightsKeepTheRotationAsBefore) {
  // bf16 1024 x 4096 (k, v of Llama-3.1-8B): 8 MiB, 19 copies, ~200 MB of calls per graph.
  TimingPlan p = plan_timing(8 * kMiB, kH200Rotate);
  EXPECT_EQ(p.method, TimingMethod::rotation);
  EXPECT_EQ(p.copies, 19);
  EXPECT_EQ(p.flush_bytes, 0);
  EXPECT_EQ(calls_per_run(p, 8 * kMiB + 2 * (1024 + 4096)), 23);
  // bf16 4096 x 4096: 5 copies, at least 8 calls.
  p = plan_timing(32 * kMiB, kH200Rotate);
  EXPECT_EQ(p.method, TimingMethod::rotation);
  EXPECT_EQ(p.copies, 5);
  EXPECT_EQ(calls_per_run(p, 32 * kMiB), 8);
  // Weights larger than rotate_bytes: one copy.
  p = plan_timing(1002 * kMiB, kH200Rotate);
  EXPECT_EQ(p.copies, 1);
  EXPECT_EQ(calls_per_run(p, 1002 * kMiB), 8);
}

// A search's candidates get 9 timed runs, 5 where a run moves 4 GB or more: bf16 128256 x 4096
// (8 calls of 1.05 GB), not 28672 x 4096 (8 calls of 235 MB) nor small weights' long runs.
TEST(TunerTimingPlan, SearchReplaysFewerOnlyForRunsOfFourGigabytes) {
  const double lm_head = 128256.0 * 4096 * 2, gate_up = 28672.0 * 4096 * 2;
  EXPECT_EQ(search_replays(plan_timing(static_cast<std::int64_t>(lm_head), kH200Rotate), lm_head), 5);
  EXPECT_EQ(search_replays(plan_timing(static_cast<std::int64_t>(gate_up), kH200Rotate), gate_up), 9);
  EXPECT_EQ(search_replays(plan_timing(499'000'000, kH200Rotate), 499e6), 9);  // 8 calls: 3.99 GB
  EXPECT_EQ(search_replays(plan_timing(500'000'000, kH200Rotate), 500e6), 5);
  EXPECT_EQ(search_replays(plan_timing(4 * kKiB, kH200Rotate), 4 * kKiB), 9);
}

TEST(TunerTimingPlan, RotationUpToSixtyFourCopies) {
  const std::int64_t w = kH200Rotate / kMaxRotationCopies;  // 2.34 MiB: exactly 64 copies
  ASSERT_EQ(w * kMaxRotationCopies, kH200Rotate);
  EXPECT_EQ(plan_timing(w, kH200Rotate).method, TimingMethod::rotation);
  EXPECT_EQ(plan_timing(w, kH200Rotate).copies, 64);
  EXPECT_EQ(plan_timing(w - 1, kH200Rotate).method, TimingMethod::l2_flush);  // would take 65
}

TEST(TunerTimingPlan, AMethodCanBeForced) {
  // Rotation on 4 KiB: what every shape got before, 38400 copies all launched on per graph.
  TimingPlan p = plan_timing(4 * kKiB, kH200Rotate, TimingMethod::rotation);
  EXPECT_EQ(p.method, TimingMethod::rotation);
  EXPECT_EQ(p.copies, 38400);
  EXPECT_EQ(p.flush_bytes, 0);
  EXPECT_EQ(calls_per_run(p, 4 * kKiB), 38400);
  // The eviction pass on 8 MiB (the GPU test compares it with the rotation).
  p = plan_timing(8 * kMiB, kH200Rotate, TimingMethod::l2_flush);
  EXPECT_EQ(p.method, TimingMethod::l2_flush);
  EXPECT_EQ(p.copies, kMinFlushCopies);
  EXPECT_EQ(p.flush_bytes, kH200Rotate);
  EXPECT_EQ(calls_per_run(p, 8 * kMiB), kMinFlushCopies);
}

TEST(TunerTimingPlan, NoRotationMeansOneCopyAndNoPass) {
  for (TimingMethod m : {TimingMethod::automatic, TimingMethod::rotation, TimingMethod::l2_flush}) {
    const TimingPlan p = plan_timing(4 * kKiB, 0, m);
    EXPECT_EQ(p.method, TimingMethod::rotation);
    EXPECT_EQ(p.copies, 1);
    EXPECT_EQ(p.flush_bytes, 0);
  }
}

// The argument of docs/tuning.md: a copy is read again only after rotate_bytes of other reads,
// from the other copies (rotation: the copies cover rotate_bytes, and a run passes over all of
// them) or from the pass (l2_flush: a run reads each copy once, right after a pass).
TEST(TunerTimingPlan, NoCopyIsReadAgainWithinRotateBytes) {
  for (std::int64_t l2 : {40 * kMiB, 50 * kMiB, 60 * kMiB, 96 * kMiB}) {
    const std::int64_t rotate = l2 * 5 / 2;
    for (std::int64_t w = kKiB; w <= std::int64_t{4} << 30; w = w * 3 / 2 + 16) {
      for (TimingMethod m : {TimingMethod::automatic, TimingMethod::rotation, TimingMethod::l2_flush}) {
        const TimingPlan p = plan_timing(w, rotate, m);
        const int calls = calls_per_run(p, static_cast<double>(w));
        SCOPED_TRACE("L2 " + std::to_string(l2) + " weights " + std::to_string(w));
        if (m != TimingMethod::automatic) {
          EXPECT_EQ(p.method, m);
        }
        if (p.method == TimingMethod::rotation) {
          EXPECT_GE(p.copies * w, rotate);
          EXPECT_GE(calls, p.copies);
          EXPECT_EQ(p.flush_bytes, 0);
          if (m == TimingMethod::automatic) {
            EXPECT_LE(p.copies, kMaxRotationCopies);
          }
        } else {
          EXPECT_EQ(calls, p.copies);
          EXPECT_GE(p.copies, kMinFlushCopies);
          EXPECT_LE(p.copies, kMaxFlushCopies);
          EXPECT_GE(p.flush_bytes, rotate);
          EXPECT_GE(p.flush_bytes, 2 * l2);  // the pass alone replaces all of L2, twice over
        }
      }
    }
  }
}
