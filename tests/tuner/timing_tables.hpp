// Timing tables for testing the strategies without a GPU: a smooth function of the config's
// parameters with one minimum, a bumpy random table, and the recorded H200 sweep. A table
// becomes a MeasureBatch that also counts what it was asked to measure.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gemvtune/config.hpp"
#include "tuner/strategy.hpp"
#include "recorded_sweep.hpp"

namespace gemvtune::tuner_test {

// config text -> time in us; a config missing from the table fails (never passes).
using TimingTable = std::map<std::string, double>;

inline double log2i(int v) { return std::log2(static_cast<double>(v)); }

// Position of v in the list: the split-K choices are not evenly spaced on any scale.
inline int index_of(int v, std::initializer_list<int> values) {
  int i = 0;
  for (int x : values) {
    if (x == v) return i;
    ++i;
  }
  return -1;
}

// Separable and convex in each parameter's position, so walking to better one-parameter
// neighbours reaches the minimum: t128_r2_kw2_v16_u4_sk1_cs_pdl.
inline double smooth_time(const KernelConfig& c) {
  const double dt = log2i(c.threads) - 7, dr = log2i(c.rows_per_warp) - 1, dk = log2i(c.k_warps) - 1,
               du = log2i(c.unroll) - 2, ds = index_of(c.split_k, {1, 2, 3, 4, 6, 8});
  return 10 + 1.0 * dt * dt + 0.7 * dr * dr + 0.5 * dk * dk + 0.3 * du * du + 0.9 * ds * ds +
         (c.hint == LoadHint::streaming ? 0 : 0.4) + (c.pdl ? 0 : 0.6);
}

inline TimingTable smooth_table(const std::vector<KernelConfig>& space) {
  TimingTable t;
  for (const KernelConfig& c : space) t[to_string(c)] = smooth_time(c);
  return t;
}

// Independent random times: no structure for the neighbourhood search to follow.
inline TimingTable bumpy_table(const std::vector<KernelConfig>& space, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> time(5.0, 50.0);
  TimingTable t;
  for (const KernelConfig& c : space) t[to_string(c)] = time(rng);
  return t;
}

// The recorded sweep of one shape (bench/results/sweeps/*.csv: shape,dtype,config,us,...);
// a config listed twice keeps its last time. Empty when the file is missing.
inline TimingTable recorded_table(const std::string& csv_path, const std::string& shape) {
  TimingTable t;
  for (const recorded::SweepRow& r : recorded::read_sweep_rows(csv_path))
    if (r.shape == shape && r.dtype == "bf16") t[r.config] = r.us;
  return t;
}

// The shapes of a recorded sweep (bf16 rows), in the order they first appear.
inline std::vector<std::string> recorded_shapes(const std::string& csv_path) {
  std::vector<std::string> shapes;
  for (const recorded::SweepRow& r : recorded::read_sweep_rows(csv_path))
    if (r.dtype == "bf16" && std::find(shapes.begin(), shapes.end(), r.shape) == shapes.end())
      shapes.push_back(r.shape);
  return shapes;
}

// A MeasureBatch over a table that remembers every config asked for and every batch size.
struct TableMeasurer {
  const TimingTable* table;
  std::vector<std::string> asked;
  std::vector<std::size_t> batches;

  MeasureBatch fn() {
    return [this](const std::vector<KernelConfig>& batch) {
      batches.push_back(batch.size());
      std::vector<Measured> out;
      for (const KernelConfig& c : batch) {
        asked.push_back(to_string(c));
        auto it = table->find(to_string(c));
        out.push_back(Measured{c, it != table->end(), it != table->end() ? it->second : 0.0});
      }
      return out;
    };
  }
};

// The config of the table with the lowest time among `space`.
inline std::string table_minimum(const TimingTable& t, const std::vector<KernelConfig>& space) {
  std::string best;
  for (const KernelConfig& c : space) {
    auto it = t.find(to_string(c));
    if (it != t.end() && (best.empty() || it->second < t.at(best))) best = it->first;
  }
  return best;
}

}  // namespace gemvtune::tuner_test
