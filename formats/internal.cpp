// Internal scalar helpers of formats/ (see internal.hpp).
#include "formats/internal.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "gemvtune/error.hpp"
#include "tuner/host_data.hpp"

namespace gemvtune::formats {

namespace {
// Bits of v (a double) rounded to nearest in a 16-bit dtype. The double -> float step is exact
// for every value this library stores (scales and zeros computed in or read from <= 32 bits),
// and otherwise still lands on one of v's two neighbours in the 16-bit dtype.
std::uint16_t to_bits16(DType t, double v) {
  const float f = static_cast<float>(v);
  return t == DType::bf16 ? float_to_bf16_bits(f) : float_to_fp16_bits(f);
}
double from_bits16(DType t, std::uint16_t h) {
  return t == DType::bf16 ? bf16_bits_to_float(h) : fp16_bits_to_float(h);
}
}  // namespace

double round_to(DType t, double v) {
  if (t == DType::f32) return static_cast<float>(v);
  return from_bits16(t, to_bits16(t, v));
}

double max_finite(DType t) {
  switch (t) {
    case DType::f32: return std::numeric_limits<float>::max();
    case DType::f16: return 65504.0;
    case DType::bf16: return from_bits16(DType::bf16, 0x7f7f);
  }
  return 0;
}

double round_down_to(DType t, double v) {
  if (v >= max_finite(t)) return max_finite(t);
  if (t == DType::f32) {
    float f = static_cast<float>(v);
    if (static_cast<double>(f) > v) f = std::nextafter(f, 0.0f);
    return f;
  }
  // Nearest is one of v's two neighbours; step down one unit (positive values: bits - 1) when
  // it is the upper one.
  std::uint16_t h = to_bits16(t, v);
  if (from_bits16(t, h) > v && h > 0) --h;
  return from_bits16(t, h);
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what) {
  std::int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) ||
      static_cast<std::uint64_t>(r) > std::numeric_limits<std::size_t>::max())
    throw InvalidArgument(what + ": size overflows (" + std::to_string(a) + " * " +
                          std::to_string(b) + ")");
  return r;
}

double min_positive(DType t) {
  if (t == DType::f32) return std::numeric_limits<float>::denorm_min();
  return from_bits16(t, 1);
}

void check_matrix(const HostMatrix& m, std::int64_t rows, std::int64_t cols,
                  const std::string& name) {
  check_pointer(m.data, name);
  if (m.rows != rows || m.cols != cols)
    throw InvalidArgument(name + ": expected " + std::to_string(rows) + " x " +
                          std::to_string(cols) + " values, got " + std::to_string(m.rows) +
                          " x " + std::to_string(m.cols));
  if (m.ld != 0 && m.ld < m.cols)
    throw InvalidArgument(name + ": row stride " + std::to_string(m.ld) + " is less than its " +
                          std::to_string(m.cols) + " columns");
}

void check_pointer(const void* p, const std::string& name) {
  if (p == nullptr) throw InvalidArgument(name + " is null");
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace gemvtune::formats
