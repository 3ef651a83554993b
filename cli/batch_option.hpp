// --batch M on tune, query, explain, run and bench: repeatable or comma-separated
// ("1,2,4,8,16"), each 1..kMaxBatch (query and explain then take one). One parser so the
// commands accept and refuse the same texts.
#pragma once
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cli {

inline const char* const kBatchHelp =
    "batch M: rows of X per GEMV (tokens of a decode step), 1..16; repeatable or comma-separated "
    "(default 1)";

// Distinct values in the order given; {1} when none. Throws InvalidArgument naming the text.
inline std::vector<int> parse_batches(const std::vector<std::string>& values) {
  std::vector<int> out;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t end = std::min(value.find(',', start), value.size());
      const std::string item = value.substr(start, end - start);
      int m = 0;
      auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), m);
      if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || m < 1 || m > kMaxBatch)
        throw InvalidArgument("bad --batch '" + item + "': expected a whole number from 1 to " +
                              std::to_string(kMaxBatch));
      if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
      start = end + 1;
    }
  }
  if (out.empty()) out.push_back(1);
  return out;
}

}  // namespace gemvtune::cli
