// The private state behind gemvtune::TuningCache, shared by the files that implement its
// members (tuning_cache.cpp, json_io.cpp).
#pragma once
#include <string_view>

#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune {

struct TuningCache::Impl {
  cache::Connection conn;
  CacheMode mode;

  // A read_only cache refuses writes up front with a message, instead of letting SQLite
  // fail with "attempt to write a readonly database".
  void require_read_write(std::string_view operation) const {
    if (mode != CacheMode::read_write)
      cache::throw_cache_error(conn.path(), "cannot " + std::string(operation) +
                                                ": the cache is opened read_only");
  }
};

}  // namespace gemvtune
