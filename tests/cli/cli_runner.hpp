// Runs the built gemvtune binary (GEMVTUNE_CLI_PATH, or $GEMVTUNE_TEST_CLI to try the tests
// on another build, e.g. an older one to see a test fail) with arguments and extra
// environment, capturing its exit status, stdout and stderr. The cache path is always set, so
// no test touches the user's cache. A run that hangs is killed by SIGALRM after timeout_s.
#pragma once
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cache/cache_test_util.hpp"

namespace gemvtune::cli_test {

// The H200's GPU key as `list` and `--gpu` spell it: the key the CLI tests' caches are filed under.
inline constexpr const char* kH200Key = "NVIDIA H200/132sm/cc9.0";

struct CliResult {
  int status = -1;  // exit status, or 128 + signal
  std::string out, err;
};

inline std::string cli_path() {
  const char* other = std::getenv("GEMVTUNE_TEST_CLI");
  return other != nullptr && other[0] != '\0' ? other : GEMVTUNE_CLI_PATH;
}

// cwd: where the command runs (empty: the test's own directory).
inline CliResult run_cli(const std::vector<std::string>& args, const std::string& work_dir,
                         const std::vector<std::pair<std::string, std::string>>& env = {},
                         const std::string& stdin_path = "/dev/null", const std::string& cwd = "",
                         unsigned timeout_s = 60) {
  const std::string out_path = work_dir + "/cli.stdout", err_path = work_dir + "/cli.stderr";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int in = ::open(stdin_path.c_str(), O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(125);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setenv("GEMVTUNE_CACHE", (work_dir + "/default-cache.sqlite").c_str(), 1);
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    std::string program = cli_path();
    argv.push_back(program.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::alarm(timeout_s);  // survives execv: a hung command dies with SIGALRM (status 142)
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) throw std::runtime_error("waitpid failed");
  CliResult r;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.out = cache_test::read_bytes(out_path);
  r.err = cache_test::read_bytes(err_path);
  return r;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace gemvtune::cli_test
