// The GPU's read ceiling: the bandwidth every "% of ceiling" is measured against.
#pragma once
#include <cstdint>

#include "gemvtune/cache.hpp"

namespace gemvtune {

namespace jit {
class Context;
}

struct PeakOptions {
  std::int64_t bytes = std::int64_t{4} << 30;  // streamed per run; less only if memory is short
  int runs = 9;                                // timed runs; the median counts
};

// Streams `bytes` through a read-only kernel (16-byte loads, several in flight per thread,
// reduced to one value so no load can be dropped) and returns the median bandwidth.
// ctx must be current. Store it with TuningCache::store_peak.
PeakRecord measure_peak(const jit::Context& ctx, const PeakOptions& options = {});

}  // namespace gemvtune
