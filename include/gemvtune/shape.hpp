// The GEMV problem: y[N] = W[N x K] x[K], W row-major with row stride ld >= K.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace gemvtune {

struct Shape {
  std::int64_t n = 0;  // rows of W, elements of y
  std::int64_t k = 0;  // columns of W, elements of x

  bool operator==(const Shape& o) const { return n == o.n && k == o.k; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  bool operator<(const Shape& o) const { return n != o.n ? n < o.n : k < o.k; }
};

// Most GEMVs one fused launch computes (they share x: Q, K and V; gate and up). The kernels'
// GEMV_MAX_SEGMENTS (templates/prelude.cu) must equal it; tests/generator/source_test.cpp checks.
inline constexpr int kMaxFusedSegments = 4;

// Largest N or K accepted: the kernels index rows and columns with 32-bit ints.
inline constexpr std::int64_t kMaxDim = (std::int64_t{1} << 31) - 1;

// "4096x14336" (also "4096X14336"). Throws InvalidArgument naming the text when malformed,
// zero, negative or above kMaxDim.
Shape parse_shape(std::string_view text);
std::string to_string(const Shape& s);
// With a batch of M rows: "8x4096x4096" (M x N x K), plain "4096x4096" at M = 1.
std::string to_string(const Shape& s, int batch);

// Throws InvalidArgument unless 1 <= n, k <= kMaxDim.
void check_shape(const Shape& s);

}  // namespace gemvtune
