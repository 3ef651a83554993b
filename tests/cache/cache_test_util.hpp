// Helpers shared by the cache tests: a temporary directory removed afterwards, raw file and
// SQLite access that bypasses TuningCache (to build odd files and to check what it wrote),
// sample records, and running a function in a forked child.
#pragma once
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "gemvtune/cache.hpp"

namespace gemvtune::cache_test {

// mkdtemp under /tmp; removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/gemvtune-cache-test-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    // Tests may have made things read-only; make them removable again first.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path_, ec))
      std::filesystem::permissions(entry.path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Everything under `dir` (recursively) as path -> what it is: a regular file's bytes, a
// symlink's target, "<fifo>", "<directory>", "<other>". Two equal snapshots mean no file was
// created, removed, replaced or changed. Names in `ignore` (e.g. a runner's output files)
// are left out.
inline std::map<std::string, std::string> snapshot(const std::string& dir,
                                                   const std::set<std::string>& ignore = {}) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (ignore.count(entry.path().filename().string())) continue;
    const fs::file_status st = entry.symlink_status();
    if (fs::is_symlink(st)) out[path] = "<symlink to " + fs::read_symlink(entry.path()).string() + ">";
    else if (fs::is_regular_file(st)) out[path] = read_bytes(path);
    else if (fs::is_fifo(st)) out[path] = "<fifo>";
    else if (fs::is_directory(st)) out[path] = "<directory>";
    else out[path] = "<other>";
  }
  return out;
}

// Runs SQL on a file with the plain SQLite API (creating it if needed), outside TuningCache.
inline void raw_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    throw std::runtime_error("cannot open " + path);
  }
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error != nullptr ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("SQL failed on " + path + ": " + message);
}

// First column of the first row of `sql`, read with a read-only connection.
inline std::int64_t raw_query_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::int64_t value = -1;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW)
    value = sqlite3_column_int64(stmt, 0);
  const std::string message = sqlite3_errmsg(db);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  if (value == -1) throw std::runtime_error("query failed on " + path + ": " + message);
  return value;
}

// A distinct valid config for each i in 0..31 (t32, t64, ... t1024), for tests that need
// configs only as labels: the cache refuses config text that does not parse or breaks rules.
inline std::string label_config(int i) {
  return "t" + std::to_string(32 * (i + 1)) + "_r1_kw1_v16_u2_sk1_cs";
}

inline GpuIdentity h200() { return GpuIdentity{"NVIDIA H200", 132, 9, 0}; }

inline CacheKey make_key(std::int64_t n, std::int64_t k, GpuIdentity gpu = h200(),
                         DType dtype = DType::bf16, int batch = 1,
                         std::string template_version = "tpl-1",
                         WeightFormat weights = WeightFormat::dense) {
  CacheKey key;
  key.gpu = std::move(gpu);
  key.shape = Shape{n, k};
  key.dtype = dtype;
  key.batch = batch;
  key.weights = weights;
  key.template_version = std::move(template_version);
  return key;
}

// make_key(n, k) with another weight format.
inline CacheKey make_key(std::int64_t n, std::int64_t k, WeightFormat weights) {
  return make_key(n, k, h200(), DType::bf16, 1, "tpl-1", weights);
}

inline TuneRecord make_record(const CacheKey& key, std::string config = "t128_r2_kw1_v16_u4_sk1_cs",
                              double time_us = 10.5) {
  TuneRecord r;
  r.key = key;
  r.config = std::move(config);
  r.time_us = time_us;
  r.gbps = 4321.25;
  r.pct_of_ceiling = 91.5;
  r.strategy = "exhaustive";
  r.driver_version = 13000;
  r.nvrtc_version = "13.0";
  r.timestamp = 1764417600;
  r.candidates = {
      {r.config, Outcome::passed, "", time_us, 4321.25, 91.5},
      {"t256_r1_kw2_v16_u2_sk1_nc", Outcome::passed, "", time_us * 1.5, 2880.0, 61.0},
      {"t64_r4_kw1_v8_u8_sk2_cs_pdl", Outcome::incorrect, "max abs error 0.5 at row 17", 0, 0, 0},
      {"t512_r8_kw4_v16_u8_sk1_cs", Outcome::compile_failed, "ptxas: too many registers", 0, 0, 0},
      {"t128_r1_kw1_v16_u2_sk64_cs", Outcome::launch_failed, "CUDA_ERROR_INVALID_VALUE", 0, 0, 0},
      {"t32_r1_kw1_v2_u1_sk1_nc", Outcome::not_supported, "vector narrower than element", 0, 0, 0},
  };
  return r;
}

// Field-by-field comparison, so a failure says which field differs.
inline void expect_same_key(const CacheKey& a, const CacheKey& b) {
  EXPECT_EQ(a.gpu.key(), b.gpu.key());
  EXPECT_EQ(a.shape.n, b.shape.n);
  EXPECT_EQ(a.shape.k, b.shape.k);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.weights, b.weights);
  EXPECT_EQ(a.template_version, b.template_version);
}

inline void expect_same_record(const TuneRecord& a, const TuneRecord& b) {
  expect_same_key(a.key, b.key);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.time_us, b.time_us);  // exact: REAL and JSON both round-trip doubles
  EXPECT_EQ(a.gbps, b.gbps);
  EXPECT_EQ(a.pct_of_ceiling, b.pct_of_ceiling);
  EXPECT_EQ(a.strategy, b.strategy);
  EXPECT_EQ(a.driver_version, b.driver_version);
  EXPECT_EQ(a.nvrtc_version, b.nvrtc_version);
  EXPECT_EQ(a.timestamp, b.timestamp);
  ASSERT_EQ(a.candidates.size(), b.candidates.size());
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    SCOPED_TRACE("candidate " + std::to_string(i));
    EXPECT_EQ(a.candidates[i].config, b.candidates[i].config);
    EXPECT_EQ(a.candidates[i].outcome, b.candidates[i].outcome);
    EXPECT_EQ(a.candidates[i].reason, b.candidates[i].reason);
    EXPECT_EQ(a.candidates[i].time_us, b.candidates[i].time_us);
    EXPECT_EQ(a.candidates[i].gbps, b.candidates[i].gbps);
    EXPECT_EQ(a.candidates[i].pct_of_ceiling, b.candidates[i].pct_of_ceiling);
  }
}

// Runs `body` in a forked child and returns its exit status (or 128 + signal). The child
// leaves with _exit so no gtest or static destructor runs twice. With drop_root, a child
// running as root switches to the nobody user first, so file permissions apply to it.
inline int run_in_child(const std::function<int()>& body, bool drop_root = false) {
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int code = 99;
    try {
      if (drop_root && ::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
        ::_exit(98);
      code = body();
    } catch (...) {
      code = 97;
    }
    ::_exit(code);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace gemvtune::cache_test
