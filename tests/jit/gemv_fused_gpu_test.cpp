// Fused projections on the GPU: one launch over Q, K and V (separate weights, one with a
// padded row stride) must give each output exactly what separate references give, for every
// dtype and a few configs including split-K; bad segment lists are refused without a GPU.
#include <gtest/gtest.h>

#include "gemvtune/error.hpp"
#include "gpu_test_support.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

TEST(GemvFused, BadSegmentListsAreRefused) {
  const KernelConfig c = parse_config("t128_r1_kw1_v16_u2_sk1_cs");
  jit::FusedOperands op;
  op.x = 4096;
  op.k = 256;
  EXPECT_THROW(jit::check_fused_operands(c, DType::bf16, op), InvalidArgument);  // no segment
  op.count = 5;
  EXPECT_THROW(jit::check_fused_operands(c, DType::bf16, op), InvalidArgument);
  op.count = 2;
  op.segments[0] = {8192, 16384, 64, 256};
  op.segments[1] = {8192 + 2, 32768, 64, 256};  // misaligned W of segment 1
  try {
    jit::check_fused_operands(c, DType::bf16, op);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("segment 1"), std::string::npos) << e.what();
  }
  op.segments[1].w = 65536;
  EXPECT_NO_THROW(jit::check_fused_operands(c, DType::bf16, op));
  EXPECT_EQ(op.stacked_shape(), (Shape{128, 256}));
}

// The tensor cores' aligned body reads a warp's rows (8 apart, from R 128-row bands) at one
// offset, so its fused segments start on multiples of 128 R rows; others are refused by name.
TEST(GemvFused, TensorCoreAlignedBodyNeedsSegmentsOnWholeBands) {
  const KernelConfig c = parse_config("tc_t256_r2_kw4_v16_u2_sk1_cs_pdl_al_m4");
  jit::FusedOperands op;
  op.x = 4096;
  op.k = 1001;
  op.m = 4;
  op.count = 3;
  op.segments[0] = {8192, 16384, 512, 1001};
  op.segments[1] = {1 << 22, 32768, 256, 1003};
  op.segments[2] = {1 << 23, 65536, 100, 1001};
  EXPECT_NO_THROW(jit::check_fused_operands(c, DType::bf16, op));
  EXPECT_EQ(jit::fused_segment_splitting_bands(c, op), 0);
  op.segments[1].rows = 128;  // segment 2 starts at 640: not a multiple of 256
  EXPECT_EQ(jit::fused_segment_splitting_bands(c, op), 2);
  EXPECT_EQ(jit::fused_segment_splitting_bands(parse_config("tc_t256_r2_kw4_v16_u2_sk1_cs_pdl_m4"), op), 0);
  EXPECT_EQ(jit::fused_segment_splitting_bands(parse_config("tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_al_m4"), op), 0);
  try {
    jit::check_fused_operands(c, DType::bf16, op);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("segment 2 starts at row 640"), std::string::npos) << e.what();
  }
}

namespace {
// Launches config `text` over op's segments with every output poisoned first, and checks each
// segment's m x rows outputs against its own float64 reference.
void check_fused(jit::LoadedKernels& kernels, const jit::Stream& stream, DType t, const char* text,
                 const jit::FusedOperands& op, std::vector<jit::DeviceBuffer>& y, const std::vector<GemvInputs>& in) {
  const KernelConfig c = parse_config(text);
  jit::SplitKWorkspace ws;
  ws.reserve(c, op.stacked_shape());
  for (auto& b : y) b.fill_bytes(0xff);
  jit::launch_fused_gemv(*kernels.get(c, t), c, op, ws, stream.get());
  stream.synchronize();
  for (int i = 0; i < op.count; ++i) {
    HostArray out(t, static_cast<std::size_t>(op.segments[i].rows * op.m));
    y[i].download(out.bytes.data(), out.bytes.size());
    const Comparison cmp = compare_output(out, reference_gemv(in[i]));
    EXPECT_TRUE(cmp.ok) << to_string(t) << " " << text << " segment " << i << ": " << cmp.describe();
  }
}
}  // namespace

// Fused segments of misaligned rows (K = 1001, strides 1001 and 1003, a W base 2 bytes off)
// through the tensor cores' aligned body at M = 4, against separate references.
TEST(GemvFusedGpu, TensorCoreAlignedBodyOverMisalignedSegments) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const std::int64_t k = 1001, m = 4;
  const std::int64_t rows[3] = {256, 512, 77};
  const std::int64_t ld[3] = {1001, 1003, 1001};
  const DType t = DType::bf16;
  std::vector<GemvInputs> in;
  std::vector<jit::DeviceBuffer> w, y;
  for (int i = 0; i < 3; ++i) {
    in.push_back(random_inputs(t, {rows[i], k}, ld[i], 900 + i, m, k));
    if (i > 0) in[i].x = in[0].x;  // one X shared by all three
    w.emplace_back(in[i].w.bytes.size() + 16);
    w[i].fill_bytes(0xff);
    w[i].upload(in[i].w.bytes.data(), in[i].w.bytes.size(), i == 1 ? 2 : 0);
    y.emplace_back(rows[i] * m * 2);
  }
  jit::DeviceBuffer x(in[0].x.bytes.size());
  x.upload(in[0].x.bytes.data(), in[0].x.bytes.size());
  jit::FusedOperands op;
  op.count = 3;
  op.x = x.get();
  op.k = k;
  op.m = static_cast<int>(m);
  op.ldx = k;
  for (int i = 0; i < 3; ++i) op.segments[i] = {w[i].get() + (i == 1 ? 2 : 0), y[i].get(), rows[i], ld[i], rows[i]};
  for (const char* text : {"tc_t256_r2_kw4_v16_u2_sk1_cs_pdl_al_m4", "tc_t128_r1_kw1_v16_u4_sk3_cs_al_m4"})
    check_fused(kernels, stream, t, text, op, y, in);
}

TEST(GemvFusedGpu, QkvInOneLaunchMatchesSeparateReferences) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const std::int64_t k = 1000;
  const std::int64_t rows[3] = {517, 128, 131};
  const std::int64_t ld[3] = {1000, 1024, 1000};
  for (DType t : kAllDTypes) {
    const std::size_t e = dtype_size(t);
    std::vector<GemvInputs> in;
    std::vector<jit::DeviceBuffer> w, y;
    for (int i = 0; i < 3; ++i) {
      in.push_back(random_inputs(t, {rows[i], k}, ld[i], 300 + i));
      in[i].x = in[0].x;  // one x shared by all three
      w.emplace_back(in[i].w.bytes.size());
      w[i].upload(in[i].w.bytes.data(), in[i].w.bytes.size());
      y.emplace_back(rows[i] * e);
    }
    jit::DeviceBuffer x(in[0].x.bytes.size());
    x.upload(in[0].x.bytes.data(), in[0].x.bytes.size());
    jit::FusedOperands op;
    op.count = 3;
    op.x = x.get();
    op.k = k;
    for (int i = 0; i < 3; ++i) op.segments[i] = {w[i].get(), y[i].get(), rows[i], ld[i]};
    // Rows of 1000 and 1024 elements: 16-byte aligned.
    for (const char* text : {"t128_r2_kw2_v16_u2_sk1_cs", "t64_r4_kw1_v16_u1_sk3_nc_pdl", "t256_r1_kw4_v8_u4_sk1_cs"})
      check_fused(kernels, stream, t, text, op, y, in);
  }
}
