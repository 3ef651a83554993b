// KernelConfig text form, validity rules, and dtype/shape parsing. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/search_space.hpp"

using namespace gemvtune;

TEST(Config, TextRoundTripsForWholeSearchSpace) {
  for (DType t : kAllDTypes)
    for (int m : {1, 2, 3, 8, 13, 16})
      for (const KernelConfig& c : default_search_space(t, m)) {
        const std::string text = to_string(c);
        EXPECT_EQ(parse_config(text), c) << text;
        EXPECT_EQ(to_string(parse_config(text)), text);
      }
}

TEST(Config, FamilyAndMTileRoundTrip) {
  for (const char* text : {"tc_t128_r1_kw4_v16_u2_sk1_cs_pdl_m16", "tc_t64_r2_kw1_v16_u4_sk2_nc", "t128_r2_kw1_v16_u4_sk3_cs_m3",
                           "t128_r2_kw1_v16_u4_sk3_cs_pdl_pf_m8", "tc_t256_r1_kw2_v16_u1_sk6_cs_pdl_pf_m2"})
    EXPECT_EQ(to_string(parse_config(text)), text);
  const KernelConfig tc = parse_config("tc_t128_r2_kw2_v16_u2_sk1_cs_pdl_m16");
  EXPECT_EQ(tc.family, Family::tensor_core);
  EXPECT_EQ(tc.m_tile, 16);
  EXPECT_TRUE(tc.pdl);
  EXPECT_EQ(tc.warp_rows(), 32);
  EXPECT_EQ(tc.block_rows(), 32 * 2);  // 4 warps, 2 along K, 2 tiles of 16 rows each
  EXPECT_EQ(parse_config("t128_r2_kw1_v16_u4_sk3_cs").m_tile, 1);
  EXPECT_EQ(parse_config("t128_r2_kw1_v16_u4_sk3_cs").family, Family::cuda_core);
  // One text per config: m1 is never written; the tile must be a plain positive number.
  for (const char* text : {"t128_r2_kw1_v16_u4_sk3_cs_m1", "t128_r2_kw1_v16_u4_sk3_cs_m", "t128_r2_kw1_v16_u4_sk3_cs_m08",
                           "t128_r2_kw1_v16_u4_sk3_cs_mx", "tc_tc_t128_r2_kw1_v16_u4_sk3_cs", "tc",
                           "t128_r2_kw1_v16_u4_sk3_cs_m8_pdl", "TC_t128_r2_kw1_v16_u4_sk3_cs"})
    EXPECT_THROW(parse_config(text), InvalidArgument) << text;
}

TEST(Config, BatchRules) {
  const Shape s{4096, 4096};
  const KernelConfig m8 = parse_config("t128_r1_kw1_v16_u2_sk1_cs_m8");
  EXPECT_FALSE(why_invalid_for(m8, DType::bf16, s, 8));
  EXPECT_FALSE(why_invalid_for(m8, DType::bf16, s, 5));  // a tile covers every smaller M
  auto why = why_invalid_for(m8, DType::bf16, s, 9);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("m tile"), std::string::npos) << *why;
  EXPECT_TRUE(why_invalid_for(m8, DType::bf16, s, 0));
  const KernelConfig tc = parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_m16");
  EXPECT_FALSE(why_invalid_for(tc, DType::f16, s, 16));
  ASSERT_TRUE(why_invalid_for(tc, DType::f32, s, 16));
  EXPECT_NE(why_invalid_for(tc, DType::f32, s, 16)->find("fp32"), std::string::npos);
  // Tensor cores: 16-byte loads, 1 or 2 tiles per warp, a register budget.
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r1_kw1_v8_u2_sk1_cs_m16")));
  EXPECT_FALSE(why_invalid(parse_config("tc_t128_r4_kw1_v16_u2_sk1_cs_m16")));
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r4_kw1_v16_u4_sk1_cs_m16")));  // 512 B per thread
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r8_kw1_v16_u1_sk1_cs_m16")));
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r2_kw1_v16_u8_sk1_cs_m16")));
  EXPECT_TRUE(why_invalid(parse_config("t128_r1_kw1_v16_u2_sk1_cs_m17")));
  // CUDA cores: one accumulator per row and batch row, 64 for dense fp32 (no al), 32 otherwise.
  const KernelConfig r4 = parse_config("t128_r4_kw1_v16_u2_sk1_cs_m16");
  EXPECT_FALSE(why_invalid(r4));
  EXPECT_TRUE(why_invalid(parse_config("t128_r8_kw1_v16_u1_sk1_cs_m16")));  // 128
  EXPECT_FALSE(why_invalid_for(r4, DType::f32, s, 16));
  for (DType t : {DType::bf16, DType::f16}) {
    ASSERT_TRUE(why_invalid_for(r4, t, s, 16));
    EXPECT_NE(why_invalid_for(r4, t, s, 16)->find("accumulators"), std::string::npos);
  }
  EXPECT_TRUE(why_invalid_for(parse_config("t128_r4_kw1_v16_u2_sk1_cs_pdl_al_m16"), DType::f32, {4097, 4099}, 16));
  EXPECT_TRUE(why_invalid_for(parse_config("t128_r8_kw1_v16_u1_sk1_cs_m8"), DType::bf16, s, 8, WeightFormat::int8));
  EXPECT_FALSE(why_invalid_for(parse_config("t128_r4_kw1_v16_u1_sk1_cs_m8"), DType::bf16, s, 8, WeightFormat::int8));
  EXPECT_FALSE(why_invalid(parse_config("t128_r2_kw1_v16_u2_sk1_cs_m16")));
  EXPECT_THROW(check_batch(0), InvalidArgument);
  EXPECT_THROW(check_batch(17), InvalidArgument);
  EXPECT_NO_THROW(check_batch(16));
}

TEST(Config, BatchedSpaceHoldsTheFamiliesThatCanWin) {
  for (DType t : kAllDTypes)
    for (int m : {2, 4, 8, 16}) {
      std::size_t tc = 0, cc = 0;
      for (const KernelConfig& c : search_space_for(t, {4096, 4096}, m)) {
        EXPECT_EQ(c.m_tile, m);
        (c.family == Family::tensor_core ? tc : cc)++;
      }
      if (t == DType::f32 || m <= 2) EXPECT_GT(cc, 100u) << m;
      else EXPECT_EQ(cc, 0u) << m;
      if (t == DType::f32) EXPECT_EQ(tc, 0u);
      else EXPECT_GT(tc, 100u);
      EXPECT_LT(tc + cc, 1200u);  // tune time: ~8% of the space is measured
    }
  for (const KernelConfig& c : default_search_space(DType::bf16)) EXPECT_EQ(c.family, Family::cuda_core);
}

TEST(Config, LanesPerRowRoundTripAndRules) {
  const KernelConfig c = parse_config("t128_r2_kw1_v16_u2_sk2_cs_pdl_ln8_m16");
  EXPECT_EQ(c.lanes_per_row, 8);
  EXPECT_EQ(to_string(c), "t128_r2_kw1_v16_u2_sk2_cs_pdl_ln8_m16");
  EXPECT_EQ(c.warp_rows(), 8);    // 2 rows per lane group, 4 groups side by side
  EXPECT_EQ(c.block_rows(), 32);  // 4 warps
  EXPECT_FALSE(why_invalid_for(c, DType::f32, {4096, 4096}, 16));
  EXPECT_EQ(parse_config("t128_r2_kw1_v16_u4_sk2_cs_m16").lanes_per_row, 32);
  EXPECT_THROW(parse_config("t128_r2_kw1_v16_u4_sk2_cs_ln32_m16"), InvalidArgument);  // 32 is written by leaving it out
  EXPECT_THROW(parse_config("t128_r2_kw1_v16_u4_sk2_cs_ln8_pdl"), InvalidArgument);   // ln after pdl
  EXPECT_THROW(parse_config("t128_r2_kw1_v16_u4_sk2_cs_ln_m16"), InvalidArgument);
  EXPECT_TRUE(why_invalid(parse_config("t128_r2_kw1_v16_u4_sk2_cs_ln4_m16")));
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_ln8_m16")));
  EXPECT_TRUE(why_invalid(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_pf_ln8")));
  EXPECT_TRUE(why_invalid(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_al_ln8")));
  EXPECT_TRUE(why_invalid_weights(parse_config("t128_r1_kw1_v16_u2_sk1_cs_ln8_m2"), DType::bf16, WeightFormat::int8));
  // x of a trip (m tile x unroll x vector) within 512 bytes past m tile 2: u4 spilled at m 13/16.
  const auto x_rule = why_invalid(parse_config("t128_r2_kw1_v16_u4_sk2_cs_pdl_ln8_m16"));
  ASSERT_TRUE(x_rule);
  EXPECT_NE(x_rule->find("1024 bytes of x per trip"), std::string::npos) << *x_rule;
  EXPECT_FALSE(why_invalid(parse_config("t128_r2_kw1_v16_u4_sk2_cs_pdl_ln8_m8")));
  EXPECT_FALSE(why_invalid(parse_config("t128_r2_kw1_v16_u4_sk2_cs_pdl_al_m16")));  // al keeps its own loop
  // Narrow loads and the aligned body go back to 32 lanes a row.
  EXPECT_EQ(with_vec_bytes(c, 8).lanes_per_row, 32);
  EXPECT_EQ(misaligned_variant(c, 4).lanes_per_row, 32);
  EXPECT_TRUE(misaligned_variant(c, 4).aligned_body);
  // The aligned body's 32 accumulators: fp32 r4 at m tile 16 runs it with 2 rows per warp.
  const KernelConfig al = misaligned_variant(parse_config("t128_r4_kw4_v16_u2_sk1_cs_pdl_ln8_m16"), 4);
  EXPECT_EQ(to_string(al), "t128_r2_kw4_v16_u2_sk1_cs_pdl_al_m16");
  EXPECT_FALSE(why_invalid_weights(al, DType::f32, WeightFormat::dense));
  // In the space where it won: fp32 at M > 1; not bf16/fp16 (it lost every M = 2 pair).
  std::size_t ln8 = 0;
  for (const KernelConfig& x : search_space_for(DType::f32, {4096, 4096}, 16)) ln8 += x.lanes_per_row == 8;
  EXPECT_GT(ln8, 100u);
  for (DType t : {DType::bf16, DType::f16})
    for (const KernelConfig& x : search_space_for(t, {4096, 4096}, 2)) EXPECT_EQ(x.lanes_per_row, 32);
}

TEST(Config, RingRoundTripAndRules) {
  const KernelConfig c = parse_config("t64_r2_kw1_v16_u4_sk1_cs_pdl_ring");
  EXPECT_TRUE(c.ring);
  EXPECT_EQ(to_string(c), "t64_r2_kw1_v16_u4_sk1_cs_pdl_ring");
  EXPECT_EQ(to_string(parse_config("t128_r1_kw1_v16_u8_sk2_cs_ring_m4")), "t128_r1_kw1_v16_u8_sk2_cs_ring_m4");
  EXPECT_THROW(parse_config("t64_r2_kw1_v16_u4_sk1_cs_ring_pdl"), InvalidArgument);  // ring after pdl
  EXPECT_THROW(parse_config("t64_r2_kw1_v16_u4_sk1_cs_ring_ring"), InvalidArgument);
  // 2 warps x 5 slots x 2 rows x 512 bytes; the bytes in flight are not registers, so r2 u8
  // (256 bytes a thread) is valid with the ring and not without.
  EXPECT_EQ(static_shared_bytes(c, WeightFormat::int8).ring, 10240);
  EXPECT_FALSE(why_invalid(parse_config("t64_r2_kw1_v16_u8_sk1_cs_ring")));
  EXPECT_NE(why_invalid(parse_config("t64_r2_kw1_v16_u8_sk1_cs"))->find("register budget"), std::string::npos);
  // 4 warps x 9 x 4 x 512 = 73728 bytes: more than a block's static shared memory.
  const auto big = why_invalid(parse_config("t128_r4_kw1_v16_u8_sk1_cs_ring"));
  ASSERT_TRUE(big);
  EXPECT_NE(big->find("(ring 73728, finish "), std::string::npos) << *big;
  EXPECT_NE(big->find("bytes of shared memory"), std::string::npos) << *big;
  // On tensor cores the ring is int4g128's only (templates/gemv_qtc.cu).
  const KernelConfig tc_ring = parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_ring_m8");
  EXPECT_FALSE(why_invalid(tc_ring));
  EXPECT_FALSE(why_invalid_for(tc_ring, DType::bf16, {4096, 4096}, 8, WeightFormat::int4_g128));
  EXPECT_NE(why_invalid_for(tc_ring, DType::bf16, {4096, 4096}, 8, WeightFormat::int8)->find("ring"), std::string::npos);
  EXPECT_NE(why_invalid_for(tc_ring, DType::bf16, {4096, 4096}, 8)->find("ring"), std::string::npos);
  EXPECT_TRUE(why_invalid(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_pf_ring")));
  EXPECT_TRUE(why_invalid(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_ring_al")));
  // 8-bit weights only: dense and int4 refuse it, naming it.
  EXPECT_FALSE(why_invalid_for(c, DType::bf16, {4096, 4096}, 1, WeightFormat::int8));
  EXPECT_FALSE(why_invalid_for(c, DType::f16, {4096, 4096}, 1, WeightFormat::fp8));
  EXPECT_NE(why_invalid_for(c, DType::bf16, {4096, 4096})->find("ring"), std::string::npos);
  EXPECT_NE(why_invalid_for(c, DType::bf16, {4096, 4096}, 1, WeightFormat::int4_g128)->find("ring"), std::string::npos);
  EXPECT_THROW(generate_source(c, DType::bf16, WeightFormat::dense), InvalidArgument);
  // In the 8-bit spaces on CUDA cores; in int4g128's on tensor cores, each ring config beside its
  // register twin; not in dense ones.
  std::size_t rings = 0;
  for (const KernelConfig& x : search_space_for(DType::bf16, {4096, 4096}, 1, WeightFormat::int8)) rings += x.ring;
  EXPECT_GE(rings, 100u);
  for (const KernelConfig& x : search_space_for(DType::bf16, {4096, 4096}, 1)) EXPECT_FALSE(x.ring);
  const auto int4 = search_space_for(DType::bf16, {4096, 4096}, 16, WeightFormat::int4_g128);
  std::size_t tc_rings = 0, twins = 0;
  for (const KernelConfig& x : int4) {
    EXPECT_TRUE(!x.ring || x.family == Family::tensor_core) << to_string(x);
    if (!x.ring) continue;
    ++tc_rings;
    KernelConfig twin = x;
    twin.ring = false;
    // Every ring config has its register twin, but where the twin's registers would spill
    // (tiles x unroll x batch tiles > 8).
    const bool fits = x.rows_per_warp * x.unroll * ((x.m_tile + 7) / 8) <= 8;
    EXPECT_EQ(std::count(int4.begin(), int4.end(), twin) > 0, fits) << to_string(x);
    twins += fits;
  }
  EXPECT_GE(tc_rings, 100u);
  EXPECT_GE(twins, 100u);
  // At M = 1 the int4 rings run one stage ahead only (a deeper ring tied alone and lost 8 us a
  // call in the H200 decode chain); the register twins (templates/gemv_q4l.cu there) of two
  // stages a trip stay, and at M = 16 the deeper rings too.
  std::size_t deep_rings_m16 = 0, deep_twins_m1 = 0;
  for (const KernelConfig& x : int4) deep_rings_m16 += x.ring && x.unroll > 1;
  EXPECT_GE(deep_rings_m16, 50u);
  for (const KernelConfig& x : search_space_for(DType::bf16, {28672, 4096}, 1, WeightFormat::int4_g128)) {
    EXPECT_FALSE(x.ring && x.unroll > 1) << to_string(x);
    deep_twins_m1 += x.family == Family::tensor_core && !x.ring && x.unroll > 1;
    if (x.family == Family::tensor_core && !x.ring) {
      EXPECT_LE(x.rows_per_warp * x.unroll, 2) << to_string(x);
      EXPECT_EQ(16 % (x.unroll * x.k_warps), 0) << to_string(x);
    }
  }
  EXPECT_GE(deep_twins_m1, 30u);
  // At m tile 1 the register loads are gemv_q4l.cu's own kernel, in the space where the ring's
  // 8 warps do not fit (256 threads with two stages or two tiles a warp: 4096x4096's best on the
  // H200, sweeps/h200_int4g128_m1_q4l_t256_pdl.csv); at m tile 16 the register loads stay where
  // the ring runs.
  const auto has = [](const std::vector<KernelConfig>& space, const char* text) {
    return std::find(space.begin(), space.end(), parse_config(text)) != space.end();
  };
  const auto int4_m1 = search_space_for(DType::bf16, {4096, 4096}, 1, WeightFormat::int4_g128);
  EXPECT_TRUE(has(int4_m1, "tc_t256_r1_kw4_v16_u2_sk1_cs_pdl"));
  EXPECT_TRUE(has(int4_m1, "tc_t256_r2_kw1_v16_u1_sk1_cs_pdl"));
  EXPECT_FALSE(has(int4_m1, "tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_ring"));
  EXPECT_TRUE(why_invalid_for(parse_config("tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_ring_m16"), DType::bf16, {4096, 4096}, 16,
                              WeightFormat::int4_g128));
  EXPECT_FALSE(has(int4, "tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_m16"));
  // Wide blocks (4096x4096's and 1024x4096's best on the H200 at M = 1, 4, 8, 16) with register
  // loads, at every m tile, without a ring twin.
  EXPECT_TRUE(has(int4_m1, "tc_t256_r1_kw8_v16_u1_sk1_cs_pdl"));
  EXPECT_TRUE(has(int4_m1, "tc_t512_r1_kw16_v16_u1_sk1_cs_pdl"));
  EXPECT_FALSE(has(int4_m1, "tc_t256_r1_kw8_v16_u1_sk1_cs_pdl_ring"));
  EXPECT_TRUE(has(int4, "tc_t256_r2_kw8_v16_u1_sk1_cs_pdl_m16"));
  EXPECT_TRUE(has(int4, "tc_t512_r1_kw16_v16_u2_sk1_cs_pdl_m16"));
  EXPECT_FALSE(has(int4, "tc_t256_r1_kw8_v16_u1_sk1_cs_pdl_ring_m16"));
  EXPECT_FALSE(has(search_space_for(DType::bf16, {4096, 4096}, 1, WeightFormat::int8), "tc_t256_r1_kw8_v16_u1_sk1_cs_pdl"));
  // gemv_q4l.cu's register budget (two trips of whole-line loads) and its x slices of 16 stages.
  const auto q4l_regs = why_invalid_for(parse_config("tc_t64_r2_kw2_v16_u2_sk1_cs_pdl"), DType::bf16, {28672, 4096}, 1,
                                        WeightFormat::int4_g128);
  ASSERT_TRUE(q4l_regs);
  EXPECT_NE(q4l_regs->find("register budget of 2"), std::string::npos) << *q4l_regs;
  EXPECT_FALSE(why_invalid_for(parse_config("tc_t64_r2_kw2_v16_u1_sk1_cs_pdl"), DType::bf16, {28672, 4096}, 1,
                               WeightFormat::int4_g128));
  EXPECT_FALSE(why_invalid_for(parse_config("tc_t64_r2_kw2_v16_u2_sk1_cs_pdl_m2"), DType::bf16, {28672, 4096}, 2,
                               WeightFormat::int4_g128));  // gemv_tc.cu at m tile 2
  // ... and its x slices of 16 stages, which a trip never straddles.
  const auto q4l_slices = why_invalid_for(parse_config("tc_t512_r1_kw16_v16_u2_sk1_cs_pdl"), DType::bf16,
                                          {28672, 4096}, 1, WeightFormat::int4_g128);
  ASSERT_TRUE(q4l_slices);
  EXPECT_NE(q4l_slices->find("does not divide the 16 stages"), std::string::npos) << *q4l_slices;
  const auto spills = why_invalid_for(parse_config("tc_t64_r4_kw2_v16_u2_sk1_cs_pdl_m16"), DType::bf16, {4096, 4096}, 16,
                                      WeightFormat::int4_g128);
  ASSERT_TRUE(spills);
  EXPECT_NE(spills->find("register budget"), std::string::npos) << *spills;
  // Narrower loads run register trips of the same knobs, within the register budget.
  const KernelConfig narrow = with_vec_bytes(parse_config("t64_r2_kw1_v16_u8_sk1_cs_pdl_ring"), 8);
  EXPECT_EQ(to_string(narrow), "t64_r2_kw1_v8_u8_sk1_cs_pdl");
  EXPECT_FALSE(why_invalid(narrow));
  EXPECT_EQ(to_string(with_vec_bytes(parse_config("t64_r4_kw1_v16_u8_sk1_cs_ring"), 16)), "t64_r4_kw1_v16_u8_sk1_cs_ring");
}

// 8-row tensor-core tiles (w8): one text, half the rows a warp owns, dense tensor cores only, in
// the space for small N only, and a narrower-load fallback that is a plain CUDA-core config.
TEST(Config, EightRowTilesRoundTripAndRules) {
  const KernelConfig c = parse_config("tc_t512_r1_kw16_v16_u4_sk1_cs_pdl_w8_m8");
  EXPECT_EQ(c.tile_rows, 8);
  EXPECT_EQ(to_string(c), "tc_t512_r1_kw16_v16_u4_sk1_cs_pdl_w8_m8");
  EXPECT_EQ(c.warp_rows(), 8);
  EXPECT_EQ(c.block_rows(), 8);  // 16 warps, all along K: one 8-row tile a block
  EXPECT_EQ(parse_config("tc_t128_r2_kw1_v16_u2_sk1_cs_w8_m16").block_rows(), 4 * 2 * 8);
  EXPECT_FALSE(why_invalid_for(c, DType::bf16, {1024, 4096}, 8));
  EXPECT_FALSE(why_invalid_for(c, DType::f16, {1024, 4096}, 3));
  // Written once: w16 is the default, other sizes and orders are refused.
  for (const char* text : {"tc_t128_r1_kw1_v16_u2_sk1_cs_w16_m8", "tc_t128_r1_kw1_v16_u2_sk1_cs_w08_m8",
                           "tc_t128_r1_kw1_v16_u2_sk1_cs_m8_w8", "tc_t128_r1_kw1_v16_u2_sk1_cs_w8_w8_m8",
                           "tc_t128_r1_kw1_v16_u2_sk1_cs_w_m8"})
    EXPECT_THROW(parse_config(text), InvalidArgument) << text;
  const auto four = why_invalid(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_w4_m8"));
  ASSERT_TRUE(four);
  EXPECT_NE(four->find("16 or 8"), std::string::npos) << *four;
  // Not on CUDA cores, not with the ring, not with quantized weights.
  EXPECT_NE(why_invalid(parse_config("t128_r1_kw1_v16_u2_sk1_cs_w8_m8"))->find("w8"), std::string::npos);
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_ring_w8_m8")));
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::int4_g128}) {
    const auto why = why_invalid_for(c, DType::bf16, {1024, 4096}, 8, w);
    ASSERT_TRUE(why) << to_string(w);
    EXPECT_NE(why->find("w8"), std::string::npos) << *why;
  }
  EXPECT_TRUE(why_invalid_for(c, DType::f32, {1024, 4096}, 8));
  // A lane loads one row a tile, so the register budget takes twice the unroll of 16-row tiles.
  EXPECT_FALSE(why_invalid(parse_config("tc_t128_r4_kw1_v16_u4_sk1_cs_w8_m8")));
  EXPECT_TRUE(why_invalid(parse_config("tc_t128_r4_kw1_v16_u4_sk1_cs_m8")));
  // Narrower loads: the CUDA-core kernel, which has no tiles.
  const KernelConfig narrow = with_vec_bytes(c, 8);
  EXPECT_EQ(narrow.family, Family::cuda_core);
  EXPECT_EQ(narrow.tile_rows, 16);
  EXPECT_FALSE(why_invalid(narrow)) << to_string(narrow);
  EXPECT_FALSE(why_invalid(misaligned_variant(c, 2))) << to_string(misaligned_variant(c, 2));
  // In the space at M > 1 for N <= kMaxRowsForEightRowTiles, one tile a warp; never at M = 1 or
  // for larger N, and never with quantized weights.
  std::size_t w8 = 0;
  for (const KernelConfig& x : search_space_for(DType::bf16, {1024, 4096}, 8)) {
    if (x.tile_rows != 8) continue;
    ++w8;
    EXPECT_EQ(x.family, Family::tensor_core);
    EXPECT_EQ(x.rows_per_warp, 1) << to_string(x);
  }
  EXPECT_GE(w8, 100u);
  const auto at_2048 = search_space_for(DType::bf16, {2048, 4096}, 16);
  EXPECT_TRUE(std::any_of(at_2048.begin(), at_2048.end(), [](const KernelConfig& x) { return x.tile_rows == 8; }));
  for (const Shape& s : {Shape{2049, 4096}, Shape{4096, 4096}})
    for (const KernelConfig& x : search_space_for(DType::bf16, s, 8)) EXPECT_EQ(x.tile_rows, 16) << to_string(x);
  for (const KernelConfig& x : search_space_for(DType::bf16, {1024, 4096}, 1)) EXPECT_EQ(x.tile_rows, 16);
  for (const KernelConfig& x : search_space_for(DType::bf16, {1024, 4096}, 8, WeightFormat::int8))
    EXPECT_EQ(x.tile_rows, 16) << to_string(x);
  // The generator asks the template for 8-row tiles.
  EXPECT_NE(generate_source(c, DType::bf16, WeightFormat::dense).find("#define GEMV_TC_W8 1"), std::string::npos);
  EXPECT_EQ(generate_source(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_m8"), DType::bf16, WeightFormat::dense)
                .find("#define GEMV_TC_W8 1"),
            std::string::npos);
}

TEST(Config, EightBitWeightsOnTensorCores) {
  // int8, fp8 and fp8t run the dense tensor-core kernel (templates/gemv_tc.cu), converting in
  // registers, as int4g128 without the ring does; fp32 activations have none.
  const KernelConfig tc = parse_config("tc_t128_r1_kw2_v16_u4_sk1_cs_pdl_m16");
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::fp8_tensor})
    for (DType t : {DType::bf16, DType::f16}) {
      EXPECT_FALSE(why_invalid_for(tc, t, {28672, 4096}, 16, w)) << to_string(w);
      const std::string src = generate_source(tc, t, w);
      EXPECT_NE(src.find("templates/gemv_tc.cu"), std::string::npos);
      EXPECT_NE(src.find("#define GEMV_WFORMAT"), std::string::npos);
      std::size_t in_space = 0;
      for (const KernelConfig& c : search_space_for(t, {4096, 4096}, 16, w)) in_space += c.family == Family::tensor_core;
      EXPECT_GT(in_space, 100u) << to_string(w);
    }
  EXPECT_NE(why_invalid_for(tc, DType::f32, {4096, 4096}, 16, WeightFormat::int8)->find("bf16 or fp16"), std::string::npos);
  EXPECT_NE(why_invalid_for(tc, DType::bf16, {4096, 4096}, 16, WeightFormat::int4_g32)->find("int4g128 only"),
            std::string::npos);
  // A split gets at least one 64-weight chunk: K = 128 takes 2 splits, not 4.
  KernelConfig split = tc;
  split.split_k = 2;
  EXPECT_FALSE(why_invalid_for(split, DType::bf16, {64, 128}, 16, WeightFormat::int8));
  split.split_k = 4;
  EXPECT_TRUE(why_invalid_for(split, DType::bf16, {64, 128}, 16, WeightFormat::int8));
}

TEST(Config, NarrowerLoadsOnTensorCoresFallBackToCudaCores) {
  const KernelConfig tc = parse_config("tc_t256_r2_kw4_v16_u2_sk2_cs_pdl_m8");
  EXPECT_EQ(with_vec_bytes(tc, 16), tc);
  EXPECT_EQ(to_string(with_vec_bytes(tc, 8)), "t256_r1_kw4_v8_u4_sk2_cs_pdl_m8");
  const KernelConfig cc = parse_config("t128_r2_kw1_v16_u2_sk1_cs_m3");
  EXPECT_EQ(to_string(with_vec_bytes(cc, 4)), "t128_r2_kw1_v4_u2_sk1_cs_m3");
}

TEST(Config, MisalignedXRowsAreNamed) {
  const KernelConfig c = parse_config("t128_r1_kw1_v16_u2_sk1_cs_m4");
  EXPECT_FALSE(why_misaligned(c, DType::bf16, 256, 4096, 512, 4096));
  auto why = why_misaligned(c, DType::bf16, 256, 4096, 512, 4100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("ldx=4100"), std::string::npos) << *why;
  EXPECT_EQ(widest_aligned_vec_bytes(c, DType::bf16, 256, 4096, 512, 4100), 8);
}

TEST(Config, PdlAndHintsRoundTrip) {
  for (const char* text : {"t128_r2_kw1_v16_u4_sk3_cs", "t64_r1_kw2_v8_u1_sk1_nc_pdl", "t64_r1_kw2_v8_u1_sk1_nc_pdl_pf",
                           "t1024_r8_kw32_v2_u8_sk64_nc", "t1024_r8_kw32_v16_u1_sk64_nc"}) {
    EXPECT_EQ(to_string(parse_config(text)), text);
  }
  EXPECT_TRUE(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl").pdl);
  EXPECT_FALSE(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl").prefetch_l2);
  EXPECT_TRUE(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_pf").prefetch_l2);
  EXPECT_EQ(parse_config("t128_r1_kw1_v16_u2_sk1_nc").hint, LoadHint::readonly);
}

TEST(Config, MalformedTextIsRejectedWithTheField) {
  for (const char* text : {"", "t128", "t128_r2_kw1_v16_u4_sk3", "t128_r2_kw1_v16_u4_sk3_xx",
                           "x128_r2_kw1_v16_u4_sk3_cs", "t12a_r2_kw1_v16_u4_sk3_cs",
                           "t128_r2_kw1_v16_u4_sk3_cs_pdl_extra", "t-128_r2_kw1_v16_u4_sk3_cs",
                           "t0128_r2_kw1_v16_u4_sk3_cs", "t128_r2_kw1_v16_u4_sk3_cs_foo",
                           "t128_r2_kw1_v16_u4_sk3_cs_pf", "t128_r2_kw1_v16_u4_sk3_cs_pdl_pf_pf",
                           "t128_r2_kw1_v16_u4_sk3_cs_pdl_xx"}) {
    EXPECT_THROW(parse_config(text), InvalidArgument) << text;
  }
  try {
    parse_config("t128_q2_kw1_v16_u4_sk3_cs");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'r'"), std::string::npos) << e.what();
  }
}

TEST(Config, ValidityRulesGiveReasons) {
  KernelConfig c;
  c.threads = 96 + 16;
  EXPECT_NE(why_invalid(c)->find("not a multiple of 32"), std::string::npos);
  c = {};
  c.threads = 2048;
  EXPECT_TRUE(why_invalid(c).has_value());
  c = {};
  c.rows_per_warp = 3;
  EXPECT_NE(why_invalid(c)->find("rows per warp 3"), std::string::npos);
  c = {};
  c.k_warps = 8;  // 128 threads = 4 warps
  EXPECT_NE(why_invalid(c)->find("k_warps 8"), std::string::npos);
  c = {};
  c.vec_bytes = 32;
  EXPECT_TRUE(why_invalid(c).has_value());
  c = {};
  c.unroll = 3;
  EXPECT_TRUE(why_invalid(c).has_value());
  c = {};
  c.split_k = 0;
  EXPECT_TRUE(why_invalid(c).has_value());
  c = {};
  c.rows_per_warp = 2;
  c.unroll = 8;
  EXPECT_NE(why_invalid(c)->find("register budget"), std::string::npos);
  c = {};
  c.prefetch_l2 = true;  // without pdl there is no wait to prefetch during
  EXPECT_NE(why_invalid(c)->find("needs pdl"), std::string::npos);
  c.pdl = true;
  EXPECT_FALSE(why_invalid(c).has_value());
  EXPECT_FALSE(why_invalid(KernelConfig{}).has_value());
}

TEST(Config, ShapeRules) {
  KernelConfig c;
  c.vec_bytes = 2;
  EXPECT_NE(why_invalid_for(c, DType::f32, {16, 16})->find("narrower than one fp32"), std::string::npos);
  EXPECT_FALSE(why_invalid_for(c, DType::bf16, {16, 16}).has_value());
  c = {};
  c.split_k = 4;  // K=129 bf16 with 16-byte loads: 256 elements per warp load, one chunk
  EXPECT_NE(why_invalid_for(c, DType::bf16, {7, 129})->find("split_k 4"), std::string::npos);
  EXPECT_FALSE(why_invalid_for(c, DType::bf16, {7, 4096}).has_value());
  EXPECT_THROW(check_config(c, DType::bf16, {7, 129}), InvalidArgument);
}

TEST(Config, AlignmentRuleAndFallback) {
  KernelConfig c;  // 16-byte loads
  EXPECT_FALSE(why_misaligned(c, DType::bf16, 256, 4096, 512).has_value());
  EXPECT_TRUE(why_misaligned(c, DType::bf16, 258, 4096, 512).has_value());   // W
  EXPECT_TRUE(why_misaligned(c, DType::bf16, 256, 4100, 512).has_value());   // row stride
  EXPECT_TRUE(why_misaligned(c, DType::bf16, 256, 4096, 520).has_value());   // x
  EXPECT_EQ(widest_aligned_vec_bytes(c, DType::bf16, 256, 4100, 512), 8);
  EXPECT_EQ(widest_aligned_vec_bytes(c, DType::bf16, 258, 4096, 512), 2);
  EXPECT_EQ(widest_aligned_vec_bytes(c, DType::f32, 260, 4096, 512), 4);
}

TEST(DTypeShape, Parse) {
  EXPECT_EQ(parse_dtype("bf16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_EQ(parse_dtype("fp32"), DType::f32);
  EXPECT_THROW(parse_dtype("int8"), InvalidArgument);
  EXPECT_EQ(parse_shape("4096x14336"), (Shape{4096, 14336}));
  EXPECT_EQ(parse_shape("7X129"), (Shape{7, 129}));
  for (const char* bad : {"", "x", "4096", "4096x", "x4096", "0x5", "5x0", "-1x5", "5x-1", "4096 x 1",
                          "1e3x4", "99999999999x1", "4096x14336x1", "+5x5"})
    EXPECT_THROW(parse_shape(bad), InvalidArgument) << bad;
  // Too large is said as such, even past int64 (it said "not a positive integer").
  for (const char* huge : {"2147483648x1", "99999999999999999999x1", "1x99999999999999999999"}) {
    try {
      parse_shape(huge);
      ADD_FAILURE() << huge;
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("must be at most 2147483647"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(check_shape({0, 1}), InvalidArgument);
  EXPECT_THROW(check_shape({1, -4}), InvalidArgument);
}

// The GPU suites' and gemvtune-sweep's filter: every '+'-separated part must appear.
TEST(Config, TextFilterNeedsEveryPart) {
  const std::string ring = "tc_t64_r4_kw2_v16_u2_sk1_cs_pdl_m16";
  EXPECT_TRUE(config_text_matches(ring, "tc_"));
  EXPECT_TRUE(config_text_matches(ring, "tc_+_pdl+_m16"));
  EXPECT_FALSE(config_text_matches(ring, "tc_+_ring"));
  EXPECT_FALSE(config_text_matches("t64_r2_kw1_v16_u4_sk1_cs_pdl_ring", "tc_+_ring"));
  EXPECT_TRUE(config_text_matches(ring, ""));
}

// balanced_twins: the leader's block size fitted to the SMs (search_space.hpp).
TEST(Config, BalancedTwinsFitTheGridToTheSms) {
  constexpr int kSms = 132;
  const auto texts = [](const std::vector<KernelConfig>& v) {
    std::vector<std::string> out;
    for (const KernelConfig& c : v) out.push_back(to_string(c));
    return out;
  };
  const auto has = [&](const std::vector<KernelConfig>& v, const std::string& text) {
    const auto t = texts(v);
    return std::find(t.begin(), t.end(), text) != t.end();
  };
  // int4g128 at M = 1, 28672x4096: 1792 tiles; 256 threads make 224 blocks on 132 SMs, 448 make
  // 128 blocks (one an SM), 224 make 256 (two an SM).
  const KernelConfig q4 = parse_config("tc_t256_r1_kw1_v16_u1_sk1_cs_pdl");
  const auto q4_twins = balanced_twins(q4, DType::bf16, {28672, 4096}, 1, WeightFormat::int4_g128, kSms);
  EXPECT_TRUE(has(q4_twins, "tc_t448_r1_kw1_v16_u1_sk1_cs_pdl")) << ::testing::PrintToString(texts(q4_twins));
  EXPECT_TRUE(has(q4_twins, "tc_t224_r1_kw1_v16_u1_sk1_cs_pdl")) << ::testing::PrintToString(texts(q4_twins));
  // Dense tensor cores at M = 16: 14336x4096 in 7 tiles a block (448 threads, 2 warps along K),
  // 6144x4096 in 3 (384 threads, 4 along K).
  EXPECT_TRUE(has(balanced_twins(parse_config("tc_t128_r1_kw2_v16_u2_sk1_cs_pdl_m16"), DType::bf16, {14336, 4096}, 16,
                                 WeightFormat::dense, kSms),
                  "tc_t448_r1_kw2_v16_u2_sk1_cs_pdl_m16"));
  EXPECT_TRUE(has(balanced_twins(parse_config("tc_t256_r1_kw4_v16_u2_sk1_cs_pdl_m16"), DType::bf16, {6144, 4096}, 16,
                                 WeightFormat::dense, kSms),
                  "tc_t384_r1_kw4_v16_u2_sk1_cs_pdl_m16"));
  // A grid of many waves has no twin of at most 512 threads; CUDA cores, the ring and a GPU of
  // unknown size have none at all.
  EXPECT_TRUE(balanced_twins(q4, DType::bf16, {256000, 4096}, 1, WeightFormat::int4_g128, kSms).empty());
  // 128256x4096 (8016 tiles) still has one: 512 threads, 501 blocks, within four an SM.
  EXPECT_EQ(texts(balanced_twins(q4, DType::bf16, {128256, 4096}, 1, WeightFormat::int4_g128, kSms)),
            std::vector<std::string>{"tc_t512_r1_kw1_v16_u1_sk1_cs_pdl"});
  EXPECT_TRUE(balanced_twins(parse_config("t128_r2_kw4_v16_u2_sk1_cs_pdl"), DType::bf16, {28672, 4096}, 1,
                             WeightFormat::dense, kSms)
                  .empty());
  EXPECT_TRUE(balanced_twins(parse_config("tc_t128_r1_kw2_v16_u1_sk1_cs_pdl_ring"), DType::bf16, {28672, 4096}, 1,
                             WeightFormat::int4_g128, kSms)
                  .empty());
  EXPECT_TRUE(balanced_twins(q4, DType::bf16, {28672, 4096}, 1, WeightFormat::int4_g128, 0).empty());
  // Every twin of the tensor-core space on a few shapes: valid for the problem, the same knobs
  // but the threads (32 x k_warps x row groups, at most 512), a grid of at most 4 blocks an SM.
  std::size_t seen = 0;
  for (int m : {1, 8, 16})
    for (WeightFormat w : {WeightFormat::dense, WeightFormat::int4_g128})
      for (const Shape& s : {Shape{6144, 4096}, Shape{14336, 4096}, Shape{2000, 4096}, Shape{28672, 4096}}) {
        if (m == 1 && w == WeightFormat::dense) continue;  // CUDA cores only
        for (const KernelConfig& c : search_space_for(DType::bf16, s, m, w)) {
          if (c.family != Family::tensor_core) continue;
          for (const KernelConfig& twin : balanced_twins(c, DType::bf16, s, m, w, kSms)) {
            ++seen;
            EXPECT_FALSE(why_invalid_for(twin, DType::bf16, s, m, w)) << to_string(twin);
            EXPECT_NE(twin.threads, c.threads);
            EXPECT_LE(twin.threads, 512);
            EXPECT_EQ(twin.threads % (32 * twin.k_warps), 0) << to_string(twin);
            KernelConfig same = twin;
            same.threads = c.threads;
            EXPECT_EQ(same, c) << to_string(twin);
            const std::int64_t blocks = (s.n + twin.block_rows() - 1) / twin.block_rows() * twin.split_k;
            EXPECT_LE(blocks, 4 * kSms) << to_string(twin) << " on " << to_string(s);
          }
        }
      }
  EXPECT_GT(seen, 1000u);
}

TEST(Config, RegisterCappedTwinsOfQuantizedTensorCoreConfigs) {
  // The text form: "rc" after w, before the m tile, and back.
  const KernelConfig capped = parse_config("tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_rc_m16");
  EXPECT_TRUE(capped.reg_cap);
  EXPECT_EQ(to_string(capped), "tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_rc_m16");
  EXPECT_THROW(parse_config("tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_m16_rc"), InvalidArgument);
  EXPECT_THROW(parse_config("tc_t128_r1_kw1_v16_u4_sk1_cs_rc_pdl_m16"), InvalidArgument);
  KernelConfig plain = capped;
  plain.reg_cap = false;
  EXPECT_NE(plain, capped);
  EXPECT_NE(kernel_name(plain, DType::bf16, WeightFormat::int8), kernel_name(capped, DType::bf16, WeightFormat::int8));
  EXPECT_NE(generate_source(capped, DType::bf16, WeightFormat::int8).find("#define GEMV_TC_REG_CAP 128"), std::string::npos);
  EXPECT_EQ(generate_source(plain, DType::bf16, WeightFormat::int8).find("#define GEMV_TC_REG_CAP 128"), std::string::npos);

  // Where it is a knob: quantized weights on the tensor-core register loads at m tile > 1.
  const Shape s{28672, 4096};
  for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::int4_g128}) {
    const auto twin = register_capped_twin(plain, DType::bf16, s, 16, w);
    ASSERT_TRUE(twin) << to_string(w);
    EXPECT_EQ(*twin, capped);
    EXPECT_FALSE(register_capped_twin(*twin, DType::bf16, s, 16, w)) << "capped already";
  }
  EXPECT_FALSE(register_capped_twin(plain, DType::bf16, s, 16, WeightFormat::dense));
  EXPECT_FALSE(register_capped_twin(parse_config("tc_t128_r1_kw1_v16_u4_sk1_cs_pdl"), DType::bf16, s, 1,
                                    WeightFormat::int8));  // m tile 1
  EXPECT_FALSE(register_capped_twin(parse_config("tc_t64_r2_kw1_v16_u1_sk1_cs_pdl_ring_m16"), DType::bf16, s, 16,
                                    WeightFormat::int4_g128));
  EXPECT_FALSE(register_capped_twin(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_m16"), DType::bf16, s, 16,
                                    WeightFormat::int8));  // CUDA cores
  const auto why_dense = why_invalid_for(capped, DType::bf16, s, 16, WeightFormat::dense);
  ASSERT_TRUE(why_dense);
  EXPECT_NE(why_dense->find("quantized"), std::string::npos) << *why_dense;
  // CUDA cores take a cap of their own (rcN) on their register loads, not on the ring.
  EXPECT_FALSE(why_invalid_for(parse_config("t128_r1_kw1_v16_u2_sk1_cs_pdl_rc_m16"), DType::bf16, s, 16, WeightFormat::int8));
  const auto why_cc = why_invalid(parse_config("t64_r2_kw1_v16_u2_sk1_cs_pdl_ring_rc80"));
  ASSERT_TRUE(why_cc);
  EXPECT_NE(why_cc->find("register cap"), std::string::npos) << *why_cc;
  const auto why_m1 = why_invalid(parse_config("tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_rc"));
  ASSERT_TRUE(why_m1);
  EXPECT_NE(why_m1->find("m tile 1"), std::string::npos) << *why_m1;

  // Every tensor-core register-load config of the 8-bit and int4 spaces at m > 1 has one, and
  // the twin differs from it in the cap alone; nothing in the spaces is capped.
  std::size_t seen = 0;
  for (int m : {2, 8, 16})
    for (WeightFormat w : {WeightFormat::int8, WeightFormat::fp8, WeightFormat::int4_g128})
      for (const KernelConfig& c : search_space_for(DType::bf16, {6144, 4096}, m, w)) {
        EXPECT_FALSE(c.reg_cap) << to_string(c);
        const auto twin = register_capped_twin(c, DType::bf16, {6144, 4096}, m, w);
        EXPECT_EQ(twin.has_value(), c.family == Family::tensor_core && !c.ring && c.m_tile > 1) << to_string(c);
        if (!twin) continue;
        ++seen;
        KernelConfig same = *twin;
        same.reg_cap = false;
        EXPECT_EQ(same, c);
      }
  EXPECT_GT(seen, 500u);
}

TEST(Config, CudaCoreRegisterCapIsWrittenOutAndChecked) {
  // "rc" is 128 registers, "rcN" any other cap; the text round-trips, one spelling each.
  const KernelConfig c80 = parse_config("t256_r2_kw1_v16_u4_sk1_cs_pdl_rc80");
  EXPECT_EQ(c80.reg_cap, 80);
  EXPECT_EQ(to_string(c80), "t256_r2_kw1_v16_u4_sk1_cs_pdl_rc80");
  EXPECT_EQ(parse_config("t128_r2_kw1_v16_u4_sk1_cs_rc_m2").reg_cap, kRegCap);
  EXPECT_EQ(to_string(parse_config("t128_r2_kw1_v16_u4_sk1_cs_rc64_m2")), "t128_r2_kw1_v16_u4_sk1_cs_rc64_m2");
  EXPECT_THROW(parse_config("t256_r2_kw1_v16_u4_sk1_cs_pdl_rc128"), InvalidArgument);  // written rc
  EXPECT_THROW(parse_config("t256_r2_kw1_v16_u4_sk1_cs_pdl_rc0"), InvalidArgument);
  EXPECT_THROW(parse_config("t256_r2_kw1_v16_u4_sk1_cs_pdl_rcx"), InvalidArgument);
  EXPECT_FALSE(why_invalid(c80));
  EXPECT_FALSE(why_invalid_for(c80, DType::bf16, {6144, 4096}, 1, WeightFormat::dense));
  // Multiples of 8 from 32 to 248, at most 32 blocks an SM, the plain dense kernel only.
  for (const char* bad : {"t256_r2_kw1_v16_u4_sk1_cs_pdl_rc84", "t256_r2_kw1_v16_u4_sk1_cs_pdl_rc24",
                          "t256_r2_kw1_v16_u4_sk1_cs_pdl_rc256", "t32_r1_kw1_v16_u4_sk1_cs_pdl_rc32",
                          "t128_r1_kw1_v16_u4_sk1_cs_pdl_al_rc64", "tc_t256_r1_kw1_v16_u4_sk1_cs_pdl_rc80_m16"}) {
    EXPECT_TRUE(why_invalid(parse_config(bad))) << bad;
  }
  EXPECT_FALSE(why_invalid_for(c80, DType::bf16, {6144, 4096}, 1, WeightFormat::int8));  // templates/gemv_q.cu
  EXPECT_NE(generate_source(c80, DType::bf16, WeightFormat::int8).find("#define GEMV_REG_CAP 80\n"), std::string::npos);
  // The source asks ptxas for the blocks the cap allows; uncapped, it does not.
  const std::string src = generate_source(c80, DType::bf16);
  EXPECT_NE(src.find("#define GEMV_REG_CAP 80\n"), std::string::npos);
  EXPECT_EQ(src.find("GEMV_TC_REG_CAP"), std::string::npos);
  KernelConfig plain = c80;
  plain.reg_cap = 0;
  EXPECT_EQ(generate_source(plain, DType::bf16).find("#define GEMV_REG_CAP"), std::string::npos);
  EXPECT_NE(kernel_name(plain, DType::bf16), kernel_name(c80, DType::bf16));
}

TEST(Config, OccupancyStepCapLetsOneMoreBlockOn) {
  // 65536 registers an SM, 8 a thread at a time, at most 32 blocks and 2048 threads.
  EXPECT_EQ(occupancy_step_cap(88, 256), 80);   // 2 -> 3 blocks (6144x4096's 384 blocks: one wave)
  EXPECT_EQ(occupancy_step_cap(96, 256), 80);
  EXPECT_EQ(occupancy_step_cap(72, 128), 64);   // 7 -> 8
  EXPECT_EQ(occupancy_step_cap(130, 128), 128);  // 3 -> 4
  EXPECT_EQ(occupancy_step_cap(93, 128), 80);   // 5 -> 6
  EXPECT_EQ(occupancy_step_cap(76, 64), 72);    // 12 -> 14 at 72 (13 would allow 78, rounded down to 72)
  EXPECT_EQ(occupancy_step_cap(64, 256), 48);   // 4 -> 5
  EXPECT_EQ(occupancy_step_cap(40, 128), 32);   // 12 -> 16 at 32
  EXPECT_FALSE(occupancy_step_cap(32, 256));    // 8 blocks of 256: 2048 threads already
  EXPECT_FALSE(occupancy_step_cap(32, 64));     // 32 blocks already
  EXPECT_FALSE(occupancy_step_cap(24, 128));    // 16 blocks of 128: 2048 threads already
  EXPECT_FALSE(occupancy_step_cap(0, 128));
  for (int threads = 64; threads <= 1024; threads *= 2)
    for (int r = 1; r <= 255; ++r)
      if (const auto cap = occupancy_step_cap(r, threads)) {
        const int before = std::min(2048 / threads, 65536 / (((r + 7) / 8 * 8) * threads));
        EXPECT_GT(65536 / (*cap * threads), before) << r << " registers, " << threads << " threads";
        EXPECT_EQ(*cap % 8, 0);
        EXPECT_LT(*cap, (r + 7) / 8 * 8);
      }
}

TEST(Config, CudaCoreCappedTwinsOfTheDenseSpace) {
  const Shape s{6144, 4096};
  const KernelConfig c = parse_config("t256_r2_kw1_v16_u4_sk1_cs_pdl");
  const auto twin = cuda_core_capped_twin(c, DType::bf16, s, 1, 88);
  ASSERT_TRUE(twin);
  EXPECT_EQ(to_string(*twin), "t256_r2_kw1_v16_u4_sk1_cs_pdl_rc80");
  EXPECT_FALSE(cuda_core_capped_twin(*twin, DType::bf16, s, 1, 80)) << "capped already";
  EXPECT_FALSE(cuda_core_capped_twin(c, DType::bf16, s, 1, 120)) << "40 registers to squeeze";
  EXPECT_FALSE(cuda_core_capped_twin(parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl_al"), DType::bf16, {4097, 4099}, 1, 72));
  EXPECT_FALSE(cuda_core_capped_twin(parse_config("tc_t256_r1_kw1_v16_u4_sk1_cs_pdl_m8"), DType::bf16, s, 8, 130));
  // Over a whole dense space: every twin differs in the cap alone and is valid.
  std::size_t seen = 0;
  for (int m : {1, 2, 8})
    for (const KernelConfig& k : search_space_for(DType::bf16, s, m))
      for (int r : {60, 72, 88, 100, 130})
        if (const auto t = cuda_core_capped_twin(k, DType::bf16, s, m, r)) {
          ++seen;
          EXPECT_FALSE(why_invalid_for(*t, DType::bf16, s, m, WeightFormat::dense)) << to_string(*t);
          EXPECT_EQ(k.family, Family::cuda_core);
          KernelConfig same = *t;
          same.reg_cap = 0;
          EXPECT_EQ(same, k);
          EXPECT_LE(r - t->reg_cap, kMaxCapSqueeze);
        }
  EXPECT_GT(seen, 500u);
}

// A block's static shared memory, every kind of kernel, against what ptxas reported for them
// (NVRTC 13.0, sm_90, the cubin's count less the 1 KB sm_90 reserves); test_compile_space
// compares the two on configs drawn from the whole grammar.
TEST(Config, StaticSharedBytes) {
  const auto bytes = [](const char* config, WeightFormat w = WeightFormat::dense) {
    return static_shared_bytes(parse_config(config), w).total();
  };
  // CUDA cores: a float per warp row and batch row, the cluster's sums, the flag.
  EXPECT_EQ(bytes("t128_r1_kw1_v16_u2_sk1_cs"), 36);
  // Tensor cores: 512 bytes a tile and batch tile, with the cluster's sums (not for int4).
  EXPECT_EQ(bytes("tc_t128_r1_kw1_v16_u2_sk1_cs"), 2308);
  EXPECT_EQ(bytes("tc_t128_r1_kw1_v16_u2_sk1_cs_pdl_m16"), 8196);
  EXPECT_EQ(bytes("tc_t128_r1_kw1_v16_u2_sk1_cs_m16", WeightFormat::int4_g128), 4100);
  // int4g128's whole-line loads stage 32 chunks of x; its ring 16, with the ring itself.
  EXPECT_EQ(bytes("tc_t128_r1_kw1_v16_u2_sk1_cs", WeightFormat::int4_g128), 12420);
  EXPECT_EQ(bytes("tc_t128_r1_kw1_v16_u2_sk1_cs_ring", WeightFormat::int4_g128), 31812);
  // The 8-bit ring on CUDA cores: 4 warps x 3 slots x 512 bytes, and the finish.
  EXPECT_EQ(bytes("t128_r1_kw1_v16_u2_sk1_cs_ring", WeightFormat::int8), 6180);
  // Past 48 KB by the flag's 4 bytes (24 warps x 2 tiles x 2 batch tiles x 512): ptxas refused
  // it, and so do the rules, naming the parts.
  const KernelConfig over = parse_config("tc_t768_r2_kw1_v16_u1_sk5_nc_m15");
  EXPECT_EQ(static_shared_bytes(over, WeightFormat::dense).total(), 49156);
  EXPECT_FALSE(why_invalid(over));
  const auto why = why_invalid_for(over, DType::f16, {4096, 4096}, 15);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("declares 49156 bytes of shared memory (finish 49156), more than the 49152"), std::string::npos)
      << *why;
  EXPECT_THROW(generate_source(over, DType::f16), InvalidArgument);
  // One warp fewer fits.
  EXPECT_FALSE(why_invalid_for(parse_config("tc_t736_r2_kw1_v16_u1_sk5_nc_m15"), DType::f16, {4096, 4096}, 15));
}

// Register budgets of int4g128 on tensor cores that keep the space's kernels from spilling
// (every int4g128 tensor-core kernel of the bf16 space compiled, 2026-12-05; NVRTC 13.0, sm_90).
TEST(Config, Int4TensorCoreRegisterBudgets) {
  const auto why = [](const char* config, int m) {
    return why_invalid_for(parse_config(config), DType::bf16, {28672, 4096}, m, WeightFormat::int4_g128);
  };
  // The ring: 4 tiles a warp spilled 476-612 bytes at m tile 9-16, and 4-24 bytes from m tile 3
  // with one warp along K. Two tiles, or four with two warps along K up to m tile 8, did not.
  ASSERT_TRUE(why("tc_t64_r4_kw2_v16_u1_sk1_cs_pdl_ring_m16", 16));
  EXPECT_NE(why("tc_t64_r4_kw2_v16_u1_sk1_cs_pdl_ring_m16", 16)->find("with the ring"), std::string::npos);
  EXPECT_TRUE(why("tc_t64_r4_kw1_v16_u1_sk1_cs_pdl_ring_m3", 3));
  EXPECT_FALSE(why("tc_t64_r4_kw1_v16_u1_sk1_cs_pdl_ring_m2", 2));
  EXPECT_FALSE(why("tc_t64_r4_kw2_v16_u1_sk1_cs_pdl_ring_m8", 8));
  EXPECT_FALSE(why("tc_t64_r2_kw1_v16_u2_sk1_cs_pdl_ring_m16", 16));
  // Their register-load twins stay (the best measured 16x28672x4096 and 16x128256x4096 on the
  // H200 were tc_t64_r4_kw{2,1}_v16_u1_sk1_cs_pdl_m16), and stay in the space.
  EXPECT_FALSE(why("tc_t64_r4_kw2_v16_u1_sk1_cs_pdl_m16", 16));
  EXPECT_FALSE(why("tc_t64_r4_kw1_v16_u1_sk1_cs_pdl_m16", 16));
  const auto space = default_search_space(DType::bf16, 16, WeightFormat::int4_g128);
  EXPECT_NE(std::find(space.begin(), space.end(), parse_config("tc_t64_r4_kw2_v16_u1_sk1_cs_pdl_m16")), space.end());
  EXPECT_EQ(std::find(space.begin(), space.end(), parse_config("tc_t64_r4_kw2_v16_u1_sk1_cs_pdl_ring_m16")), space.end());
  // Wide register-load blocks past 256 threads have 128 registers: half the budget (4 chunks x
  // 2 batch tiles spilled 40 bytes; 4 x 1 and 2 x 2 did not).
  const auto wide = why("tc_t512_r1_kw16_v16_u4_sk1_cs_pdl_m16", 16);
  ASSERT_TRUE(wide);
  EXPECT_NE(wide->find("register budget of 4"), std::string::npos) << *wide;
  EXPECT_FALSE(why("tc_t512_r1_kw16_v16_u4_sk1_cs_pdl_m8", 8));
  EXPECT_FALSE(why("tc_t512_r1_kw16_v16_u2_sk1_cs_pdl_m16", 16));
}
