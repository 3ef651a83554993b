// Files the cache must refuse without changing a byte: text, random bytes, a truncated
// cache, another program's SQLite database; and the read-only cases (missing file in
// read_only mode, writes through a read_only cache, write-protected file or directory).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "cache_test_util.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

using cache_test::read_bytes;
using cache_test::TempDir;
using cache_test::write_bytes;

// Opening `path` in either mode throws CacheError whose message names the path and contains
// `expected`; the file keeps its exact bytes and nothing is journaled. (SQLite's read-only
// open of a WAL-mode file may leave an empty -wal and a -shm beside it; the -wal stays empty.)
void expect_refused_unchanged(const std::string& path, const std::string& expected) {
  const std::string before = read_bytes(path);
  const bool wal_mode = before.size() >= 100 && before.compare(0, 16, std::string("SQLite format 3\0", 16)) == 0 &&
                        before[18] == 2;
  for (CacheMode mode : {CacheMode::read_only, CacheMode::read_write}) {
    SCOPED_TRACE(mode == CacheMode::read_only ? "read_only" : "read_write");
    try {
      TuningCache cache(path, mode);
      ADD_FAILURE() << "opened " << path;
    } catch (const CacheError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find(expected), std::string::npos) << message;
    }
    EXPECT_EQ(read_bytes(path), before);
    EXPECT_FALSE(std::filesystem::exists(path + "-journal"));
    if (wal_mode && std::filesystem::exists(path + "-wal")) {
      EXPECT_EQ(std::filesystem::file_size(path + "-wal"), 0u);
    } else {
      EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
      EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
    }
  }
}

TEST(CacheRefusedFiles, TextFile) {
  TempDir dir;
  const std::string path = dir.file("notes.txt");
  write_bytes(path, "These are my notes, not a database.\nSecond line.\n");
  expect_refused_unchanged(path, "is not a SQLite database");
}

TEST(CacheRefusedFiles, RandomBytes) {
  TempDir dir;
  const std::string path = dir.file("noise.bin");
  std::mt19937 rng(12345);
  std::string bytes(64 * 1024, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  write_bytes(path, bytes);
  expect_refused_unchanged(path, "is not a SQLite database");
}

TEST(CacheRefusedFiles, TruncatedCache) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  {
    TuningCache cache(path, CacheMode::read_write);
    for (int i = 1; i <= 200; ++i)
      cache.store(cache_test::make_record(cache_test::make_key(64 * i, 4096)));
  }
  std::string bytes = read_bytes(path);
  ASSERT_GT(bytes.size(), 16u * 4096u) << "cache too small to truncate meaningfully";
  write_bytes(path, bytes.substr(0, bytes.size() / 2));
  expect_refused_unchanged(path, "corrupt");
}

TEST(CacheRefusedFiles, ForeignSqliteDatabase) {
  TempDir dir;
  const std::string path = dir.file("photos.db");
  cache_test::raw_sql(path,
                      "CREATE TABLE photos(id INTEGER PRIMARY KEY, file TEXT);"
                      "INSERT INTO photos(file) VALUES ('a.jpg'), ('b.jpg');");
  expect_refused_unchanged(path, "another program");
  EXPECT_EQ(cache_test::raw_query_int(path, "SELECT count(*) FROM photos"), 2);
}

// No tables, but another program has stamped its application id: still not ours.
TEST(CacheRefusedFiles, ForeignApplicationIdWithoutTables) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  cache_test::raw_sql(path, "PRAGMA application_id = 1234; PRAGMA user_version = 3;");
  expect_refused_unchanged(path, "another program");
}

TEST(CacheRefusedFiles, DirectoryInsteadOfFile) {
  TempDir dir;
  for (CacheMode mode : {CacheMode::read_only, CacheMode::read_write}) {
    try {
      TuningCache cache(dir.path(), mode);
      ADD_FAILURE() << "opened a directory";
    } catch (const CacheError& e) {
      EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
    }
  }
}

TEST(CacheReadOnly, MissingFileIsAnErrorNamingThePath) {
  TempDir dir;
  const std::string path = dir.file("missing/cache.sqlite");
  try {
    TuningCache cache(path, CacheMode::read_only);
    FAIL() << "opened a missing file read_only";
  } catch (const CacheError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing")));  // nothing created
}

TEST(CacheReadOnly, ReadOnlyModeReadsButNeverWrites) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  const CacheKey key = cache_test::make_key(4096, 4096);
  {
    TuningCache cache(path, CacheMode::read_write);
    cache.store(cache_test::make_record(key));
    cache.store_peak(PeakRecord{cache_test::h200(), 4500.0, 1 << 30, 13000, 1764417600});
  }
  const std::string before = read_bytes(path);

  TuningCache cache(path, CacheMode::read_only);
  EXPECT_EQ(cache.mode(), CacheMode::read_only);
  ASSERT_TRUE(cache.find(key, true).has_value());
  EXPECT_EQ(cache.list().size(), 1u);
  EXPECT_TRUE(cache.peak(cache_test::h200()).has_value());

  const auto expect_read_only_error = [](const std::function<void()>& write) {
    try {
      write();
      ADD_FAILURE() << "a write went through a read_only cache";
    } catch (const CacheError& e) {
      EXPECT_NE(std::string(e.what()).find("read_only"), std::string::npos) << e.what();
    }
  };
  expect_read_only_error([&] { cache.store(cache_test::make_record(cache_test::make_key(8, 8))); });
  expect_read_only_error([&] { cache.store_peak(PeakRecord{cache_test::h200(), 1.0, 1, 1, 1}); });
  std::istringstream empty_export(R"({"format":"gemvtune-cache","format_version":1,"tuned":[],"peaks":[]})");
  expect_read_only_error([&] { cache.import_json(empty_export); });
  EXPECT_EQ(read_bytes(path), before);
}

// Permission checks do not apply to root, so these run in a child that drops to nobody.
// Exit codes: 0 = CacheError with the expected words, 1 = CacheError without them,
// 2 = opened without error.
int open_read_write_in_child(const std::string& path, const std::string& expected) {
  return cache_test::run_in_child(
      [&] {
        try {
          TuningCache cache(path, CacheMode::read_write);
          return 2;
        } catch (const CacheError& e) {
          const std::string message = e.what();
          if (message.find(expected) == std::string::npos || message.find(path) == std::string::npos) {
            std::fprintf(stderr, "unexpected message: %s\n", message.c_str());
            return 1;
          }
          return 0;
        }
      },
      /*drop_root=*/true);
}

TEST(CacheReadOnly, WriteProtectedFileOpenedReadWriteIsAClearError) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  { TuningCache cache(path, CacheMode::read_write); }
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);  // the directory is not the problem here
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  const std::string before = read_bytes(path);
  EXPECT_EQ(open_read_write_in_child(path, "not writable"), 0);
  EXPECT_EQ(read_bytes(path), before);
  // read_only still works on it.
  EXPECT_EQ(cache_test::run_in_child(
                [&] {
                  TuningCache cache(path, CacheMode::read_only);
                  return cache.list().empty() ? 0 : 1;
                },
                true),
            0);
}

TEST(CacheReadOnly, WriteProtectedDirectoryIsAClearError) {
  TempDir dir;
  const std::string existing = dir.file("cache.sqlite");
  { TuningCache cache(existing, CacheMode::read_write); }
  ASSERT_EQ(::chmod(existing.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  // New file: cannot be created. Existing file: its -wal/-shm files cannot be.
  EXPECT_EQ(open_read_write_in_child(dir.file("new.sqlite"), "not writable"), 0);
  EXPECT_EQ(open_read_write_in_child(existing, "not writable"), 0);
  EXPECT_FALSE(std::filesystem::exists(dir.file("new.sqlite")));
}

// A shared cache in a write-protected directory can still be read: SQLite cannot create
// the -shm file there, so the cache reads it as immutable.
TEST(CacheReadOnly, ReadOnlyModeWorksInWriteProtectedDirectory) {
  TempDir dir;
  const std::string path = dir.file("shared.sqlite");
  const CacheKey key = cache_test::make_key(4096, 4096);
  { TuningCache(path, CacheMode::read_write).store(cache_test::make_record(key)); }
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));  // checkpointed on close
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  const std::string before = read_bytes(path);
  EXPECT_EQ(cache_test::run_in_child(
                [&] {
                  TuningCache cache(path, CacheMode::read_only);
                  const auto found = cache.find(key, true);
                  return found && found->candidates.size() == 6 ? 0 : 1;
                },
                /*drop_root=*/true),
            0);
  EXPECT_EQ(read_bytes(path), before);
}

}  // namespace
}  // namespace gemvtune
