// Converters from GPTQ, AWQ and plain tensors. The packers below follow AutoGPTQ's
// QuantLinear.pack (qlinear_cuda_old.py) and AutoAWQ's WQLinear_GEMM.from_linear (gemm.py) loop
// for loop, so they are an independent statement of the checkpoint layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gemvtune/error.hpp"
#include "gemvtune/weights.hpp"
#include "tuner/host_data.hpp"
#include "formats/formats_test_util.hpp"

using namespace gemvtune;

namespace {

// Plain int4 tensors: values [N][K] 0..15, integer zeros and fp16 scales [N][K/G].
struct Plain {
  std::int64_t n = 0, k = 0;
  int group = 0;
  std::vector<std::uint8_t> values;
  std::vector<float> zeros;
  std::vector<std::uint16_t> scales;  // fp16 bits
  std::int64_t groups() const { return k / group; }
};

// Random plain tensors; zeros in min_zero..15; scales fp16 values that bf16 holds exactly too.
Plain random_plain(std::int64_t n, std::int64_t k, int group, int min_zero, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Plain p{n, k, group, {}, {}, {}};
  p.values.resize(n * k);
  for (auto& v : p.values) v = static_cast<std::uint8_t>(rng() % 16);
  p.zeros.resize(n * p.groups());
  p.scales.resize(n * p.groups());
  std::uniform_real_distribution<float> u(1e-3f, 0.05f);
  for (std::size_t i = 0; i < p.zeros.size(); ++i) {
    p.zeros[i] = static_cast<float>(min_zero + static_cast<int>(rng() % (16 - min_zero)));
    p.scales[i] = float_to_fp16_bits(bf16_bits_to_float(float_to_bf16_bits(u(rng))));
  }
  return p;
}

PackedWeights from_plain(const Plain& p, DType a, std::int64_t ld = 0) {
  return from_plain_int4(p.values.data(), 0, host_matrix(p.scales.data(), DType::f16, p.n, p.groups()),
                         host_matrix(p.zeros.data(), p.n, p.groups()), p.n, p.k, p.group, a, ld);
}

// Back from PackedWeights to plain tensors through the element accessors.
Plain to_plain(const PackedWeights& w) {
  Plain p{w.n, w.k, group_size(w.format), {}, {}, {}};
  p.values.resize(w.n * w.k);
  for (std::int64_t r = 0; r < w.n; ++r)
    for (std::int64_t c = 0; c < w.k; ++c)
      p.values[r * w.k + c] = static_cast<std::uint8_t>(weight_code(w, r, c));
  for (std::int64_t r = 0; r < w.n; ++r)
    for (std::int64_t g = 0; g < p.groups(); ++g) {
      p.zeros.push_back(static_cast<float>(weight_zero(w, r, g * p.group)));
      p.scales.push_back(float_to_fp16_bits(static_cast<float>(weight_scale(w, r, g * p.group))));
    }
  return p;
}

struct Checkpoint {
  std::vector<std::int32_t> qweight, qzeros;
  std::vector<std::uint16_t> scales;  // fp16 [K/G][N]
};

std::vector<std::uint16_t> transposed_scales(const Plain& p) {
  std::vector<std::uint16_t> s(p.scales.size());
  for (std::int64_t r = 0; r < p.n; ++r)
    for (std::int64_t g = 0; g < p.groups(); ++g) s[g * p.n + r] = p.scales[r * p.groups() + g];
  return s;
}

// AutoGPTQ: intweight [K][N]; qweight[row] |= intweight[j] << (4 * (j - i)) for j = i..i+7;
// zeros -= 1 (v1), then qzeros[:, col] |= zeros[:, j] << (4 * (j - i)) along N.
Checkpoint pack_gptq(const Plain& p, GptqZeros zf) {
  Checkpoint c;
  c.qweight.assign(p.k / 8 * p.n, 0);
  for (std::int64_t row = 0, i = 0; row < p.k / 8; ++row, i += 8)
    for (std::int64_t j = i; j < i + 8; ++j)
      for (std::int64_t n = 0; n < p.n; ++n)
        c.qweight[row * p.n + n] = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(c.qweight[row * p.n + n]) |
            (static_cast<std::uint32_t>(p.values[n * p.k + j]) << (4 * (j - i))));
  c.qzeros.assign(p.groups() * (p.n / 8), 0);
  for (std::int64_t g = 0; g < p.groups(); ++g)
    for (std::int64_t col = 0, i = 0; col < p.n / 8; ++col, i += 8)
      for (std::int64_t j = i; j < i + 8; ++j) {
        const int z = static_cast<int>(p.zeros[j * p.groups() + g]) - (zf == GptqZeros::v1 ? 1 : 0);
        EXPECT_TRUE(z >= 0 && z <= 15) << "zero " << z << " cannot be packed";
        auto& wd = c.qzeros[g * (p.n / 8) + col];
        wd = static_cast<std::int32_t>(static_cast<std::uint32_t>(wd) |
                                       (static_cast<std::uint32_t>(z) << (4 * (j - i))));
      }
  c.scales = transposed_scales(p);
  return c;
}

// AutoAWQ: qweight [K][N/8]; qweight[:, col] |= intweight[:, col * 8 + order_map[i]] << (4 * i)
// with order_map = [0, 2, 4, 6, 1, 3, 5, 7]; qzeros alike.
Checkpoint pack_awq(const Plain& p) {
  const int order_map[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  Checkpoint c;
  c.qweight.assign(p.k * (p.n / 8), 0);
  for (std::int64_t col = 0; col < p.n / 8; ++col)
    for (int i = 0; i < 8; ++i)
      for (std::int64_t k = 0; k < p.k; ++k) {
        auto& wd = c.qweight[k * (p.n / 8) + col];
        wd = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(wd) |
            (static_cast<std::uint32_t>(p.values[(col * 8 + order_map[i]) * p.k + k]) << (4 * i)));
      }
  c.qzeros.assign(p.groups() * (p.n / 8), 0);
  for (std::int64_t col = 0; col < p.n / 8; ++col)
    for (int i = 0; i < 8; ++i)
      for (std::int64_t g = 0; g < p.groups(); ++g) {
        auto& wd = c.qzeros[g * (p.n / 8) + col];
        const auto z = static_cast<std::uint32_t>(p.zeros[(col * 8 + order_map[i]) * p.groups() + g]);
        wd = static_cast<std::int32_t>(static_cast<std::uint32_t>(wd) | (z << (4 * i)));
      }
  c.scales = transposed_scales(p);
  return c;
}

GptqTensors gptq_view(const Checkpoint& c, std::int64_t n, std::int64_t k, int group,
                      GptqZeros zf) {
  GptqTensors t;
  t.qweight = c.qweight.data();
  t.qzeros = c.qzeros.data();
  t.scales = host_matrix(c.scales.data(), DType::f16, k / group, n);
  t.n = n;
  t.k = k;
  t.group = group;
  t.zeros_format = zf;
  return t;
}

AwqTensors awq_view(const Checkpoint& c, std::int64_t n, std::int64_t k, int group) {
  AwqTensors t;
  t.qweight = c.qweight.data();
  t.qzeros = c.qzeros.data();
  t.scales = host_matrix(c.scales.data(), DType::f16, k / group, n);
  t.n = n;
  t.k = k;
  t.group = group;
  return t;
}

}  // namespace

TEST(Gptq, BitLayout) {
  // 8 output channels, K = 32, one group. Column n: k = 0..15 hold 0..15, k = 16 holds n.
  const std::int64_t n = 8, k = 32;
  std::vector<std::int32_t> qweight(k / 8 * n, 0), qzeros(1, 0x76543210);
  for (std::int64_t c = 0; c < n; ++c) {
    qweight[0 * n + c] = 0x76543210;
    qweight[1 * n + c] = static_cast<std::int32_t>(0xfedcba98u);
    qweight[2 * n + c] = static_cast<std::int32_t>(c);
  }
  std::vector<std::uint16_t> scales(n, 0x3c00);  // fp16 1.0
  GptqTensors t;
  t.qweight = qweight.data();
  t.qzeros = qzeros.data();
  t.scales = host_matrix(scales.data(), DType::f16, 1, n);
  t.n = n;
  t.k = k;
  t.group = 32;
  t.zeros_format = GptqZeros::v2;
  const PackedWeights v2 = from_gptq(t, DType::f16);
  EXPECT_EQ(v2.format, WeightFormat::int4_g32);
  for (std::int64_t c = 0; c < n; ++c) {
    for (int kk = 0; kk < 16; ++kk) EXPECT_EQ(weight_code(v2, c, kk), kk) << c << " " << kk;
    EXPECT_EQ(weight_code(v2, c, 16), c);
    for (int kk = 17; kk < 32; ++kk) EXPECT_EQ(weight_code(v2, c, kk), 0);
    EXPECT_EQ(weight_zero(v2, c, 0), static_cast<double>(c));
    EXPECT_EQ(weight_scale(v2, c, 0), 1.0);
    EXPECT_EQ(v2.q[c * 16 + 0], 0x10);  // k = 0 low nibble, k = 1 high nibble
    EXPECT_EQ(v2.q[c * 16 + 7], 0xfe);
    EXPECT_EQ(dequantize(v2, c, 5), 5.0 - c);
  }
  t.zeros_format = GptqZeros::v1;  // stored zero - 1
  const PackedWeights v1 = from_gptq(t, DType::f16);
  for (std::int64_t c = 0; c < n; ++c) EXPECT_EQ(weight_zero(v1, c, 0), c + 1.0);
  EXPECT_EQ(v1.q, v2.q);

  // v1's nibble 15 is the zero 16: representable here, since zeros are stored as values.
  qzeros[0] = -1;
  const PackedWeights sixteen = from_gptq(t, DType::bf16);
  EXPECT_EQ(weight_zero(sixteen, 3, 0), 16.0);
  EXPECT_EQ(dequantize(sixteen, 3, 15), -1.0);
}

TEST(Awq, BitLayout) {
  // Every word 0x76543210: nibble i holds column order_map[i], so column c reads the nibble
  // [0, 4, 1, 5, 2, 6, 3, 7][c].
  const std::int64_t n = 16, k = 64;
  std::vector<std::int32_t> qweight(k * n / 8, 0x76543210), qzeros(2 * n / 8, 0x76543210);
  std::vector<std::uint16_t> scales(2 * n, 0x4000);  // fp16 2.0
  AwqTensors t;
  t.qweight = qweight.data();
  t.qzeros = qzeros.data();
  t.scales = host_matrix(scales.data(), DType::f16, 2, n);
  t.n = n;
  t.k = k;
  t.group = 32;
  const PackedWeights p = from_awq(t, DType::bf16);
  const int expected[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (std::int64_t c = 0; c < n; ++c)
    for (std::int64_t kk = 0; kk < k; ++kk) {
      ASSERT_EQ(weight_code(p, c, kk), expected[c % 8]) << c << " " << kk;
      ASSERT_EQ(weight_zero(p, c, kk), expected[c % 8]);
      ASSERT_EQ(dequantize(p, c, kk), 0.0);
    }
  EXPECT_EQ(weight_scale(p, 5, 40), 2.0);
}

TEST(Checkpoint, PlainToGptqAndAwqAndBack) {
  for (int group : {32, 64, 128})
    for (DType a : {DType::f16, DType::bf16, DType::f32}) {
      SCOPED_TRACE("group " + std::to_string(group) + " " + std::string(to_string(a)));
      const std::int64_t n = 48, k = 512;
      const Plain plain = random_plain(n, k, group, 1, 100 + group);
      const PackedWeights ref = from_plain(plain, a);
      ASSERT_EQ(ref.format, int4_format(group));

      const Checkpoint g1 = pack_gptq(plain, GptqZeros::v1);
      const Checkpoint g2 = pack_gptq(plain, GptqZeros::v2);
      const Checkpoint aw = pack_awq(plain);
      EXPECT_TRUE(from_gptq(gptq_view(g1, n, k, group, GptqZeros::v1), a) == ref);
      EXPECT_TRUE(from_gptq(gptq_view(g2, n, k, group, GptqZeros::v2), a) == ref);
      EXPECT_TRUE(from_awq(awq_view(aw, n, k, group), a) == ref);

      // Back: PackedWeights -> plain -> packed again gives the checkpoint's very words.
      const Plain back = to_plain(ref);
      EXPECT_EQ(back.values, plain.values);
      EXPECT_EQ(back.zeros, plain.zeros);
      EXPECT_EQ(back.scales, plain.scales);
      const Checkpoint g1b = pack_gptq(back, GptqZeros::v1), awb = pack_awq(back);
      EXPECT_EQ(g1b.qweight, g1.qweight);
      EXPECT_EQ(g1b.qzeros, g1.qzeros);
      EXPECT_EQ(g1b.scales, g1.scales);
      EXPECT_EQ(awb.qweight, aw.qweight);
      EXPECT_EQ(awb.qzeros, aw.qzeros);
    }
}

TEST(Checkpoint, QuantizedWeightsExportAndImportExactly) {
  // The quantizer's integer zeros (0..15) and fp16 scales fit GPTQ v2 and AWQ exactly.
  const std::int64_t n = 32, k = 256;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> d(0.f, 0.02f);
  std::vector<float> w(n * k);
  for (auto& v : w) v = d(rng);
  for (WeightFormat f : {WeightFormat::int4_g32, WeightFormat::int4_g64, WeightFormat::int4_g128}) {
    const int group = group_size(f);
    const PackedWeights q = quantize(host_matrix(w.data(), n, k), f, DType::f16);
    const Plain plain = to_plain(q);
    EXPECT_TRUE(from_plain(plain, DType::f16) == q);
    EXPECT_TRUE(from_gptq(gptq_view(pack_gptq(plain, GptqZeros::v2), n, k, group, GptqZeros::v2),
                          DType::f16) == q);
    EXPECT_TRUE(from_awq(awq_view(pack_awq(plain), n, k, group), DType::f16) == q);
  }
}

TEST(Checkpoint, PaddedRows) {
  const std::int64_t n = 16, k = 128;
  const Plain plain = random_plain(n, k, 64, 0, 11);
  const Checkpoint c = pack_gptq(plain, GptqZeros::v2);
  const PackedWeights tight = from_gptq(gptq_view(c, n, k, 64, GptqZeros::v2), DType::bf16);
  const PackedWeights padded = from_gptq(gptq_view(c, n, k, 64, GptqZeros::v2), DType::bf16, k + 64);
  EXPECT_EQ(padded.ld, k + 64);
  EXPECT_EQ(padded.row_bytes(), (k + 64) / 2);
  EXPECT_EQ(dequantize(tight), dequantize(padded));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t b = k / 2; b < padded.row_bytes(); ++b) EXPECT_EQ(padded.q[r * padded.row_bytes() + b], 0);
  const PackedWeights awq = from_awq(awq_view(pack_awq(plain), n, k, 64), DType::bf16, k + 64);
  EXPECT_TRUE(awq == padded);
  EXPECT_TRUE(from_plain(plain, DType::bf16, k + 64) == padded);
  const std::string m = error_of([&] { from_gptq(gptq_view(c, n, k, 64, GptqZeros::v2), DType::bf16, k + 3); });
  EXPECT_NE(m.find("ld = 131 is odd"), std::string::npos) << m;
}

TEST(Checkpoint, ScalesAreRoundedToTheActivationDtype) {
  const std::int64_t n = 8, k = 32;
  Plain plain = random_plain(n, k, 32, 0, 3);
  plain.scales[0] = 0x3c01;  // fp16 1 + 2^-10: bf16 has no such value, nearest is 1.0
  EXPECT_EQ(weight_scale(from_plain(plain, DType::f16), 0, 0), 1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(weight_scale(from_plain(plain, DType::bf16), 0, 0), 1.0);
  EXPECT_EQ(weight_scale(from_plain(plain, DType::f32), 0, 0), 1.0 + std::ldexp(1.0, -10));

  std::vector<float> scales(n, 1e6f), zeros(n, 7.5f);
  const std::vector<std::uint8_t> values(n * k, 3);
  const std::string m = error_of([&] {
    from_plain_int4(values.data(), 0, host_matrix(scales.data(), n, 1), host_matrix(zeros.data(), n, 1),
                    n, k, 32, DType::f16, 0);
  });
  EXPECT_NE(m.find("scales[0][0] = 1000000 is not a finite fp16 value"), std::string::npos) << m;
  scales.assign(n, 0.5f);  // fractional zeros are kept as they are
  const PackedWeights p = from_plain_int4(values.data(), 0, host_matrix(scales.data(), n, 1),
                                          host_matrix(zeros.data(), n, 1), n, k, 32, DType::bf16, 0);
  EXPECT_EQ(dequantize(p, 2, 3), (3 - 7.5) * 0.5);
}

TEST(Checkpoint, BadInputsAreRefused) {
  const std::int64_t n = 16, k = 256;
  const Plain plain = random_plain(n, k, 128, 1, 4);
  const Checkpoint c = pack_gptq(plain, GptqZeros::v1);
  GptqTensors t = gptq_view(c, n, k, 128, GptqZeros::v1);

  // Act order: a g_idx other than k / G.
  std::vector<std::int32_t> g_idx(k);
  for (std::int64_t i = 0; i < k; ++i) g_idx[i] = static_cast<std::int32_t>(i / 128);
  t.g_idx = g_idx.data();
  EXPECT_NO_THROW(from_gptq(t, DType::f16));
  std::swap(g_idx[3], g_idx[200]);
  std::string m = error_of([&] { from_gptq(t, DType::f16); });
  EXPECT_NE(m.find("g_idx[3] = 1, expected 0"), std::string::npos) << m;
  EXPECT_NE(m.find("act-order"), std::string::npos) << m;
  t.g_idx = nullptr;

  GptqTensors bad = t;
  bad.group = 256;
  m = error_of([&] { from_gptq(bad, DType::f16); });
  EXPECT_NE(m.find("GPTQ: group size 256 is not supported"), std::string::npos) << m;
  bad.group = -1;
  m = error_of([&] { from_gptq(bad, DType::f16); });
  EXPECT_NE(m.find("per-channel"), std::string::npos) << m;

  bad = t;
  bad.n = 12;
  bad.scales.cols = 12;
  m = error_of([&] { from_gptq(bad, DType::f16); });
  EXPECT_NE(m.find("N = 12 is not a multiple of 8"), std::string::npos) << m;

  bad = t;
  bad.k = 160;
  m = error_of([&] { from_gptq(bad, DType::f16); });
  EXPECT_NE(m.find("K = 160 is not a multiple of the group size 128"), std::string::npos) << m;

  bad = t;
  bad.scales.rows = 3;
  m = error_of([&] { from_gptq(bad, DType::f16); });
  EXPECT_NE(m.find("scales [K/G][N]: expected 2 x 16 values, got 3 x 16"), std::string::npos) << m;

  bad = t;
  bad.qweight = nullptr;
  m = error_of([&] { from_gptq(bad, DType::f16); });
  EXPECT_NE(m.find("GPTQ: qweight is null"), std::string::npos) << m;

  AwqTensors aw = awq_view(pack_awq(plain), n, k, 128);
  aw.group = 100;
  m = error_of([&] { from_awq(aw, DType::f16); });
  EXPECT_NE(m.find("AWQ: group size 100"), std::string::npos) << m;

  std::vector<std::uint8_t> values = plain.values;
  values[5 * k + 9] = 16;
  m = error_of([&] {
    from_plain_int4(values.data(), 0, host_matrix(plain.scales.data(), DType::f16, n, 2),
                    host_matrix(plain.zeros.data(), n, 2), n, k, 128, DType::f16, 0);
  });
  EXPECT_NE(m.find("values[5][9] = 16 is outside 0..15"), std::string::npos) << m;
  m = error_of([&] {
    from_plain_int4(values.data(), 0, host_matrix(plain.scales.data(), DType::f16, n, 4),
                    host_matrix(plain.zeros.data(), n, 2), n, k, 128, DType::f16, 0);
  });
  EXPECT_NE(m.find("scales [N][K/G]: expected 16 x 2 values, got 16 x 4"), std::string::npos) << m;
}

TEST(Checkpoint, PlainInt8AndFp8) {
  const std::int64_t n = 3, k = 5;
  const std::int8_t v8[n * k] = {-128, -127, 0, 1, 127, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5};
  const float s8[n] = {0.5f, 0.25f, 2.f};
  const PackedWeights i8 = from_plain_int8(v8, 0, s8, n, k, DType::bf16, 8);
  EXPECT_EQ(i8.format, WeightFormat::int8);
  EXPECT_EQ(i8.ld, 8);
  EXPECT_EQ(weight_code(i8, 0, 0), -128);  // kept as it is
  EXPECT_EQ(dequantize(i8, 0, 0), -64.0);
  EXPECT_EQ(dequantize(i8, 2, 4), -10.0);
  EXPECT_EQ(i8.q[5], 0);  // padding

  const std::uint8_t c8[n * k] = {0x38, 0xb8, 0x7e, 0x01, 0x80, 0, 0, 0, 0, 0x40, 1, 2, 3, 4, 5};
  const float one = 4.f;
  const PackedWeights f8t = from_plain_fp8(c8, 0, &one, WeightFormat::fp8_tensor, n, k, DType::f16);
  EXPECT_EQ(dequantize(f8t, 0, 0), 4.0);
  EXPECT_EQ(dequantize(f8t, 0, 2), 448.0 * 4);
  EXPECT_EQ(dequantize(f8t, 1, 4), 8.0);
  const PackedWeights f8 = from_plain_fp8(c8, 0, s8, WeightFormat::fp8, n, k, DType::f16);
  EXPECT_EQ(dequantize(f8, 1, 4), 0.5);
  EXPECT_EQ(dequantize(f8, 2, 0), 2 * std::ldexp(1.0, -9));

  std::uint8_t nan[n * k] = {};
  nan[7] = 0xff;
  std::string m = error_of([&] { from_plain_fp8(nan, 0, s8, WeightFormat::fp8, n, k, DType::f16); });
  EXPECT_NE(m.find("code [1][2] is NaN"), std::string::npos) << m;
  m = error_of([&] { from_plain_fp8(c8, 0, s8, WeightFormat::int8, n, k, DType::f16); });
  EXPECT_NE(m.find("not fp8 or fp8t"), std::string::npos) << m;
  const float inf_scale[n] = {1.f, INFINITY, 1.f};
  m = error_of([&] { from_plain_int8(v8, 0, inf_scale, n, k, DType::f16); });
  EXPECT_NE(m.find("scales[1] = inf is not finite"), std::string::npos) << m;
  m = error_of([&] { from_plain_int8(v8, 4, s8, n, k, DType::f16); });
  EXPECT_NE(m.find("row stride 4 is less than K = 5"), std::string::npos) << m;
}
