// Rows a cache file may hold that store() would refuse (issue 10, item 3), and the
// validation of what goes in (item 2): written by another tool, a newer build or by hand,
// such a row is never served (find, contains, nearest, list, peak read it as absent), is
// described by problems(), and is replaced by store() and by any valid import.
#include <gtest/gtest.h>

#include <sstream>

#include "cache_test_util.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

using cache_test::make_key;
using cache_test::make_record;
using cache_test::raw_sql;
using cache_test::TempDir;

const char* const kWinner = "t128_r2_kw1_v16_u4_sk1_cs";

TEST(CacheUnusableRows, AreNotServedAreDescribedAndAreReplaced) {
  const std::vector<std::pair<std::string, std::string>> corruptions = {
      {"UPDATE tuned SET time_us = -5", "time_us"},
      {"UPDATE tuned SET time_us = 0", "time_us"},
      {"UPDATE tuned SET time_us = 9e999", "time_us"},
      {"UPDATE tuned SET gbps = -1", "gbps"},
      {"UPDATE tuned SET config = 't33_r1_kw1_v16_u2_sk1_cs'", "breaks the config rules"},
      {"UPDATE tuned SET config = 'garbage'", "not a kernel config"},
      {"UPDATE tuned SET dtype = 'int3'", "int3"},
      {"UPDATE tuned SET weights = 'int3g7'", "unknown weight format 'int3g7'"},
      {"UPDATE tuned SET weights = 'INT8'", "unknown weight format 'INT8'"},
      {"UPDATE tuned SET template_version = CAST(X'74706CFF' AS TEXT)", "UTF-8"},
  };
  for (const auto& [sql, expected] : corruptions) {
    SCOPED_TRACE(sql);
    TempDir dir;
    const std::string path = dir.file("cache.sqlite");
    TuningCache cache(path, CacheMode::read_write);
    const CacheKey key = make_key(4096, 4096);
    cache.store(make_record(key, kWinner, 10.0));
    cache.store(make_record(make_key(8192, 4096), kWinner, 20.0));  // a usable neighbour
    raw_sql(path, sql + " WHERE n = 4096");

    EXPECT_FALSE(cache.find(key).has_value());
    EXPECT_FALSE(cache.contains(key));
    const auto near = cache.nearest(key, {});
    ASSERT_TRUE(near.has_value());
    EXPECT_EQ(near->key.shape.n, 8192) << "the unusable exact row was served";
    ASSERT_EQ(cache.list().size(), 1u);
    const std::vector<std::string> problems = cache.problems();
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("tuned row"), std::string::npos) << problems[0];
    EXPECT_NE(problems[0].find(expected), std::string::npos) << problems[0];

    // The next store of the key replaces the row (the unique key was still taken by it).
    if (sql.find("dtype") == std::string::npos && sql.find("template_version") == std::string::npos &&
        sql.find("weights") == std::string::npos) {
      cache.store(make_record(key, kWinner, 30.0));
      ASSERT_TRUE(cache.find(key).has_value());
      EXPECT_EQ(cache.find(key)->time_us, 30.0);
      EXPECT_TRUE(cache.problems().empty());
    }
  }
}

TEST(CacheUnusableRows, BadCandidatesAreLeftOutOfTheirRecord) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  TuningCache cache(path, CacheMode::read_write);
  const CacheKey key = make_key(4096, 4096);
  cache.store(make_record(key));
  raw_sql(path, "UPDATE candidates SET outcome = 'great' WHERE seq = 2;"
                "UPDATE candidates SET time_us = -1 WHERE seq = 4;");
  const auto found = cache.find(key, true);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->candidates.size(), 4u);
  EXPECT_EQ(cache.problems().size(), 2u);
}

TEST(CacheUnusableRows, BadPeaksReadAsAbsent) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  TuningCache cache(path, CacheMode::read_write);
  cache.store_peak(PeakRecord{cache_test::h200(), 4800.0, 1 << 30, 13000, 1764417600});
  for (const char* sql : {"UPDATE peaks SET gbps = 0", "UPDATE peaks SET gbps = 9e999", "UPDATE peaks SET bytes = -1"}) {
    SCOPED_TRACE(sql);
    raw_sql(path, "UPDATE peaks SET gbps = 4800, bytes = 1");
    ASSERT_TRUE(cache.peak(cache_test::h200()).has_value());
    raw_sql(path, sql);
    EXPECT_FALSE(cache.peak(cache_test::h200()).has_value());
    ASSERT_EQ(cache.problems().size(), 1u);
    EXPECT_NE(cache.problems()[0].find("peak row (NVIDIA H200/132sm/cc9.0)"), std::string::npos) << cache.problems()[0];
  }
}

// Item 2 at the store() door: the same rules as import, through parse_config and why_invalid.
TEST(CacheValidation, StoreRefusesConfigsTextAndGpusThatCannotBeUsed) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  TuningCache cache(path, CacheMode::read_write);
  const TuneRecord good = make_record(make_key(4096, 4096));
  const auto refused = [&](const std::string& what, auto change, const std::string& expected) {
    SCOPED_TRACE(what);
    TuneRecord r = good;
    change(r);
    try {
      cache.store(r);
      ADD_FAILURE() << "stored";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
      EXPECT_LT(std::string(e.what()).size(), 1000u);
    }
  };
  refused("garbage", [](TuneRecord& r) { r.config = "garbage"; }, "winner config \"garbage\" is not a kernel config");
  refused("t33", [](TuneRecord& r) { r.config = "t33_r1_kw1_v16_u2_sk1_cs"; }, "breaks the config rules");
  refused("pf without pdl", [](TuneRecord& r) { r.config = "t128_r2_kw1_v16_u4_sk1_cs_pf"; }, "not a kernel config");
  refused("1 MB", [](TuneRecord& r) { r.config = std::string(1 << 20, 'x'); }, "(1048576 bytes)");
  refused("passed candidate breaking rules", [](TuneRecord& r) { r.candidates[1].config = "t128_r8_kw1_v16_u8_sk1_cs"; },
          "candidate 1: config");
  refused("failed candidate not parsing", [](TuneRecord& r) { r.candidates[3].config = "??"; }, "candidate 3: config");
  refused("passed candidate timed 0", [](TuneRecord& r) { r.candidates[1].time_us = 0; }, "candidate 1");
  refused("non-UTF-8 gpu name", [](TuneRecord& r) { r.key.gpu.name = "H200\xff"; }, "UTF-8");
  refused("non-UTF-8 reason", [](TuneRecord& r) { r.candidates[2].reason = "\xc3"; }, "UTF-8");
  refused("cc 9.10", [](TuneRecord& r) { r.key.gpu.cc_minor = 10; }, "compute capability");
  EXPECT_EQ(cache_test::raw_query_int(path, "SELECT count(*) FROM tuned"), 0);
  cache.store(good);
  EXPECT_TRUE(cache.problems().empty());
}

// Item 1 at the library door: no crash, a message naming the source and the problem.
TEST(CacheValidation, DeeplyNestedJsonIsRefusedWhileReading) {
  for (const std::string& text : {std::string(100000, '[') + std::string(100000, ']'),
                                  "{\"format\": " + std::string(100000, '[')}) {
    std::istringstream in(text);
    try {
      read_cache_json(in, "deep.json");
      ADD_FAILURE() << "read";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("deep.json: ", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find("nested more than 16 deep"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gemvtune
