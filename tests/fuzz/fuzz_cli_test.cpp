// Fixed-seed fuzz of the gemvtune command line (issue 10's Done-when): random argument
// vectors of the commands, their options and odd values, over a sandbox of odd files (a
// good cache, a 0-byte one, another program's database, a FIFO, a directory, valid, invalid,
// truncated and deeply nested JSON). Every run must end by itself with status 0, 1 or 2
// (no signal, no hang), a failure must say why on stderr in a few lines, and a failed run
// must leave every file of the sandbox as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <iostream>
#include <map>

#include "cli/cli_runner.hpp"
#include "fuzz/fuzz_support.hpp"
#include "gemvtune/generator.hpp"
#include "jit/driver_api.hpp"

namespace gemvtune::fuzz {
namespace {

using cli_test::CliResult;
using Files = std::map<std::string, std::string>;
using Values = std::vector<std::string>;

// The sandbox as the fuzz compares it: SQLite's -shm is shared memory that readers write, and
// an empty -wal is the same as none (a read-only open of a WAL cache leaves both).
Files files(const std::string& dir) {
  Files all = cache_test::snapshot(dir, {"cli.stdout", "cli.stderr"});
  Files out;
  for (auto& entry : all) {
    // Not a structured binding: the lambda captures `path` (C++17 allows no capture of a
    // binding; GCC takes it, clang does not).
    const std::string& path = entry.first;
    std::string& bytes = entry.second;
    const auto ends = [&](const std::string& tail) {
      return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends("-shm") || (ends("-wal") && bytes.empty())) continue;
    out.emplace(path, std::move(bytes));
  }
  return out;
}

// What changed between two snapshots, for the failure message.
std::string difference(const Files& before, const Files& after) {
  std::string out;
  for (const auto& [path, bytes] : after) {
    const auto it = before.find(path);
    if (it == before.end()) out += "  created " + path + "\n";
    else if (it->second != bytes) out += "  changed " + path + "\n";
  }
  for (const auto& [path, bytes] : before)
    if (!after.count(path)) out += "  removed " + path + "\n";
  return out;
}

struct Sandbox {
  cache_test::TempDir dir;
  std::map<std::string, Values> values;  // per option; "" for positional arguments

  Sandbox() {
    const auto file = [&](const std::string& name, const std::string& bytes) {
      cache_test::write_bytes(dir.file(name), bytes);
      return dir.file(name);
    };
    {
      TuningCache cache(dir.file("cache.sqlite"), CacheMode::read_write);
      for (std::int64_t n : {1024, 4096})
        cache.store(cache_test::make_record(cache_test::make_key(n, 4096, cache_test::h200(), DType::bf16, 1,
                                                                 template_version()),
                                            "t128_r2_kw1_v16_u4_sk1_cs", 10.0));
    }
    std::ostringstream valid;
    TuningCache(dir.file("cache.sqlite"), CacheMode::read_only).export_json(valid);
    file("empty.sqlite", "");
    cache_test::raw_sql(dir.file("foreign.sqlite"), "CREATE TABLE notes(x); INSERT INTO notes VALUES (1);");
    file("notes.txt", "not a database\n");
    std::filesystem::create_directory(dir.file("dir"));
    ::mkfifo(dir.file("fifo").c_str(), 0600);
    const std::string doc = valid.str();
    file("valid.json", doc);
    std::string garbage = doc;
    garbage.replace(garbage.find("t128_r2_kw1_v16_u4_sk1_cs"), 25, "garbage");
    file("garbage-config.json", garbage);
    file("truncated.json", doc.substr(0, doc.size() / 2));
    file("deep.json", std::string(100000, '[') + std::string(100000, ']'));
    file("shapes.txt", "4096x4096\n# comment\nnope\n");

    const std::string big(100000, 'x');
    const std::string d = dir.path() + "/";
    values["--db"] = {d + "cache.sqlite", d + "empty.sqlite", d + "foreign.sqlite", d + "notes.txt", d + "dir", d + "fifo",
                      d + "missing.sqlite", d + "new/sub/c.sqlite", "", "file:x.sqlite", ":memory:", big};
    values["--out"] = {d + "out.json", d + "dir", d + "missing-dir/out.json", "-", "", d + "cache.sqlite"};
    // A character device like /dev/null, made here (root only): a build with the --out bug,
    // run as root, would replace the real /dev/null.
    if (::mknod(dir.file("null").c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
      values["--db"].push_back(d + "null");
      values["--out"].push_back(d + "null");
    }
    values[""] = {d + "valid.json", d + "garbage-config.json", d + "truncated.json", d + "deep.json", d + "dir",
                  d + "missing.json", "-", "", d + "notes.txt", d + "cache.sqlite", "t128_r2_kw1_v16_u4_sk1_cs",
                  "t33_r1_kw1_v16_u2_sk1_cs", big, "\xff\xfe", "--", "-"};
    values["--shape"] = {"4096x4096", "0x0", "-1x5", "4096", "1x1", "99999999999x1", "x", "", "4096x4096x1", "1024x4096"};
    values["--shapes"] = {d + "shapes.txt", d + "missing.txt", d + "dir", d + "notes.txt"};
    values["--dtype"] = {"bf16", "fp16", "fp32", "int4", "", "BF16"};
    values["--gpu"] = {"NVIDIA H200/132sm/cc9.0", "A/1sm/cc-1.0", "", "/", "a/b/c", "A/1sm/cc9.0", "A/0sm/cc9.0", big};
    values["--batch"] = {"1", "0", "17", "-1", "x", "16", "2"};
    values["--config"] = {"t128_r2_kw1_v16_u4_sk1_cs", "garbage", "t33_r1_kw1_v16_u2_sk1_cs", "", big};
    values["--device"] = {"0", "-1", "99", "x"};
    values["--devices"] = {"all", "0,1", "x", ""};
    values["--preset"] = {"llama-3.1-8b", "nope", ""};
    values["--strategy"] = {"model", "exhaustive", "nope"};
    values["--ld"] = {"4096", "0", "-1", "x"};
  }
};

// Half the runs use only options the command has, so they get past option parsing into the
// command itself; the other half mix anything.
std::vector<std::string> random_args(Rng& rng, Sandbox& box, const Values& commands) {
  static const Values flags = {"--json", "--force", "--help", "-h", "--nope", "--db=", "--", "-"};
  static const std::map<std::string, Values> accepted = {
      {"emit", {"", "--dtype"}},
      {"query", {"--shape", "--shape", "--gpu", "--gpu", "--db", "--dtype", "--batch", "--device"}},
      {"list", {"--db", "--db"}},
      {"export", {"--db", "--db", "--out"}},
      {"import", {"", "", "--db", "--db"}}};
  std::vector<std::string> args;
  args.push_back(chance(rng, 0.03) ? "nope" : pick(rng, commands));
  const auto own = accepted.find(args[0]);
  if (own != accepted.end() && chance(rng, 0.5)) {
    for (std::size_t n = 1 + below(rng, 4); n > 0; --n) {
      const std::string& option = pick(rng, own->second);
      if (!option.empty()) args.push_back(option);
      args.push_back(pick(rng, box.values[option]));
    }
    if (chance(rng, 0.2)) args.push_back("--json");
    return args;
  }
  for (std::size_t n = below(rng, 6); n > 0; --n) {
    const std::size_t kind = below(rng, 10);
    if (kind < 6) {
      auto it = box.values.begin();
      std::advance(it, static_cast<long>(below(rng, box.values.size())));
      if (!it->first.empty()) args.push_back(it->first);
      if (it->first.empty() || chance(rng, 0.95)) args.push_back(pick(rng, it->second));
    } else if (kind < 8) {
      args.push_back(pick(rng, box.values[""]));
    } else if (chance(rng, 0.2)) {
      args.push_back("--db=" + pick(rng, box.values["--db"]));
    } else {
      args.push_back(pick(rng, flags));
    }
  }
  return args;
}

std::string shown(const std::vector<std::string>& args) {
  std::string out = "gemvtune";
  for (const std::string& a : args) out += " '" + preview(a, 80) + "'";
  return out;
}

TEST(FuzzCli, EveryRunEndsCleanlyAndAFailedRunChangesNoFile) {
  Rng rng(seed());
  Sandbox box;
  // With a GPU these would tune, time and write for real; without one they must fail cleanly.
  Values commands = {"emit", "query", "list", "export", "import", "import", "import", "list", "export"};
  const bool gpu = jit::driver_available();
  if (!gpu)
    for (const char* c : {"info", "run", "tune", "peak", "bench"}) commands.push_back(c);
  // A read-only open of a WAL cache leaves -wal and -shm beside it: not a change.
  cli_test::run_cli({"list", "--db", box.dir.file("cache.sqlite")}, box.dir.path());

  std::map<int, int> statuses;
  const auto started = std::chrono::steady_clock::now();
  const int runs = scaled(1500);
  int done = 0;
  Files before = files(box.dir.path());
  for (; done < runs && !::testing::Test::HasFailure(); ++done) {
    const std::vector<std::string> args = random_args(rng, box, commands);
    const CliResult r = cli_test::run_cli(args, box.dir.path(), {}, "/dev/null", box.dir.path(), 30);
    ++statuses[r.status];
    const Files after = files(box.dir.path());
    SCOPED_TRACE(shown(args) + "\nstatus " + std::to_string(r.status) + "\nstderr: " + preview(r.err, 600));
    EXPECT_TRUE(r.status == 0 || r.status == 1 || r.status == 2) << "crashed or hung (142: killed after 30 s)";
    if (r.status != 0) {
      EXPECT_EQ(r.err.rfind("gemvtune", 0), 0u) << "a failure must say why";
      EXPECT_LT(r.err.size(), 5000u) << "a failure should say why in a few lines";
      EXPECT_TRUE(after == before) << "a failed run changed files:\n" << difference(before, after);
    }
    before = after;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "seed " << seed() << ": " << done << " runs" << (gpu ? " (GPU commands left out)" : "") << " in "
            << seconds << " s; exit statuses:";
  for (const auto& [status, count] : statuses) std::cout << " " << status << " x" << count;
  std::cout << "\n";
  EXPECT_GT(statuses[0], 0);
  EXPECT_GT(statuses[2], 0);
}

}  // namespace
}  // namespace gemvtune::fuzz
