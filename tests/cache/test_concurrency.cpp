// Processes using one cache file at the same time: two writers, each in its own transactions,
// lose no rows (WAL, the busy timeout and BEGIN IMMEDIATE make the second writer wait instead
// of failing), and many processes creating one new file at once all open it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cache_test_util.hpp"

namespace gemvtune {
namespace {

// Runs body(i) in `processes` child processes that start together (each blocks on a pipe
// until the parent closes it); returns how many failed. A child that throws prints why.
int failures_of_processes_at_once(int processes, const std::function<void(int)>& body) {
  int start_gate[2];
  if (::pipe(start_gate) != 0) return processes;
  std::vector<pid_t> children;
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) break;
    if (pid == 0) {
      int code = 0;
      try {
        ::close(start_gate[1]);
        char byte;
        while (::read(start_gate[0], &byte, 1) > 0) {
        }
        body(i);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "process %d failed: %s\n", i, e.what());
        code = 1;
      }
      ::_exit(code);  // not exit(): the gtest state of the parent must not run here
    }
    children.push_back(pid);
  }
  ::close(start_gate[0]);
  ::close(start_gate[1]);
  int failed = processes - static_cast<int>(children.size());
  for (pid_t pid : children) {
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  return failed;
}

constexpr int kWriters = 2;
constexpr int kKeysPerWriter = 200;

// Both writers also race to create the file, which does not exist beforehand.
TEST(CacheConcurrency, TwoProcessesStoringAtOnceLoseNoRows) {
  cache_test::TempDir dir;
  const std::string path = dir.file("shared/cache.sqlite");
  EXPECT_EQ(failures_of_processes_at_once(kWriters,
                                          [&](int writer) {
                                            TuningCache cache(path, CacheMode::read_write);
                                            // Distinct keys per writer: n encodes the writer, k the index.
                                            for (int i = 0; i < kKeysPerWriter; ++i)
                                              cache.store(cache_test::make_record(cache_test::make_key(1000 + writer, 1 + i)));
                                          }),
            0);

  TuningCache cache(path, CacheMode::read_only);
  const std::vector<TuneRecord> all = cache.list();
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kWriters * kKeysPerWriter));
  std::set<std::pair<std::int64_t, std::int64_t>> shapes;
  for (const TuneRecord& r : all) shapes.insert({r.key.shape.n, r.key.shape.k});
  EXPECT_EQ(shapes.size(), static_cast<std::size_t>(kWriters * kKeysPerWriter));
  EXPECT_EQ(cache_test::raw_query_int(path, "SELECT count(*) FROM candidates"),
            kWriters * kKeysPerWriter * 6);
}

// Many processes opening one new cache at once (as the tunes of a multi-GPU server started
// together): every open succeeds. Two races failed about 1 in 150 such opens before: a
// process read the schema state while another created the file (tables seen, marker not:
// "a SQLite database of another program"), and the switch to WAL met SQLite's at-once BUSY
// (no busy handler where waiting could deadlock).
TEST(CacheConcurrency, ManyProcessesCreatingOneCacheAtOnceAllOpenIt) {
  cache_test::TempDir dir;
  constexpr int kOpeners = 8, kRounds = 60;
  int failed = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir.file("new" + std::to_string(round) + ".sqlite");
    failed += failures_of_processes_at_once(kOpeners, [&](int) { TuningCache cache(path, CacheMode::read_write); });
  }
  EXPECT_EQ(failed, 0) << "of " << kOpeners * kRounds << " opens (the reasons are above)";
}

}  // namespace
}  // namespace gemvtune
