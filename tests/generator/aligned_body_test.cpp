// The aligned-body knob (al, templates/gemv.cu): text form, validity, the alignment rule, the
// variant misaligned operands run, the search space of misaligned shapes, the generated
// source. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/search_space.hpp"

using namespace gemvtune;

TEST(AlignedBody, TextFormRoundTripsStrictly) {
  for (const char* text : {"t128_r1_kw1_v16_u4_sk1_cs_al", "t128_r1_kw1_v16_u4_sk1_nc_pdl_al",
                           "t256_r2_kw2_v16_u2_sk3_cs_pdl_pf_al", "t128_r2_kw1_v16_u2_sk2_cs_pdl_al_m4",
                           "t64_r1_kw1_v16_u1_sk1_cs_al_m16"}) {
    const KernelConfig c = parse_config(text);
    EXPECT_TRUE(c.aligned_body) << text;
    EXPECT_EQ(to_string(c), text);
  }
  const KernelConfig al = parse_config("t128_r2_kw1_v16_u2_sk2_cs_pdl_pf_al_m4");
  EXPECT_TRUE(al.pdl);
  EXPECT_TRUE(al.prefetch_l2);
  EXPECT_EQ(al.m_tile, 4);
  EXPECT_FALSE(parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl").aligned_body);
  KernelConfig plain = al;
  plain.aligned_body = false;
  EXPECT_NE(plain, al);
  EXPECT_EQ(to_string(plain), "t128_r2_kw1_v16_u2_sk2_cs_pdl_pf_m4");
  // One text per config: al comes once, after pdl and pf and before the m tile.
  for (const char* text : {"t128_r1_kw1_v16_u4_sk1_cs_al_pdl", "t128_r1_kw1_v16_u4_sk1_cs_al_al",
                           "t128_r1_kw1_v16_u4_sk1_cs_pf_al", "t128_r1_kw1_v16_u4_sk1_cs_pdl_al_pf",
                           "t128_r1_kw1_v16_u4_sk1_cs_m4_al", "t128_r1_kw1_v16_u4_sk1_cs_AL",
                           "t128_r1_kw1_v16_u4_sk1_al", "t128_r1_kw1_v16_u4_sk1_cs_pdl_pf_al_x",
                           "t128_r1_kw1_v16_u4_sk1_cs_pdl_pf_al_al_m4"})
    EXPECT_THROW(parse_config(text), InvalidArgument) << text;
}

TEST(AlignedBody, SixteenByteLoadsOnCudaCoresAndTensorCoresAtMTileAboveOne) {
  EXPECT_FALSE(why_invalid(parse_config("t128_r1_kw1_v16_u4_sk1_cs_al")));
  EXPECT_FALSE(why_invalid(parse_config("t128_r2_kw1_v16_u2_sk1_cs_pdl_al_m16")));
  EXPECT_FALSE(why_invalid(parse_config("tc_t128_r1_kw1_v16_u2_sk1_cs_al_m8")));
  EXPECT_FALSE(why_invalid(parse_config("tc_t256_r4_kw4_v16_u2_sk3_cs_pdl_al_m2")));
  for (const char* text : {"t128_r1_kw1_v8_u4_sk1_cs_al", "t128_r1_kw1_v2_u4_sk1_cs_al",
                           "tc_t128_r1_kw1_v16_u2_sk1_cs_al", "tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_al_w8_m8",
                           "tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_al_rc_m16", "tc_t128_r1_kw2_v16_u4_sk1_cs_pdl_pf_al_m4"}) {
    const auto why = why_invalid(parse_config(text));
    ASSERT_TRUE(why) << text;
    EXPECT_NE(why->find("aligned body"), std::string::npos) << *why;
  }
  // Any K, every dtype, batch rows up to the m tile.
  const KernelConfig al = parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl_al_m4");
  for (DType t : kAllDTypes)
    for (std::int64_t k : {1, 7, 129, 4093, 4100})
      for (int m : {1, 3, 4}) EXPECT_FALSE(why_invalid_for(al, t, {37, k}, m)) << to_string(t) << " K=" << k;
  EXPECT_TRUE(why_invalid_for(al, DType::bf16, {37, 4093}, 5));
}

TEST(AlignedBody, AcceptsAnyElementAlignedOperands) {
  const KernelConfig al = parse_config("t128_r1_kw1_v16_u4_sk1_cs_al_m4");
  for (std::uintptr_t w_off : {0, 2, 6, 14})
    for (std::int64_t ld : {4093, 4094, 4096, 4100})
      for (std::uintptr_t x_off : {0, 2, 10})
        for (std::int64_t ldx : {0, 4093, 4101}) {
          EXPECT_FALSE(why_misaligned(al, DType::bf16, 4096 + w_off, ld, 8192 + x_off, ldx));
          EXPECT_EQ(widest_aligned_vec_bytes(al, DType::bf16, 4096 + w_off, ld, 8192 + x_off, ldx), 16);
        }
  EXPECT_FALSE(why_misaligned(al, DType::f32, 4100, 4093, 8196));
  // Not even element-aligned: refused, naming the element.
  auto why = why_misaligned(al, DType::bf16, 4097, 4093, 8192);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("2-byte element"), std::string::npos) << *why;
  EXPECT_TRUE(why_misaligned(al, DType::f32, 4096, 4093, 8194));
  // Without al the same operands need narrower loads.
  KernelConfig plain = al;
  plain.aligned_body = false;
  EXPECT_EQ(widest_aligned_vec_bytes(plain, DType::bf16, 4096, 4093, 8192), 2);
}

TEST(AlignedBody, MisalignedOperandsRunTheAlignedBodyVariant) {
  const KernelConfig cc = parse_config("t128_r2_kw1_v16_u4_sk3_cs_pdl_pf");
  EXPECT_EQ(misaligned_variant(cc, 16), cc);
  for (int width : {8, 4, 2}) EXPECT_EQ(to_string(misaligned_variant(cc, width)), "t128_r2_kw1_v16_u4_sk3_cs_pdl_pf_al");
  // Tensor cores at m tile > 1: their own aligned body with the same knobs (templates/gemv_tcal.cu);
  // at m tile 1 the CUDA-core kernel of the same m tile, with 16-byte loads.
  const KernelConfig tc = parse_config("tc_t256_r2_kw4_v16_u2_sk2_cs_pdl_m8");
  EXPECT_EQ(misaligned_variant(tc, 16), tc);
  EXPECT_EQ(to_string(misaligned_variant(tc, 2)), "tc_t256_r2_kw4_v16_u2_sk2_cs_pdl_al_m8");
  EXPECT_EQ(to_string(misaligned_variant(parse_config("tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_w8_m16"), 8)),
            "tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_al_m16");
  const KernelConfig tc1 = parse_config("tc_t256_r2_kw4_v16_u2_sk2_cs_pdl");
  EXPECT_EQ(to_string(misaligned_variant(tc1, 2)), "t256_r1_kw4_v16_u4_sk2_cs_pdl_al");
  const KernelConfig tcal = parse_config("tc_t256_r2_kw4_v16_u2_sk2_cs_pdl_al_m8");
  for (int width : {16, 8, 2}) EXPECT_EQ(misaligned_variant(tcal, width), tcal);
  // A register-capped config's variant is al without the cap (al takes none), not 2-byte loads;
  // a tensor-core cap does not pass to the CUDA-core kernel either.
  const KernelConfig capped = parse_config("t128_r1_kw2_v16_u4_sk1_cs_pdl_pf_rc56");
  for (int width : {8, 4, 2})
    EXPECT_EQ(to_string(misaligned_variant(capped, width)), "t128_r1_kw2_v16_u4_sk1_cs_pdl_pf_al");
  const KernelConfig tc_capped = parse_config("tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_rc_m16");
  EXPECT_EQ(to_string(misaligned_variant(tc_capped, 2)), "tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_al_m16");
  EXPECT_EQ(with_vec_bytes(tc_capped, 4).reg_cap, 0);
  // A narrower config narrows further, as before.
  const KernelConfig v8 = parse_config("t128_r1_kw1_v8_u2_sk1_cs");
  EXPECT_EQ(to_string(misaligned_variant(v8, 4)), "t128_r1_kw1_v4_u2_sk1_cs");
  // An al config is never narrowed by its operands; with_vec_bytes drops al with the width.
  const KernelConfig al = parse_config("t128_r1_kw1_v16_u4_sk1_cs_al");
  EXPECT_EQ(misaligned_variant(al, widest_aligned_vec_bytes(al, DType::bf16, 4098, 4093, 8194)), al);
  EXPECT_EQ(to_string(with_vec_bytes(al, 8)), "t128_r1_kw1_v8_u4_sk1_cs");
  // The variant is valid wherever the config is.
  for (const KernelConfig& c : search_space_for(DType::bf16, {4096, 4096}, 8))
    EXPECT_FALSE(why_invalid_for(misaligned_variant(c, 2), DType::bf16, {4096, 4096}, 8)) << to_string(c);
  // Every 16-byte config of the space and its capped twins at M = 1 gets al for 2-byte-aligned rows.
  for (const KernelConfig& c : search_space_for(DType::bf16, {4096, 4096}, 1)) {
    if (c.family != Family::cuda_core || c.vec_bytes != 16 || c.ring) continue;
    for (int cap : {0, 56, 80}) {
      KernelConfig k = c;
      k.reg_cap = cap;
      if (why_invalid(k)) continue;
      EXPECT_TRUE(misaligned_variant(k, 2).aligned_body) << to_string(k);
    }
  }
}

namespace {
std::size_t count_al(const std::vector<KernelConfig>& space) {
  return static_cast<std::size_t>(
      std::count_if(space.begin(), space.end(), [](const KernelConfig& c) { return c.aligned_body; }));
}
}  // namespace

TEST(AlignedBody, MisalignedShapesAddAlignedBodyConfigs) {
  for (DType t : kAllDTypes) {
    const std::int64_t esize = static_cast<std::int64_t>(dtype_size(t));
    const std::int64_t aligned_k = 4096, odd_k = 4093, half_k = 4096 + 8 / esize;  // half: 8 bytes off
    for (int m : {1, 2, 4, 8, 16}) {
      EXPECT_EQ(count_al(search_space_for(t, {4096, aligned_k}, m)), 0u) << m;
      for (std::int64_t k : {odd_k, half_k}) {
        const auto space = search_space_for(t, {4096, k}, m);
        const std::size_t al = count_al(space);
        EXPECT_GT(al, 0u) << to_string(t) << " K=" << k << " M=" << m;
        // The plain configs stay (the tuner narrows them to what the operands allow), and the
        // al ones are a modest share; at M > 1 in bf16 and fp16 the larger one (the tensor
        // cores' plain configs cannot run on these rows, their al twins can).
        if (m > 1 && t != DType::f32)
          EXPECT_GE(2 * (space.size() - al), al) << to_string(t) << " K=" << k << " M=" << m;
        else
          EXPECT_GE(space.size() - al, 2 * al) << to_string(t) << " K=" << k << " M=" << m;
        std::size_t tc_al = 0;
        for (const KernelConfig& c : space)
          if (c.aligned_body) {
            // Tensor cores' own at M > 1 in bf16 and fp16 (templates/gemv_tcal.cu).
            if (c.family == Family::tensor_core) ++tc_al;
            EXPECT_TRUE(c.family == Family::cuda_core || (m > 1 && t != DType::f32)) << to_string(c);
            EXPECT_EQ(c.vec_bytes, 16);
            EXPECT_EQ(c.m_tile, m);
            EXPECT_TRUE(c.pdl);
            EXPECT_FALSE(why_invalid_for(c, t, {4096, k}, m)) << to_string(c);
            EXPECT_EQ(parse_config(to_string(c)), c);
          }
        if (m > 1 && t != DType::f32) EXPECT_GE(tc_al, 64u) << to_string(t) << " K=" << k << " M=" << m;
      }
    }
  }
  // What the tuner runs on its own operands (ld = K, 16-byte aligned buffers): the plain
  // configs narrowed to 2-byte loads and the al ones as they are.
  std::size_t al16 = 0, narrowed = 0;
  for (KernelConfig c : search_space_for(DType::bf16, {4096, 4093})) {
    if (why_misaligned(c, DType::bf16, 1 << 20, 4093, 1 << 21))
      c.vec_bytes = widest_aligned_vec_bytes(c, DType::bf16, 1 << 20, 4093, 1 << 21);
    (c.vec_bytes == 16 ? al16 : narrowed) += 1;
    if (c.vec_bytes == 16) EXPECT_TRUE(c.aligned_body) << to_string(c);
  }
  EXPECT_GT(al16, 100u);
  EXPECT_GT(narrowed, al16);
}

TEST(AlignedBody, GeneratedSource) {
  const KernelConfig al = parse_config("t128_r1_kw1_v16_u4_sk2_cs_pdl_al");
  const std::string src = generate_source(al, DType::bf16);
  EXPECT_NE(src.find("#define GEMV_ALIGNED_BODY 1\n"), std::string::npos);
  EXPECT_EQ(kernel_name(al, DType::bf16), "gemv_bf16_t128_r1_kw1_v16_u4_cs_pdl_al");
  KernelConfig plain = al;
  plain.aligned_body = false;
  EXPECT_NE(generate_source(plain, DType::bf16).find("#define GEMV_ALIGNED_BODY 0\n"), std::string::npos);
  EXPECT_NE(kernel_name(plain, DType::bf16), kernel_name(al, DType::bf16));
  EXPECT_THROW(generate_source(parse_config("t128_r1_kw1_v8_u4_sk1_cs_al"), DType::bf16), InvalidArgument);
}

// One rule for which aligned bodies are compiled once per x offset: the generator passes
// compiles_per_x_offset to the template, and only m tile 1, one row per warp, 4 loads qualify.
TEST(AlignedBody, PerOffsetCopiesFollowOneRule) {
  int per_offset = 0;
  for (const KernelConfig& c : search_space_for(DType::bf16, Shape{256, 2047})) {
    if (!c.aligned_body) {
      EXPECT_FALSE(compiles_per_x_offset(c)) << to_string(c);
      continue;
    }
    const bool expected = c.m_tile == 1 && c.rows_per_warp == 1 && c.unroll == 4;
    EXPECT_EQ(compiles_per_x_offset(c), expected) << to_string(c);
    const std::string src = generate_source(c, DType::bf16);
    EXPECT_NE(src.find(std::string("#define GEMV_AL_X_OFFSETS ") + (expected ? "1" : "0") + "\n"), std::string::npos)
        << to_string(c);
    per_offset += expected;
  }
  EXPECT_GT(per_offset, 0);
  EXPECT_TRUE(compiles_per_x_offset(parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl_al")));
  EXPECT_FALSE(compiles_per_x_offset(parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl_al_m2")));
}

// The tensor cores' aligned body takes rows 8 apart from 128-row bands (templates/gemv_tcal.cu):
// its grid has 8 row sets for each R bands, whatever N's tail; plain configs ceil(N / rows).
TEST(AlignedBody, TensorCoreRowSetsCoverEveryBand) {
  const KernelConfig kw8 = parse_config("tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8");  // one row set a block
  EXPECT_EQ(kw8.row_blocks(4096), 256);
  EXPECT_EQ(kw8.row_blocks(4097), 264);  // 33 bands (ceil(4097 / 16) = 257 would miss residues 1..7)
  EXPECT_EQ(kw8.row_blocks(1), 8);
  const KernelConfig r2 = parse_config("tc_t128_r2_kw1_v16_u2_sk1_cs_al_m16");  // 4 row sets of 2 bands
  EXPECT_EQ(r2.row_blocks(300), 4);  // 2 band pairs x 8 sets / 4
  EXPECT_EQ(r2.row_blocks(256), 2);
  KernelConfig plain = kw8;
  plain.aligned_body = false;
  EXPECT_EQ(plain.row_blocks(4097), 257);
}

// The CUDA-core twin of any 16-byte config (the runtime's fallback where fused segments split a
// tensor-core al warp's bands): a tensor-core config's, al or not, is the CUDA-core al kernel of
// the same m tile; a CUDA-core al config is its own; none for narrower loads or the ring.
TEST(AlignedBody, CudaCoreTwinOfEverySixteenByteConfig) {
  for (const char* text : {"tc_t256_r2_kw4_v16_u2_sk2_cs_pdl_m8", "tc_t256_r2_kw4_v16_u2_sk2_cs_pdl_al_m8"}) {
    const auto cc = cuda_core_aligned_body_twin(parse_config(text));
    ASSERT_TRUE(cc) << text;
    EXPECT_EQ(to_string(*cc), "t256_r1_kw4_v16_u4_sk2_cs_pdl_al_m8") << text;
  }
  const KernelConfig al = parse_config("t128_r1_kw1_v16_u4_sk1_cs_pdl_al");
  EXPECT_EQ(cuda_core_aligned_body_twin(al), al);
  EXPECT_FALSE(cuda_core_aligned_body_twin(parse_config("t128_r1_kw1_v8_u4_sk1_cs")));
  // At m tile 1 it is what misaligned_variant gives.
  const KernelConfig tc1 = parse_config("tc_t256_r2_kw4_v16_u2_sk2_cs_pdl");
  EXPECT_EQ(cuda_core_aligned_body_twin(tc1), misaligned_variant(tc1, 2));
}
