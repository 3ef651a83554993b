// The path given is the file used, and nothing else (issue 10, items 8 and 9), and a cache
// locked by another process says so (item 10).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "cache/file_check.hpp"
#include "cache/open.hpp"
#include "cache/sqlite.hpp"
#include "cache_test_util.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

using cache_test::TempDir;

// Item 8: SQLite blocked opening a FIFO (so `list` hung); the child gives up after 10 s.
TEST(CachePaths, AFifoIsRefusedWithoutWaitingForAWriter) {
  TempDir dir;
  const std::string fifo = dir.file("cache.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (CacheMode mode : {CacheMode::read_only, CacheMode::read_write}) {
    const int status = cache_test::run_in_child([&] {
      ::alarm(10);
      try {
        TuningCache cache(fifo, mode);
      } catch (const CacheError& e) {
        return std::string(e.what()).find("is a FIFO, not a regular file") != std::string::npos ? 0 : 2;
      }
      return 1;
    });
    EXPECT_EQ(status, 0) << "1: opened, 2: another message, 142: hung";
  }
}

// Item 9: a relative path starting with "file:" is a file name, not an SQLite URI.
TEST(CachePaths, FileColonAndMemoryNamesAreRelativeFiles) {
  TempDir dir;
  const int status = cache_test::run_in_child([&] {
    if (::chdir(dir.path().c_str()) != 0) return 3;
    {
      TuningCache cache("file:p.sqlite?mode=memory", CacheMode::read_write);
      cache.store(cache_test::make_record(cache_test::make_key(64, 64)));
      TuningCache memory(":memory:", CacheMode::read_write);
      memory.store(cache_test::make_record(cache_test::make_key(64, 64)));
    }
    TuningCache again("file:p.sqlite?mode=memory", CacheMode::read_only);
    return again.list().size() == 1 ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
  EXPECT_TRUE(std::filesystem::exists(dir.file("file:p.sqlite?mode=memory")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("p.sqlite")));
  EXPECT_TRUE(std::filesystem::exists(dir.file(":memory:")));
}

// Another connection to a new cache at `path`, holding the lock its statements take (the
// last one a BEGIN) until it is destroyed.
class LockHolder {
 public:
  LockHolder(const std::string& path, std::initializer_list<const char*> statements) {
    { TuningCache create(path, CacheMode::read_write); }
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot open " + path);
    for (const char* sql : statements)
      if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
        throw std::runtime_error(std::string(sql) + ": " + sqlite3_errmsg(db_));
  }
  ~LockHolder() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  LockHolder(const LockHolder&) = delete;
  LockHolder& operator=(const LockHolder&) = delete;

 private:
  sqlite3* db_ = nullptr;
};

// Item 10: past the busy timeout, "database is locked" now says what is going on.
TEST(CacheLocks, ALockHeldPastTheTimeoutIsExplained) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  const LockHolder holder(path, {"BEGIN IMMEDIATE"});

  cache::Connection conn(path, SQLITE_OPEN_READWRITE);
  conn.set_busy_timeout_ms(200);  // the cache waits 10 s; the message is the same
  try {
    cache::WriteTransaction tx(conn);
    ADD_FAILURE() << "took the lock another connection holds";
  } catch (const CacheError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("database is locked"), std::string::npos) << message;
    EXPECT_NE(message.find("another process"), std::string::npos) << message;
    EXPECT_NE(message.find("200 ms"), std::string::npos) << message;
    EXPECT_NE(message.find("try again"), std::string::npos) << message;
  }
}

// A reader blocked by a rollback-journal writer's exclusive lock: the message names the wait it
// really made (it said "0 s", the checks not passing the connection's timeout), and opening
// the cache waits once, where a probe and then the check each waited the whole timeout.
TEST(CacheLocks, AReaderBlockedByAnExclusiveLockWaitsOnceAndSaysHowLong) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  const LockHolder holder(path, {"PRAGMA journal_mode=DELETE", "BEGIN EXCLUSIVE"});

  {
    cache::Connection conn(path, SQLITE_OPEN_READONLY);
    conn.set_busy_timeout_ms(200);
    try {
      cache::check_healthy_sqlite(conn);
      ADD_FAILURE() << "read past an exclusive lock";
    } catch (const CacheError& e) {
      EXPECT_NE(std::string(e.what()).find("longer than the 200 ms this one waits"), std::string::npos) << e.what();
    }
  }
  const auto start = std::chrono::steady_clock::now();
  try {
    TuningCache reader(path, CacheMode::read_only);
    ADD_FAILURE() << "opened past an exclusive lock";
  } catch (const CacheError& e) {
    EXPECT_NE(std::string(e.what()).find("longer than the 10 s this one waits"), std::string::npos) << e.what();
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 1.5 * cache::kBusyTimeoutMs / 1000.0) << "waited the busy timeout twice";
}

// What `open` throws, run as a user without write access to what root made: as root, in a child
// turned into nobody (root passes every access check); otherwise here, the modes being enough.
std::string open_as_another_user(const std::string& path, CacheMode mode) {
  const auto attempt = [&]() -> std::string {
    try {
      TuningCache cache(path, mode);
      return "(opened)";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
  if (::geteuid() != 0) return attempt();
  int fds[2];
  if (::pipe(fds) != 0) return "(pipe failed)";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string said = ::setgid(65534) == 0 && ::setuid(65534) == 0 ? attempt() : "(setuid failed)";
    if (::write(fds[1], said.data(), said.size()) < 0) ::_exit(1);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string said;
  char buf[4096];
  for (ssize_t got; (got = ::read(fds[0], buf, sizeof buf)) > 0;) said.append(buf, static_cast<std::size_t>(got));
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  return said;
}

// A process killed while it had the cache open leaves its -wal (committed entries not yet in the
// file) and -shm. Another user then met SQLite's "attempt to write a readonly database" or
// "unable to open database file"; the messages now name the side file and what to do.
TEST(CacheSideFiles, ALeftoverWalOrShmOfAnotherUserIsNamed) {
  TempDir dir;
  const std::string path = dir.file("cache.sqlite");
  { TuningCache create(path, CacheMode::read_write); }
  const pid_t writer = ::fork();
  if (writer == 0) {  // commits a row and dies without closing: its -wal and -shm stay
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0; INSERT INTO peaks (gpu_name, sm_count, cc_major, cc_minor, "
                     "gbps, bytes, driver_version, timestamp) VALUES ('NVIDIA H200', 132, 9, 0, 4600, 1, 13000, 1)",
                 nullptr, nullptr, nullptr);
    ::_exit(0);
  }
  ::waitpid(writer, nullptr, 0);
  ASSERT_TRUE(std::filesystem::exists(path + "-wal"));
  ASSERT_TRUE(std::filesystem::exists(path + "-shm"));
  ::chmod(dir.path().c_str(), 0777);  // others may write the directory and the file...
  ::chmod(path.c_str(), 0666);
  ::chmod((path + "-wal").c_str(), 0444);  // ...but not the side files (also for a non-root owner)
  ::chmod((path + "-shm").c_str(), 0444);
  const std::string written = open_as_another_user(path, CacheMode::read_write);
  EXPECT_NE(written.find("cache.sqlite-wal is not writable"), std::string::npos) << written;

  ::unlink((path + "-shm").c_str());  // a -wal without its -shm, in a directory others may not write
  ::chmod(dir.path().c_str(), 0555);
  const std::string read = open_as_another_user(path, CacheMode::read_only);
  EXPECT_NE(read.find("its -wal holds entries not yet in the file"), std::string::npos) << read;
  ::chmod(dir.path().c_str(), 0700);
}

}  // namespace
}  // namespace gemvtune
