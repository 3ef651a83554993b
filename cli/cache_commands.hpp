// What the cache-facing commands (tune, query, list, export, import, peak) share: the --db
// option, JSON forms of records (the export format, so scripts read one shape of data) and
// short text forms of dates and identities.
#pragma once
#include <ctime>
#include <string>

#include "cache/json_records.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cli {

inline constexpr const char* kDbHelp =
    "tuning cache file (default: $GEMVTUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/gemvtune.sqlite, "
    "else ~/.cache/gemvtune/gemvtune.sqlite)";

// --db as given, else TuningCache::default_path().
inline std::string db_path(const std::string& given) {
  return given.empty() ? TuningCache::default_path() : given;
}

using Json = cache::Json;

// One record exactly as `export` writes it; candidates dropped unless asked for.
inline Json record_json(const TuneRecord& r, bool with_candidates) {
  cache::CacheDocument doc;
  doc.tuned.push_back(r);
  Json j = cache::encode_document(doc)["tuned"][0];
  if (!with_candidates) j.erase("candidates");
  return j;
}

inline Json peak_json(const PeakRecord& p) {
  cache::CacheDocument doc;
  doc.peaks.push_back(p);
  return cache::encode_document(doc)["peaks"][0];
}

// "2025-06-01 14:03 UTC".
inline std::string utc_date(std::int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace gemvtune::cli
