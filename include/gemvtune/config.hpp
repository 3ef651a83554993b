// A GEMV kernel configuration: every parameter the generator and the launcher need.
//
// Text form (used in kernel names, logs, the CLI and the cache), fields in this order:
//   t128_r2_kw1_v16_u4_sk3_cs[_pdl[_pf]]
//   t   threads per block            kw  warps that share one row set along K
//   r   rows per warp                v   bytes per weight load (2, 4, 8, 16)
//   u   loads in flight per row before first use (unroll depth)
//   sk  split-K: blocks along K whose partial sums are combined in fixed order
//   cs|nc  weight load cache hint: cs = streaming (evict first), nc = read-only path
//   pdl programmatic dependent launch (Hopper): weights prefetched before waiting on
//       the previous kernel in the stream
//   pf  (with pdl) also asks L2 for the rest of the warp's weights before waiting, so HBM stays
//       busy while the previous kernel drains
// Parsing is strict: to_string(parse_config(s)) == s for every accepted s.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gemvtune/dtype.hpp"
#include "gemvtune/shape.hpp"

namespace gemvtune {

enum class LoadHint { streaming, readonly };  // "cs", "nc"

struct KernelConfig {
  int threads = 128;
  int rows_per_warp = 1;
  int k_warps = 1;
  int vec_bytes = 16;
  int unroll = 2;
  int split_k = 1;
  LoadHint hint = LoadHint::streaming;
  bool pdl = false;
  bool prefetch_l2 = false;  // only with pdl

  int warps() const { return threads / 32; }
  // Rows one block produces: warps are grouped k_warps at a time onto one row set.
  int block_rows() const { return warps() / k_warps * rows_per_warp; }

  bool operator==(const KernelConfig& o) const;
  bool operator!=(const KernelConfig& o) const { return !(*this == o); }
};

std::string to_string(const KernelConfig& c);
// Throws InvalidArgument naming the text and the field when malformed.
KernelConfig parse_config(std::string_view text);

// The validity rules, all in one place. Each returns the reason a config cannot be used,
// or nothing when it can.
//   why_invalid: rules that hold for any shape (ranges, divisibility, register budget).
//   why_invalid_for: also the rules of this dtype and shape (vector narrower than an
//     element, split-K with splits that would get less than one warp's load).
std::optional<std::string> why_invalid(const KernelConfig& c);
std::optional<std::string> why_invalid_for(const KernelConfig& c, DType t, const Shape& s);

// Alignment rule for vector loads: W's base, each row (ld * element size) and x must be
// vec_bytes aligned. Returns the reason when they are not.
std::optional<std::string> why_misaligned(const KernelConfig& c, DType t, std::uintptr_t w,
                                          std::int64_t ld, std::uintptr_t x);

// Widest vector width (<= c.vec_bytes) that the pointers allow; element size at worst.
int widest_aligned_vec_bytes(const KernelConfig& c, DType t, std::uintptr_t w, std::int64_t ld,
                             std::uintptr_t x);

// Throws InvalidArgument with the reason when why_invalid_for says so.
void check_config(const KernelConfig& c, DType t, const Shape& s);

}  // namespace gemvtune
