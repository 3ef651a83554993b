// Reading a recorded sweep (bench/results/raw/*sweep*.csv, written by bench/sweep.cpp): one row
// per measured config, header "shape,dtype[:weights],config,us,...". Shared by the tests that
// check the model and the strategies against recorded H200 measurements.
#pragma once
#include <fstream>
#include <utility>
#include <sstream>
#include <string>
#include <vector>

namespace gemvtune::recorded {

struct SweepRow {
  std::string shape;  // "NxK"
  std::string dtype;  // "bf16", or "bf16:int4g128" with the weight format
  std::string config;
  double us = 0;
};

// The rows of the file at path (empty when it cannot be read; the caller says so).
inline std::vector<SweepRow> read_sweep_rows(const std::string& path) {
  std::vector<SweepRow> rows;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    SweepRow r;
    std::string us;
    std::getline(ss, r.shape, ',');
    std::getline(ss, r.dtype, ',');
    std::getline(ss, r.config, ',');
    std::getline(ss, us, ',');
    r.us = std::stod(us);
    rows.push_back(std::move(r));
  }
  return rows;
}

// A batched sweep's shape column, "MxNxK" (gemvtune-sweep's argument): (M, N x K).
inline std::pair<int, std::string> split_batched_shape(const std::string& text) {
  const auto x = text.find('x');
  return {std::stoi(text.substr(0, x)), text.substr(x + 1)};
}

}  // namespace gemvtune::recorded
