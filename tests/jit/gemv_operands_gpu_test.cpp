// Operand checks (no GPU needed: they only look at the values) and, on the GPU, misaligned
// pointers: the 16-byte config is refused, and the narrower fallback computes the right answer.
#include <gtest/gtest.h>

#include "gemvtune/error.hpp"
#include "gpu_test_support.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

namespace {
jit::GemvOperands fake(Shape s, std::int64_t ld, CUdeviceptr w = 4096, CUdeviceptr x = 8192) {
  jit::GemvOperands op;
  op.w = w;
  op.x = x;
  op.y = 16384;
  op.shape = s;
  op.ld = ld;
  return op;
}
}  // namespace

TEST(GemvOperands, BadInputsAreRefusedWithReasons) {
  const KernelConfig c = parse_config("t128_r1_kw1_v16_u2_sk2_cs");
  EXPECT_NO_THROW(jit::check_operands(c, DType::bf16, fake({64, 4096}, 4096)));
  EXPECT_THROW(jit::check_operands(c, DType::bf16, fake({0, 4096}, 4096)), InvalidArgument);
  EXPECT_THROW(jit::check_operands(c, DType::bf16, fake({64, -1}, 4096)), InvalidArgument);
  EXPECT_THROW(jit::check_operands(c, DType::bf16, fake({64, 4096}, 4000)), InvalidArgument);  // ld < K
  EXPECT_THROW(jit::check_operands(c, DType::bf16, fake({64, 4096}, 4096, 0)), InvalidArgument);
  EXPECT_THROW(jit::check_operands(c, DType::bf16, fake({64, 4096}, 4096, 4097)), InvalidArgument);
  try {
    jit::check_operands(c, DType::bf16, fake({64, 4096}, 4096, 4098));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("W aligned to 16"), std::string::npos) << e.what();
  }
  EXPECT_THROW(jit::check_operands(c, DType::bf16, fake({64, 4100}, 4100)), InvalidArgument);  // row stride
  KernelConfig bad = c;
  bad.split_k = 64;
  EXPECT_THROW(jit::check_operands(bad, DType::bf16, fake({64, 129}, 129)), InvalidArgument);
}

// Quantized operands: scales always, zeros for int4 only (int8 and fp8 have none, and a zeros
// pointer given for them would be silently ignored); strides never negative, whatever m is.
TEST(GemvOperands, QuantizedZerosAndNegativeStridesAreRefused) {
  const KernelConfig c8 = parse_config("t128_r1_kw1_v16_u2_sk1_cs");
  jit::GemvOperands op = fake({64, 4096}, 4096);
  op.weights = WeightFormat::int8;
  op.scales = 32768;
  EXPECT_NO_THROW(jit::check_operands(c8, DType::bf16, op));
  op.zeros = 65536;
  try {
    jit::check_operands(c8, DType::bf16, op);
    FAIL() << "int8 with zeros accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("int8 weights have no zero points"), std::string::npos) << e.what();
  }
  op.weights = WeightFormat::int4_g128;
  EXPECT_NO_THROW(jit::check_operands(parse_config("t128_r1_kw1_v16_u2_sk1_cs"), DType::bf16, op));
  op.zeros = 0;
  EXPECT_THROW(jit::check_operands(parse_config("t128_r1_kw1_v16_u2_sk1_cs"), DType::bf16, op), InvalidArgument);

  const KernelConfig c = parse_config("t128_r1_kw1_v16_u2_sk2_cs");
  jit::GemvOperands dense = fake({64, 4096}, 4096);
  dense.ldx = 1;  // m = 1 reads one row of X: its stride is not used
  EXPECT_NO_THROW(jit::check_operands(c, DType::bf16, dense));
  dense.ldx = -7;
  EXPECT_THROW(jit::check_operands(c, DType::bf16, dense), InvalidArgument);
  dense.ldx = 0;
  dense.ldy = -1;
  EXPECT_THROW(jit::check_operands(c, DType::bf16, dense), InvalidArgument);
}

TEST(GemvOperandsGpu, MisalignedPointersUseANarrowerVectorCorrectly) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const Shape s{513, 1030};
  for (DType t : kAllDTypes) {
    const std::size_t e = dtype_size(t);
    GemvInputs in = random_inputs(t, s, s.k, 5);
    const auto ref = reference_gemv(in);
    // W starts one element past a 16-byte boundary; x two elements past.
    jit::DeviceBuffer wbuf(in.w.bytes.size() + 64), xbuf(in.x.bytes.size() + 64), ybuf(s.n * e);
    wbuf.upload(in.w.bytes.data(), in.w.bytes.size(), e);
    xbuf.upload(in.x.bytes.data(), in.x.bytes.size(), 2 * e);
    jit::GemvOperands op{wbuf.get() + e, xbuf.get() + 2 * e, ybuf.get(), s, s.k};
    KernelConfig c = parse_config("t128_r2_kw1_v16_u2_sk2_cs");
    EXPECT_THROW(jit::check_operands(c, t, op), InvalidArgument);
    c.vec_bytes = widest_aligned_vec_bytes(c, t, op.w, op.ld, op.x);
    EXPECT_EQ(c.vec_bytes, static_cast<int>(e));
    ASSERT_NO_THROW(jit::check_operands(c, t, op));
    jit::SplitKWorkspace ws;
    ws.reserve(c, s);
    ybuf.fill_bytes(0xff);
    jit::launch_gemv(*kernels.get(c, t), c, op, ws, stream.get());
    stream.synchronize();
    HostArray y(t, s.n);
    ybuf.download(y.bytes.data(), y.bytes.size());
    const Comparison cmp = compare_output(y, ref);
    EXPECT_TRUE(cmp.ok) << to_string(t) << " " << to_string(c) << ": " << cmp.describe();
  }
}
