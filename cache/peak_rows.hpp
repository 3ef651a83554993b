// Reading and writing PeakRecords (the `peaks` table: one measured bandwidth ceiling per
// GPU identity).
#pragma once
#include <optional>
#include <vector>

#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

std::optional<PeakRecord> load_peak(const Connection& conn, const GpuIdentity& gpu);
// Ordered by gpu name, sm count, compute capability.
std::vector<PeakRecord> load_all_peaks(const Connection& conn);
// Inserts or replaces the peak of p.gpu.
void replace_peak(const Connection& conn, const PeakRecord& p);

}  // namespace gemvtune::cache
