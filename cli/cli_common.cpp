// Option parsing shared by the commands (see cli_common.hpp).
#include "cli/cli_common.hpp"

#include <iostream>

namespace gemvtune::cli {

bool parse_or_help(const std::vector<std::string>& args, const po::options_description& desc,
                   const po::positional_options_description& positional, po::variables_map& vm,
                   const std::string& usage_line) {
  po::options_description all;
  all.add_options()("help,h", "show this help");
  all.add(desc);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << "usage: " << usage_line << "\n\n" << all << "\n";
      return true;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + "\nusage: " + usage_line);
  }
  return false;
}

}  // namespace gemvtune::cli
