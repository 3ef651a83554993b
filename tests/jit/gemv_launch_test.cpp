// Which launches run their split-K blocks as a thread block cluster (jit::cluster_blocks_for):
// the rule the kernels' GEMV_CLUSTER_SPLIT_K (templates/prelude.cu) must agree with; and the
// shared memory that spreads a one-wave grid (jit::spread_shared_bytes). No GPU needed; the GPU
// suites check the results of both paths against float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gemvtune/config.hpp"
#include "gemvtune/generator.hpp"
#include "jit/gemv_launch.hpp"

using namespace gemvtune;

namespace {
const Shape kShape{4096, 4096};
KernelConfig with_split(const char* text, int split) {
  KernelConfig c = parse_config(text);
  c.split_k = split;
  return c;
}
}  // namespace

TEST(ClusterLaunch, DenseSplitKOnSm90IsOneClusterOfTheSplits) {
  const Shape few_rows{64, 8192};  // 64 row blocks of one row, or 2 of 32 rows: at most 512 blocks
  for (int split : {2, 3, 4, 6, 8}) {
    EXPECT_EQ(jit::cluster_blocks_for(with_split("t128_r1_kw4_v16_u4_sk1_cs_pdl", split), WeightFormat::dense, few_rows,
                                      "sm_90"),
              split);
    EXPECT_EQ(jit::cluster_blocks_for(with_split("tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_m8", split), WeightFormat::dense,
                                      few_rows, "sm_100"),
              split);
  }
}

TEST(ClusterLaunch, NoClusterWithoutSplitKBeforeSm90PastEightForLargeBlocksOrGridsOrInt4Weights) {
  const KernelConfig c = with_split("t128_r1_kw4_v16_u4_sk1_cs_pdl", 1);
  EXPECT_EQ(jit::cluster_blocks_for(c, WeightFormat::dense, kShape, "sm_90"), 1);
  EXPECT_EQ(jit::cluster_blocks_for(with_split("t128_r1_kw4_v16_u4_sk1_cs_pdl", 4), WeightFormat::dense, kShape, "sm_89"), 1);
  EXPECT_EQ(jit::cluster_blocks_for(with_split("t128_r1_kw4_v16_u4_sk1_cs_pdl", 4), WeightFormat::dense, kShape, "sm_80"), 1);
  EXPECT_EQ(jit::cluster_blocks_for(with_split("t128_r1_kw4_v16_u4_sk1_cs_pdl", 16), WeightFormat::dense, kShape, "sm_90"), 1);
  EXPECT_EQ(jit::cluster_blocks_for(with_split("t128_r1_kw4_v16_u4_sk1_cs_pdl", 4), WeightFormat::dense, kShape, "compute_90"),
            1);
  // 8 warps x 4 tiles x 16 rows at m tile 16: 8192 outputs, past the prelude's 2048.
  EXPECT_EQ(jit::cluster_blocks_for(with_split("tc_t256_r4_kw1_v16_u1_sk1_cs_m16", 2), WeightFormat::dense, kShape, "sm_90"), 1);
  EXPECT_EQ(jit::cluster_blocks_for(with_split("tc_t256_r1_kw4_v16_u2_sk1_cs_m16", 2), WeightFormat::dense, kShape, "sm_90"), 2);
  // More than 512 blocks: 4096 rows of 8 a block x 2 splits = 1024.
  EXPECT_EQ(jit::cluster_blocks_for(with_split("t256_r1_kw1_v16_u4_sk1_cs_pdl", 2), WeightFormat::dense, kShape, "sm_90"), 1);
  EXPECT_EQ(jit::cluster_blocks_for(with_split("t256_r1_kw1_v16_u4_sk1_cs_pdl", 2), WeightFormat::dense, Shape{1024, 4096},
                                    "sm_90"),
            2);  // 256 blocks
  // 8-bit weights finish in a cluster as dense ones do; int4 weights never (64 row blocks x 4).
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::fp8_tensor})
    EXPECT_EQ(jit::cluster_blocks_for(with_split("tc_t256_r1_kw2_v16_u1_sk1_cs", 4), w, kShape, "sm_90"), 4) << to_string(w);
  for (WeightFormat w : {WeightFormat::int4_g32, WeightFormat::int4_g64, WeightFormat::int4_g128})
    EXPECT_EQ(jit::cluster_blocks_for(with_split("tc_t256_r1_kw2_v16_u1_sk1_cs", 4), w, kShape, "sm_90"), 1) << to_string(w);
}

// The launch rule and the kernels' cluster path use one bound on a block's outputs.
TEST(ClusterLaunch, RuntimeAndPreludeShareTheOutputBound) {
  const std::string source = generate_source(parse_config("tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_m8"), DType::bf16);
  EXPECT_NE(source.find("#define GEMV_CLUSTER_OUTPUTS " + std::to_string(kClusterSplitOutputs) + "\n"),
            std::string::npos);
}

// The H200's figures (cuDeviceGetAttribute): 228 KiB of shared memory an SM, 227 KiB a block at
// most, 1 KiB reserved a block.
constexpr int kSmemPerSm = 233472, kSmemPerBlockMax = 232448, kReserved = 1024;

TEST(SpreadLaunch, TakesTheSharedMemoryThatFitsCapBlocksAndNoMore) {
  EXPECT_EQ(jit::spread_shared_bytes(1, 4, kSmemPerSm, kSmemPerBlockMax, 0, kReserved), 232448);  // the opt-in limit
  EXPECT_EQ(jit::spread_shared_bytes(2, 8, kSmemPerSm, kSmemPerBlockMax, 0, kReserved), 115712);
  EXPECT_EQ(jit::spread_shared_bytes(3, 8, kSmemPerSm, kSmemPerBlockMax, 0, kReserved), 76800);
  // The kernel's own (static) shared memory counts against the block's share.
  EXPECT_EQ(jit::spread_shared_bytes(2, 8, kSmemPerSm, kSmemPerBlockMax, 4096, kReserved), 111616);
}

TEST(SpreadLaunch, NothingWhereTheCapIsNoLimitOrCannotBeReached) {
  EXPECT_EQ(jit::spread_shared_bytes(4, 4, kSmemPerSm, kSmemPerBlockMax, 0, kReserved), 0);  // SMs hold 4 anyway
  EXPECT_EQ(jit::spread_shared_bytes(5, 4, kSmemPerSm, kSmemPerBlockMax, 0, kReserved), 0);
  EXPECT_EQ(jit::spread_shared_bytes(0, 4, kSmemPerSm, kSmemPerBlockMax, 0, kReserved), 0);
  // Static shared memory that already fills a block's share leaves nothing to add.
  EXPECT_EQ(jit::spread_shared_bytes(2, 3, kSmemPerSm, kSmemPerBlockMax, 116000, kReserved), 0);
}

TEST(SpreadLaunch, EveryCapFitsExactlyThatManyBlocks) {
  for (int cap = 1; cap <= 32; ++cap)
    for (int static_smem : {0, 2048, 16384, 49152})
      for (int sm : {kSmemPerSm, 167936, 102400}) {  // H100/H200, A100, sm_86
        const int dyn = jit::spread_shared_bytes(cap, 33, sm, std::min(sm - kReserved, kSmemPerBlockMax), static_smem, kReserved);
        if (dyn == 0) continue;
        const int total = dyn + static_smem + kReserved;
        EXPECT_EQ(dyn % 128, 0);
        EXPECT_GE(sm / total, cap) << "cap " << cap << " static " << static_smem << " sm " << sm;  // cap blocks fit
        EXPECT_LE(sm / total, cap) << "cap " << cap << " static " << static_smem << " sm " << sm;  // cap + 1 do not
      }
}
