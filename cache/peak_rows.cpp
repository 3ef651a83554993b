// SQL for the peaks table (see peak_rows.hpp). Rows are checked on the way out as on the way
// in, so a zero or infinite ceiling written by another tool never reaches a percentage.
#include "cache/peak_rows.hpp"

#include <string>

#include "cache/gpu_columns.hpp"
#include "cache/text.hpp"
#include "cache/validate.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

constexpr const char* kSelectPeak =
    "SELECT gpu_name, sm_count, cc_major, cc_minor, gbps, bytes, driver_version, timestamp"
    " FROM peaks";

// Reads a row of kSelectPeak; throws InvalidArgument when validate_peak refuses it.
PeakRecord read_peak_row(const Statement& s) {
  PeakRecord p;
  p.gpu = read_gpu(s, 0);
  p.gbps = s.column_double(4);
  p.bytes = s.column_int64(5);
  p.driver_version = s.column_int(6);
  p.timestamp = s.column_int64(7);
  validate_peak(p);
  return p;
}

std::optional<PeakRecord> usable_peak_row(const Statement& s, std::vector<std::string>* skipped) {
  try {
    return read_peak_row(s);
  } catch (const InvalidArgument& e) {
    if (skipped != nullptr)
      skipped->push_back("peak row (" + abbreviated(s.column_text(0)) + "/" + std::to_string(s.column_int64(1)) +
                         "sm/cc" + std::to_string(s.column_int64(2)) + "." + std::to_string(s.column_int64(3)) +
                         "): " + abbreviated(e.what(), 300));
    return std::nullopt;
  }
}

}  // namespace

std::optional<PeakRecord> load_peak(const Connection& conn, const GpuIdentity& gpu) {
  Statement s = conn.prepare(std::string(kSelectPeak) + kWhereGpu);
  bind_gpu(s, gpu);
  if (!s.step()) return std::nullopt;
  return usable_peak_row(s, nullptr);
}

std::vector<PeakRecord> load_all_peaks(const Connection& conn, std::vector<std::string>* skipped) {
  Statement s = conn.prepare(std::string(kSelectPeak) +
                             " ORDER BY gpu_name, sm_count, cc_major, cc_minor");
  std::vector<PeakRecord> out;
  while (s.step())
    if (auto p = usable_peak_row(s, skipped)) out.push_back(std::move(*p));
  return out;
}

void replace_peak(const Connection& conn, const PeakRecord& p) {
  // The primary key is the GPU identity, so REPLACE swaps the old row for the new one.
  Statement s = conn.prepare(
      "INSERT OR REPLACE INTO peaks (gpu_name, sm_count, cc_major, cc_minor, gbps, bytes,"
      " driver_version, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  bind_gpu(s, p.gpu)
      .bind(5, p.gbps).bind(6, p.bytes).bind(7, p.driver_version).bind(8, p.timestamp);
  s.run();
}

}  // namespace gemvtune::cache
