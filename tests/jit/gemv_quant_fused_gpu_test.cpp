// On the GPU: fused launches over quantized weights. One problem's rows are cut into three
// segments at rows that are not multiples of 16 (so some warps' tiles straddle two segments),
// and each segment's weights, scales and zeros are copied apart, in reverse order, into other
// buffers: a kernel that takes a row's pointers from the wrong segment reads another segment's
// data and fails the float64 check. Every config of each format's space (stride and filter as
// in the other suites) at M = 1 and 5, Y poisoned first.
#include <gtest/gtest.h>

#include "gemvtune/search_space.hpp"
#include "gemvtune/weights.hpp"
#include "gpu_test_support.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

using namespace gemvtune;

namespace {

// The segments' first rows within the stacked rows, and where they end.
constexpr std::int64_t kBegin[] = {0, 37, 114};
constexpr std::int64_t kRows = 307, kK = 1024;
constexpr std::int64_t segment_end(int i) { return i == 2 ? kRows : kBegin[i + 1]; }

// Segment i's `per_row` bytes per row of `from` copied to `to`, segments in reverse order with
// 256 bytes between them; offsets[i] says where segment i landed.
jit::DeviceBuffer apart(CUdeviceptr from, std::int64_t per_row, std::int64_t (&offsets)[3]) {
  std::int64_t at = 0;
  for (int i = 2; i >= 0; --i) {
    offsets[i] = at;
    at += ((segment_end(i) - kBegin[i]) * per_row + 255) / 256 * 256 + 256;
  }
  jit::DeviceBuffer to(static_cast<std::size_t>(at));
  to.fill_bytes(0x5a);  // gaps: codes and factors that no segment holds
  for (int i = 0; i < 3; ++i)
    GEMVTUNE_CU(cuMemcpyDtoD, to.get() + offsets[i], from + kBegin[i] * per_row,
                static_cast<std::size_t>((segment_end(i) - kBegin[i]) * per_row));
  jit::finish_legacy_stream();  // the copies land before a kernel on a non-blocking stream reads them
  return to;
}

void check_fused(DType t, WeightFormat w, int m) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const Shape stacked{kRows, kK};
  DeviceProblem problem(t, stacked, kK, 4100 + static_cast<int>(w) + 13 * m, 0, m, 0, 0, w);
  const jit::GemvOperands one = problem.operands(0);
  const WeightBytes per_row = weight_bytes(w, t, 1, kK);
  const std::int64_t row_bytes = is_int4(w) ? one.ld / 2 : one.ld;
  std::int64_t wo[3], so[3], zo[3] = {0, 0, 0};
  const jit::DeviceBuffer wbuf = apart(one.w, row_bytes, wo);
  const jit::DeviceBuffer sbuf = apart(one.scales, per_row.scales, so);
  jit::DeviceBuffer zbuf;
  if (per_row.zeros > 0) zbuf = apart(one.zeros, per_row.zeros, zo);

  jit::FusedOperands op;
  op.count = 3;
  op.x = one.x;
  op.k = kK;
  op.m = m;
  op.ldx = one.ldx;
  op.weights = w;
  const std::int64_t ldy = one.ldy ? one.ldy : kRows;
  for (int i = 0; i < 3; ++i)
    op.segments[i] = {wbuf.get() + wo[i], one.y + kBegin[i] * dtype_size(t), segment_end(i) - kBegin[i], one.ld, ldy,
                      sbuf.get() + so[i], per_row.zeros > 0 ? zbuf.get() + zo[i] : 0};

  const auto space = filtered(search_space_for(t, stacked, m, w));
  std::vector<KernelConfig> configs;
  for (std::size_t i = config_offset(config_stride()); i < space.size(); i += config_stride()) configs.push_back(space[i]);
  if (configs.empty()) GTEST_SKIP() << "no config matches GEMVTUNE_TEST_CONFIG_FILTER=" << config_filter();
  precompile(kernels, t, configs, w);
  for (const KernelConfig& c : configs) {
    auto kernel = kernels.get(c, t, w);
    problem.workspace().reserve(c, stacked);
    const LaunchFn launch = [&](int, CUstream s) { jit::launch_fused_gemv(*kernel, c, op, problem.workspace(), s); };
    const Comparison cmp = verify_calls(launch, problem, stream);
    EXPECT_TRUE(cmp.ok) << to_string(w) << " " << to_string(t) << " M=" << m << " " << to_string(c) << ": "
                        << cmp.describe();
  }
  std::printf("[gemvtune] fused %s weights, %s, M=%d: %zu configs over three segments apart\n",
              std::string(to_string(w)).c_str(), std::string(to_string(t)).c_str(), m, configs.size());
}

class QuantFusedGpu : public ::testing::TestWithParam<std::tuple<WeightFormat, DType, int>> {};

TEST_P(QuantFusedGpu, SegmentsStoredApartMatchFloat64) {
  check_fused(std::get<1>(GetParam()), std::get<0>(GetParam()), std::get<2>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantFusedGpu,
                         ::testing::Combine(::testing::Values(WeightFormat::int4_g128, WeightFormat::int8,
                                                              WeightFormat::fp8),
                                            ::testing::Values(DType::bf16, DType::f16), ::testing::Values(1, 5)));

}  // namespace
