// On the GPU: the quantized family (templates/gemv_q.cu) for every weight format against the
// float64 reference over the dequantized weights (random codes over each format's whole range,
// random scales and zeros), every config of its search space (GEMVTUNE_TEST_CONFIG_STRIDE=n
// checks every n-th, GEMVTUNE_TEST_CONFIG_FILTER=text those whose name has text), Y poisoned
// with NaN before each launch, at M = 1, 2 and 5 (int8 and fp8 also 16), with N tails, K tails (int8, fp8), ld > K and
// split-K. Plus the operand checks that refuse what the family
// cannot read.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gemvtune/error.hpp"
#include "gemvtune/search_space.hpp"
#include "gpu_test_support.hpp"
#include "jit/gemv_launch.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

using namespace gemvtune;

namespace {

struct Case {
  Shape shape;
  std::int64_t ld;  // raised by DeviceProblem to 16 bytes of weights where smaller
};
// K tails and multiples of every group; the int4 cases keep K a multiple of 128.
const Case kByteCases[] = {{{7, 129}, 129}, {{300, 1000}, 1040}, {{1024, 4096}, 4096}, {{33, 77}, 77}, {{129, 4099}, 4099}};
const Case kInt4Cases[] = {{{7, 128}, 128}, {{300, 1024}, 1088}, {{1024, 4096}, 4096}, {{33, 384}, 384}, {{129, 4224}, 4224}};


void check_format(DType t, WeightFormat w, int m) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const std::size_t stride = config_stride();
  const bool int4 = is_int4(w);
  std::vector<Case> cases;
  for (const Case& cs : int4 ? std::vector<Case>(std::begin(kInt4Cases), std::end(kInt4Cases))
                             : std::vector<Case>(std::begin(kByteCases), std::end(kByteCases)))
    if (!int4 || cs.shape.k % group_size(w) == 0) cases.push_back(cs);
  // Every stride-th config of each case's space, compiled together before the first check.
  std::vector<std::vector<KernelConfig>> configs;
  std::vector<KernelConfig> all;
  for (const Case& cs : cases) {
    const auto space = filtered(search_space_for(t, cs.shape, m, w));
    if (!config_filter()) ASSERT_FALSE(space.empty()) << to_string(cs.shape);
    configs.emplace_back();
    for (std::size_t i = config_offset(stride); i < space.size(); i += stride) configs.back().push_back(space[i]);
    all.insert(all.end(), configs.back().begin(), configs.back().end());
  }
  precompile(kernels, t, all, w);
  std::uint64_t seed = 3000 + 31 * m + 7 * static_cast<int>(w) + static_cast<int>(t);
  std::size_t checked = 0;
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const Case& cs = cases[ci];
    if (configs[ci].empty()) {  // the filter left none
      ++seed;
      continue;
    }
    DeviceProblem problem(t, cs.shape, cs.ld, seed++, 0, m, 0, 0, w);
    for (const KernelConfig& c : configs[ci]) {
      auto kernel = kernels.get(c, t, w);
      problem.workspace().reserve(c, cs.shape);
      const LaunchFn launch = [&](int copy, CUstream s) {
        jit::launch_gemv(*kernel, c, problem.operands(copy), problem.workspace(), s);
      };
      const Comparison cmp = verify_calls(launch, problem, stream);
      ++checked;
      EXPECT_TRUE(cmp.ok) << to_string(w) << " " << to_string(t) << " M=" << m << " " << to_string(cs.shape)
                          << " " << to_string(c) << ": " << cmp.describe();
    }
  }
  if (checked == 0 && config_filter())
    GTEST_SKIP() << "no config of " << to_string(w) << " with " << to_string(t) << " activations matches "
                 << "GEMVTUNE_TEST_CONFIG_FILTER=" << config_filter();
  EXPECT_GT(checked, 0u);
  std::printf("[gemvtune] %s weights, %s, M=%d: %zu config/shape checks against float64\n",
              std::string(to_string(w)).c_str(), std::string(to_string(t)).c_str(), m, checked);
  std::fflush(stdout);
}

class QuantGpu : public ::testing::TestWithParam<std::tuple<WeightFormat, DType, int>> {};

TEST_P(QuantGpu, WholeSpaceMatchesFloat64) {
  check_format(std::get<1>(GetParam()), std::get<0>(GetParam()), std::get<2>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantGpu,
                         ::testing::Combine(::testing::Values(WeightFormat::int8, WeightFormat::fp8,
                                                              WeightFormat::fp8_tensor, WeightFormat::int4_g32,
                                                              WeightFormat::int4_g64, WeightFormat::int4_g128),
                                            ::testing::Values(DType::bf16, DType::f16, DType::f32),
                                            ::testing::Values(1, 2, 5)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::string(to_string(std::get<1>(info.param))) + "_M" +
                                  std::to_string(std::get<2>(info.param));
                         });

// The 8-bit formats at a full batch: register trips and the ring (rows x M <= 32) at M = 16.
INSTANTIATE_TEST_SUITE_P(EightBitFullBatch, QuantGpu,
                         ::testing::Combine(::testing::Values(WeightFormat::int8, WeightFormat::fp8),
                                            ::testing::Values(DType::bf16), ::testing::Values(16)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::string(to_string(std::get<1>(info.param))) + "_M" +
                                  std::to_string(std::get<2>(info.param));
                         });

// Two batch tiles of the int4 tensor-core family (m tile 9..16: the second n8 tile).
INSTANTIATE_TEST_SUITE_P(TwoBatchTiles, QuantGpu,
                         ::testing::Combine(::testing::Values(WeightFormat::int4_g128),
                                            ::testing::Values(DType::bf16, DType::f16), ::testing::Values(13)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_" +
                                  std::string(to_string(std::get<1>(info.param))) + "_M" +
                                  std::to_string(std::get<2>(info.param));
                         });

// 8-bit split-K blocks finish as one cluster as dense ones do (jit::cluster_blocks_for): the
// cluster and the workspace add the same sums in the same order, so the same bits, on every
// split-K config of the space that runs as a cluster (a stride of them), at M = 5 and 16.
TEST(QuantGpu, EightBitSplitKClusterAndWorkspaceGiveTheSameBits) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const Shape shape{200, 8184};  // few rows: small grids, which run as clusters; N and K tails
  std::size_t clusters = 0;
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::fp8_tensor})
    for (int m : {5, 16}) {
      std::vector<KernelConfig> picked;
      const std::vector<KernelConfig> space = search_space_for(DType::bf16, shape, m, w);
      for (std::size_t i = 0; i < space.size() && picked.size() < 6; i += 5)
        if (jit::cluster_blocks_for(space[i], w, shape, ctx.info().arch) > 1) picked.push_back(space[i]);
      precompile(kernels, DType::bf16, picked, w);
      DeviceProblem problem(DType::bf16, shape, shape.k, 400 + m + static_cast<int>(w), 0, m, 0, 0, w);
      for (const KernelConfig& c : picked) {
        auto kernel = kernels.get(c, DType::bf16, w);
        problem.workspace().reserve(c, shape);
        const BothFinishes both = run_both_finishes(*kernel, c, problem, stream);
        ASSERT_TRUE(both.failed.empty()) << to_string(w) << " M=" << m << " " << to_string(c) << ": " << both.failed;
        EXPECT_EQ(both.bits[0], both.bits[1]) << to_string(w) << " M=" << m << " " << to_string(c);
        ++clusters;
      }
    }
  // sm_90 and later: every format and M has split-K configs that run as clusters.
  if (ctx.info().id.cc_major >= 9) EXPECT_GE(clusters, 18u);
  std::printf("[gemvtune] 8-bit split-K: %zu configs, cluster and workspace bits equal\n", clusters);
}

// What the family cannot read is refused with a message naming it, before any launch.
TEST(QuantOperands, RefusedWithClearErrors) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  const KernelConfig c = parse_config("t128_r2_kw1_v16_u2_sk1_cs");
  const WeightFormat w = WeightFormat::int4_g128;
  DeviceProblem problem(DType::bf16, {64, 1024}, 1024, 5, 0, 1, 0, 0, w);
  problem.workspace().reserve(c, {64, 1024});
  auto kernel = kernels.get(c, DType::bf16, w);
  jit::Stream stream;
  const auto expect_refused = [&](jit::GemvOperands op, const std::string& words) {
    try {
      jit::launch_gemv(*kernel, c, op, problem.workspace(), stream.get());
      ADD_FAILURE() << "launched; expected a refusal naming '" << words << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  jit::GemvOperands op = problem.operands(0);
  op.scales = 0;
  expect_refused(op, "scales");
  op = problem.operands(0);
  op.zeros = 0;
  expect_refused(op, "zeros");
  op = problem.operands(0);
  op.w += 2;
  expect_refused(op, "16-byte");
  op = problem.operands(0);
  op.shape.k = 1000;  // not a multiple of 128
  op.ld = 1024;
  expect_refused(op, "group");
  op = problem.operands(0);
  op.weights = WeightFormat::int8;  // the kernel is int4g128's
  expect_refused(op, "do not match");
}

}  // namespace
