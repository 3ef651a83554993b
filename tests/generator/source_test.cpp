// Generated source: deterministic, header-free, and the template compiles on its own.
#include <gtest/gtest.h>

#include <cstdlib>

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
  // The templates' only #include is the prelude's, for compiling a template alone with nvcc;
  // the generator puts the prelude's text first, so its guard skips that line, and NVRTC
  // (which compile_kernel gives no include path) never opens a file.
  for (const char* text : {"t128_r1_kw1_v16_u2_sk1_cs", "tc_t128_r1_kw2_v16_u2_sk1_cs_pdl_m16"}) {
    const KernelConfig c = parse_config(text);
    const std::string src = generate_source(c, DType::f16);
    EXPECT_EQ(src.find("#include <"), std::string::npos);
    const auto prelude = src.find("#define GEMV_PRELUDE 1"), include = src.find("#include \"prelude.cu\"");
    ASSERT_NE(prelude, std::string::npos);
    ASSERT_NE(include, std::string::npos);
    EXPECT_LT(prelude, include);
    EXPECT_NE(src.find("#define GEMV_NAME " + kernel_name(c, DType::f16)), std::string::npos);
    EXPECT_FALSE(jit::compile_kernel(src, kernel_name(c, DType::f16), "sm_90").cubin.empty());
  }
}

TEST(Source, PreludeSegmentLimitIsTheLibrarys) {
  const std::string prelude(templates::get("prelude.cu"));
  EXPECT_NE(prelude.find("#define GEMV_MAX_SEGMENTS " + std::to_string(kMaxFusedSegments) + "\n"), std::string::npos);
}

TEST(Source, Int4LineLoadsAtMOne) {
  // int4g128 on tensor cores without the ring: templates/gemv_q4l.cu at m tile 1, gemv_tc.cu above.
  EXPECT_NE(generate_source(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_pdl"), DType::bf16, WeightFormat::int4_g128)
                .find("and templates/gemv_q4l.cu\n"),
            std::string::npos);
  EXPECT_NE(generate_source(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_pdl_m2"), DType::bf16, WeightFormat::int4_g128)
                .find("and templates/gemv_tc.cu\n"),
            std::string::npos);
}

TEST(Source, FamilyAndMTileAreInTheKernelName) {
  EXPECT_EQ(kernel_name(parse_config("tc_t128_r1_kw2_v16_u2_sk3_cs_pdl_m16"), DType::bf16),
            "gemv_tc_bf16_t128_r1_kw2_v16_u2_cs_pdl_m16");
  EXPECT_EQ(kernel_name(parse_config("t128_r1_kw2_v16_u2_sk3_cs_m3"), DType::bf16), "gemv_bf16_t128_r1_kw2_v16_u2_cs_m3");
  const std::string tc = generate_source(parse_config("tc_t128_r1_kw2_v16_u2_sk1_cs_m8"), DType::bf16);
  EXPECT_NE(tc.find("#define GEMV_M_TILE 8"), std::string::npos);
  EXPECT_NE(tc.find("mma.sync.aligned.m16n8k16"), std::string::npos);
  EXPECT_NE(tc.find("and templates/gemv_tc.cu\n"), std::string::npos);
  // The CUDA-core family's source is gemv.cu's (the prelude it shares holds the mma helpers).
  const std::string cc = generate_source(parse_config("t128_r1_kw2_v16_u2_sk1_cs_m8"), DType::bf16);
  EXPECT_NE(cc.find("and templates/gemv.cu\n"), std::string::npos);
  EXPECT_NE(tc.find("mma_tile_chunk"), std::string::npos);
  EXPECT_EQ(cc.find("mma_tile_chunk"), std::string::npos);
  // The tensor cores' aligned body is its own template.
  const std::string al = generate_source(parse_config("tc_t128_r1_kw2_v16_u2_sk1_cs_al_m8"), DType::bf16);
  EXPECT_NE(al.find("and templates/gemv_tcal.cu\n"), std::string::npos);
  EXPECT_NE(al.find("window16"), std::string::npos);
  EXPECT_EQ(kernel_name(parse_config("tc_t128_r1_kw2_v16_u2_sk3_cs_al_m8"), DType::bf16), "gemv_tc_bf16_t128_r1_kw2_v16_u2_cs_al_m8");
  EXPECT_THROW(generate_source(parse_config("tc_t128_r1_kw2_v16_u2_sk1_cs_m8"), DType::f32), InvalidArgument);
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

TEST(Source, TemplatesCompileOnTheirOwnWithDefaults) {
  // Each family's file, as a person edits it: nvcc -c with only its #ifndef defaults (it
  // includes the prelude beside it). nvcc ships with the toolkit the build needs.
  const std::string dir = GEMVTUNE_SOURCE_DIR "/templates/";
  for (const char* file : {"gemv.cu", "gemv_tc.cu", "gemv_q.cu", "gemv_qtc.cu", "gemv_q4l.cu", "prelude.cu"}) {
    const std::string out = ::testing::TempDir() + "/template_alone.o";
    const std::string cmd = std::string("\"") + GEMVTUNE_NVCC + "\" -arch=sm_90 -c \"" + dir + file + "\" -o \"" + out +
                            "\" 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  // And the prelude plus a family through NVRTC, as the generator joins them.
  const std::string text = std::string(templates::get("prelude.cu")) + std::string(templates::get("gemv_tc.cu"));
  const auto k = jit::compile_kernel(text, "gemv_tc_kernel", "sm_90");
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
