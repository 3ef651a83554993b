// Checks that an existing file is a readable, uncorrupted SQLite database before anything
// is written to it, so a wrong path never damages someone's file.
#pragma once
#include "cache/sqlite.hpp"

namespace gemvtune::cache {

// `conn` must be opened with SQLITE_OPEN_READONLY. Throws CacheError naming the path when
// the file is not SQLite at all, is corrupt, or cannot be read.
void check_healthy_sqlite(const Connection& conn);

}  // namespace gemvtune::cache
