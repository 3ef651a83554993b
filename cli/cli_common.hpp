// What every CLI command shares: the command table, exit codes and option parsing helpers.
#pragma once
#include <boost/program_options.hpp>
#include <string>
#include <vector>

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
// --help was given. Unknown options and bad values throw UsageError naming them.
bool parse_or_help(const std::vector<std::string>& args, const po::options_description& desc,
                   const po::positional_options_description& positional, po::variables_map& vm,
                   const std::string& usage_line);

int cmd_info(const std::vector<std::string>& args);
int cmd_emit(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_tune(const std::vector<std::string>& args);
int cmd_query(const std::vector<std::string>& args);
int cmd_list(const std::vector<std::string>& args);
int cmd_export(const std::vector<std::string>& args);
int cmd_import(const std::vector<std::string>& args);
int cmd_peak(const std::vector<std::string>& args);
int cmd_bench(const std::vector<std::string>& args);

}  // namespace gemvtune::cli
