// Opening a cache file safely: verify read-only first, then (read_write) reopen, migrate and
// switch to WAL. Nothing is written to a file until it is known to be ours or empty.
#pragma once
#include <string>

#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

// How long a connection waits for another process's lock before failing. Long enough that
// concurrent tuners sharing one file queue up instead of erroring.
inline constexpr int kBusyTimeoutMs = 10'000;

// Returns a connection to a verified cache of the current schema version, or throws
// CacheError naming the path and the problem.
Connection open_cache(const std::string& path, CacheMode mode);

}  // namespace gemvtune::cache
