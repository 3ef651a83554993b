// The GPU identity as stored in every table keyed by it (tuned, peaks): four columns in this
// order, bound as the statement's first four parameters. One place, so the tables agree.
#pragma once
#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

// Matches the identity bound by bind_gpu.
constexpr const char* kWhereGpu =
    " WHERE gpu_name = ?1 AND sm_count = ?2 AND cc_major = ?3 AND cc_minor = ?4";

inline Statement& bind_gpu(Statement& s, const GpuIdentity& gpu) {
  return s.bind(1, gpu.name).bind(2, gpu.sm_count).bind(3, gpu.cc_major).bind(4, gpu.cc_minor);
}

// The identity from the four columns starting at `first`.
inline GpuIdentity read_gpu(const Statement& s, int first) {
  return GpuIdentity{s.column_text(first), s.column_int(first + 1), s.column_int(first + 2),
                     s.column_int(first + 3)};
}

}  // namespace gemvtune::cache
