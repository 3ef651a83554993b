// The steps along K of a row set's warps (tuner/warp_steps.hpp) against counts by hand from
// the loops of templates/gemv_tc.cu and templates/gemv_tcal.cu. No GPU.
#include <gtest/gtest.h>

#include "tuner/warp_steps.hpp"

namespace gemvtune {
namespace {

WarpSteps steps(const char* config, Shape s, WeightFormat w = WeightFormat::dense) {
  const auto st = warp_steps(parse_config(config), DType::bf16, w, s);
  EXPECT_TRUE(st.has_value()) << config;
  return st.value_or(WarpSteps{});
}

TEST(WarpSteps, WholeRoundsGiveEveryWarpTheSame) {
  // 4096 = 128 chunks of 32: 32 runs of 4 over 8 warps, 4 each.
  const auto st = steps("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m8", {4096, 4096});
  EXPECT_EQ(st.chunks, 128);
  EXPECT_EQ(st.runs, 32);
  EXPECT_EQ(st.leftover + st.partial + st.edges, 0);
  EXPECT_EQ(st.slowest, 4);
  EXPECT_EQ(st.fastest, 4);
  EXPECT_EQ(describe(st, parse_config("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m8")),
            "4 steps for every warp: 32 runs of 4 chunks over 8 warps");
}

TEST(WarpSteps, ChunksLeftAfterTheRunsAreOneMoreStepForTheirWarps) {
  // 4160 = 130 chunks: 32 runs (4 a warp), then chunks 128 and 129 for warps 0 and 1.
  const auto st = steps("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m8", {4096, 4160});
  EXPECT_EQ(st.leftover, 2);
  EXPECT_EQ(st.slowest, 5);
  EXPECT_EQ(st.fastest, 4);
  // A partial chunk (4104 = 128 chunks and 8 elements) goes to the last warp; at u2 ptxas
  // issues two runs a step, so 8 runs a warp are 4 steps.
  const auto p = steps("tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m8", {4096, 4104});
  EXPECT_EQ(p.partial, 1);
  EXPECT_EQ(p.slowest, 5);
  EXPECT_EQ(p.fastest, 4);
}

TEST(WarpSteps, SplitKCountsTheSlowestSlice) {
  // 4096 over 2 splits of 2048 = 64 chunks: 16 runs of 4 over 4 warps, 4 each.
  const auto st = steps("tc_t128_r2_kw4_v16_u4_sk2_cs_pdl_m2", {6144, 4096});
  EXPECT_EQ(st.chunks, 64);
  EXPECT_EQ(st.slowest, 4);
  // 4160 over 2: slices of 2112 (whole 128-byte lines) and 2048: 66 chunks in the first.
  const auto r = steps("tc_t128_r2_kw4_v16_u4_sk2_cs_pdl_m2", {6144, 4160});
  EXPECT_EQ(r.chunks, 66);
  EXPECT_EQ(r.slowest, 5);
}

TEST(WarpSteps, AlignedBodyEdgesAndLeftoverChunksInTurn) {
  // 4097x4099: rows at offsets 3 r mod 8; a row at o > 0 has an edge chunk at each end and 127
  // whole chunks between: 31 runs (warps 0-6 four, warp 7 three), then 3 chunks left and 2
  // edges one step each, in turn from warp 7: five steps for warps 0-3, four for the others
  // (from warp 0 it was six for warp 0 and three for warp 7).
  const KernelConfig c = parse_config("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8");
  const auto st = steps("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8", {4097, 4099});
  EXPECT_EQ(st.chunks, 127);
  EXPECT_EQ(st.runs, 31);
  EXPECT_EQ(st.leftover, 3);
  EXPECT_EQ(st.edges, 2);
  EXPECT_EQ(st.slowest, 5);
  EXPECT_EQ(st.fastest, 4);
  EXPECT_EQ(describe(st, c),
            "5 steps for the slowest warp, 4 for the fastest: 31 runs of 4 chunks over 8 warps, then 3 chunks "
            "left (one step each) and 2 edge chunks (one step each)");
  // u2 at m16: 63 runs (warps 0-6 eight, warp 7 seven), 1 chunk left and 2 edges to warps 7, 0
  // and 1: nine for warps 0 and 1.
  const auto m16 = steps("tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_al_m16", {4097, 4099});
  EXPECT_EQ(m16.slowest, 9);
  EXPECT_EQ(m16.fastest, 8);
  // Aligned rows through al (offset 0): no leading edge, 128 whole chunks.
  const auto aligned = steps("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8", {4096, 4096});
  EXPECT_EQ(aligned.edges, 0);
  EXPECT_EQ(aligned.slowest, 4);
}

TEST(WarpSteps, OnlyTheDenseTensorCoreKernels) {
  EXPECT_FALSE(warp_steps(parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl"), DType::bf16, WeightFormat::dense, {4096, 4096}));
  EXPECT_FALSE(warp_steps(parse_config("tc_t128_r1_kw4_v16_u4_sk1_cs_pdl_m8"), DType::bf16, WeightFormat::int8,
                          {4096, 4096}));
}

}  // namespace
}  // namespace gemvtune
