// SQL for the peaks table (see peak_rows.hpp).
#include "cache/peak_rows.hpp"

#include <string>

namespace gemvtune::cache {
namespace {

constexpr const char* kSelectPeak =
    "SELECT gpu_name, sm_count, cc_major, cc_minor, gbps, bytes, driver_version, timestamp"
    " FROM peaks";

PeakRecord read_peak_row(const Statement& s) {
  PeakRecord p;
  p.gpu.name = s.column_text(0);
  p.gpu.sm_count = s.column_int(1);
  p.gpu.cc_major = s.column_int(2);
  p.gpu.cc_minor = s.column_int(3);
  p.gbps = s.column_double(4);
  p.bytes = s.column_int64(5);
  p.driver_version = s.column_int(6);
  p.timestamp = s.column_int64(7);
  return p;
}

}  // namespace

std::optional<PeakRecord> load_peak(const Connection& conn, const GpuIdentity& gpu) {
  Statement s = conn.prepare(std::string(kSelectPeak) +
                             " WHERE gpu_name = ?1 AND sm_count = ?2 AND cc_major = ?3"
                             " AND cc_minor = ?4");
  s.bind(1, gpu.name).bind(2, gpu.sm_count).bind(3, gpu.cc_major).bind(4, gpu.cc_minor);
  if (!s.step()) return std::nullopt;
  return read_peak_row(s);
}

std::vector<PeakRecord> load_all_peaks(const Connection& conn) {
  Statement s = conn.prepare(std::string(kSelectPeak) +
                             " ORDER BY gpu_name, sm_count, cc_major, cc_minor");
  std::vector<PeakRecord> out;
  while (s.step()) out.push_back(read_peak_row(s));
  return out;
}

void replace_peak(const Connection& conn, const PeakRecord& p) {
  // The primary key is the GPU identity, so REPLACE swaps the old row for the new one.
  Statement s = conn.prepare(
      "INSERT OR REPLACE INTO peaks (gpu_name, sm_count, cc_major, cc_minor, gbps, bytes,"
      " driver_version, timestamp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  s.bind(1, p.gpu.name).bind(2, p.gpu.sm_count).bind(3, p.gpu.cc_major).bind(4, p.gpu.cc_minor)
      .bind(5, p.gbps).bind(6, p.bytes).bind(7, p.driver_version).bind(8, p.timestamp);
  s.run();
}

}  // namespace gemvtune::cache
