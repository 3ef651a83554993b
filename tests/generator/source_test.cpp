// Generated source: deterministic, header-free, and the template compiles on its own.
#include <gtest/gtest.h>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "generator/embedded_templates.hpp"
#include "jit/nvrtc_compiler.hpp"

using namespace gemvtune;

TEST(Source, SameConfigGivesByteIdenticalSource) {
  const KernelConfig c = parse_config("t256_r2_kw2_v16_u4_sk3_nc_pdl");
  EXPECT_EQ(generate_source(c, DType::bf16), generate_source(parse_config(to_string(c)), DType::bf16));
  EXPECT_NE(generate_source(c, DType::bf16), generate_source(c, DType::f16));
}

TEST(Source, SplitKIsALaunchParameterNotCode) {
  KernelConfig a = parse_config("t128_r1_kw1_v16_u2_sk1_cs"), b = a;
  b.split_k = 4;
  EXPECT_EQ(generate_source(a, DType::bf16), generate_source(b, DType::bf16));
  EXPECT_EQ(kernel_name(a, DType::bf16), "gemv_bf16_t128_r1_kw1_v16_u2_cs");
}

TEST(Source, PrefetchIsItsOwnKernel) {
  const KernelConfig pdl = parse_config("t128_r2_kw1_v16_u4_sk1_cs_pdl"), pf = parse_config("t128_r2_kw1_v16_u4_sk1_cs_pdl_pf");
  EXPECT_EQ(kernel_name(pf, DType::bf16), "gemv_bf16_t128_r2_kw1_v16_u4_cs_pdl_pf");
  EXPECT_NE(generate_source(pdl, DType::bf16).find("#define GEMV_PREFETCH_L2 0"), std::string::npos);
  EXPECT_NE(generate_source(pf, DType::bf16).find("#define GEMV_PREFETCH_L2 1"), std::string::npos);
}

TEST(Source, IncludesNoHeader) {
  const std::string src = generate_source(KernelConfig{}, DType::f16);
  EXPECT_EQ(src.find("#include"), std::string::npos);
  EXPECT_NE(src.find("#define GEMV_NAME gemv_fp16_"), std::string::npos);
}

TEST(Source, InvalidConfigIsRefused) {
  KernelConfig c;
  c.threads = 100;
  EXPECT_THROW(generate_source(c, DType::bf16), InvalidArgument);
  c = {};
  c.vec_bytes = 2;
  EXPECT_THROW(generate_source(c, DType::f32), InvalidArgument);
}

TEST(Source, TemplateVersionIsStableHex) {
  EXPECT_EQ(template_version().size(), 16u);
  EXPECT_EQ(template_version(), template_version());
}

TEST(Source, TemplateCompilesOnItsOwnWithDefaults) {
  const std::string text(templates::get("gemv.cu"));
  const auto k = jit::compile_kernel(text, "gemv_kernel", "sm_90");
  EXPECT_FALSE(k.cubin.empty());
  EXPECT_GT(k.registers, 0) << k.log;
}

TEST(Source, CompileErrorCarriesLogAndOptions) {
  try {
    jit::compile_kernel("extern \"C\" __global__ void broken() { this is not cuda; }", "broken", "sm_90");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("error"), std::string::npos) << e.log();
    EXPECT_NE(e.options().find("--gpu-architecture=sm_90"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("NVRTC log"), std::string::npos);
  }
}
