// Storing and reading records: round trip of every field including failed candidates and
// their reasons, replacement on re-store, key fields that keep entries apart, ordering of
// list(), input validation, peaks, outcome names and moving a cache.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "cache_test_util.hpp"
#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

using cache_test::make_key;
using cache_test::make_record;
using cache_test::raw_query_int;
using cache_test::TempDir;

class CacheStoreFind : public ::testing::Test {
 protected:
  TempDir dir;
  std::string path = dir.file("cache.sqlite");
  TuningCache cache{path, CacheMode::read_write};
};

TEST_F(CacheStoreFind, RoundTripWithCandidatesAndFailureReasons) {
  TuneRecord r = make_record(make_key(4096, 14336));
  r.nvrtc_version = "13.0.48 \"quoted\" ünïcode";
  r.time_us = 12.345678901234567;
  r.timestamp = std::int64_t{1} << 40;
  cache.store(r);

  const std::optional<TuneRecord> with = cache.find(r.key, true);
  ASSERT_TRUE(with.has_value());
  cache_test::expect_same_record(*with, r);
  EXPECT_EQ(with->candidates[3].outcome, Outcome::compile_failed);
  EXPECT_EQ(with->candidates[3].reason, "ptxas: too many registers");

  const std::optional<TuneRecord> without = cache.find(r.key);
  ASSERT_TRUE(without.has_value());
  EXPECT_TRUE(without->candidates.empty());
  EXPECT_EQ(without->config, r.config);

  EXPECT_TRUE(cache.contains(r.key));
  EXPECT_FALSE(cache.contains(make_key(4096, 4096)));
  EXPECT_FALSE(cache.find(make_key(4096, 4096)).has_value());
}

// A quantized key goes through store and find, its weights in the row, and is a key of its
// own: the dense entry of the same shape is neither found for it nor replaced by it.
TEST_F(CacheStoreFind, WeightFormatRoundTripsAndKeepsEntriesApart) {
  const CacheKey dense = make_key(4096, 4096);
  const CacheKey int4 = make_key(4096, 4096, WeightFormat::int4_g128);
  EXPECT_FALSE(cache.contains(int4));
  cache.store(make_record(dense, "t128_r2_kw1_v16_u4_sk1_cs", 9.0));
  EXPECT_FALSE(cache.contains(int4));
  EXPECT_FALSE(cache.find(int4).has_value());

  const TuneRecord quantized = make_record(int4, "t256_r1_kw2_v16_u2_sk1_nc", 3.0);
  cache.store(quantized);
  const auto found = cache.find(int4, true);
  ASSERT_TRUE(found.has_value());
  cache_test::expect_same_record(*found, quantized);
  EXPECT_EQ(found->key.weights, WeightFormat::int4_g128);
  EXPECT_EQ(cache.find(dense)->config, "t128_r2_kw1_v16_u4_sk1_cs");
  EXPECT_EQ(cache.find(dense)->key.weights, WeightFormat::dense);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned WHERE weights = 'int4g128'"), 1);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates"), 12);

  // Every format is a key of its own, and list() returns each with its format.
  for (WeightFormat f : kAllWeightFormats)
    if (f != WeightFormat::dense && f != WeightFormat::int4_g128)
      cache.store(make_record(make_key(4096, 4096, f), "t128_r2_kw1_v16_u4_sk1_cs", 5.0));
  const std::vector<TuneRecord> listed = cache.list();
  ASSERT_EQ(listed.size(), std::size(kAllWeightFormats));
  for (WeightFormat f : kAllWeightFormats) {
    SCOPED_TRACE(std::string(to_string(f)));
    EXPECT_EQ(std::count_if(listed.begin(), listed.end(), [f](const TuneRecord& r) { return r.key.weights == f; }), 1);
    EXPECT_TRUE(cache.contains(make_key(4096, 4096, f)));
  }

  // Re-storing the quantized key replaces it alone.
  cache.store(make_record(int4, "t64_r1_kw1_v16_u8_sk1_nc", 2.0));
  EXPECT_EQ(cache.find(int4)->config, "t64_r1_kw1_v16_u8_sk1_nc");
  EXPECT_EQ(cache.find(dense)->config, "t128_r2_kw1_v16_u4_sk1_cs");
}

TEST_F(CacheStoreFind, ReStoreReplacesWinnerAndCandidates) {
  const CacheKey key = make_key(8192, 8192);
  cache.store(make_record(key, "t128_r2_kw1_v16_u4_sk1_cs", 20.0));
  TuneRecord second = make_record(key, "t256_r1_kw2_v16_u2_sk1_nc", 15.0);
  second.candidates.resize(2);
  second.strategy = "model";
  cache.store(second);

  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned"), 1);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates"), 2);
  const auto found = cache.find(key, true);
  ASSERT_TRUE(found.has_value());
  cache_test::expect_same_record(*found, second);
  EXPECT_EQ(cache.list().size(), 1u);
}

TEST_F(CacheStoreFind, EveryKeyFieldSeparatesEntries) {
  const CacheKey base = make_key(4096, 4096);
  std::vector<CacheKey> keys(9, base);
  keys[1].gpu.name = "NVIDIA H100 80GB HBM3";
  keys[2].gpu.sm_count = 114;
  keys[3].gpu.cc_minor = 1;
  keys[4].shape.k = 4097;
  keys[5].dtype = DType::f16;
  keys[6].batch = 4;
  keys[7].template_version = "tpl-2";
  keys[8].weights = WeightFormat::int4_g128;
  for (std::size_t i = 0; i < keys.size(); ++i)
    cache.store(make_record(keys[i], "t128_r1_kw1_v16_u2_sk1_cs", 1.0 + static_cast<double>(i)));
  EXPECT_EQ(cache.list().size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto found = cache.find(keys[i]);
    ASSERT_TRUE(found.has_value()) << i;
    EXPECT_EQ(found->time_us, 1.0 + static_cast<double>(i));
  }
}

TEST_F(CacheStoreFind, ListIsOrderedByGpuDtypeNK) {
  const GpuIdentity a{"A-GPU", 100, 9, 0};
  const GpuIdentity b{"B-GPU", 100, 9, 0};
  // Inserted out of order; dtype sorts by its name (bf16 < fp16 < fp32).
  const std::vector<CacheKey> inserted = {
      make_key(4096, 64, b, DType::bf16), make_key(64, 64, a, DType::f32),
      make_key(4096, 32, a, DType::bf16), make_key(128, 64, a, DType::f16),
      make_key(4096, 16, a, DType::bf16), make_key(64, 64, b, DType::bf16),
  };
  for (const CacheKey& k : inserted) cache.store(make_record(k));
  const std::vector<TuneRecord> listed = cache.list();
  ASSERT_EQ(listed.size(), inserted.size());
  const std::vector<std::tuple<std::string, DType, std::int64_t, std::int64_t>> expected = {
      {"A-GPU", DType::bf16, 4096, 16}, {"A-GPU", DType::bf16, 4096, 32},
      {"A-GPU", DType::f16, 128, 64},   {"A-GPU", DType::f32, 64, 64},
      {"B-GPU", DType::bf16, 64, 64},   {"B-GPU", DType::bf16, 4096, 64},
  };
  for (std::size_t i = 0; i < listed.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(listed[i].key.gpu.name, std::get<0>(expected[i]));
    EXPECT_EQ(listed[i].key.dtype, std::get<1>(expected[i]));
    EXPECT_EQ(listed[i].key.shape.n, std::get<2>(expected[i]));
    EXPECT_EQ(listed[i].key.shape.k, std::get<3>(expected[i]));
    EXPECT_TRUE(listed[i].candidates.empty());
  }
}

TEST_F(CacheStoreFind, InvalidRecordsAreRefusedAndNothingIsWritten) {
  const TuneRecord good = make_record(make_key(4096, 4096));
  std::vector<std::pair<std::string, TuneRecord>> bad;
  const auto variant = [&](const std::string& what, auto change) {
    TuneRecord r = good;
    change(r);
    bad.emplace_back(what, r);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  variant("empty config", [](TuneRecord& r) { r.config.clear(); });
  variant("zero n", [](TuneRecord& r) { r.key.shape.n = 0; });
  variant("negative k", [](TuneRecord& r) { r.key.shape.k = -5; });
  variant("k above kMaxDim", [](TuneRecord& r) { r.key.shape.k = kMaxDim + 1; });
  variant("NaN time", [nan](TuneRecord& r) { r.time_us = nan; });
  variant("infinite gbps", [inf](TuneRecord& r) { r.gbps = inf; });
  variant("zero time", [](TuneRecord& r) { r.time_us = 0; });
  variant("negative pct", [](TuneRecord& r) { r.pct_of_ceiling = -1; });
  variant("empty gpu name", [](TuneRecord& r) { r.key.gpu.name.clear(); });
  variant("batch 0", [](TuneRecord& r) { r.key.batch = 0; });
  variant("batch 17", [](TuneRecord& r) { r.key.batch = kMaxBatch + 1; });
  variant("batch 2e9", [](TuneRecord& r) { r.key.batch = 2000000000; });
  variant("unknown weight format", [](TuneRecord& r) { r.key.weights = static_cast<WeightFormat>(99); });
  variant("candidate without config", [](TuneRecord& r) { r.candidates[2].config.clear(); });
  variant("candidate NaN time", [nan](TuneRecord& r) { r.candidates[1].time_us = nan; });
  for (const auto& [what, r] : bad) {
    SCOPED_TRACE(what);
    EXPECT_THROW(cache.store(r), InvalidArgument);
  }
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned"), 0);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates"), 0);
  cache.store(good);  // the unmodified record is fine
  EXPECT_EQ(cache.list().size(), 1u);
  // A winner that cannot run its key under this build's rules is stored all the same: the rules
  // are C++ and change without the templates' version, so an older build's backup must still
  // import; resolve_config passes such a row by (ResolveTest).
  TuneRecord short_tile = good;
  short_tile.key.batch = 8;
  EXPECT_NO_THROW(cache.store(short_tile));
}

TEST_F(CacheStoreFind, PeaksAreStoredPerGpuAndReplaced) {
  const GpuIdentity h200 = cache_test::h200();
  const GpuIdentity h100{"NVIDIA H100 80GB HBM3", 132, 9, 0};
  EXPECT_FALSE(cache.peak(h200).has_value());
  cache.store_peak(PeakRecord{h200, 4200.5, std::int64_t{1} << 32, 13000, 1764417600});
  cache.store_peak(PeakRecord{h100, 3000.25, 1 << 30, 12080, 1764400000});
  cache.store_peak(PeakRecord{h200, 4400.75, std::int64_t{3} << 31, 13010, 1764417700});

  const auto p = cache.peak(h200);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->gpu == h200);
  EXPECT_EQ(p->gbps, 4400.75);
  EXPECT_EQ(p->bytes, std::int64_t{3} << 31);
  EXPECT_EQ(p->driver_version, 13010);
  EXPECT_EQ(p->timestamp, 1764417700);
  EXPECT_EQ(cache.peak(h100)->gbps, 3000.25);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM peaks"), 2);
  EXPECT_FALSE(cache.peak(GpuIdentity{"NVIDIA H200", 132, 9, 1}).has_value());

  EXPECT_THROW(cache.store_peak(PeakRecord{h200, 0.0, 1, 1, 1}), InvalidArgument);
  EXPECT_THROW(cache.store_peak(PeakRecord{h200, 100.0, 0, 1, 1}), InvalidArgument);
}

TEST(CacheOutcome, NamesRoundTripAndUnknownIsRejected) {
  for (Outcome o : {Outcome::passed, Outcome::incorrect, Outcome::compile_failed,
                    Outcome::launch_failed, Outcome::not_supported})
    EXPECT_EQ(parse_outcome(to_string(o)), o);
  EXPECT_EQ(to_string(Outcome::launch_failed), "launch_failed");
  EXPECT_THROW(parse_outcome("PASSED"), InvalidArgument);
  EXPECT_THROW(parse_outcome(""), InvalidArgument);
}

TEST(CacheMove, MovedCacheKeepsWorking) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  TuningCache first(path, CacheMode::read_write);
  TuningCache second(std::move(first));
  second.store(make_record(make_key(32, 32)));
  TuningCache third(dir.file("other.sqlite"), CacheMode::read_write);
  third = std::move(second);
  EXPECT_EQ(third.path(), path);
  EXPECT_TRUE(third.contains(make_key(32, 32)));
}

}  // namespace
}  // namespace gemvtune
