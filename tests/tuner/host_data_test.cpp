// The host-side fp16 conversions the tuner draws and checks data with (tuner/host_data.cpp):
// the bit-level forms against their arithmetic definitions; the float64 reference GEMV against
// exact sums. No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "gemvtune/error.hpp"
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

// Small integers make every product and partial sum exact in float64, so the reference must
// equal the integer sum whatever order it adds in. K = 1003 leaves a tail past the reference's
// eight partial sums; the padding of W (ld > K) and X (ldx > K) is NaN, so reading it fails.
TEST(HostData, ReferenceGemvIsExactOnIntegerData) {
  const Shape s{37, 1003};
  const std::int64_t ld = 1011, ldx = 1010;
  const int m = 3;
  GemvInputs in = random_inputs(DType::bf16, s, ld, 7, m, ldx);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> value(-4, 4);
  std::vector<long long> w(static_cast<std::size_t>(s.n * s.k)), x(static_cast<std::size_t>(m * s.k));
  for (std::int64_t r = 0; r < s.n; ++r)
    for (std::int64_t c = 0; c < s.k; ++c) in.w.set(r * ld + c, static_cast<double>(w[r * s.k + c] = value(rng)));
  for (int i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < s.k; ++c) in.x.set(i * ldx + c, static_cast<double>(x[i * s.k + c] = value(rng)));
  const std::vector<double> y = reference_gemv(in);
  ASSERT_EQ(y.size(), static_cast<std::size_t>(m * s.n));
  for (int i = 0; i < m; ++i)
    for (std::int64_t r = 0; r < s.n; ++r) {
      long long exact = 0;
      for (std::int64_t c = 0; c < s.k; ++c) exact += w[r * s.k + c] * x[i * s.k + c];
      EXPECT_EQ(y[i * s.n + r], static_cast<double>(exact)) << "batch row " << i << ", row " << r;
    }
}

// The quantized overload over the dequantized rows: a plain left-to-right long double sum
// agrees to float64 rounding (int8, K with a tail, ldx > K with NaN padding).
TEST(HostData, QuantizedReferenceGemvSumsTheDequantizedRows) {
  const Shape s{29, 1029};
  const std::int64_t ldx = 1040;
  const int m = 2;
  const PackedWeights w = random_packed_weights(WeightFormat::int8, DType::bf16, s, s.k, 5);
  const HostArray x = random_x(DType::bf16, s.k, m, ldx, 9);
  const std::vector<double> y = reference_gemv(w, x, m, ldx);
  ASSERT_EQ(y.size(), static_cast<std::size_t>(m * s.n));
  std::vector<double> row(static_cast<std::size_t>(s.k));
  for (std::int64_t r = 0; r < s.n; ++r) {
    dequantize_row(w, r, row.data());
    for (int i = 0; i < m; ++i) {
      long double plain = 0, scale = 0;
      for (std::int64_t c = 0; c < s.k; ++c) {
        plain += static_cast<long double>(row[c]) * x.get(i * ldx + c);
        scale += std::fabs(static_cast<long double>(row[c]) * x.get(i * ldx + c));
      }
      EXPECT_NEAR(y[i * s.n + r], static_cast<double>(plain), 1e-14 * static_cast<double>(scale) + 1e-300)
          << "batch row " << i << ", row " << r;
    }
  }
}

// A re-batched problem keeps the reference rows it has and asks for the rest (first_row): those
// rows must be the whole reference's rows, bit for bit, for dense and quantized weights; a
// first row outside 0 .. m is refused.
TEST(HostData, ReferenceRowsFromFirstRowAreTheWholeReferencesRows) {
  const Shape s{45, 1003};
  const int m = 5;
  const GemvInputs in = random_inputs(DType::f16, s, 1010, 3, m, 1008);
  const std::vector<double> whole = reference_gemv(in);
  const PackedWeights w = random_packed_weights(WeightFormat::int4_g128, DType::bf16, {45, 1024}, 1024, 4);
  const HostArray x = random_x(DType::bf16, 1024, m, 1032, 6);
  const std::vector<double> whole_q = reference_gemv(w, x, m, 1032);
  for (int first : {0, 1, 3, 5}) {
    const std::vector<double> tail = reference_gemv(in, first), tail_q = reference_gemv(w, x, m, 1032, first);
    ASSERT_EQ(tail.size(), static_cast<std::size_t>((m - first) * s.n)) << first;
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), whole.begin() + first * s.n)) << "dense from row " << first;
    ASSERT_EQ(tail_q.size(), static_cast<std::size_t>((m - first) * 45)) << first;
    EXPECT_TRUE(std::equal(tail_q.begin(), tail_q.end(), whole_q.begin() + first * 45)) << "int4 from row " << first;
  }
  EXPECT_THROW(reference_gemv(in, m + 1), InvalidArgument);
  EXPECT_THROW(reference_gemv(w, x, m, 1032, -1), InvalidArgument);
}

// compare_output splits its work across the cores: the verdict, the first bad element and the
// NaN check must not depend on where the ranges fall (a million outputs: a range a core, up to
// three).
TEST(HostData, CompareOutputFindsTheFirstBadElementAcrossRanges) {
  const std::size_t n = 1000000;
  std::vector<double> ref(n);
  HostArray y(DType::bf16, n);
  for (std::size_t i = 0; i < n; ++i) {
    ref[i] = std::sin(0.001 * static_cast<double>(i)) * 3.0;
    y.set(i, ref[i]);  // rounded to bf16: within one unit in the last place
  }
  Comparison c = compare_output(y, ref);
  EXPECT_TRUE(c.ok) << c.describe();
  EXPECT_EQ(c.first_bad, -1);
  EXPECT_LT(c.rel_l2_error, std::ldexp(1.0, -8));

  y.set(900001, ref[900001] + 1.0);
  y.set(10007, ref[10007] - 1.0);
  c = compare_output(y, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad, 10007);
  EXPECT_NEAR(c.max_abs_error, 1.0, 0.05);

  y.set_nan(n - 1);
  c = compare_output(y, ref);
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.first_bad, 10007);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  EXPECT_TRUE(std::isinf(c.rel_l2_error));

  const HostArray shorter(DType::bf16, n - 1);
  EXPECT_FALSE(compare_output(shorter, std::vector<double>(n, 0.0)).ok);
}
