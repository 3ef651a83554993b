// What the cache-facing commands (tune, query, list, export, import, peak) share: the --db
// option, JSON forms of records (the export format, so scripts read one shape of data) and
// short text forms of dates and identities.
#pragma once
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "cache/json_records.hpp"
#include "tuner/report_json.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cli {

inline constexpr const char* kDbHelp =
    "tuning cache file (default: $GEMVTUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/gemvtune.sqlite, "
    "else ~/.cache/gemvtune/gemvtune.sqlite)";

// --db as given, else TuningCache::default_path(). Empty means "not given": parse_or_help
// refuses an explicit `--db ''` before a command gets here.
inline std::string db_path(const std::string& given) {
  return given.empty() ? TuningCache::default_path() : given;
}

using Json = cache::Json;

// Tells on stderr which rows of the cache this build could not use and so `what`
// ("left out of the export", "not listed"); at most ten, then a count.
inline void warn_skipped(const std::string& path, const std::vector<std::string>& skipped, const std::string& what) {
  if (skipped.empty()) return;
  std::cerr << "warning: " << skipped.size() << (skipped.size() == 1 ? " row" : " rows") << " of " << path
            << " that this build cannot use " << (skipped.size() == 1 ? "was " : "were ") << what
            << " (tune or import replaces an entry):\n";
  for (std::size_t i = 0; i < skipped.size() && i < 10; ++i) std::cerr << "  " << skipped[i] << "\n";
  if (skipped.size() > 10) std::cerr << "  ... and " << skipped.size() - 10 << " more\n";
}

using report::peak_json;
using report::record_json;

// "2025-06-01 14:03 UTC"; "unix time N" for a moment without a four-digit year, which
// strftime would print as nonsense (the cache refuses such rows; this is the last guard).
inline std::string utc_date(std::int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr || tm.tm_year < 1 - 1900 || tm.tm_year > 9999 - 1900)
    return "unix time " + std::to_string(unix_seconds);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace gemvtune::cli
