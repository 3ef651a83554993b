// FP8 E4M3FN encode and decode: all 256 codes, rounding, saturation, NaN, subnormals, -0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gemvtune/weights.hpp"

using namespace gemvtune;

TEST(E4m3, KnownValues) {
  EXPECT_EQ(e4m3_to_double(0x00), 0.0);
  EXPECT_EQ(e4m3_to_double(0x01), std::ldexp(1.0, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_double(0x07), 7 * std::ldexp(1.0, -9));  // largest subnormal
  EXPECT_EQ(e4m3_to_double(0x08), std::ldexp(1.0, -6));  // smallest normal
  EXPECT_EQ(e4m3_to_double(0x38), 1.0);
  EXPECT_EQ(e4m3_to_double(0x3c), 1.5);
  EXPECT_EQ(e4m3_to_double(0x40), 2.0);
  EXPECT_EQ(e4m3_to_double(0x77), 240.0);
  EXPECT_EQ(e4m3_to_double(0x78), 256.0);
  EXPECT_EQ(e4m3_to_double(0x7e), 448.0);  // largest finite
  EXPECT_EQ(e4m3_to_double(0xb8), -1.0);
  EXPECT_EQ(e4m3_to_double(0xfe), -448.0);
  EXPECT_TRUE(std::isnan(e4m3_to_double(0x7f)));
  EXPECT_TRUE(std::isnan(e4m3_to_double(0xff)));
  EXPECT_EQ(e4m3_to_double(0x80), 0.0);
  EXPECT_TRUE(std::signbit(e4m3_to_double(0x80)));
  EXPECT_FALSE(std::signbit(e4m3_to_double(0x00)));
}

TEST(E4m3, AllCodesDecodeMonotonicAndEncodeBack) {
  // Positive codes 0x00..0x7e increase strictly; 0x80 | c is the negative of c; every non-NaN
  // code encodes back to itself (-0 included) and float decoding agrees with double decoding.
  for (int c = 0; c < 256; ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    const double v = e4m3_to_double(code);
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(v)) << c;
      EXPECT_TRUE(std::isnan(e4m3_to_float(code))) << c;
      continue;
    }
    EXPECT_EQ(double_to_e4m3(v), code) << "code " << c << " value " << v;
    EXPECT_EQ(static_cast<double>(e4m3_to_float(code)), v) << c;
    if (c >= 0x80) {
      EXPECT_EQ(v, -e4m3_to_double(static_cast<std::uint8_t>(c & 0x7f))) << c;
    } else if (c > 0) {
      EXPECT_GT(v, e4m3_to_double(static_cast<std::uint8_t>(c - 1))) << c;
    }
  }
  // 126 distinct positive finite magnitudes besides zero, 8 of them subnormal.
  int subnormals = 0;
  for (int c = 1; c < 0x7f; ++c)
    if (e4m3_to_double(static_cast<std::uint8_t>(c)) < std::ldexp(1.0, -6)) ++subnormals;
  EXPECT_EQ(subnormals, 7);
}

TEST(E4m3, RoundsToNearestTiesToEven) {
  for (int c = 0; c < 0x7e; ++c) {
    const auto lo_code = static_cast<std::uint8_t>(c), hi_code = static_cast<std::uint8_t>(c + 1);
    const double lo = e4m3_to_double(lo_code), hi = e4m3_to_double(hi_code);
    const double mid = (lo + hi) / 2;
    const std::uint8_t even = (c % 2 == 0) ? lo_code : hi_code;
    EXPECT_EQ(double_to_e4m3(mid), even) << "midpoint of " << lo << " and " << hi;
    EXPECT_EQ(double_to_e4m3(-mid), even | 0x80) << "midpoint of " << -lo << " and " << -hi;
    EXPECT_EQ(double_to_e4m3(std::nextafter(mid, 0.0)), lo_code) << mid;
    EXPECT_EQ(double_to_e4m3(std::nextafter(mid, 1e9)), hi_code) << mid;
  }
}

TEST(E4m3, SaturatesAndKeepsNaN) {
  EXPECT_EQ(double_to_e4m3(448.0), 0x7e);
  EXPECT_EQ(double_to_e4m3(449.0), 0x7e);
  EXPECT_EQ(double_to_e4m3(464.0), 0x7e);
  EXPECT_EQ(double_to_e4m3(480.0), 0x7e);
  EXPECT_EQ(double_to_e4m3(1e30), 0x7e);
  EXPECT_EQ(double_to_e4m3(std::numeric_limits<double>::infinity()), 0x7e);
  EXPECT_EQ(double_to_e4m3(-1e30), 0xfe);
  EXPECT_EQ(double_to_e4m3(-std::numeric_limits<double>::infinity()), 0xfe);
  EXPECT_EQ(double_to_e4m3(std::numeric_limits<double>::quiet_NaN()), 0x7f);
  EXPECT_EQ(double_to_e4m3(-std::numeric_limits<double>::quiet_NaN()), 0xff);
}

TEST(E4m3, SubnormalsAndZeros) {
  const double tiny = std::ldexp(1.0, -9);
  EXPECT_EQ(double_to_e4m3(tiny / 2), 0x00);  // tie between 0 and 2^-9: even is 0
  EXPECT_EQ(double_to_e4m3(-tiny / 2), 0x80);
  EXPECT_EQ(double_to_e4m3(tiny * 0.51), 0x01);
  EXPECT_EQ(double_to_e4m3(tiny * 1.5), 0x02);  // tie between 1 and 2 units: even is 2
  EXPECT_EQ(double_to_e4m3(tiny * 2.5), 0x02);
  EXPECT_EQ(double_to_e4m3(tiny * 7.5), 0x08);  // rounds up into the smallest normal
  EXPECT_EQ(double_to_e4m3(1e-30), 0x00);
  EXPECT_EQ(double_to_e4m3(-1e-30), 0x80);
  EXPECT_EQ(double_to_e4m3(0.0), 0x00);
  EXPECT_EQ(double_to_e4m3(-0.0), 0x80);
  EXPECT_EQ(double_to_e4m3(1.0 + 1.0 / 16), 0x38);  // tie between 1 and 1.125: even is 1
  EXPECT_EQ(double_to_e4m3(1.0 + 3.0 / 16), 0x3a);  // tie between 1.125 and 1.25: even is 1.25
  EXPECT_EQ(double_to_e4m3(15.5), 0x58);            // tie between 15 (odd) and 16: 16, next binade
}
