// FP8 E4M3FN (OCP 8-bit floating point, "FN": finite, NaN only at S.1111.111), as
// torch.float8_e4m3fn and CUDA's __nv_fp8_e4m3: exponent bias 7, subnormals m * 2^-9,
// normals (1 + m/8) * 2^(e-7), largest finite 0x7e = 448.
#include <cmath>
#include <limits>

#include "gemvtune/weights.hpp"

namespace gemvtune {

double e4m3_to_double(std::uint8_t code) {
  const bool neg = (code & 0x80) != 0;
  const int e = (code >> 3) & 0xf, m = code & 0x7;
  double mag;
  if (e == 0xf && m == 0x7) return neg ? -std::numeric_limits<double>::quiet_NaN()
                                       : std::numeric_limits<double>::quiet_NaN();
  if (e == 0) mag = std::ldexp(static_cast<double>(m), -9);
  else mag = std::ldexp(static_cast<double>(8 + m), e - 10);
  return neg ? -mag : mag;
}

float e4m3_to_float(std::uint8_t code) { return static_cast<float>(e4m3_to_double(code)); }

std::uint8_t double_to_e4m3(double x) {
  const std::uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  if (std::isnan(x)) return sign | 0x7f;
  const double a = std::fabs(x);
  if (a >= 448.0) return sign | 0x7e;  // saturate (also infinities)
  if (a < std::ldexp(1.0, -6)) {
    // Subnormal range: units of 2^-9; nearbyint rounds ties to even (the default mode). A
    // result of 8 is the smallest normal, whose code is 0x08 too.
    return sign | static_cast<std::uint8_t>(std::nearbyint(std::ldexp(a, 9)));
  }
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): a in [2^(e-1), 2^e)
  int exp = e - 1;    // a in [2^exp, 2^(exp+1)), exp in -6..8
  auto mant = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - exp)));  // 8..16
  if (mant == 16) {
    mant = 8;
    ++exp;
  }
  // a < 448 rounds to at most 448 (exp 8, mant 14); S.1111.111 would be the NaN code, so
  // guard against it anyway.
  if (exp > 8 || (exp == 8 && mant > 14)) return sign | 0x7e;
  return sign | static_cast<std::uint8_t>(((exp + 7) << 3) | (mant - 8));
}

}  // namespace gemvtune
