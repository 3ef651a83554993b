// export_json / import_json: a full round trip into a fresh file, the merge rule (the
// faster entry wins per key), and malformed or invalid documents that leave the cache as
// it was.
#include <gtest/gtest.h>

#include <sstream>

#include "cache_test_util.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

using cache_test::make_key;
using cache_test::make_record;
using cache_test::TempDir;

// Configs as labels of the entries (any valid, distinct config text would do).
const std::string cfg = cache_test::label_config(10);
const std::string ours_a = cache_test::label_config(11);
const std::string ours_b = cache_test::label_config(12);
const std::string ours_tie = cache_test::label_config(13);
const std::string theirs_a = cache_test::label_config(14);
const std::string theirs_b = cache_test::label_config(15);
const std::string theirs_c = cache_test::label_config(16);
const std::string theirs_tie = cache_test::label_config(17);
const std::string new_entry = cache_test::label_config(18);
const std::string new_entry_2 = cache_test::label_config(19);

std::string export_text(const TuningCache& cache) {
  std::ostringstream out;
  cache.export_json(out);
  return out.str();
}

TuningCache::ImportStats import_text(TuningCache& cache, const std::string& text) {
  std::istringstream in(text);
  return cache.import_json(in);
}

// A cache with a little of everything: several families, odd strings, exact doubles.
std::vector<TuneRecord> sample_records() {
  std::vector<TuneRecord> records;
  records.push_back(make_record(make_key(4096, 14336)));
  TuneRecord odd = make_record(make_key(1, 2147483647, GpuIdentity{"GPU \"quoted\" ü", 8, 8, 9},
                                        DType::f32, 16, "tpl/ünïcode\n2"));
  odd.time_us = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  odd.gbps = 1e-300;
  odd.pct_of_ceiling = 99.99999999999999;
  odd.timestamp = -1;
  odd.driver_version = 0;
  odd.candidates.clear();
  records.push_back(odd);
  records.push_back(make_record(make_key(8192, 8192, cache_test::h200(), DType::f16, 4), cfg, 3.5));
  // The same key as the first but for int4 weights: an entry of its own.
  records.push_back(make_record(make_key(4096, 14336, WeightFormat::int4_g128), cfg, 2.5));
  return records;
}

TEST(CacheJson, ExportImportRoundTripsEveryField) {
  TempDir dir;
  TuningCache source(dir.file("source.sqlite"), CacheMode::read_write);
  const std::vector<TuneRecord> records = sample_records();
  for (const TuneRecord& r : records) source.store(r);
  const PeakRecord peak{cache_test::h200(), 4812.123456789, std::int64_t{1} << 33, 13000, 1764417600};
  source.store_peak(peak);

  const std::string exported = export_text(source);
  EXPECT_NE(exported.find("\"format_version\": 2"), std::string::npos) << exported.substr(0, 200);
  EXPECT_NE(exported.find("\"weights\": \"int4g128\""), std::string::npos);
  EXPECT_NE(exported.find("\"weights\": \"dense\""), std::string::npos);
  EXPECT_NE(exported.find("\n  "), std::string::npos) << "not indented";

  TuningCache copy(dir.file("copy.sqlite"), CacheMode::read_write);
  const TuningCache::ImportStats stats = import_text(copy, exported);
  EXPECT_EQ(stats.added, 4);
  EXPECT_EQ(stats.replaced, 0);
  EXPECT_EQ(stats.kept, 0);

  for (const TuneRecord& r : records) {
    const auto found = copy.find(r.key, true);
    ASSERT_TRUE(found.has_value()) << r.config;
    cache_test::expect_same_record(*found, r);
  }
  const auto copied_peak = copy.peak(peak.gpu);
  ASSERT_TRUE(copied_peak.has_value());
  EXPECT_TRUE(copied_peak->gpu == peak.gpu);
  EXPECT_EQ(copied_peak->gbps, peak.gbps);
  EXPECT_EQ(copied_peak->bytes, peak.bytes);
  EXPECT_EQ(copied_peak->driver_version, peak.driver_version);
  EXPECT_EQ(copied_peak->timestamp, peak.timestamp);
  EXPECT_EQ(export_text(copy), exported);  // and so byte-identical in JSON form too
}

TEST(CacheJson, ImportKeepsTheFasterEntryPerKey) {
  TempDir dir;
  TuningCache ours(dir.file("ours.sqlite"), CacheMode::read_write);
  TuningCache theirs(dir.file("theirs.sqlite"), CacheMode::read_write);
  const CacheKey a = make_key(1024, 1024), b = make_key(2048, 2048), c = make_key(4096, 4096),
                 tie = make_key(512, 512);
  ours.store(make_record(a, ours_a, 10.0));
  ours.store(make_record(b, ours_b, 20.0));
  ours.store(make_record(tie, ours_tie, 5.0));
  TuneRecord faster_a = make_record(a, theirs_a, 5.0);
  faster_a.candidates.resize(1);
  theirs.store(faster_a);
  theirs.store(make_record(b, theirs_b, 30.0));
  theirs.store(make_record(c, theirs_c, 7.0));
  theirs.store(make_record(tie, theirs_tie, 5.0));
  ours.store_peak(PeakRecord{cache_test::h200(), 4000.0, 1, 1, 1});
  theirs.store_peak(PeakRecord{cache_test::h200(), 4500.0, 2, 2, 2});

  const TuningCache::ImportStats stats = import_text(ours, export_text(theirs));
  EXPECT_EQ(stats.added, 1);
  EXPECT_EQ(stats.replaced, 1);
  EXPECT_EQ(stats.kept, 2);

  const auto found_a = ours.find(a, true);
  ASSERT_TRUE(found_a.has_value());
  cache_test::expect_same_record(*found_a, faster_a);  // candidates replaced with the winner
  EXPECT_EQ(ours.find(b)->config, ours_b);
  EXPECT_EQ(ours.find(c)->config, theirs_c);
  EXPECT_EQ(ours.find(tie)->config, ours_tie);
  EXPECT_EQ(ours.find(b, true)->candidates.size(), 6u);
  EXPECT_EQ(ours.peak(cache_test::h200())->gbps, 4500.0);
  EXPECT_EQ(cache_test::raw_query_int(ours.path(), "SELECT count(*) FROM candidates"), 1 + 6 + 6 + 6);
}

// Each document is wrong in a different way; import throws InvalidArgument with the given words
// and the cache (which already holds data) is exactly as before.
TEST(CacheJson, MalformedImportChangesNothing) {
  TempDir dir;
  TuningCache cache(dir.file("cache.sqlite"), CacheMode::read_write);
  for (const TuneRecord& r : sample_records()) cache.store(r);
  cache.store_peak(PeakRecord{cache_test::h200(), 4000.0, 1, 1, 1});
  const std::string before = export_text(cache);

  // A valid document to corrupt: a new key first, so a partial import would be visible.
  TuningCache other(dir.file("other.sqlite"), CacheMode::read_write);
  other.store(make_record(make_key(77, 77), new_entry, 1.0));
  other.store(make_record(make_key(78, 78), new_entry_2, 1.0));
  const std::string valid = export_text(other);
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = valid;
    const std::size_t at = text.rfind(from);  // in the last record
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? text : text.replace(at, from.size(), to);
  };

  const std::vector<std::pair<std::string, std::string>> cases = {
      {valid.substr(0, valid.size() / 2), "malformed JSON"},
      {"", "malformed JSON"},
      {"[1, 2, 3]", "expected an object"},
      {R"({"format":"something-else","format_version":1,"tuned":[],"peaks":[]})", "format"},
      {R"({"format":"gemvtune-cache","format_version":3,"tuned":[],"peaks":[]})", "newer"},
      {R"({"format":"gemvtune-cache","format_version":1,"peaks":[]})", "tuned: missing"},
      {replaced("\"time_us\": 1.0", "\"time_us\": \"fast\""), "tuned[1].candidates[0].time_us: expected a number"},
      {replaced("\"n\": 78", "\"n\": -78"), "tuned[1]"},
      {replaced("\"dtype\": \"bf16\"", "\"dtype\": \"int4\""), "tuned[1].dtype"},
      {replaced("\"weights\": \"dense\"", "\"weights\": \"int5g128\""),
       "tuned[1].weights: unknown weight format 'int5g128' (expected one of dense, int8, fp8, fp8t, int4g32, "
       "int4g64, int4g128)"},
      {replaced("\"weights\": \"dense\"", "\"weights\": \"bf16\""), "tuned[1].weights: unknown weight format"},
      {replaced("\"weights\": \"dense\"", "\"weights\": 4"), "tuned[1].weights: expected a string"},
      {replaced("\"weights\": \"dense\"", "\"weights\": null"), "tuned[1].weights: expected a string"},
      {replaced("\"outcome\": \"passed\"", "\"outcome\": \"great\""), "tuned[1].candidates[1].outcome"},
      {replaced("\"candidates\": [", "\"candidates\": {"), "malformed JSON"},
      {replaced("\"sm_count\": 132", "\"sm_count\": 1.5"), "tuned[1].gpu.sm_count"},
  };
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(expected);
    try {
      import_text(cache, text);
      ADD_FAILURE() << "imported: " << text.substr(0, 200);
    } catch (const InvalidArgument& e) {  // bad input, not a problem of the cache file
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
    EXPECT_EQ(export_text(cache), before);
  }
  EXPECT_EQ(import_text(cache, valid).added, 2);  // the uncorrupted document does import
}

// Exports of format version 1 (before quantized weights) have no "weights": their records
// import as dense, and merge with the dense entries of the same key.
TEST(CacheJson, DocumentWithoutWeightsImportsAsDense) {
  TempDir dir;
  TuningCache cache(dir.file("cache.sqlite"), CacheMode::read_write);
  const std::string v1 = R"({
    "format": "gemvtune-cache", "format_version": 1,
    "tuned": [{
      "gpu": {"name": "NVIDIA H200", "sm_count": 132, "cc_major": 9, "cc_minor": 0},
      "n": 4096, "k": 4096, "dtype": "bf16", "batch": 1, "template_version": "tpl-1",
      "config": "t128_r2_kw1_v16_u4_sk1_cs", "time_us": 8.5, "gbps": 3950.0, "pct_of_ceiling": 87.0,
      "strategy": "model", "driver_version": 13000, "nvrtc_version": "13.0", "timestamp": 1764417600,
      "candidates": [{"config": "t128_r2_kw1_v16_u4_sk1_cs", "outcome": "passed", "reason": "",
                      "time_us": 8.5, "gbps": 3950.0, "pct_of_ceiling": 87.0}]
    }],
    "peaks": []
  })";
  cache.store(make_record(make_key(4096, 4096, WeightFormat::int4_g128), cfg, 3.0));
  EXPECT_EQ(import_text(cache, v1).added, 1);
  const auto dense = cache.find(make_key(4096, 4096), true);
  ASSERT_TRUE(dense.has_value());
  EXPECT_EQ(dense->key.weights, WeightFormat::dense);
  EXPECT_EQ(dense->config, "t128_r2_kw1_v16_u4_sk1_cs");
  EXPECT_EQ(dense->candidates.size(), 1u);
  EXPECT_EQ(cache.find(make_key(4096, 4096, WeightFormat::int4_g128))->config, cfg);  // untouched

  // The same entry again, faster and now with "weights": "dense": the same key, replaced.
  std::string v2 = v1;
  v2.replace(v2.find("\"batch\": 1,"), 11, "\"batch\": 1, \"weights\": \"dense\",");
  v2.replace(v2.find("\"time_us\": 8.5"), 14, "\"time_us\": 7.5");
  const TuningCache::ImportStats stats = import_text(cache, v2);
  EXPECT_EQ(stats.replaced, 1);
  EXPECT_EQ(stats.added, 0);
  EXPECT_EQ(cache.find(make_key(4096, 4096))->time_us, 7.5);
  EXPECT_EQ(cache.list().size(), 2u);

  // An unknown format names the record and lists the accepted names; nothing is written.
  std::string bad = v2;
  bad.replace(bad.find("\"weights\": \"dense\""), 18, "\"weights\": \"nf4\"");
  try {
    std::istringstream in(bad);
    cache.import_json(in, "old.json");
    FAIL() << "imported weights nf4";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("old.json: tuned[0].weights: unknown weight format 'nf4' (expected one "
                                         "of dense, int8"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(cache.find(make_key(4096, 4096))->time_us, 7.5);
}

}  // namespace
}  // namespace gemvtune
