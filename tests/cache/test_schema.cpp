// Schema creation, versioning and migration: a new file gets the current schema in WAL
// mode, an empty SQLite file is initialised from version 0, a version 1 file (written with
// the v1 DDL, rows and candidates in it) is upgraded to 2 with every row kept, and a file
// from a newer build is refused without being changed.
#include <gtest/gtest.h>

#include "cache_test_util.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

using cache_test::raw_query_int;
using cache_test::raw_sql;
using cache_test::read_bytes;
using cache_test::TempDir;

constexpr std::int64_t kApplicationId = 0x474D5654;  // "GMVT", as in cache/schema.hpp
constexpr int kCurrentVersion = 2;

std::int64_t table_count(const std::string& path) {
  return raw_query_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                             "('tuned', 'candidates', 'peaks')");
}

TEST(CacheSchema, NewFileGetsCurrentVersionTablesAndWal) {
  TempDir dir;
  const std::string path = dir.file("nested/dirs/cache.sqlite");
  { TuningCache cache(path, CacheMode::read_write); EXPECT_EQ(cache.path(), path); }
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), kCurrentVersion);
  EXPECT_EQ(raw_query_int(path, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(table_count(path), 3);
  // journal_mode is persistent in the header: bytes 18 and 19 are 2 for WAL.
  const std::string bytes = read_bytes(path);
  ASSERT_GE(bytes.size(), 100u);
  EXPECT_EQ(bytes[18], 2);
  EXPECT_EQ(bytes[19], 2);
}

TEST(CacheSchema, ReopeningKeepsDataAndVersion) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  const CacheKey key = cache_test::make_key(4096, 4096);
  { TuningCache(path, CacheMode::read_write).store(cache_test::make_record(key)); }
  {
    TuningCache cache(path, CacheMode::read_write);
    EXPECT_TRUE(cache.contains(key));
  }
  TuningCache read_only(path, CacheMode::read_only);
  EXPECT_TRUE(read_only.contains(key));
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), kCurrentVersion);
}

TEST(CacheSchema, ZeroByteFileIsInitialised) {
  TempDir dir;
  const std::string path = dir.file("empty.sqlite");
  cache_test::write_bytes(path, "");
  TuningCache cache(path, CacheMode::read_write);
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), kCurrentVersion);
  EXPECT_EQ(table_count(path), 3);
}

// A real SQLite file with no schema objects (version 0) is migrated 0 -> 1 -> 2 in place.
TEST(CacheSchema, EmptySqliteFileMigratesFromVersionZero) {
  TempDir dir;
  const std::string path = dir.file("v0.sqlite");
  raw_sql(path, "PRAGMA page_size = 1024; CREATE TABLE scratch(x); DROP TABLE scratch;");
  ASSERT_GT(read_bytes(path).size(), 0u);
  ASSERT_EQ(raw_query_int(path, "PRAGMA user_version"), 0);
  ASSERT_EQ(raw_query_int(path, "SELECT count(*) FROM sqlite_master"), 0);

  // read_only cannot migrate, so it says what the file is instead of failing on a missing
  // table (and not "open it read_write", which a user of `list` cannot do).
  try {
    TuningCache cache(path, CacheMode::read_only);
    FAIL() << "read_only open of an uninitialised file succeeded";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing has been stored in it"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("read_write"), std::string::npos) << e.what();
  }

  TuningCache cache(path, CacheMode::read_write);
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), kCurrentVersion);
  EXPECT_EQ(raw_query_int(path, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(table_count(path), 3);
  cache.store(cache_test::make_record(cache_test::make_key(1024, 1024)));
  EXPECT_EQ(cache.list().size(), 1u);
}

TEST(CacheSchema, NewerSchemaIsRefusedAndLeftUnchanged) {
  TempDir dir;
  const std::string path = dir.file("future.sqlite");
  { TuningCache(path, CacheMode::read_write).store(cache_test::make_record(cache_test::make_key(64, 64))); }
  raw_sql(path, "PRAGMA user_version = 7");  // as a future build would leave it
  const std::string before = read_bytes(path);

  for (CacheMode mode : {CacheMode::read_write, CacheMode::read_only}) {
    try {
      TuningCache cache(path, mode);
      FAIL() << "a version 7 file was opened";
    } catch (const CacheError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("schema version 7 is newer than this build supports (2); refusing "
                             "to downgrade"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find(path), std::string::npos) << message;
    }
    EXPECT_EQ(read_bytes(path), before);
  }
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), 7);
}

// The DDL of schema version 1 exactly as released (cache/schema.cpp, create_v1_tables),
// marked as a version 1 gemvtune cache, with two winners (ids 5 and 9, not 1 and 2, so a
// renumbering would show), their candidates and a peak.
void write_v1_file(const std::string& path) {
  raw_sql(path, R"sql(
    CREATE TABLE tuned (
      id               INTEGER PRIMARY KEY,
      gpu_name         TEXT    NOT NULL,
      sm_count         INTEGER NOT NULL,
      cc_major         INTEGER NOT NULL,
      cc_minor         INTEGER NOT NULL,
      n                INTEGER NOT NULL,
      k                INTEGER NOT NULL,
      dtype            TEXT    NOT NULL,
      batch            INTEGER NOT NULL,
      template_version TEXT    NOT NULL,
      config           TEXT    NOT NULL,
      time_us          REAL    NOT NULL,
      gbps             REAL    NOT NULL,
      pct_of_ceiling   REAL    NOT NULL,
      strategy         TEXT    NOT NULL,
      driver_version   INTEGER NOT NULL,
      nvrtc_version    TEXT    NOT NULL,
      timestamp        INTEGER NOT NULL,
      UNIQUE (gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, template_version)
    );
    CREATE TABLE candidates (
      tuned_id       INTEGER NOT NULL REFERENCES tuned(id) ON DELETE CASCADE,
      seq            INTEGER NOT NULL,  -- position in TuneRecord::candidates
      config         TEXT    NOT NULL,
      outcome        TEXT    NOT NULL,
      reason         TEXT    NOT NULL,
      time_us        REAL    NOT NULL,
      gbps           REAL    NOT NULL,
      pct_of_ceiling REAL    NOT NULL,
      PRIMARY KEY (tuned_id, seq)
    );
    CREATE TABLE peaks (
      gpu_name       TEXT    NOT NULL,
      sm_count       INTEGER NOT NULL,
      cc_major       INTEGER NOT NULL,
      cc_minor       INTEGER NOT NULL,
      gbps           REAL    NOT NULL,
      bytes          INTEGER NOT NULL,
      driver_version INTEGER NOT NULL,
      timestamp      INTEGER NOT NULL,
      PRIMARY KEY (gpu_name, sm_count, cc_major, cc_minor)
    );
    INSERT INTO tuned VALUES
      (5, 'NVIDIA H200', 132, 9, 0, 4096, 4096, 'bf16', 1, 'tpl-1', 't128_r2_kw1_v16_u4_sk1_cs',
       8.5, 3950.0, 87.0, 'model', 13000, '13.0', 1764417600),
      (9, 'NVIDIA H200', 132, 9, 0, 1024, 4096, 'bf16', 4, 'tpl-1', 't64_r1_kw1_v16_u8_sk1_nc',
       2.5, 3350.0, 74.0, 'exhaustive', 13000, '13.0', 1764417601);
    INSERT INTO candidates VALUES
      (5, 0, 't128_r2_kw1_v16_u4_sk1_cs', 'passed', '', 8.5, 3950.0, 87.0),
      (5, 1, 't256_r1_kw2_v16_u2_sk1_nc', 'passed', '', 9.5, 3500.0, 77.0),
      (5, 2, 't512_r8_kw4_v16_u8_sk1_cs', 'compile_failed', 'ptxas: too many registers', 0, 0, 0),
      (9, 0, 't64_r1_kw1_v16_u8_sk1_nc', 'passed', '', 2.5, 3350.0, 74.0),
      (9, 1, 't32_r1_kw1_v2_u1_sk1_nc', 'not_supported', 'vector narrower than element', 0, 0, 0);
    INSERT INTO peaks VALUES ('NVIDIA H200', 132, 9, 0, 4470.0, 4294967296, 13000, 1764417600);
    PRAGMA application_id = 1196250708;
    PRAGMA user_version = 1;
  )sql");
  ASSERT_EQ(raw_query_int(path, "PRAGMA application_id"), kApplicationId);
}

TEST(CacheSchema, VersionOneFileUpgradesKeepingEveryRowAndCandidate) {
  TempDir dir;
  const std::string path = dir.file("v1.sqlite");
  write_v1_file(path);

  // read_only cannot migrate: it says so and leaves the file alone.
  const std::string before = read_bytes(path);
  try {
    TuningCache cache(path, CacheMode::read_only);
    FAIL() << "read_only open of a version 1 file succeeded";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 1 is older than this build's (2)"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_bytes(path), before);

  { TuningCache cache(path, CacheMode::read_write); }
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), kCurrentVersion);
  EXPECT_EQ(raw_query_int(path, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(table_count(path), 3);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'tuned_v2'"), 0);
  // Every row, with its id, now dense; every candidate still under its winner; the peak.
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned"), 2);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned WHERE weights = 'dense'"), 2);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned WHERE id IN (5, 9)"), 2);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates"), 5);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates WHERE tuned_id = 5"), 3);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates WHERE tuned_id = 9"), 2);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM peaks"), 1);

  // Read back through the API, read-only now that the file is current.
  TuningCache reader(path, CacheMode::read_only);
  const std::vector<TuneRecord> listed = reader.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_TRUE(reader.problems().empty());
  const CacheKey first = cache_test::make_key(4096, 4096);
  const auto found = reader.find(first, true);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->key.weights, WeightFormat::dense);
  EXPECT_EQ(found->config, "t128_r2_kw1_v16_u4_sk1_cs");
  EXPECT_EQ(found->time_us, 8.5);
  EXPECT_EQ(found->strategy, "model");
  ASSERT_EQ(found->candidates.size(), 3u);
  EXPECT_EQ(found->candidates[2].outcome, Outcome::compile_failed);
  EXPECT_EQ(found->candidates[2].reason, "ptxas: too many registers");
  CacheKey second = cache_test::make_key(1024, 4096);
  second.batch = 4;
  ASSERT_TRUE(reader.find(second, true).has_value());
  EXPECT_EQ(reader.find(second, true)->candidates.size(), 2u);
  EXPECT_FALSE(reader.contains(cache_test::make_key(4096, 4096, WeightFormat::int4_g128)));
  ASSERT_TRUE(reader.peak(cache_test::h200()).has_value());
  EXPECT_EQ(reader.peak(cache_test::h200())->gbps, 4470.0);
}

// After the upgrade the UNIQUE key includes the weight format, and the foreign key still
// holds: a quantized entry of a migrated shape is a new row, and re-storing a migrated entry
// replaces its candidates (none left behind under the old id).
TEST(CacheSchema, UpgradedFileKeysByWeightFormat) {
  TempDir dir;
  const std::string path = dir.file("v1.sqlite");
  write_v1_file(path);
  TuningCache cache(path, CacheMode::read_write);
  const CacheKey dense = cache_test::make_key(4096, 4096);
  const CacheKey int8 = cache_test::make_key(4096, 4096, WeightFormat::int8);
  cache.store(cache_test::make_record(int8, "t256_r1_kw2_v16_u2_sk1_nc", 4.0));
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned"), 3);
  EXPECT_EQ(cache.find(dense)->config, "t128_r2_kw1_v16_u4_sk1_cs");
  EXPECT_EQ(cache.find(int8)->config, "t256_r1_kw2_v16_u2_sk1_nc");

  TuneRecord replacement = cache_test::make_record(dense, "t64_r1_kw1_v16_u8_sk1_nc", 7.0);
  replacement.candidates.resize(1);
  cache.store(replacement);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates WHERE tuned_id = 5"), 0);
  EXPECT_EQ(cache.find(dense, true)->candidates.size(), 1u);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM candidates"), 2 + 6 + 1);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
  // The table as created by the migration: the UNIQUE constraint names weights.
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'tuned' AND sql LIKE "
                                "'%UNIQUE (gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, weights, "
                                "template_version)%'"),
            1);
}

// A new file gets the same v2 table as an upgraded one (both run every migration).
TEST(CacheSchema, NewFileHasTheWeightsColumnInItsKey) {
  TempDir dir;
  const std::string path = dir.file("new.sqlite");
  TuningCache cache(path, CacheMode::read_write);
  cache.store(cache_test::make_record(cache_test::make_key(64, 64, WeightFormat::fp8)));
  cache.store(cache_test::make_record(cache_test::make_key(64, 64, WeightFormat::fp8_tensor)));
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM tuned WHERE weights IN ('fp8', 'fp8t')"), 2);
  EXPECT_EQ(raw_query_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'tuned' AND sql LIKE "
                                "'%weights          TEXT    NOT NULL DEFAULT ''dense''%'"),
            1);
}

}  // namespace
}  // namespace gemvtune
