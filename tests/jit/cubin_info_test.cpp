// The cubin's .nv.info agrees with ptxas' -v report (registers, stack frame) on kernels of the
// search space and on a kernel forced to spill; bad bytes give nothing; the ELF section table
// and completeness check under it; register-capped CUDA-core twins keep their cap. No GPU needed.
#include <gtest/gtest.h>

#include "gemvtune/generator.hpp"
#include "gemvtune/search_space.hpp"
#include "jit/cubin_info.hpp"
#include "jit/elf_image.hpp"
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

TEST(CubinInfo, SharedMemoryIsPtxasReportPlusTheReserve) {
  // The int4 tensor-core ring (ring) is static shared memory: the cubin's
  // .nv.shared.<kernel> section is ptxas' "bytes smem" plus the 1 KB sm_90 reserves per block.
  const auto kernels = distinct_kernels(default_search_space(DType::bf16, 1, WeightFormat::int4_g128));
  std::size_t compared = 0;
  for (std::size_t i = 0; i < kernels.size(); i += 11) {
    const KernelConfig& c = kernels[i];
    const std::string name = kernel_name(c, DType::bf16, WeightFormat::int4_g128);
    const auto k = jit::compile_kernel(generate_source(c, DType::bf16, WeightFormat::int4_g128), name, "sm_90");
    const auto res = jit::read_cubin_resources(k.cubin);
    ASSERT_TRUE(res.has_value()) << name;
    EXPECT_EQ(k.shared_bytes, res->shared_bytes);
    const std::size_t at = k.log.find(" bytes smem");
    if (at == std::string::npos) continue;  // nothing to compare with
    const std::size_t begin = k.log.find_last_not_of("0123456789", at - 1) + 1;
    EXPECT_EQ(res->shared_bytes, std::stoi(k.log.substr(begin, at - begin)) + 1024) << name << "\n" << k.log;
    if (c.family == Family::tensor_core && c.ring) EXPECT_GT(res->shared_bytes, 8 * 1024) << name;  // the ring
    ++compared;
  }
  EXPECT_GT(compared, 0u) << "no ptxas report in the NVRTC logs to compare with";
}

TEST(CubinInfo, CudaCoreCappedTwinsHoldTheirCapWithoutSpilling) {
  // The M = 1 kernels whose register count cost them a block an SM since the batch loops came
  // in (round-1 kernel of 2fdfae6: t256_r2_kw1_u4 80 registers, now 88; t128_r2_kw4_u2 64, now
  // 72; NVRTC 13.0, sm_90), and two more near a step: each has a twin (cuda_core_capped_twin),
  // and the twin's kernel keeps to its cap without spilling, so one more block fits an SM.
  for (const char* text : {"t256_r2_kw1_v16_u4_sk1_cs_pdl", "t128_r2_kw4_v16_u2_sk1_cs_pdl", "t256_r2_kw2_v16_u2_sk1_cs_pdl",
                           "t128_r4_kw1_v16_u2_sk1_cs_pdl", "t256_r1_kw1_v16_u8_sk1_cs_pdl"}) {
    const KernelConfig c = parse_config(text);
    const auto plain = jit::compile_kernel(generate_source(c, DType::bf16), kernel_name(c, DType::bf16), "sm_90");
    const auto twin = cuda_core_capped_twin(c, DType::bf16, {6144, 4096}, 1, plain.registers);
    ASSERT_TRUE(twin) << text << ": " << plain.registers << " registers";
    const auto capped = jit::compile_kernel(generate_source(*twin, DType::bf16), kernel_name(*twin, DType::bf16), "sm_90");
    EXPECT_LE(capped.registers, twin->reg_cap) << to_string(*twin);
    EXPECT_FALSE(capped.spills()) << to_string(*twin) << "\n" << capped.log;
    const auto blocks = [&](int registers) { return 65536 / (((registers + 7) / 8 * 8) * c.threads); };
    EXPECT_GT(blocks(capped.registers), blocks(plain.registers)) << to_string(*twin);
  }
}

TEST(CubinInfo, SeesASpillingKernelsFrame) {
  // 1024 threads and 2 blocks per SM leave 32 registers a thread: this kernel must spill.
  std::string src = generate_source(parse_config("t256_r4_kw1_v16_u2_sk1_cs"), DType::f16);
  const std::string bounds = "__launch_bounds__(GEMV_THREADS, GEMV_MIN_BLOCKS)";
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

TEST(ElfImage, SectionTableOfARealCubin) {
  const KernelConfig c{};
  const auto k = jit::compile_kernel(generate_source(c, DType::bf16), kernel_name(c, DType::bf16), "sm_90");
  const auto sections = jit::read_elf_sections(k.cubin);
  ASSERT_TRUE(sections.has_value());
  bool info = false, text = false;
  for (const jit::ElfSection& s : *sections) {
    info |= s.name == ".nv.info";
    text |= s.name == ".text." + kernel_name(c, DType::bf16);
    if (s.type != 8 /*SHT_NOBITS*/) EXPECT_LE(s.offset + s.size, k.cubin.size()) << s.name;
  }
  EXPECT_TRUE(info);
  EXPECT_TRUE(text) << "the kernel's code section is named after it";
  EXPECT_TRUE(jit::is_complete_elf(k.cubin));
  // Cut inside the last section's contents: the headers may still be there, the image is not whole.
  std::uint64_t end_of_contents = 0;
  for (const jit::ElfSection& s : *sections)
    if (s.type != 8) end_of_contents = std::max(end_of_contents, s.offset + s.size);
  std::vector<char> cut(k.cubin.begin(), k.cubin.begin() + static_cast<std::ptrdiff_t>(end_of_contents - 1));
  EXPECT_FALSE(jit::is_complete_elf(cut));
}
