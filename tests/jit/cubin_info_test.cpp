// The cubin's .nv.info agrees with ptxas' -v report (registers, stack frame) on kernels of the
// search space and on a kernel forced to spill; bad bytes give nothing. No GPU needed.
#include <gtest/gtest.h>

#include "gemvtune/generator.hpp"
#include "gemvtune/search_space.hpp"
#include "jit/cubin_info.hpp"
#include "jit/nvrtc_compiler.hpp"

using namespace gemvtune;

TEST(CubinInfo, MatchesPtxasReport) {
  const auto kernels = distinct_kernels(default_search_space(DType::bf16));
  for (std::size_t i = 0; i < kernels.size(); i += 23) {
    const KernelConfig& c = kernels[i];
    const auto k = jit::compile_kernel(generate_source(c, DType::bf16), kernel_name(c, DType::bf16), "sm_90");
    const auto res = jit::read_cubin_resources(k.cubin);
    ASSERT_TRUE(res.has_value()) << kernel_name(c, DType::bf16);
    if (k.log.find("Used ") == std::string::npos) continue;  // nothing to compare with
    EXPECT_EQ(res->registers, k.registers) << kernel_name(c, DType::bf16) << "\n" << k.log;
    EXPECT_EQ(res->stack_frame_bytes, 0) << kernel_name(c, DType::bf16);
  }
}

TEST(CubinInfo, SeesASpillingKernelsFrame) {
  // 1024 threads and 2 blocks per SM leave 32 registers a thread: this kernel must spill.
  std::string src = generate_source(parse_config("t256_r4_kw1_v16_u2_sk1_cs"), DType::f16);
  const std::string bounds = "__launch_bounds__(GEMV_THREADS, 1)";
  ASSERT_NE(src.find(bounds), std::string::npos);
  src.replace(src.find(bounds), bounds.size(), "__launch_bounds__(1024, 2)");
  const auto k = jit::compile_kernel(src, "gemv_fp16_t256_r4_kw1_v16_u2_cs", "sm_90");
  const auto res = jit::read_cubin_resources(k.cubin);
  ASSERT_TRUE(res.has_value());
  EXPECT_LE(res->registers, 32);
  EXPECT_GT(res->stack_frame_bytes, 0) << k.log;
  EXPECT_GT(k.stack_frame_bytes, 0);
}

TEST(CubinInfo, MalformedBytesGiveNothing) {
  EXPECT_FALSE(jit::read_cubin_resources({}).has_value());
  EXPECT_FALSE(jit::read_cubin_resources(std::vector<char>(200, 'x')).has_value());
  const auto k = jit::compile_kernel(generate_source(KernelConfig{}, DType::bf16), kernel_name(KernelConfig{}, DType::bf16), "sm_90");
  std::vector<char> cut(k.cubin.begin(), k.cubin.begin() + k.cubin.size() / 3);
  EXPECT_FALSE(jit::read_cubin_resources(cut).has_value());  // section table past the end
}
