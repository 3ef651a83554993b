// On the GPU: every config of the search space, for each dtype, matches the float64 reference
// on fresh random inputs with y poisoned (NaN) before each launch, over shapes with tails, a
// slice with ld > K (its padding is NaN, so reading it fails), and big shapes. Split-K output
// is bitwise identical over 5 runs.
//
// Tolerance per element: rel_tol(dtype) * |ref| + 1e-4 * rms(ref), rel_tol = 2^-7 for bf16,
// 2^-10 for fp16 (one unit in the last place of the output), 1e-5 for fp32.
// GEMVTUNE_TEST_CONFIG_STRIDE=n checks every n-th config only (for compute-sanitizer runs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>

#include "gemvtune/search_space.hpp"
#include "gpu_test_support.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

using namespace gemvtune;

namespace {

struct Case {
  Shape shape;
  std::int64_t ld;
};
const Case kCases[] = {{{1, 1}, 1},          {{7, 129}, 129},     {{1024, 4096}, 4096},
                       {{4096, 14336}, 14336}, {{4097, 4099}, 4099}, {{300, 1000}, 1064},
                       {{33, 77}, 96}};

void check_space(DType t) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const std::size_t stride = config_stride();
  // Each case's problem and every stride-th config of its space (plus the plain element-wide
  // kernel: tiny K leaves no config of the space valid), with the vector width the operands'
  // alignment allows, as the runtime runs it. All compiled before the first check.
  std::vector<std::unique_ptr<DeviceProblem>> problems;
  std::vector<std::vector<KernelConfig>> configs;
  std::vector<KernelConfig> all;
  std::uint64_t seed = 1000 + static_cast<int>(t);
  for (const Case& cs : kCases) {
    problems.push_back(std::make_unique<DeviceProblem>(t, cs.shape, cs.ld, seed++, 0));
    std::vector<KernelConfig> space = search_space_for(t, cs.shape);
    KernelConfig plain;
    plain.vec_bytes = static_cast<int>(dtype_size(t));
    plain.unroll = 1;
    space.push_back(plain);
    const auto op = problems.back()->operands(0);
    configs.emplace_back();
    for (std::size_t i = config_offset(stride); i < space.size(); i += stride) {
      KernelConfig c = space[i];
      c.vec_bytes = widest_aligned_vec_bytes(c, t, op.w, op.ld, op.x);
      configs.back().push_back(c);
    }
    all.insert(all.end(), configs.back().begin(), configs.back().end());
  }
  precompile(kernels, t, all);
  std::size_t checked = 0;
  for (std::size_t ci = 0; ci < std::size(kCases); ++ci) {
    const Case& cs = kCases[ci];
    DeviceProblem& problem = *problems[ci];
    for (const KernelConfig& c : configs[ci]) {
      auto kernel = kernels.get(c, t);
      problem.workspace().reserve(c, cs.shape);
      const LaunchFn launch = [&](int copy, CUstream s) {
        jit::launch_gemv(*kernel, c, problem.operands(copy), problem.workspace(), s);
      };
      const Comparison cmp = verify_calls(launch, problem, stream);
      ++checked;
      EXPECT_TRUE(cmp.ok) << to_string(t) << " " << to_string(cs.shape) << " ld " << cs.ld << " "
                          << to_string(c) << ": " << cmp.describe();
    }
  }
  std::printf("[gemvtune] %s: %zu config/shape checks against float64\n", std::string(to_string(t)).c_str(), checked);
}

}  // namespace

TEST(GemvCorrectnessGpu, WholeSpaceFp32) { check_space(DType::f32); }
TEST(GemvCorrectnessGpu, WholeSpaceFp16) { check_space(DType::f16); }
TEST(GemvCorrectnessGpu, WholeSpaceBf16) { check_space(DType::bf16); }

// The two ways split-K blocks combine (a thread block cluster through distributed shared
// memory, or partials in the workspace and the last block; templates/prelude.cu) add the same
// sums in the same order: the same bits, for both families and an m tile > 1.
TEST(GemvCorrectnessGpu, SplitKClusterAndWorkspaceGiveTheSameBits) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  std::size_t clusters = 0;
  for (DType t : kAllDTypes) {
    for (const char* text : {"t128_r4_kw1_v16_u2_sk8_cs_pdl", "t256_r2_kw2_v16_u2_sk3_nc", "t128_r2_kw2_v16_u2_sk4_cs_m4",
                             "tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_m8", "tc_t128_r2_kw4_v16_u4_sk8_cs_pdl_m8",
                             "tc_t128_r1_kw4_v16_u2_sk4_cs_pdl_m16"}) {
      const KernelConfig c = parse_config(text);
      const Shape shape{200, 8184};  // few rows: small grids, which run as clusters; N and K tails
      if (why_invalid_for(c, t, shape, c.m_tile)) continue;  // tensor cores: not fp32
      auto kernel = kernels.get(c, t);
      const bool cluster = jit::cluster_blocks_for(c, WeightFormat::dense, shape, kernel->compiled().arch) > 1;
      clusters += cluster;
      DeviceProblem problem(t, shape, shape.k, 91, 0, c.m_tile);
      problem.workspace().reserve(c, problem.shape());
      const BothFinishes both = run_both_finishes(*kernel, c, problem, stream);
      ASSERT_TRUE(both.failed.empty()) << text << ": " << both.failed;
      EXPECT_EQ(both.bits[0], both.bits[1]) << text << " " << to_string(t) << (cluster ? " (cluster)" : " (no cluster chosen)");
    }
  }
  // On sm_90 and later most of these run as clusters; elsewhere both launches take the workspace.
  if (ctx.info().id.cc_major >= 9) EXPECT_GE(clusters, 15u);
}

TEST(GemvCorrectnessGpu, SplitKIsBitwiseDeterministic) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  for (DType t : kAllDTypes) {
    // Batch 1, and M > 1 on both families (an m-tile's rows of X).
    for (const char* text : {"t128_r1_kw1_v16_u4_sk8_cs", "t256_r2_kw2_v16_u2_sk3_nc", "t64_r4_kw1_v16_u1_sk6_cs",
                             "tc_t128_r1_kw2_v16_u2_sk8_cs_m16", "tc_t256_r2_kw4_v16_u1_sk3_cs_pdl_m8",
                             "t128_r2_kw2_v16_u2_sk6_cs_m4"}) {
      const KernelConfig c = parse_config(text);
      if (why_invalid_for(c, t, {4096, 14336}, c.m_tile)) continue;  // tensor cores: not fp32
      DeviceProblem problem(t, {4096, 14336}, 14336, 77, 0, c.m_tile);
      auto kernel = kernels.get(c, t);
      problem.workspace().reserve(c, problem.shape());
      const LaunchFn launch = [&](int copy, CUstream s) {
        jit::launch_gemv(*kernel, c, problem.operands(copy), problem.workspace(), s);
      };
      std::vector<unsigned char> first;
      for (int run = 0; run < 5; ++run) {
        const Comparison cmp = verify_calls(launch, problem, stream);
        ASSERT_TRUE(cmp.ok) << text << ": " << cmp.describe();
        const HostArray y = problem.read_y();
        if (run == 0) first.assign(y.bytes.begin(), y.bytes.end());
        else EXPECT_EQ(std::memcmp(first.data(), y.bytes.data(), first.size()), 0) << text << " run " << run;
      }
    }
  }
}
