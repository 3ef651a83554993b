// Schema creation, versioning and migration: a new file gets the current schema in WAL
// mode, an empty SQLite file is initialised from version 0, and a file from a newer build
// is refused without being changed.
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
constexpr int kCurrentVersion = 1;

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

// A real SQLite file with no schema objects (version 0) is migrated 0 -> 1 in place.
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
      EXPECT_NE(message.find("schema version 7 is newer than this build supports (1); refusing "
                             "to downgrade"),
                std::string::npos)
          << message;
      EXPECT_NE(message.find(path), std::string::npos) << message;
    }
    EXPECT_EQ(read_bytes(path), before);
  }
  EXPECT_EQ(raw_query_int(path, "PRAGMA user_version"), 7);
}

}  // namespace
}  // namespace gemvtune
