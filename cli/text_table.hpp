// Plain-text tables for the CLI: columns padded to their widest cell, numbers right-aligned.
#pragma once
#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace gemvtune::cli {

class TextTable {
 public:
  // right: which columns are right-aligned (numbers).
  TextTable(std::vector<std::string> header, std::vector<bool> right)
      : rows_{std::move(header)}, right_(std::move(right)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.size() == 1; }

  void print(std::ostream& out) const {
    std::vector<std::size_t> width;
    for (const auto& row : rows_)
      for (std::size_t i = 0; i < row.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        width[i] = std::max(width[i], row[i].size());
      }
    for (const auto& row : rows_) {
      std::string line;
      for (std::size_t i = 0; i < row.size(); ++i) {
        const std::string pad(width[i] - row[i].size(), ' ');
        const bool right = i < right_.size() && right_[i];
        line += (i ? "  " : "") + (right ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : ""));
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::vector<bool> right_;
};

// printf-style formatting of one number: fixed("%.2f", 9.125) == "9.13".
inline std::string fixed(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace gemvtune::cli
