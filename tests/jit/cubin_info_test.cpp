// The cubin's .nv.info agrees with ptxas' -v report (registers, stack frame) on kernels of the
// search space and on a kernel forced to spill; bad bytes give nothing; the ELF section table
// and completeness check under it. No GPU needed.
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
