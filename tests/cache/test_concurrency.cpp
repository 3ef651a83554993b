// Two processes writing one cache file at the same time, each in its own transactions, lose
// no rows: WAL, the busy timeout and BEGIN IMMEDIATE make the second writer wait instead of
// failing. Both children also race to create the file, which does not exist beforehand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "cache_test_util.hpp"

namespace gemvtune {
namespace {

constexpr int kWriters = 2;
constexpr int kKeysPerWriter = 200;

TEST(CacheConcurrency, TwoProcessesStoringAtOnceLoseNoRows) {
  cache_test::TempDir dir;
  const std::string path = dir.file("shared/cache.sqlite");

  // Children block on this pipe until the parent closes it, so they start together.
  int start_gate[2];
  ASSERT_EQ(::pipe(start_gate), 0);

  std::vector<pid_t> children;
  for (int writer = 0; writer < kWriters; ++writer) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        ::close(start_gate[1]);
        char byte;
        while (::read(start_gate[0], &byte, 1) > 0) {
        }
        TuningCache cache(path, CacheMode::read_write);
        for (int i = 0; i < kKeysPerWriter; ++i) {
          // Distinct keys per writer: n encodes the writer, k the index.
          cache.store(cache_test::make_record(cache_test::make_key(1000 + writer, 1 + i)));
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d failed: %s\n", writer, e.what());
        code = 1;
      }
      ::_exit(code);  // not exit(): the gtest state of the parent must not run here
    }
    children.push_back(pid);
  }
  ::close(start_gate[0]);
  ::close(start_gate[1]);

  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  }

  TuningCache cache(path, CacheMode::read_only);
  const std::vector<TuneRecord> all = cache.list();
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kWriters * kKeysPerWriter));
  std::set<std::pair<std::int64_t, std::int64_t>> shapes;
  for (const TuneRecord& r : all) shapes.insert({r.key.shape.n, r.key.shape.k});
  EXPECT_EQ(shapes.size(), static_cast<std::size_t>(kWriters * kKeysPerWriter));
  EXPECT_EQ(cache_test::raw_query_int(path, "SELECT count(*) FROM candidates"),
            kWriters * kKeysPerWriter * 6);
}

}  // namespace
}  // namespace gemvtune
