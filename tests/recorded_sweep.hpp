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
    if (line.rfind("shape,", 0) == 0) continue;  // the header again: files of several sweeps joined
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
  // int4g128 on tensor cores ran only through the shared-memory ring (templates/gemv_qtc.cu)
  // until 2026-12-01, when the register-load kernel took the configs without `ring`: a file
  // whose int4 tensor-core configs never say ring was recorded before, and its configs are
  // today's ring ones.
  const auto int4_tc = [](const SweepRow& r) {
    return r.dtype.find(":int4") != std::string::npos && r.config.rfind("tc_", 0) == 0;
  };
  bool says_ring = false;
  for (const SweepRow& r : rows) says_ring = says_ring || (int4_tc(r) && r.config.find("_ring") != std::string::npos);
  if (!says_ring)
    for (SweepRow& r : rows)
      if (int4_tc(r)) {
        const auto m = r.config.rfind("_m");  // the m tile comes last ("..._pdl_m16")
        const bool tile = m != std::string::npos && m + 2 < r.config.size() &&
                          r.config.find_first_not_of("0123456789", m + 2) == std::string::npos;
        r.config.insert(tile ? m : r.config.size(), "_ring");
      }
  return rows;
}

// A batched sweep's shape column, "MxNxK" (gemvtune-sweep's argument): (M, N x K).
inline std::pair<int, std::string> split_batched_shape(const std::string& text) {
  const auto x = text.find('x');
  return {std::stoi(text.substr(0, x)), text.substr(x + 1)};
}

}  // namespace gemvtune::recorded
