// read_cache_json, TuningCache::export_json, import_document and import_json: the whole
// cache as one JSON document, and a merge of such a document into this cache that keeps the
// faster entry per key. A document is read and validated completely, touching no cache,
// before a write transaction starts, so malformed input leaves every file untouched.
#include <istream>
#include <ostream>

#include "cache/cache_impl.hpp"
#include "cache/json_records.hpp"
#include "cache/peak_rows.hpp"
#include "cache/text.hpp"
#include "cache/tuned_rows.hpp"
#include "cache/validate.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {

CacheDocument read_cache_json(std::istream& in, const std::string& source) {
  try {
    return cache::decode_document(cache::parse_json(in));
  } catch (const cache::Json::exception& e) {
    // nlohmann quotes the last token read, which may be a long run of input.
    throw InvalidArgument(source + ": malformed JSON: " + cache::abbreviated(e.what(), 300));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(source + ": " + cache::abbreviated(e.what(), 1000));
  } catch (const std::bad_alloc&) {
    throw InvalidArgument(source + ": too large to read into memory");
  } catch (const std::exception& e) {
    // A read error of the stream itself (libstdc++ throws "basic_filebuf::underflow" for a
    // directory or an I/O error however the stream's exception mask is set).
    throw InvalidArgument(source + ": cannot read: " + e.what());
  }
}

std::vector<std::string> TuningCache::problems() const {
  std::vector<std::string> out;
  cache::ReadTransaction snapshot(impl_->conn);
  cache::load_all_tuned(impl_->conn, true, &out);
  cache::load_all_peaks(impl_->conn, &out);
  return out;
}

TuningCache::ExportStats TuningCache::export_json(std::ostream& out) const {
  CacheDocument doc;
  ExportStats stats;
  {
    // Winners, candidates and peaks from one snapshot even while another process writes.
    cache::ReadTransaction snapshot(impl_->conn);
    doc.tuned = cache::load_all_tuned(impl_->conn, true, &stats.skipped);
    doc.peaks = cache::load_all_peaks(impl_->conn, &stats.skipped);
  }
  stats.tuned = static_cast<int>(doc.tuned.size());
  stats.peaks = static_cast<int>(doc.peaks.size());
  std::string text;
  try {
    text = cache::encode_document(doc).dump(2);
  } catch (const cache::Json::exception& e) {
    // Not expected: every row read back passed validation, UTF-8 included.
    cache::throw_cache_error(path(), std::string("export: cannot write JSON: ") + e.what());
  }
  out << text << '\n';
  if (!out) cache::throw_cache_error(path(), "export: writing the JSON output failed");
  return stats;
}

TuningCache::ImportStats TuningCache::import_document(const CacheDocument& doc) {
  impl_->require_read_write("import");
  // The document may not come from read_cache_json: check all of it before writing any.
  for (std::size_t i = 0; i < doc.tuned.size(); ++i) {
    try {
      cache::validate_record(doc.tuned[i]);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("import: tuned[" + std::to_string(i) + "]: " + e.what());
    }
  }
  for (std::size_t i = 0; i < doc.peaks.size(); ++i) {
    try {
      cache::validate_peak(doc.peaks[i]);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument("import: peaks[" + std::to_string(i) + "]: " + e.what());
    }
  }

  ImportStats stats;
  cache::WriteTransaction tx(impl_->conn);
  for (const TuneRecord& r : doc.tuned) {
    // An unusable row reads as no time at all, so any valid record replaces it.
    const std::optional<double> existing = cache::load_tuned_time(impl_->conn, r.key);
    if (existing && !(r.time_us < *existing)) {
      ++stats.kept;  // ours is as fast or faster: a tie keeps what is already here
      continue;
    }
    const bool had_row = existing || cache::has_tuned_row(impl_->conn, r.key);
    cache::replace_tuned(impl_->conn, r);
    ++(had_row ? stats.replaced : stats.added);
  }
  for (const PeakRecord& p : doc.peaks) {
    // A ceiling measurement can only underestimate, so the higher one is the better one.
    const std::optional<PeakRecord> existing = cache::load_peak(impl_->conn, p.gpu);
    if (existing && !(p.gbps > existing->gbps)) {
      ++stats.peaks_kept;
      continue;
    }
    cache::replace_peak(impl_->conn, p);
    ++(existing ? stats.peaks_raised : stats.peaks_added);
  }
  tx.commit();
  return stats;
}

TuningCache::ImportStats TuningCache::import_json(std::istream& in, const std::string& source) {
  impl_->require_read_write("import");
  return import_document(read_cache_json(in, source));
}

}  // namespace gemvtune
