// Rows in the cache file that store() would refuse (issue 10, items 3 and 4): written by
// another tool, a newer build or by hand, they were listed, served by `query`, beat every
// later import (a -5 us row), exported as documents `import` refuses, or made `list` and
// `export` fail outright. Now they are left out with a warning and replaced by imports.
#include "cli/sandbox.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::cli_test {
namespace {

using cache_test::make_key;
using cache_test::make_record;
using cache_test::raw_sql;

const char* const kH200 = "NVIDIA H200/132sm/cc9.0";

CacheKey current_key(std::int64_t n, std::int64_t k) {
  return make_key(n, k, cache_test::h200(), DType::bf16, 1, template_version());
}

// Item 3: each corruption of the 4096x4096 winner makes it unusable.
TEST_F(Sandbox, UnusableRowsAreNeitherListedNorServedAndImportReplacesThem) {
  struct Corruption {
    std::string what, sql;
    bool same_key;  // the row still holds the H200 key, so an import replaces it
  };
  const std::vector<Corruption> corruptions = {
      {"negative time", "UPDATE tuned SET time_us = -5", true},
      {"zero time", "UPDATE tuned SET time_us = 0", true},
      {"infinite time", "UPDATE tuned SET time_us = 9e999", true},
      {"text as time", "UPDATE tuned SET time_us = 'fast'", true},
      {"config garbage", "UPDATE tuned SET config = 'garbage'", true},
      {"no SMs", "UPDATE tuned SET sm_count = -1", false},
      {"compute capability 0", "UPDATE tuned SET cc_major = 0", false},
      {"32-bit wrap of the SM count", "UPDATE tuned SET sm_count = 4294967296 + 132", false},
  };
  for (const auto& [what, sql, same_key] : corruptions) {
    SCOPED_TRACE(what);
    cache_test::TempDir scratch;
    const std::string db = scratch.file("cache.sqlite");
    {
      TuningCache cache(db, CacheMode::read_write);
      cache.store(make_record(current_key(4096, 4096), "t128_r2_kw1_v16_u4_sk1_cs", 10.0));
    }
    raw_sql(db, sql);

    const CliResult list = run({"list", "--db", db, "--json"});
    ASSERT_EQ(list.status, 0) << shown(list);
    EXPECT_TRUE(Json::parse(list.out)["tuned"].empty()) << list.out;
    EXPECT_TRUE(contains(list.err, "warning: 1 row")) << shown(list);

    const CliResult query = run({"query", "--shape", "4096x4096", "--gpu", kH200, "--db", db, "--json"});
    ASSERT_EQ(query.status, 0) << shown(query);
    EXPECT_EQ(Json::parse(query.out)["source"], "default") << query.out;

    // A valid, slower entry replaces the unusable one instead of being "kept" behind it.
    const std::string doc = write_file("doc.json", export_of({make_record(current_key(4096, 4096),
                                                                          "t256_r2_kw2_v16_u2_sk1_cs_pdl", 20.0)}).dump());
    const CliResult import = run({"import", doc, "--db", db});
    ASSERT_EQ(import.status, 0) << shown(import);
    EXPECT_TRUE(contains(import.out, same_key ? "0 added, 1 replaced, 0 kept" : "1 added, 0 replaced, 0 kept"))
        << shown(import);
    const CliResult after = run({"query", "--shape", "4096x4096", "--gpu", kH200, "--db", db, "--json"});
    EXPECT_EQ(Json::parse(after.out)["config"], "t256_r2_kw2_v16_u2_sk1_cs_pdl") << after.out;
  }
}

// Item 4: one good entry among rows that break the rules in every way the issue found.
TEST_F(Sandbox, ExportLeavesOutWhatImportWouldRefuseAndListStillWorks) {
  const std::string db = dir.file("cache.sqlite");
  {
    TuningCache cache(db, CacheMode::read_write);
    for (std::int64_t n : {1024, 2048, 3072, 4096, 5120, 6144}) cache.store(make_record(make_key(n, 4096)));
    cache.store_peak(PeakRecord{cache_test::h200(), 4800.0, 1 << 30, 13000, 1764417600});
  }
  raw_sql(db,
          "UPDATE tuned SET time_us = 9e999 WHERE n = 2048;"          // exported as null
          "UPDATE tuned SET time_us = 0 WHERE n = 3072;"
          "UPDATE tuned SET n = 0 WHERE n = 4096;"
          "UPDATE tuned SET dtype = 'int3' WHERE n = 5120;"           // made list/export fail
          "UPDATE tuned SET gpu_name = CAST(X'48323030FF' AS TEXT) WHERE n = 6144;"  // not UTF-8
          "UPDATE peaks SET gbps = 0;"
          "UPDATE candidates SET time_us = -1 WHERE seq = 1 AND tuned_id ="
          " (SELECT id FROM tuned WHERE n = 1024);");

  const CliResult list = run({"list", "--db", db});
  ASSERT_EQ(list.status, 0) << shown(list);
  EXPECT_TRUE(contains(list.out, "1 tuned entries")) << shown(list);
  EXPECT_TRUE(contains(list.err, "int3")) << shown(list);

  const std::string out = dir.file("backup.json");
  const CliResult exported = run({"export", "--db", db, "--out", out});
  ASSERT_EQ(exported.status, 0) << shown(exported);
  EXPECT_FALSE(contains(exported.err, "json.exception")) << shown(exported);
  EXPECT_TRUE(contains(exported.err, "warning: 7 rows of " + db)) << shown(exported);
  EXPECT_TRUE(contains(exported.err, "candidate 1")) << shown(exported);

  const CliResult restored = run({"import", out, "--db", dir.file("restored.sqlite")});
  ASSERT_EQ(restored.status, 0) << shown(restored);
  EXPECT_TRUE(contains(restored.out, "1 added, 0 replaced, 0 kept")) << shown(restored);
  TuningCache copy(dir.file("restored.sqlite"), CacheMode::read_only);
  const auto entry = copy.find(make_key(1024, 4096), true);
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->candidates.size(), 5u);  // the bad candidate only is left out
  EXPECT_FALSE(copy.peak(cache_test::h200()).has_value());
}

}  // namespace
}  // namespace gemvtune::cli_test
