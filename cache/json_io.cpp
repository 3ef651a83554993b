// TuningCache::export_json and import_json: the whole cache as one JSON document, and a
// merge of such a document into this cache that keeps the faster entry per key. The
// document is parsed and validated completely before the write transaction starts, so
// malformed input leaves the database untouched.
#include <istream>
#include <ostream>

#include "cache/cache_impl.hpp"
#include "cache/json_records.hpp"
#include "cache/peak_rows.hpp"
#include "cache/tuned_rows.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {

void TuningCache::export_json(std::ostream& out) const {
  cache::CacheDocument doc;
  {
    // Winners, candidates and peaks from one snapshot even while another process writes.
    cache::ReadTransaction snapshot(impl_->conn);
    doc.tuned = cache::load_all_tuned(impl_->conn, true);
    doc.peaks = cache::load_all_peaks(impl_->conn);
  }
  out << cache::encode_document(doc).dump(2) << '\n';
  if (!out) cache::throw_cache_error(path(), "export: writing the JSON output failed");
}

TuningCache::ImportStats TuningCache::import_json(std::istream& in) {
  impl_->require_read_write("import");
  cache::CacheDocument doc;
  try {
    doc = cache::decode_document(cache::Json::parse(in));
  } catch (const cache::Json::exception& e) {
    cache::throw_cache_error(path(), std::string("import: malformed JSON: ") + e.what());
  } catch (const InvalidArgument& e) {
    cache::throw_cache_error(path(), std::string("import: ") + e.what());
  }

  ImportStats stats;
  cache::WriteTransaction tx(impl_->conn);
  for (const TuneRecord& r : doc.tuned) {
    const std::optional<double> existing = cache::load_tuned_time(impl_->conn, r.key);
    if (existing && !(r.time_us < *existing)) {
      ++stats.kept;  // ours is as fast or faster: a tie keeps what is already here
      continue;
    }
    cache::replace_tuned(impl_->conn, r);
    ++(existing ? stats.replaced : stats.added);
  }
  for (const PeakRecord& p : doc.peaks) {
    // A ceiling measurement can only underestimate, so the higher one is the better one.
    const std::optional<PeakRecord> existing = cache::load_peak(impl_->conn, p.gpu);
    if (!existing || p.gbps > existing->gbps) cache::replace_peak(impl_->conn, p);
  }
  tx.commit();
  return stats;
}

}  // namespace gemvtune
