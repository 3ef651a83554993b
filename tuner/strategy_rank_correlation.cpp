// Spearman rank correlation: how well the analytic model orders configs compared with what
// was measured (reported by `tune --json` and the benchmark).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gemvtune/error.hpp"
#include "gemvtune/tuner.hpp"

namespace gemvtune {

namespace {
// Ranks 1..n, ties sharing the average of the ranks they span.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
  std::vector<double> ranks(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double rank = (static_cast<double>(i) + static_cast<double>(j)) / 2.0 + 1.0;
    for (std::size_t m = i; m <= j; ++m) ranks[order[m]] = rank;
    i = j + 1;
  }
  return ranks;
}
}  // namespace

double spearman_rank_correlation(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size())
    throw InvalidArgument("rank correlation needs two lists of one length, got " +
                          std::to_string(a.size()) + " and " + std::to_string(b.size()));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (a.size() < 2) return nan;
  // Pearson correlation of the ranks: correct with ties, unlike the 1 - 6 sum d^2 shortcut.
  const std::vector<double> ra = average_ranks(a), rb = average_ranks(b);
  const double mean = (static_cast<double>(a.size()) + 1.0) / 2.0;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  if (saa == 0 || sbb == 0) return nan;  // one list is constant: no ordering to compare
  return sab / std::sqrt(saa * sbb);
}

}  // namespace gemvtune
