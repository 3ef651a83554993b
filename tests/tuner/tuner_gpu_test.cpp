// The tuner end to end on a GPU (skipped without one): tune a small shape into a temporary
// cache, query it back, re-run to see it skipped, and measure the read ceiling.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cache/cache_test_util.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/search_space.hpp"
#include "gemvtune/tuner.hpp"
#include "gpu_test_support.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/kernel_cache.hpp"
#include "tuner/strategy.hpp"

using namespace gemvtune;

TEST(TunerGpu, TunesASmallShapeAndQueriesItBack) {
  GEMVTUNE_REQUIRE_GPU();
  cache_test::TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  const TuneJob job{{512, 1024}, DType::bf16};
  jit::Context ctx(0);
  std::optional<ShapeResult> result;
  std::size_t progress_calls = 0;
  std::size_t compiles = 0;  // NVRTC compiles of this process during the tune (and the pool's end)
  {
    TuningCache cache(path, CacheMode::read_write);
    Tuner tuner(ctx, cache);
    EXPECT_GT(tuner.ceiling_gbps(), 100.0);
    compiles = jit::KernelCache::instance().compiles();
    result = tuner.tune(job, TuneOptions{}, [&](const TuneProgress& p) {
      ++progress_calls;
      EXPECT_LE(p.measured, p.budget);
    });
  }
  compiles = jit::KernelCache::instance().compiles() - compiles;
  const TuneRecord& rec = result->record;
  EXPECT_EQ(rec.strategy, "model");
  EXPECT_EQ(rec.key.template_version, template_version());
  EXPECT_EQ(result->measured, rec.candidates.size());
  EXPECT_EQ(progress_calls, rec.candidates.size());
  EXPECT_LE(result->measured, model_budget(search_space_for(DType::bf16, job.shape).size()));
  EXPECT_GT(rec.time_us, 0.5);
  EXPECT_GT(rec.pct_of_ceiling, 1.0);

  // The winner passed verification, and no failed candidate is faster than it... by choice.
  bool winner_found = false;
  for (const CandidateResult& c : rec.candidates) {
    if (c.config == rec.config) {
      winner_found = true;
      EXPECT_EQ(c.outcome, Outcome::passed) << c.reason;
      EXPECT_EQ(c.time_us, rec.time_us);
    }
    if (c.outcome != Outcome::passed) {
      EXPECT_FALSE(c.reason.empty());
      ADD_FAILURE() << "on a plain shape every candidate should pass: " << c.config << ": " << c.reason;
    }
  }
  EXPECT_TRUE(winner_found);

  // Only what was measured was compiled (nothing ahead of the strategy's batches), and the
  // phases account for the shape's time.
  std::set<std::string> kernels;
  for (const CandidateResult& c : rec.candidates) {
    KernelConfig k = parse_config(c.config);
    k.split_k = 1;
    kernels.insert(kernel_name(k, job.dtype));
  }
  EXPECT_LE(compiles, kernels.size());
  const TunePhases& ph = result->phases;
  EXPECT_GT(ph.timing, 0.0);
  EXPECT_GT(ph.verify, 0.0);
  EXPECT_GE(ph.compile_wait, 0.0);
  EXPECT_LE(ph.setup + ph.ceiling + ph.compile_wait + ph.load + ph.verify + ph.timing + ph.finalists, result->seconds);

  const TuningCache reader(path, CacheMode::read_only);
  const Resolved r = resolve_config(&reader, ctx.info().id, job.shape, job.dtype);
  EXPECT_EQ(r.source, ConfigSource::exact);
  EXPECT_EQ(to_string(r.config), rec.config);
  ASSERT_TRUE(reader.peak(ctx.info().id));

  // tune_on_devices skips it now, and re-tunes it with force.
  std::vector<JobOutcome> again = tune_on_devices({job}, {0}, path, TuneOptions{}, /*force=*/false);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].status, JobStatus::skipped);
  ASSERT_TRUE(again[0].existing);
  EXPECT_EQ(again[0].existing->config, rec.config);
}

TEST(TunerGpu, TuneOnDevicesWithAnUnalignedK) {
  GEMVTUNE_REQUIRE_GPU();
  cache_test::TempDir dir;
  // K = 1004 bf16: rows are 2008 bytes, so plain 16-byte loads are misaligned: the winner
  // either falls back to narrower loads, as `run` does, or is an aligned-body (`_al`) kernel,
  // which reads each row's head apart and the body with 16-byte loads (issue 14).
  const TuneJob job{{256, 1004}, DType::bf16};
  std::size_t started = 0;
  TuneCallbacks callbacks;
  callbacks.on_start = [&](std::size_t jobs, std::size_t) { started = jobs; };
  const std::vector<JobOutcome> out = tune_on_devices({job}, {0}, dir.file("c.sqlite"), TuneOptions{}, false, callbacks);
  EXPECT_EQ(started, 1u);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].status, JobStatus::tuned) << out[0].error;
  const KernelConfig winner = parse_config(out[0].result->record.config);
  EXPECT_TRUE(winner.vec_bytes <= 8 || (winner.aligned_body && winner.vec_bytes == 16)) << out[0].result->record.config;
}

// After its search the tuner measures the balanced twins (search_space.hpp) of its fastest
// plain tensor-core candidate, the leader or not (a ring config may lead): on 28672x4096
// int4g128 at M = 1 a grid of 1792 tiles does not fill the SMs evenly in power-of-two blocks,
// so twins are measured, each the twin of a candidate measured before it, and every candidate
// outside the space is such a twin.
// Tunes job into a fresh cache of its own.
ShapeResult tune_into_fresh_cache(const jit::Context& ctx, const TuneJob& job) {
  cache_test::TempDir dir;
  TuningCache cache(dir.file("c.sqlite"), CacheMode::read_write);
  Tuner tuner(ctx, cache);
  return tuner.tune(job, TuneOptions{});
}

TEST(TunerGpu, MeasuresTheLeadersBalancedTwins) {
  GEMVTUNE_REQUIRE_GPU();
  const TuneJob job{{28672, 4096}, DType::bf16, 1, WeightFormat::int4_g128};
  jit::Context ctx(0);
  const ShapeResult result = tune_into_fresh_cache(ctx, job);
  const std::vector<CandidateResult>& all = result.record.candidates;
  std::set<std::string> space;
  for (const KernelConfig& c : search_space_for(job.dtype, job.shape, 1, job.weights)) space.insert(to_string(c));
  std::size_t twins = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (space.count(all[i].config)) continue;
    ++twins;
    const KernelConfig twin = parse_config(all[i].config);
    bool of_earlier = false;
    for (std::size_t j = 0; j < i && !of_earlier; ++j)
      for (const KernelConfig& t : balanced_twins(parse_config(all[j].config), job.dtype, job.shape, 1, job.weights,
                                                  ctx.info().id.sm_count))
        of_earlier = of_earlier || t == twin;
    EXPECT_TRUE(of_earlier) << all[i].config << " is not the twin of a candidate measured before it";
    EXPECT_EQ(all[i].outcome, Outcome::passed) << all[i].config << ": " << all[i].reason;
  }
  EXPECT_GE(twins, 1u);
  EXPECT_LE(twins, 4u);
  std::printf("[gemvtune] 28672x4096 int4g128: %zu candidates, %zu twins, winner %s %.2f us\n", all.size(), twins,
              result.record.config.c_str(), result.record.time_us);
}

// fp8 at M = 16 on 28672x4096: the candidates that hold more than 128 registers get their
// register-capped twins measured after the strategy (and after the balanced twins).
TEST(TunerGpu, MeasuresTheRegisterCappedTwins) {
  GEMVTUNE_REQUIRE_GPU();
  const jit::Context ctx(0);
  const ShapeResult result = tune_into_fresh_cache(ctx, {{28672, 4096}, DType::bf16, 16, WeightFormat::fp8});
  const std::vector<CandidateResult>& all = result.record.candidates;
  std::size_t capped = 0, passed = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const KernelConfig c = parse_config(all[i].config);
    if (!c.reg_cap) continue;
    ++capped;
    passed += all[i].outcome == Outcome::passed;
    KernelConfig plain = c;
    plain.reg_cap = false;
    bool of_earlier = false;
    for (std::size_t j = 0; j < i && !of_earlier; ++j)
      of_earlier = all[j].config == to_string(plain) && all[j].outcome == Outcome::passed;
    EXPECT_TRUE(of_earlier) << all[i].config << " is not the capped twin of a passing candidate measured before it";
    EXPECT_EQ(all[i].outcome, Outcome::passed) << all[i].config << ": " << all[i].reason;
  }
  EXPECT_GE(capped, 3u);
  std::printf("[gemvtune] 16x28672x4096 fp8: %zu candidates, %zu register-capped twins (%zu passed), winner %s %.2f us\n",
              all.size(), capped, passed, result.record.config.c_str(), result.record.time_us);
}

TEST(TunerGpu, PeakStreamsAtLeastFourGiB) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  const PeakRecord p = measure_peak(ctx);
  EXPECT_EQ(p.gpu, ctx.info().id);
  EXPECT_GT(p.gbps, 100.0);
  if (ctx.info().global_mem_bytes > (std::int64_t{16} << 30)) {
    EXPECT_GE(p.bytes, std::int64_t{4} << 30);
  }
}

// The first tune into a new cache measures the read ceiling while the pool compiles (tune()):
// the ceiling is stored, and the record's share of it is against that measurement, not the
// model's default the first ranking used.
TEST(TunerGpu, FirstTuneIntoANewCacheMeasuresAndUsesTheCeiling) {
  GEMVTUNE_REQUIRE_GPU();
  cache_test::TempDir dir;
  jit::Context ctx(0);
  TuningCache cache(dir.file("fresh.sqlite"), CacheMode::read_write);
  ASSERT_FALSE(cache.peak(ctx.info().id));
  Tuner tuner(ctx, cache);
  const ShapeResult result = tuner.tune(TuneJob{{256, 2048}, DType::bf16}, TuneOptions{});
  const std::optional<PeakRecord> peak = cache.peak(ctx.info().id);
  ASSERT_TRUE(peak);
  EXPECT_GT(peak->gbps, 100.0);
  EXPECT_DOUBLE_EQ(tuner.ceiling_gbps(), peak->gbps);
  const TuneRecord& rec = result.record;
  EXPECT_NEAR(rec.pct_of_ceiling, 100.0 * rec.gbps / peak->gbps, 1e-6 * rec.pct_of_ceiling);
  for (const CandidateResult& c : rec.candidates) {
    if (c.outcome != Outcome::passed) continue;
    EXPECT_NEAR(c.pct_of_ceiling, 100.0 * c.gbps / peak->gbps, 1e-6 * c.pct_of_ceiling) << c.config;
  }
  EXPECT_LE(result.measured, model_budget(search_space_for(DType::bf16, Shape{256, 2048}).size(),
                                          strategy_options_for(search_space_for(DType::bf16, Shape{256, 2048}).size(),
                                                               256.0 * 2048 * 2)));
}

// TuneJob::after: the finalists are timed right after a call of that shape, the winner is the
// fastest there (or the back-to-back winner within 1% of it), and the stored record keeps the
// back-to-back times. A neighbour that cannot be built leaves the back-to-back winner, with the
// reason.
TEST(TunerGpu, AfterRanksTheFinalistsRightAfterTheCallBeforeThem) {
  GEMVTUNE_REQUIRE_GPU();
  cache_test::TempDir dir;
  jit::Context ctx(0);
  TuningCache cache(dir.file("after.sqlite"), CacheMode::read_write);
  Tuner tuner(ctx, cache);
  const ShapeResult r = tuner.tune(TuneJob{{1024, 4096}, DType::bf16, 1, WeightFormat::dense, Shape{4096, 4096}}, TuneOptions{});
  ASSERT_TRUE(r.after);
  const AfterRanking& a = *r.after;
  EXPECT_EQ(a.error, "");
  EXPECT_EQ(a.after, (Shape{4096, 4096}));
  EXPECT_FALSE(a.after_tuned);  // 4096x4096 is not in this cache: the model's default ran before
  GpuModelParams model;
  model.sm_count = ctx.info().id.sm_count;
  model.read_ceiling_gbps = tuner.ceiling_gbps();
  EXPECT_EQ(a.after_config, to_string(default_config(DType::bf16, Shape{4096, 4096}, model)));
  EXPECT_GT(a.after_us, 1.0);
  ASSERT_EQ(a.finalists.size(), TuneOptions{}.finalists);
  const auto& f = a.finalists;
  EXPECT_EQ(a.alone_winner, f.front().config);
  const auto fastest_after = std::min_element(f.begin(), f.end(), [](const auto& x, const auto& y) { return x.after_us < y.after_us; });
  for (const auto& x : f) {
    EXPECT_GE(x.alone_us, f.front().alone_us) << x.config;  // fastest alone first
    EXPECT_GT(x.after_us, 0.0) << x.config;
    // The stored candidate time is the back-to-back median, not the time after the neighbour.
    const auto c = std::find_if(r.record.candidates.begin(), r.record.candidates.end(),
                                [&](const CandidateResult& cr) { return cr.config == x.config; });
    ASSERT_NE(c, r.record.candidates.end()) << x.config;
    EXPECT_DOUBLE_EQ(c->time_us, x.alone_us) << x.config;
  }
  if (f.front().after_us > fastest_after->after_us * 1.01)
    EXPECT_EQ(r.record.config, fastest_after->config);
  else
    EXPECT_EQ(r.record.config, a.alone_winner);

  // The same job after 4096x4096 tuned: the neighbour is now the cache's entry.
  const ShapeResult before = tuner.tune(TuneJob{{4096, 4096}, DType::bf16}, TuneOptions{});
  const ShapeResult again = tuner.tune(TuneJob{{1024, 4096}, DType::bf16, 1, WeightFormat::dense, Shape{4096, 4096}}, TuneOptions{});
  ASSERT_TRUE(again.after);
  EXPECT_TRUE(again.after->after_tuned);
  EXPECT_EQ(again.after->after_config, before.record.config);

  // A neighbour shape no kernel can run: the back-to-back winner, and why.
  const ShapeResult bad = tuner.tune(TuneJob{{1024, 4096}, DType::bf16, 1, WeightFormat::dense, Shape{0, 4096}}, TuneOptions{});
  ASSERT_TRUE(bad.after);
  EXPECT_NE(bad.after->error.find("0x4096"), std::string::npos) << bad.after->error;
  EXPECT_TRUE(bad.after->finalists.empty());
  EXPECT_EQ(bad.record.config, bad.after->alone_winner);
}
