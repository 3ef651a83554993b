// A temporary directory to run the gemvtune binary in, with what the hardening tests need:
// caches and export documents built through the library, and snapshots of every file so a
// refused command can be shown to have changed nothing.
#pragma once
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"

namespace gemvtune::cli_test {

using Json = nlohmann::json;

struct Sandbox : ::testing::Test {
  cache_test::TempDir dir;

  CliResult run(const std::vector<std::string>& args, const std::string& cwd = "", unsigned timeout_s = 60) {
    return run_cli(args, dir.path(), {}, "/dev/null", cwd, timeout_s);
  }

  // Every file in the sandbox but the runner's own output.
  std::map<std::string, std::string> files() const {
    return cache_test::snapshot(dir.path(), {"cli.stdout", "cli.stderr"});
  }

  // A cache at `name` holding `records`.
  std::string make_cache(const std::string& name, const std::vector<TuneRecord>& records) {
    const std::string path = dir.file(name);
    TuningCache cache(path, CacheMode::read_write);
    for (const TuneRecord& r : records) cache.store(r);
    return path;
  }

  // The export of a cache holding `records`, as JSON to edit (built outside the sandbox).
  static Json export_of(const std::vector<TuneRecord>& records) {
    cache_test::TempDir elsewhere;
    TuningCache cache(elsewhere.file("c.sqlite"), CacheMode::read_write);
    for (const TuneRecord& r : records) cache.store(r);
    std::ostringstream text;
    cache.export_json(text);
    return Json::parse(text.str());
  }

  std::string write_file(const std::string& name, const std::string& bytes) {
    cache_test::write_bytes(dir.file(name), bytes);
    return dir.file(name);
  }
};

// The exit status and both streams, for failure messages.
inline std::string shown(const CliResult& r) {
  return "status " + std::to_string(r.status) + "\nstdout: " + r.out.substr(0, 2000) +
         "\nstderr: " + r.err.substr(0, 2000);
}

}  // namespace gemvtune::cli_test
