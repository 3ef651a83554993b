// Weight formats: text forms, sizes and layout checks.
#include <gtest/gtest.h>

#include <string>

#include "gemvtune/error.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/weights.hpp"
#include "formats/formats_test_util.hpp"

using namespace gemvtune;

TEST(WeightFormat, TextFormsRoundTrip) {
  const char* names[] = {"dense", "int8", "fp8", "fp8t", "int4g32", "int4g64", "int4g128"};
  ASSERT_EQ(std::size(names), std::size(kAllWeightFormats));
  for (std::size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(to_string(kAllWeightFormats[i]), names[i]);
    EXPECT_EQ(parse_weight_format(names[i]), kAllWeightFormats[i]);
    EXPECT_EQ(to_string(parse_weight_format(names[i])), names[i]);
  }
}

TEST(WeightFormat, ParseIsStrictAndListsNames) {
  for (const char* bad : {"", "INT8", "int4", "int4g256", "int4g16", "int4_g128", "fp8 ", " fp8",
                          "bf16", "e4m3", "fp8e4m3", "int8x", "w4a16"}) {
    const std::string msg = error_of([&] { parse_weight_format(bad); });
    EXPECT_NE(msg.find("'" + std::string(bad) + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dense, int8, fp8, fp8t, int4g32, int4g64, int4g128"), std::string::npos)
        << msg;
  }
}

TEST(WeightFormat, WeightsOptionAcceptsTheActivationDtypeAsDense) {
  EXPECT_EQ(parse_weights_option("bf16", DType::bf16), WeightFormat::dense);
  EXPECT_EQ(parse_weights_option("bfloat16", DType::bf16), WeightFormat::dense);
  EXPECT_EQ(parse_weights_option("fp16", DType::f16), WeightFormat::dense);
  EXPECT_EQ(parse_weights_option("dense", DType::f32), WeightFormat::dense);
  EXPECT_EQ(parse_weights_option("int4g128", DType::bf16), WeightFormat::int4_g128);
  const std::string mixed = error_of([] { parse_weights_option("fp16", DType::bf16); });
  EXPECT_NE(mixed.find("activations are bf16"), std::string::npos) << mixed;
  const std::string unknown = error_of([] { parse_weights_option("int3", DType::bf16); });
  EXPECT_NE(unknown.find("int4g128"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("bf16"), std::string::npos) << unknown;
}

TEST(WeightFormat, Properties) {
  EXPECT_EQ(group_size(WeightFormat::int4_g32), 32);
  EXPECT_EQ(group_size(WeightFormat::int4_g64), 64);
  EXPECT_EQ(group_size(WeightFormat::int4_g128), 128);
  EXPECT_EQ(group_size(WeightFormat::int8), 0);
  EXPECT_EQ(group_size(WeightFormat::fp8_tensor), 0);
  EXPECT_EQ(int4_format(64), WeightFormat::int4_g64);
  EXPECT_THROW(int4_format(256), InvalidArgument);
  EXPECT_EQ(weight_bits(WeightFormat::dense, DType::bf16), 16);
  EXPECT_EQ(weight_bits(WeightFormat::dense, DType::f32), 32);
  EXPECT_EQ(weight_bits(WeightFormat::int8, DType::bf16), 8);
  EXPECT_EQ(weight_bits(WeightFormat::fp8_tensor, DType::f16), 8);
  EXPECT_EQ(weight_bits(WeightFormat::int4_g32, DType::f32), 4);
  EXPECT_EQ(scale_bytes(WeightFormat::int8, DType::bf16), 4u);
  EXPECT_EQ(scale_bytes(WeightFormat::int4_g128, DType::bf16), 2u);
  EXPECT_EQ(scale_bytes(WeightFormat::int4_g128, DType::f32), 4u);
  EXPECT_EQ(scale_bytes(WeightFormat::dense, DType::f32), 0u);
  EXPECT_TRUE(is_int4(WeightFormat::int4_g64));
  EXPECT_FALSE(is_int4(WeightFormat::int8));
  EXPECT_TRUE(is_fp8(WeightFormat::fp8_tensor));
  EXPECT_FALSE(is_quantized(WeightFormat::dense));
  EXPECT_TRUE(is_quantized(WeightFormat::fp8));
}

TEST(WeightFormat, ByteCounts) {
  // The figures: int4 g128 with bf16 scales and zeros moves 3.76x fewer bytes than bf16,
  // 62.4 MB for 28672x4096.
  const WeightBytes b = weight_bytes(WeightFormat::int4_g128, DType::bf16, 28672, 4096);
  EXPECT_EQ(b.weights, 28672LL * 4096 / 2);
  EXPECT_EQ(b.scales, 28672LL * 32 * 2);
  EXPECT_EQ(b.zeros, b.scales);
  EXPECT_EQ(b.total(), 62390272);
  EXPECT_DOUBLE_EQ(bytes_per_weight(WeightFormat::int4_g128, DType::bf16, 28672, 4096), 0.53125);
  EXPECT_NEAR(bytes_per_weight(WeightFormat::dense, DType::bf16, 4096, 4096) /
                  bytes_per_weight(WeightFormat::int4_g128, DType::bf16, 4096, 4096),
              3.76, 0.01);

  const WeightBytes d = weight_bytes(WeightFormat::dense, DType::f32, 1024, 4096);
  EXPECT_EQ(d.weights, 1024LL * 4096 * 4);
  EXPECT_EQ(d.scales + d.zeros, 0);
  const WeightBytes i8 = weight_bytes(WeightFormat::int8, DType::bf16, 1000, 333);
  EXPECT_EQ(i8.weights, 333000);
  EXPECT_EQ(i8.scales, 4000);
  EXPECT_EQ(i8.zeros, 0);
  const WeightBytes f8 = weight_bytes(WeightFormat::fp8, DType::f16, 10, 7);
  EXPECT_EQ(f8.total(), 70 + 40);
  const WeightBytes f8t = weight_bytes(WeightFormat::fp8_tensor, DType::f16, 10, 7);
  EXPECT_EQ(f8t.total(), 70 + 4);
  EXPECT_DOUBLE_EQ(bytes_per_weight(WeightFormat::int4_g32, DType::f16, 64, 64), 0.5 + 4.0 / 32);
  EXPECT_DOUBLE_EQ(bytes_per_weight(WeightFormat::int4_g64, DType::f32, 64, 64), 0.5 + 8.0 / 64);
}

TEST(WeightFormat, LayoutChecksNameTheValues) {
  std::string m = error_of([] { check_weight_layout(WeightFormat::int4_g128, DType::bf16, 64, 4000, 4000); });
  EXPECT_NE(m.find("K = 4000 is not a multiple of the group size 128 of int4g128"), std::string::npos) << m;
  m = error_of([] { weight_bytes(WeightFormat::int4_g64, DType::bf16, 64, 96); });
  EXPECT_NE(m.find("K = 96"), std::string::npos) << m;
  EXPECT_NE(m.find("64"), std::string::npos) << m;
  m = error_of([] { check_weight_layout(WeightFormat::int4_g32, DType::f16, 8, 64, 65); });
  EXPECT_NE(m.find("ld = 65 is odd"), std::string::npos) << m;
  m = error_of([] { check_weight_layout(WeightFormat::int8, DType::f16, 8, 64, 63); });
  EXPECT_NE(m.find("ld = 63 is less than K = 64"), std::string::npos) << m;
  m = error_of([] { check_weight_layout(WeightFormat::fp8, DType::f16, 0, 64, 64); });
  EXPECT_NE(m.find("at least 1"), std::string::npos) << m;
  m = error_of([] { check_weight_layout(WeightFormat::fp8, DType::f16, 8, kMaxDim + 1, kMaxDim + 1); });
  EXPECT_NE(m.find("at most"), std::string::npos) << m;
  m = error_of([] { check_weight_layout(WeightFormat::int8, DType::f16, 8, 64, kMaxDim + 1); });
  EXPECT_NE(m.find("ld = 2147483648"), std::string::npos) << m;
  // Odd K and odd-but-padded ld are fine for int8/fp8; odd ld is fine for dense.
  EXPECT_NO_THROW(check_weight_layout(WeightFormat::int8, DType::bf16, 3, 5, 7));
  EXPECT_NO_THROW(check_weight_layout(WeightFormat::dense, DType::bf16, 3, 5, 7));
  EXPECT_NO_THROW(check_weight_layout(WeightFormat::int4_g32, DType::bf16, 3, 32, 34));
}

TEST(WeightFormat, SizesThatOverflowAreRefused) {
  // fp32 dense at the largest N and K needs 2^64 bytes: refused rather than wrapped.
  const std::string m = error_of(
      [] { weight_bytes(WeightFormat::dense, DType::f32, kMaxDim, kMaxDim); });
  EXPECT_NE(m.find("overflows"), std::string::npos) << m;
  EXPECT_THROW(make_packed_weights(WeightFormat::dense, DType::f32, kMaxDim, kMaxDim, kMaxDim),
               InvalidArgument);
  // int8 at the same size still fits in int64 (4.6e18 bytes): counted, not refused.
  const WeightBytes b = weight_bytes(WeightFormat::int8, DType::bf16, kMaxDim, kMaxDim);
  EXPECT_EQ(b.weights, kMaxDim * kMaxDim);
}

TEST(PackedWeights, MakeAndCheckSizes) {
  PackedWeights p = make_packed_weights(WeightFormat::int4_g64, DType::bf16, 3, 128, 192);
  EXPECT_EQ(p.ld, 192);
  EXPECT_EQ(p.row_bytes(), 96);
  EXPECT_EQ(p.groups_per_row(), 2);
  EXPECT_EQ(p.q.size(), 3u * 96);
  EXPECT_EQ(p.scales.size(), 3u * 2 * 2);
  EXPECT_EQ(p.zeros.size(), 3u * 2 * 2);
  EXPECT_NO_THROW(check_packed_weights(p));
  p.zeros.pop_back();
  const std::string m = error_of([&] { check_packed_weights(p); });
  EXPECT_NE(m.find("zeros has 11 bytes, expected 12"), std::string::npos) << m;

  PackedWeights d = make_packed_weights(WeightFormat::dense, DType::f16, 2, 5);
  EXPECT_EQ(d.ld, 5);
  EXPECT_EQ(d.row_bytes(), 10);
  EXPECT_TRUE(d.scales.empty());
  PackedWeights t = make_packed_weights(WeightFormat::fp8_tensor, DType::f16, 2, 5);
  EXPECT_EQ(t.scales.size(), 4u);
  EXPECT_EQ(t.groups_per_row(), 0);
  EXPECT_THROW(weight_code(d, 0, 0), InvalidArgument);
}
