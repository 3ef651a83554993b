// Reading and writing PeakRecords (the `peaks` table: one measured bandwidth ceiling per
// GPU identity). Like tuned rows, a peak row that fails validate_peak reads as absent.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

std::optional<PeakRecord> load_peak(const Connection& conn, const GpuIdentity& gpu);
// Usable peaks ordered by gpu name, sm count, compute capability; one line per skipped row
// goes to `skipped` when given.
std::vector<PeakRecord> load_all_peaks(const Connection& conn, std::vector<std::string>* skipped = nullptr);
// Inserts or replaces the peak of p.gpu.
void replace_peak(const Connection& conn, const PeakRecord& p);

}  // namespace gemvtune::cache
