// On the GPU: Y = X W^T at batch M in {1, 2, 3, 8, 13, 16}, every config of the batched search
// space (both families) against the float64 reference, with Y poisoned (NaN) before each
// launch, over shapes with N and K tails, ld > K and ldx > K (their padding is NaN, so reading
// it fails), and ldy > N. A config of m tile M also runs every smaller m (split-K determinism
// at M > 1: gemv_correctness_gpu_test.cpp). GEMVTUNE_TEST_CONFIG_STRIDE=n checks every n-th config,
// GEMVTUNE_TEST_CONFIG_FILTER=text those whose name has text (tests/gpu_test_support.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <memory>

#include "gemvtune/search_space.hpp"
#include "gpu_test_support.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

using namespace gemvtune;

namespace {

struct Case {
  Shape shape;
  std::int64_t ld, ldx, ldy;
};
// Misaligned strides (ld, ldx not a multiple of 8 elements) fall back to narrower CUDA-core
// loads as the runtime does; the aligned cases exercise 16-byte loads and tensor cores.
const Case kCases[] = {{{7, 129}, 136, 136, 7},       {{300, 1000}, 1064, 1024, 301},
                       {{1024, 4096}, 4096, 4096, 1024}, {{4097, 4099}, 4104, 4112, 4097},
                       {{33, 77}, 96, 80, 40},         {{64, 1000}, 1003, 1001, 64}};

// As the runtime does for a config the operands' alignment does not allow.
KernelConfig fit_alignment(KernelConfig c, DType t, const jit::GemvOperands& op) {
  return with_vec_bytes(c, widest_aligned_vec_bytes(c, t, op.w, op.ld, op.x, op.m > 1 ? op.ldx : 0));
}

void check_batch(DType t, int m) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const std::size_t stride = config_stride();
  // Each case's problem (and, at M > 1, one with m - 1 rows), and what runs on it: every
  // stride-th config of the case's space, fitted to the operands' alignment, and the first of
  // every 16 on the m - 1 rows as well (a tile covers less). All compiled before the first check.
  struct Check {
    const Case* cs;
    DeviceProblem* problem;
    KernelConfig config;
  };
  std::vector<std::unique_ptr<DeviceProblem>> problems;
  std::vector<Check> checks;
  std::uint64_t seed = 2000 + 17 * m + static_cast<int>(t);
  for (const Case& cs : kCases) {
    problems.push_back(std::make_unique<DeviceProblem>(t, cs.shape, cs.ld, seed++, 0, m, cs.ldx, cs.ldy));
    DeviceProblem* problem = problems.back().get();
    DeviceProblem* fewer = nullptr;
    if (m > 1) {
      problems.push_back(std::make_unique<DeviceProblem>(t, cs.shape, cs.ld, seed++, 0, m - 1, cs.ldx, cs.ldy));
      fewer = problems.back().get();
    }
    const auto space = filtered(search_space_for(t, cs.shape, m));
    for (std::size_t i = config_offset(stride); i < space.size(); i += stride)
      for (DeviceProblem* p : {problem, (i / stride) % 16 == 0 ? fewer : nullptr})
        if (p) checks.push_back({&cs, p, fit_alignment(space[i], t, p->operands(0))});
  }
  std::vector<KernelConfig> configs;
  for (const Check& k : checks) configs.push_back(k.config);
  precompile(kernels, t, configs);
  std::size_t checked = 0, tensor_core = 0;
  for (const Check& k : checks) {
    const Case& cs = *k.cs;
    DeviceProblem& p = *k.problem;
    const KernelConfig& c = k.config;
    auto kernel = kernels.get(c, t);
    p.workspace().reserve(c, cs.shape);
    const LaunchFn launch = [&](int copy, CUstream s) { jit::launch_gemv(*kernel, c, p.operands(copy), p.workspace(), s); };
    const Comparison cmp = verify_calls(launch, p, stream);
    ++checked;
    tensor_core += c.family == Family::tensor_core;
    EXPECT_TRUE(cmp.ok) << to_string(t) << " M=" << p.batch() << " " << to_string(cs.shape) << " ld " << cs.ld
                        << " ldx " << cs.ldx << " ldy " << cs.ldy << " " << to_string(c) << ": " << cmp.describe();
  }
  if (t != DType::f32 && m > 1 && !config_filter()) EXPECT_GT(tensor_core, 0u);
  if (config_filter() && checked == 0)
    GTEST_SKIP() << "no config of this space matches GEMVTUNE_TEST_CONFIG_FILTER=" << config_filter();
  std::printf("[gemvtune] %s M=%d: %zu config/shape checks against float64 (%zu on tensor cores)\n",
              std::string(to_string(t)).c_str(), m, checked, tensor_core);
  std::fflush(stdout);  // the GPU session pipes this through tee
}

// One group of twins the tuner measures outside the space: dtype, batch and weight format.
struct TwinGroup {
  DType t;
  int m;
  WeightFormat w;
};
// The twins twins_of(config, group) of every stride-th tensor-core config of each group's space
// of 6151 rows (a tail tile), K = 1024, each checked against float64 (seeds from seed on);
// returns the twins checked.
std::vector<KernelConfig> check_twins(
    std::initializer_list<TwinGroup> groups, std::size_t stride, std::uint64_t seed,
    const std::function<std::vector<KernelConfig>(const KernelConfig&, const TwinGroup&, const Shape&, int)>& twins_of) {
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const Shape shape{6151, 1024};
  std::vector<KernelConfig> checked;
  for (const TwinGroup& g : groups) {
    std::vector<KernelConfig> twins;
    std::size_t i = 0;
    for (const KernelConfig& c : filtered(search_space_for(g.t, shape, g.m, g.w)))
      if (c.family == Family::tensor_core && config_picked(i++, stride))
        for (const KernelConfig& twin : twins_of(c, g, shape, ctx.info().id.sm_count))
          if (std::find(twins.begin(), twins.end(), twin) == twins.end()) twins.push_back(twin);
    EXPECT_FALSE(twins.empty()) << to_string(g.t) << " M=" << g.m;
    precompile(kernels, g.t, twins, g.w);
    DeviceProblem p(g.t, shape, shape.k, seed++, 0, g.m, 0, 0, g.w);
    for (const KernelConfig& c : twins) {
      auto kernel = kernels.get(c, g.t, g.w);
      p.workspace().reserve(c, shape);
      const LaunchFn launch = [&](int copy, CUstream st) { jit::launch_gemv(*kernel, c, p.operands(copy), p.workspace(), st); };
      const Comparison cmp = verify_calls(launch, p, stream);
      checked.push_back(c);
      EXPECT_TRUE(cmp.ok) << to_string(g.t) << " " << to_string(g.w) << " M=" << g.m << " " << to_string(c) << ": "
                          << cmp.describe();
    }
  }
  return checked;
}

std::size_t twin_stride(std::size_t otherwise) {
  return std::getenv("GEMVTUNE_TEST_CONFIG_STRIDE") ? config_stride() : otherwise;
}

// The twins the tuner measures beside its leader (balanced_twins: grids fitted to this GPU's
// SMs, block sizes that are not powers of two) of every 5th tensor-core config (every
// GEMVTUNE_TEST_CONFIG_STRIDE-th when set): dense bf16 at M = 3 and 16, fp16 at M = 8, int4g128
// (bf16) at M = 1 (templates/gemv_q4l.cu's x staging in rounds that do not divide the threads)
// and 5, int8 (bf16) at M = 16 and fp8 (fp16) at M = 1.
TEST(BatchGpuTwins, BalancedTwinsMatchFloat64) {
  GEMVTUNE_REQUIRE_GPU();
  const auto checked = check_twins(
      {{DType::bf16, 3, WeightFormat::dense}, {DType::bf16, 16, WeightFormat::dense}, {DType::f16, 8, WeightFormat::dense},
       {DType::bf16, 1, WeightFormat::int4_g128}, {DType::bf16, 5, WeightFormat::int4_g128},
       {DType::bf16, 16, WeightFormat::int8}, {DType::f16, 1, WeightFormat::fp8}},
      twin_stride(5), 3100, [](const KernelConfig& c, const TwinGroup& g, const Shape& s, int sms) {
        return balanced_twins(c, g.t, s, g.m, g.w, sms);
      });
  std::size_t odd = 0;
  for (const KernelConfig& c : checked) odd += (c.threads & (c.threads - 1)) != 0;
  EXPECT_GT(odd, 10u);  // block sizes that are not powers of two
  std::printf("[gemvtune] balanced twins: %zu checks against float64 (%zu of blocks that are not a power of two)\n",
              checked.size(), odd);
  std::fflush(stdout);
}

// The register-capped twins (register_capped_twin: at most 128 registers a thread, some
// spilling a few bytes) of every 3rd tensor-core register-load config (every
// GEMVTUNE_TEST_CONFIG_STRIDE-th when set) of the quantized spaces: int8 (bf16) at M = 16, fp8
// (fp16) at M = 13, int4g128 (bf16) at M = 5 and 16.
TEST(BatchGpuTwins, RegisterCappedTwinsMatchFloat64) {
  GEMVTUNE_REQUIRE_GPU();
  const auto checked = check_twins(
      {{DType::bf16, 16, WeightFormat::int8}, {DType::f16, 13, WeightFormat::fp8}, {DType::bf16, 5, WeightFormat::int4_g128},
       {DType::bf16, 16, WeightFormat::int4_g128}},
      twin_stride(3), 3200, [](const KernelConfig& c, const TwinGroup& g, const Shape& s, int) {
        std::vector<KernelConfig> out;
        if (const auto twin = register_capped_twin(c, g.t, s, g.m, g.w)) out.push_back(*twin);
        return out;
      });
  std::printf("[gemvtune] register-capped twins: %zu checks against float64\n", checked.size());
  std::fflush(stdout);
}

// The CUDA-core register-capped twins (cuda_core_capped_twin: the cap that lets one more block
// onto an SM, what the tuner measures beside its fastest CUDA-core candidates) of every 7th
// CUDA-core config (every GEMVTUNE_TEST_CONFIG_STRIDE-th when set) of bf16 at M = 1 and 3, fp32
// at M = 2, and the quantized CUDA-core family (templates/gemv_q.cu) with int8, fp8 and int4g64
// weights at M = 1 and 5, on 6151 x 1024 (a row tail), each against float64.
TEST(BatchGpuTwins, CudaCoreCappedTwinsMatchFloat64) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const Shape shape{6151, 1024};
  const std::size_t stride = twin_stride(7);
  std::size_t checked = 0;
  std::uint64_t seed = 3400;
  for (const TwinGroup& g : {TwinGroup{DType::bf16, 1, WeightFormat::dense}, TwinGroup{DType::bf16, 3, WeightFormat::dense},
                             TwinGroup{DType::f32, 2, WeightFormat::dense}, TwinGroup{DType::bf16, 1, WeightFormat::int8},
                             TwinGroup{DType::f16, 5, WeightFormat::fp8}, TwinGroup{DType::bf16, 1, WeightFormat::int4_g64}}) {
    const DType t = g.t;
    const int m = g.m;
    DeviceProblem p(t, shape, shape.k, seed++, 0, m, 0, 0, g.w);
    std::vector<KernelConfig> plain, twins;
    std::size_t i = 0;
    for (const KernelConfig& c : filtered(search_space_for(t, shape, m, g.w)))
      if (c.family == Family::cuda_core && !c.aligned_body && !c.ring && config_picked(i++, stride)) plain.push_back(c);
    precompile(kernels, t, plain, g.w);  // in parallel, then their twins
    for (const KernelConfig& c : plain)
      if (const auto twin = cuda_core_capped_twin(c, t, shape, m, kernels.get(c, t, g.w)->compiled().registers, g.w))
        twins.push_back(*twin);
    precompile(kernels, t, twins, g.w);
    for (const KernelConfig& twin : twins) {
      auto kernel = kernels.get(twin, t, g.w);
      p.workspace().reserve(twin, shape);
      const LaunchFn launch = [&](int copy, CUstream st) { jit::launch_gemv(*kernel, twin, p.operands(copy), p.workspace(), st); };
      const Comparison cmp = verify_calls(launch, p, stream);
      ++checked;
      EXPECT_TRUE(cmp.ok) << to_string(t) << " " << to_string(g.w) << " M=" << m << " " << to_string(twin) << ": "
                          << cmp.describe();
    }
  }
  EXPECT_GT(checked, 20u);
  std::printf("[gemvtune] CUDA-core capped twins: %zu checks against float64\n", checked);
  std::fflush(stdout);
}

// jit::Placement::spread (gemvtune-sweep's GEMVTUNE_SWEEP_SPREAD): grids of less than a wave,
// launched with the dynamic shared memory that caps an SM at ceil(blocks / SMs) of their blocks,
// compute what the plain launch does, and the launch did ask for that memory.
TEST(SpreadLaunchGpu, OneWaveGridsMatchFloat64AndTakeTheSharedMemory) {
  GEMVTUNE_REQUIRE_GPU();
  struct SpreadCase {
    const char* config;
    DType t;
    int m;
    Shape shape;
    WeightFormat w;
  };
  const SpreadCase cases[] = {
      {"t256_r1_kw1_v16_u4_sk1_cs_pdl", DType::bf16, 1, {2048, 4096}, WeightFormat::dense},        // 256 blocks
      {"tc_t128_r2_kw4_v16_u4_sk1_cs_pdl_m8", DType::bf16, 8, {6144, 4096}, WeightFormat::dense},  // 192 blocks
      {"tc_t256_r1_kw1_v16_u4_sk1_cs_pdl_m8", DType::f16, 3, {3000, 1000}, WeightFormat::dense},   // a tail tile
      {"tc_t256_r1_kw1_v16_u1_sk1_cs_pdl", DType::bf16, 1, {6144, 4096}, WeightFormat::int4_g128},
  };
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  std::uint64_t seed = 3300;
  int spread = 0;
  for (const SpreadCase& sc : cases) {
    const KernelConfig c = parse_config(sc.config);
    ASSERT_FALSE(why_invalid_for(c, sc.t, sc.shape, sc.m, sc.w)) << sc.config;
    const auto loaded = kernels.get(c, sc.t, sc.w);
    const jit::LoadedGemv kernel(std::make_shared<jit::CompiledKernel>(loaded->compiled()), c, sc.t, sc.w);
    DeviceProblem p(sc.t, sc.shape, sc.shape.k, seed++, 0, sc.m, 0, 0, sc.w);
    p.workspace().reserve(c, sc.shape);
    const LaunchFn launch = [&](int copy, CUstream st) {
      jit::launch_gemv(kernel, c, p.operands(copy), p.workspace(), st, jit::SplitKFinish::cluster_where_chosen,
                       jit::Placement::spread);
    };
    const Comparison cmp = verify_calls(launch, p, stream);
    EXPECT_TRUE(cmp.ok) << sc.config << " M=" << sc.m << " " << to_string(sc.shape) << ": " << cmp.describe();
    int dynamic = 0;
    GEMVTUNE_CU(cuFuncGetAttribute, &dynamic, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernel.function());
    spread += dynamic > 0;
    std::printf("[gemvtune] spread %s M=%d %s: %d bytes of dynamic shared memory a block\n", sc.config, sc.m,
                to_string(sc.shape).c_str(), dynamic);
  }
  // Each of these grids is less than a wave of blocks that an SM holds several of on the H200.
  EXPECT_GE(spread, 3);
  std::fflush(stdout);
}

class BatchGpu : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(BatchGpu, WholeSpaceMatchesFloat64) { check_batch(std::get<0>(GetParam()), std::get<1>(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Space, BatchGpu,
                         ::testing::Combine(::testing::Values(DType::bf16, DType::f16, DType::f32),
                                            ::testing::Values(2, 3, 8, 13, 16)),
                         [](const auto& info) {
                           return std::string(to_string(std::get<0>(info.param))) + "_M" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
