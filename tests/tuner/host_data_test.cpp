// The host-side fp16 conversions the tuner draws and checks data with (tuner/host_data.cpp):
// the bit-level forms against their arithmetic definitions. No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "tuner/host_data.hpp"

using namespace gemvtune;

namespace {
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
// Equal as values, NaN equal to NaN (the reference returns a quiet NaN without payload).
bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bits_of(a) == bits_of(b); }
}  // namespace

TEST(HostData, Fp16ToFloatIsTheReferenceOnEveryValue) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto b = static_cast<std::uint16_t>(h);
    ASSERT_TRUE(same(fp16_bits_to_float(b), fp16_bits_to_float_reference(b))) << std::hex << h;
  }
  EXPECT_EQ(fp16_bits_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_bits_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_bits_to_float(0xfbff), -65504.0f);
}

// Every fp16 value, each midpoint between neighbours (where round-to-nearest-even decides) and
// one float either side of it, both signs; then random floats over the whole range.
TEST(HostData, FloatToFp16IsTheReferenceAtEveryRoundingBoundary) {
  std::uint64_t checked = 0;
  for (std::uint32_t h = 0; h < 0x7c00; ++h) {
    const float lo = fp16_bits_to_float_reference(static_cast<std::uint16_t>(h));
    const float hi = h + 1 == 0x7c00 ? 65520.0f : fp16_bits_to_float_reference(static_cast<std::uint16_t>(h + 1));
    const float mid = lo + (hi - lo) / 2;  // exact: fp16 neighbours differ in 11 bits
    for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f), hi})
      for (float s : {f, -f}) {
        ASSERT_EQ(float_to_fp16_bits(s), float_to_fp16_bits_reference(s)) << s << " (" << std::hex << bits_of(s) << ")";
        ++checked;
      }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    const float f = from_bits(rng());
    ASSERT_EQ(float_to_fp16_bits(f), float_to_fp16_bits_reference(f)) << std::hex << bits_of(f);
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e30f, INFINITY, -INFINITY, std::nanf("")})
    EXPECT_EQ(float_to_fp16_bits(f), float_to_fp16_bits_reference(f)) << f;
  EXPECT_EQ(float_to_fp16_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16_bits(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_fp16_bits(-2.0f), 0xc000);
  EXPECT_GT(checked, 300000u);
}
