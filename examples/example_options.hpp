// Command-line options of the C++ examples, not part of gemvtune: "--name value" pairs and
// --help. Every name must be one the example knows, every value present, every number whole
// (or a plain decimal) and in range; anything else is a UsageError, which the examples report
// with status 2 before they look for a GPU. (They parsed pairs with atoi and skipped what they
// did not know: "--batch 4x" ran M = 4, "--layer 2" ran all 32 layers, and a flag given no
// value took the next option as it.)
#pragma once
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace example {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Options {
 public:
  // names: the options the example takes, without "--".
  Options(int argc, char** argv, const std::vector<std::string>& names) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help" || arg == "-h") {
        help_ = true;
        continue;
      }
      if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "'");
      const std::string name = arg.substr(2);
      bool known = false;
      for (const std::string& n : names) known |= n == name;
      if (!known) throw UsageError("unknown option '" + arg + "'");
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
        throw UsageError("option '" + arg + "' needs a value");
      values_[name] = argv[++i];
    }
  }

  bool help() const { return help_; }

  std::string text(const std::string& name, const std::string& fallback) const {
    const auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }

  long long integer(const std::string& name, long long fallback, long long low, long long high) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    const std::string& v = it->second;
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno == ERANGE || n < low || n > high)
      throw UsageError("--" + name + " '" + v + "': expected a whole number from " + std::to_string(low) + " to " +
                       std::to_string(high));
    return n;
  }

  double number(const std::string& name, double fallback, double low, double high) const {
    const auto it = values_.find(name);
    if (it == values_.end()) return fallback;
    const std::string& v = it->second;
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !std::isfinite(x) || x < low || x > high)
      throw UsageError("--" + name + " '" + v + "': expected a number from " + std::to_string(low) + " to " +
                       std::to_string(high));
    return x;
  }

 private:
  std::map<std::string, std::string> values_;
  bool help_ = false;
};

}  // namespace example
