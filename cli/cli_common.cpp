// Option parsing and argument checks shared by the commands (see cli_common.hpp).
#include "cli/cli_common.hpp"

#include <climits>
#include <cstdio>
#include <iostream>
#include <typeinfo>

#include "cache/text.hpp"
#include "tuner/report_json.hpp"
#include "cache/validate.hpp"
#include "gemvtune/error.hpp"

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
    throw UsageError(short_message(e.what()) + "\nusage: " + usage_line);
  }
  // Every cache command reads --db into a string that is empty when not given; an empty
  // value given on purpose (an unset shell variable) must not quietly mean the default cache.
  if (vm.count("db") && vm["db"].value().type() == typeid(std::string)) {
    const std::string& db = vm["db"].as<std::string>();
    if (db.empty())
      throw UsageError("--db is empty: give the cache file's path, or leave --db out for the default cache\nusage: " +
                       usage_line);
    // No file has a longer path; std::filesystem would throw with the whole text twice.
    if (db.size() >= PATH_MAX)
      throw UsageError("--db is " + std::to_string(db.size()) + " bytes long, longer than any path (" +
                       std::to_string(PATH_MAX) + ")");
  }
  return false;
}

GpuIdentity parse_gpu_key(const std::string& text) {
  try {
    return report::parse_gpu_key(text);
  } catch (const InvalidArgument& e) {
    // The option's name in place of "GPU"; a usage error, exit 2.
    const std::string why = e.what(), lead = "bad GPU";
    throw UsageError(why.rfind(lead, 0) == 0 ? "bad --gpu" + why.substr(lead.size()) : "--gpu: " + why);
  }
}

std::string short_message(const std::string& message) {
  std::string out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t open = message.find('\'', from);
    const std::size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
    if (close == std::string::npos) break;
    const std::size_t length = close - open - 1;
    out += message.substr(from, open + 1 - from);
    out += length > 100 ? cache::abbreviated(message.substr(open + 1, length), 60) : message.substr(open + 1, length);
    out += '\'';
    from = close + 1;
  }
  out += message.substr(from);
  return cache::abbreviated(out, 2000);
}

}  // namespace gemvtune::cli
