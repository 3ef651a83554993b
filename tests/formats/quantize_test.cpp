// The quantizer and dequantizer: error bounds, the packed bytes, fixed points (quantize ->
// dequantize -> quantize keeps every code, scale and zero), padding and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gemvtune/error.hpp"
#include "gemvtune/weights.hpp"
#include "tuner/host_data.hpp"
#include "formats/formats_test_util.hpp"

using namespace gemvtune;

namespace {

// N x K weights uniform in [-1, 1], with rows that test the corners: all zero, all positive,
// all negative, tiny, large, and a constant row.
std::vector<float> test_weights(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> w(static_cast<std::size_t>(n * k));
  for (auto& v : w) v = u(rng);
  for (std::int64_t r = 0; r < n; ++r) {
    float* row = w.data() + r * k;
    for (std::int64_t c = 0; c < k; ++c) {
      switch (r % 8) {
        case 1: row[c] = 0; break;
        case 2: row[c] = std::fabs(row[c]) + 0.25f; break;
        case 3: row[c] = -std::fabs(row[c]) * 3; break;
        case 4: row[c] *= 1e-3f; break;
        case 5: row[c] *= 40.f; break;
        case 6: row[c] = 0.3f; break;
        default: break;
      }
    }
  }
  return w;
}

double unit_roundoff(DType t) {  // relative spacing of the dtype's significand
  switch (t) {
    case DType::f32: return std::ldexp(1.0, -23);
    case DType::f16: return std::ldexp(1.0, -10);
    case DType::bf16: return std::ldexp(1.0, -7);
  }
  return 0;
}

constexpr WeightFormat kQuantized[] = {WeightFormat::int8,     WeightFormat::fp8,
                                       WeightFormat::fp8_tensor, WeightFormat::int4_g32,
                                       WeightFormat::int4_g64, WeightFormat::int4_g128};

}  // namespace

TEST(Quantize, ErrorBounds) {
  const std::int64_t n = 24, k = 256;
  const std::vector<float> w = test_weights(n, k, 1);
  for (DType a : kAllDTypes) {
    for (WeightFormat f : kAllWeightFormats) {
      SCOPED_TRACE(std::string(to_string(f)) + " " + std::string(to_string(a)));
      const PackedWeights p = quantize(host_matrix(w.data(), n, k), f, a);
      ASSERT_NO_THROW(check_packed_weights(p));
      const std::vector<double> d = dequantize(p);
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c = 0; c < k; ++c) {
          const double x = w[r * k + c], y = d[r * k + c];
          ASSERT_EQ(y, dequantize(p, r, c));
          const double s = weight_scale(p, r, c);
          double bound = 0;
          switch (f) {
            case WeightFormat::dense:
              // Half a unit in the last place; fp16's subnormals have a fixed step of 2^-24.
              bound = a == DType::f32 ? 0
                                      : std::max(std::fabs(x) * unit_roundoff(a) / 2,
                                                 a == DType::f16 ? std::ldexp(1.0, -25) : 0.0);
              break;
            case WeightFormat::int8:
              bound = 0.5 * s;
              EXPECT_LE(std::abs(weight_code(p, r, c)), 127);
              break;
            case WeightFormat::fp8:
            case WeightFormat::fp8_tensor:
              // Half a unit of a 3-bit mantissa, or half the smallest subnormal step.
              bound = std::max(std::fabs(x) / 16, std::ldexp(s, -10));
              break;
            default: {
              // Half a step, plus the range lost by rounding the scale down (15 s <= hi - lo).
              bound = s * (0.5 + 15 * unit_roundoff(a));
              const double z = weight_zero(p, r, c);
              EXPECT_EQ(z, std::floor(z));
              EXPECT_GE(z, 0);
              EXPECT_LE(z, 15);
              EXPECT_GT(s, 0);
              break;
            }
          }
          ASSERT_LE(std::fabs(x - y), bound * (1 + 1e-12)) << "at [" << r << "][" << c << "] "
                                                           << x << " -> " << y << " scale " << s;
        }
    }
  }
}

TEST(Quantize, QuantizeDequantizeQuantizeKeepsEverything) {
  const std::int64_t n = 40, k = 384;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<float> w = test_weights(n, k, seed);
    for (DType a : kAllDTypes)
      for (WeightFormat f : kAllWeightFormats)
        for (std::int64_t ld : {k, k + 64}) {
          SCOPED_TRACE(std::string(to_string(f)) + " " + std::string(to_string(a)) + " ld " +
                       std::to_string(ld));
          const PackedWeights p = quantize(host_matrix(w.data(), n, k), f, a, ld);
          const std::vector<double> d = dequantize(p);
          const PackedWeights again = quantize(host_matrix(d.data(), n, k), f, a, ld);
          EXPECT_TRUE(again.q == p.q);
          EXPECT_TRUE(again.scales == p.scales);
          EXPECT_TRUE(again.zeros == p.zeros);
          EXPECT_TRUE(again == p);
        }
  }
}

TEST(Quantize, Int4CodesUseTheWholeRange) {
  // A group spanning negative and positive values uses codes 0 and 15 (rounding the scale down
  // makes sure of it), which is what makes quantize a fixed point.
  const std::int64_t n = 64, k = 128;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> g(0.f, 0.02f);
  std::vector<float> w(n * k);
  for (auto& v : w) v = g(rng);
  for (WeightFormat f : {WeightFormat::int4_g32, WeightFormat::int4_g128})
    for (DType a : kAllDTypes) {
      const PackedWeights p = quantize(host_matrix(w.data(), n, k), f, a);
      const int gs = group_size(f);
      for (std::int64_t r = 0; r < n; ++r)
        for (std::int64_t c0 = 0; c0 < k; c0 += gs) {
          int lo = 15, hi = 0;
          for (std::int64_t c = c0; c < c0 + gs; ++c) {
            lo = std::min(lo, weight_code(p, r, c));
            hi = std::max(hi, weight_code(p, r, c));
          }
          EXPECT_EQ(lo, 0) << r << " " << c0;
          EXPECT_EQ(hi, 15) << r << " " << c0;
        }
    }
}

TEST(Quantize, Int4PackedBytes) {
  // w = (k % 16) - 8: lo = -8, hi = 7, so scale 1, zero 8 and code k % 16, exactly. Element k
  // of a row is in byte k / 2, even k in the low nibble.
  const std::int64_t k = 64;
  std::vector<float> w(2 * k);
  for (std::int64_t c = 0; c < k; ++c) w[c] = w[k + c] = static_cast<float>(c % 16) - 8;
  w[k + 5] = 100;  // second row: group 0 now spans -8..100
  const PackedWeights p = quantize(host_matrix(w.data(), 2, k), WeightFormat::int4_g32, DType::bf16, k + 32);
  EXPECT_EQ(p.row_bytes(), 48);
  EXPECT_EQ(p.q[0], 0x10);
  EXPECT_EQ(p.q[1], 0x32);
  EXPECT_EQ(p.q[7], 0xfe);
  EXPECT_EQ(p.q[8], 0x10);
  for (int b = 32; b < 48; ++b) EXPECT_EQ(p.q[b], 0) << "padding byte " << b;
  EXPECT_EQ(weight_scale(p, 0, 0), 1.0);
  EXPECT_EQ(weight_zero(p, 0, 0), 8.0);
  EXPECT_EQ(weight_zero(p, 0, 40), 8.0);
  // bf16 bytes of scale 1.0 (0x3f80) and zero 8.0 (0x4100), little-endian, [N][K/G].
  EXPECT_EQ(p.scales[0], 0x80);
  EXPECT_EQ(p.scales[1], 0x3f);
  EXPECT_EQ(p.zeros[0], 0x00);
  EXPECT_EQ(p.zeros[1], 0x41);
  EXPECT_EQ(weight_code(p, 1, 5), 15);
  EXPECT_EQ(weight_code(p, 1, 32 + 5), 5);  // second group unaffected
  for (std::int64_t c = 0; c < k; ++c) EXPECT_EQ(dequantize(p, 0, c), w[c]);
}

TEST(Quantize, Int4ZeroTiesRoundUp) {
  // lo = -2.5, hi = 12.5: scale exactly 1 and -lo / s = 2.5, a tie. Rounding it to even (2)
  // would put hi at 14.5, which rounds to code 14 and breaks the fixed point; half up gives
  // zero 3, codes 0 and 15.
  std::vector<float> w(32, 0.f);
  w[0] = -2.5f;
  w[1] = 12.5f;
  for (DType a : kAllDTypes) {
    const PackedWeights p = quantize(host_matrix(w.data(), 1, 32), WeightFormat::int4_g32, a);
    EXPECT_EQ(weight_scale(p, 0, 0), 1.0);
    EXPECT_EQ(weight_zero(p, 0, 0), 3.0);
    EXPECT_EQ(weight_code(p, 0, 0), 0);
    EXPECT_EQ(weight_code(p, 0, 1), 15);
    const std::vector<double> d = dequantize(p);
    EXPECT_TRUE(quantize(host_matrix(d.data(), 1, 32), WeightFormat::int4_g32, a) == p);
  }
}

TEST(Quantize, SpecialRowsAndGroups) {
  // Row 0 all zero; row 1 all positive; row 2 all negative.
  const std::int64_t k = 32;
  std::vector<float> w(3 * k, 0.f);
  for (std::int64_t c = 0; c < k; ++c) {
    w[k + c] = 1.f + c;
    w[2 * k + c] = -1.f - c;
  }
  const PackedWeights i4 = quantize(host_matrix(w.data(), 3, k), WeightFormat::int4_g32, DType::f16);
  EXPECT_EQ(weight_scale(i4, 0, 0), 1.0);
  EXPECT_EQ(weight_zero(i4, 0, 0), 0.0);
  EXPECT_EQ(weight_code(i4, 0, 3), 0);
  EXPECT_EQ(weight_zero(i4, 1, 0), 0.0);   // range 0..32
  EXPECT_EQ(weight_zero(i4, 2, 0), 15.0);  // range -32..0
  EXPECT_EQ(weight_code(i4, 1, k - 1), 15);
  EXPECT_EQ(weight_code(i4, 2, k - 1), 0);
  for (WeightFormat f : {WeightFormat::int8, WeightFormat::fp8}) {
    const PackedWeights p = quantize(host_matrix(w.data(), 3, k), f, DType::bf16);
    EXPECT_EQ(weight_scale(p, 0, 0), 1.0);
    for (std::int64_t c = 0; c < k; ++c) EXPECT_EQ(dequantize(p, 0, c), 0.0);
  }
  const PackedWeights i8 = quantize(host_matrix(w.data(), 3, k), WeightFormat::int8, DType::bf16);
  EXPECT_EQ(weight_code(i8, 1, k - 1), 127);
  EXPECT_EQ(weight_code(i8, 2, k - 1), -127);
  EXPECT_FLOAT_EQ(static_cast<float>(weight_scale(i8, 1, 0)), 32.f / 127);
  const PackedWeights f8 = quantize(host_matrix(w.data(), 3, k), WeightFormat::fp8, DType::bf16);
  EXPECT_EQ(weight_code(f8, 1, k - 1), 0x7e);
  EXPECT_EQ(weight_code(f8, 2, k - 1), 0xfe);
  const PackedWeights f8t = quantize(host_matrix(w.data(), 3, k), WeightFormat::fp8_tensor, DType::bf16);
  EXPECT_EQ(f8t.scales.size(), 4u);
  EXPECT_FLOAT_EQ(static_cast<float>(weight_scale(f8t, 0, 0)), 32.f / 448);
}

TEST(Quantize, SixteenBitInputsMatchFloatInputs) {
  const std::int64_t n = 8, k = 128;
  const std::vector<float> w = test_weights(n, k, 3);
  for (DType t : {DType::bf16, DType::f16}) {
    std::vector<std::uint16_t> bits(w.size());
    std::vector<float> rounded(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) {
      bits[i] = t == DType::bf16 ? float_to_bf16_bits(w[i]) : float_to_fp16_bits(w[i]);
      rounded[i] = t == DType::bf16 ? bf16_bits_to_float(bits[i]) : fp16_bits_to_float(bits[i]);
    }
    for (WeightFormat f : kAllWeightFormats)
      EXPECT_TRUE(quantize(host_matrix(bits.data(), t, n, k), f, t) ==
                  quantize(host_matrix(rounded.data(), n, k), f, t))
          << to_string(f);
    // Dense in its own dtype is exact.
    const PackedWeights d = quantize(host_matrix(bits.data(), t, n, k), WeightFormat::dense, t);
    for (std::int64_t i = 0; i < n * k; ++i) EXPECT_EQ(dequantize(d, i / k, i % k), rounded[i]);
  }
  EXPECT_THROW(host_matrix(static_cast<const std::uint16_t*>(nullptr), DType::f32, 1, 1),
               InvalidArgument);
}

TEST(Quantize, PaddingAndSourceStride) {
  // A source with row stride 150 and packed ld 192 give the values of the dense case.
  const std::int64_t n = 5, k = 128, src_ld = 150;
  std::vector<float> src(n * src_ld, std::numeric_limits<float>::quiet_NaN());
  const std::vector<float> w = test_weights(n, k, 9);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) src[r * src_ld + c] = w[r * k + c];
  for (WeightFormat f : kQuantized) {
    const PackedWeights a = quantize(host_matrix(w.data(), n, k), f, DType::bf16);
    const PackedWeights b = quantize(host_matrix(src.data(), n, k, src_ld), f, DType::bf16, 192);
    EXPECT_EQ(dequantize(a), dequantize(b)) << to_string(f);
    EXPECT_EQ(a.scales, b.scales);
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t byte = a.row_bytes(); byte < b.row_bytes(); ++byte)
        EXPECT_EQ(b.q[r * b.row_bytes() + byte], 0);
  }
}

TEST(Quantize, BadInputsAreRefused) {
  std::vector<float> w(4 * 96, 0.5f);
  std::string m = error_of([&] { quantize(host_matrix(w.data(), 4, 96), WeightFormat::int4_g64, DType::bf16); });
  EXPECT_NE(m.find("K = 96 is not a multiple of the group size 64 of int4g64"), std::string::npos) << m;
  m = error_of([&] { quantize(host_matrix(w.data(), 4, 64), WeightFormat::int4_g32, DType::bf16, 65); });
  EXPECT_NE(m.find("ld = 65 is odd"), std::string::npos) << m;
  m = error_of([&] { quantize(host_matrix(w.data(), 4, 64), WeightFormat::int8, DType::bf16, 32); });
  EXPECT_NE(m.find("ld = 32 is less than K = 64"), std::string::npos) << m;
  w[2 * 96 + 7] = std::numeric_limits<float>::infinity();
  m = error_of([&] { quantize(host_matrix(w.data(), 4, 96), WeightFormat::int8, DType::bf16); });
  EXPECT_NE(m.find("weight [2][7] is inf"), std::string::npos) << m;
  w[2 * 96 + 7] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(quantize(host_matrix(w.data(), 4, 96), WeightFormat::fp8_tensor, DType::bf16), InvalidArgument);
  w[2 * 96 + 7] = 1e7f;  // int4 scale 1e7 / 15 does not fit in fp16
  m = error_of([&] { quantize(host_matrix(w.data(), 4, 96), WeightFormat::int4_g32, DType::f16); });
  EXPECT_NE(m.find("does not fit in fp16"), std::string::npos) << m;
  EXPECT_NO_THROW(quantize(host_matrix(w.data(), 4, 96), WeightFormat::int4_g32, DType::bf16));
  m = error_of([&] { quantize(host_matrix(static_cast<const float*>(nullptr), 4, 96), WeightFormat::int8, DType::bf16); });
  EXPECT_NE(m.find("null"), std::string::npos) << m;
  m = error_of([&] { quantize(host_matrix(w.data(), 4, 96, 50), WeightFormat::int8, DType::bf16); });
  EXPECT_NE(m.find("row stride 50"), std::string::npos) << m;
}
