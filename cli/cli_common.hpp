// What every CLI command shares: the command table, exit codes and option parsing helpers.
#pragma once
#include <boost/program_options.hpp>
#include <string>
#include <vector>

#include "gemvtune/gpu.hpp"

namespace gemvtune::cli {

namespace po = boost::program_options;

// Exit statuses: 0 success, 1 runtime failure, 2 usage error.
enum ExitCode { kOk = 0, kRuntimeError = 1, kUsageError = 2 };

// A usage error found by a command after parsing (bad value); main maps it to exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);  // args after the command name
};
const std::vector<Command>& commands();

// Parses args into vm against desc (plus positional); prints help and returns true when
// --help was given. Unknown options and bad values throw UsageError naming them, and so does
// an empty --db (it would otherwise silently mean the default cache).
bool parse_or_help(const std::vector<std::string>& args, const po::options_description& desc,
                   const po::positional_options_description& positional, po::variables_map& vm,
                   const std::string& usage_line);

// "NVIDIA H200/132sm/cc9.0" (GpuIdentity::key(), as `list` shows it) back into its parts;
// the name may hold '/'. Throws UsageError for text that is not such a key or names an
// identity no GPU has (the cache's own rules: positive SMs, compute capability >= 1.0).
GpuIdentity parse_gpu_key(const std::string& text);

// `message` with every quoted span ('...', how messages quote a user's input, perhaps 100 KB
// pasted by mistake) longer than 100 bytes shortened, and at most about 2000 bytes in all.
// main applies it to every usage error (exit 2); runtime errors keep their logs whole.
std::string short_message(const std::string& message);

int cmd_info(const std::vector<std::string>& args);
int cmd_emit(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_tune(const std::vector<std::string>& args);
int cmd_query(const std::vector<std::string>& args);
int cmd_list(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_import(const std::vector<std::string>& args);
int cmd_peak(const std::vector<std::string>& args);
int cmd_fit(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);

}  // namespace gemvtune::cli
