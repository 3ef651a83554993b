// Aligned-body kernels (al, templates/gemv.cu and the tensor cores' templates/gemv_tcal.cu) on
// every alignment offset: K = VE j + r for every r (bf16: K mod 8 = 0..7), ld = K and ld = K +
// 1..3, W's base and x's base moved by 0..VE-1 elements, N with a tail (tensor cores: also three
// 128-row bands, the last partial), against the float64 reference with y poisoned (NaN) before each
// launch. The buffers around W and x are NaN too, and so is W's and X's padding, so a kernel
// that reads outside the elements it may use fails. Configs cover rows per warp, warps along K,
// split-K, PDL, the L2 prefetch, the read-only path and m tiles (ldx with offsets too).
// The operand checks (first test) need no GPU.
//
// GEMVTUNE_TEST_CONFIG_STRIDE=n checks every n-th (config, K, ld, offsets) case only (for
// compute-sanitizer runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "gemvtune/error.hpp"
#include "gemvtune/search_space.hpp"
#include "gpu_test_support.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

namespace {

jit::GemvOperands fake(Shape s, std::int64_t ld, CUdeviceptr w, CUdeviceptr x, int m = 1, std::int64_t ldx = 0) {
  jit::GemvOperands op;
  op.w = w;
  op.x = x;
  op.y = 1 << 20;
  op.shape = s;
  op.ld = ld;
  op.m = m;
  op.ldx = ldx;
  return op;
}

struct Counts {
  std::size_t checked = 0, failed = 0;
};

// Every case of one config: K = ve * j + r over `ks`, the two strides, every W and x offset.
// Inputs are drawn once per (K, ld) and moved on the device between launches.
void check_offsets(jit::LoadedKernels& kernels, const jit::Stream& stream, DType t, const KernelConfig& config,
                   const std::vector<std::int64_t>& ks, std::int64_t n, std::size_t stride, std::size_t& case_index,
                   Counts& counts) {
  const std::size_t e = dtype_size(t);
  const std::int64_t ve = 16 / static_cast<std::int64_t>(e);
  const int m = config.m_tile;
  auto kernel = kernels.get(config, t);
  for (std::int64_t k : ks)
    for (std::int64_t ld_extra : {std::int64_t{0}, 1 + k % 3}) {
      const Shape s{n, k};
      KernelConfig c = config;  // fewer splits where K is too short for them (same kernel)
      while (c.split_k > 1 && why_invalid_for(c, t, s, m)) --c.split_k;
      const std::int64_t ld = k + ld_extra, ldx = m > 1 ? k + 2 - k % 2 : 0;  // ldx misaligned too
      const GemvInputs in = random_inputs(t, s, ld, 7000 + static_cast<std::uint64_t>(k * 4 + ld_extra), m, ldx);
      const std::vector<double> ref = reference_gemv(in);
      // W and x buffers with room for every offset, NaN everywhere else.
      jit::DeviceBuffer wbuf(in.w.bytes.size() + 64), xbuf(in.x.bytes.size() + 64), ybuf(s.n * m * e);
      jit::SplitKWorkspace ws;
      ws.reserve(c, s);
      for (std::int64_t ow = 0; ow < ve; ++ow)
        for (std::int64_t ox = 0; ox < ve; ++ox) {
          if (!config_picked(case_index++, stride)) continue;
          wbuf.fill_bytes(0xff);
          xbuf.fill_bytes(0xff);
          wbuf.upload(in.w.bytes.data(), in.w.bytes.size(), 16 + ow * e);
          xbuf.upload(in.x.bytes.data(), in.x.bytes.size(), 16 + ox * e);
          jit::GemvOperands op{wbuf.get() + 16 + ow * e, xbuf.get() + 16 + ox * e, ybuf.get(), s, ld, m, ldx, s.n};
          ybuf.fill_bytes(0xff);
          std::string what = std::string(to_string(t)) + " " + to_string(c) + " N=" + std::to_string(n) + " K=" + std::to_string(k) +
                             " ld=" + std::to_string(ld) + (m > 1 ? " ldx=" + std::to_string(ldx) : "") +
                             " W+" + std::to_string(ow) + " x+" + std::to_string(ox) + " elements";
          try {
            jit::launch_gemv(*kernel, c, op, ws, stream.get());
            stream.synchronize();
          } catch (const std::exception& ex) {
            ADD_FAILURE() << what << ": " << ex.what();
            if (++counts.failed > 20) return;
            continue;
          }
          HostArray y(t, static_cast<std::size_t>(s.n) * m);
          ybuf.download(y.bytes.data(), y.bytes.size());
          const Comparison cmp = compare_output(y, ref);
          ++counts.checked;
          if (!cmp.ok) {
            ++counts.failed;
            ADD_FAILURE() << what << ": " << cmp.describe();
            if (counts.failed > 20) return;  // enough to see the pattern
          }
        }
    }
}

// K = ve j + r for every r, at a few j: tiny (no whole body load per lane), a few warp-wide
// loads, and past U x KW warp-wide loads so the unrolled loop runs.
std::vector<std::int64_t> all_remainders(DType t, std::initializer_list<std::int64_t> js) {
  const std::int64_t ve = 16 / static_cast<std::int64_t>(dtype_size(t));
  std::vector<std::int64_t> ks;
  for (std::int64_t j : js)
    for (std::int64_t r = 0; r < ve; ++r)
      if (ve * j + r > 0) ks.push_back(ve * j + r);
  return ks;
}

void check_dtype(DType t, const std::vector<const char*>& configs, std::initializer_list<std::int64_t> js) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  {
    std::vector<KernelConfig> parsed;
    for (const char* text : configs) parsed.push_back(parse_config(text));
    precompile(kernels, t, parsed);
  }
  const std::size_t stride = config_stride();
  const std::vector<std::int64_t> ks = all_remainders(t, js);
  std::size_t case_index = 0;
  Counts counts;
  for (const char* text : configs) {
    const KernelConfig c = parse_config(text);
    ASSERT_TRUE(c.aligned_body) << text;
    // 37 rows: a tail in every block size; tensor cores also 300, two whole 128-row bands and a
    // third of 44 rows (residues with 6 rows and with 5).
    for (std::int64_t n : c.family == Family::tensor_core ? std::vector<std::int64_t>{37, 300} : std::vector<std::int64_t>{37})
      check_offsets(kernels, stream, t, c, ks, n, stride, case_index, counts);
    if (counts.failed > 20) break;
  }
  std::printf("[gemvtune] %s: %zu aligned-body launches against float64, %zu failed\n",
              std::string(to_string(t)).c_str(), counts.checked, counts.failed);
  EXPECT_GT(counts.checked, 0u);
}

}  // namespace

TEST(GemvAlignedBody, OperandChecksAcceptAnyElementAlignment) {
  const KernelConfig al = parse_config("t128_r1_kw1_v16_u4_sk2_cs_al");
  const KernelConfig al4 = parse_config("t128_r1_kw1_v16_u4_sk1_cs_al_m4");
  const KernelConfig plain = parse_config("t128_r1_kw1_v16_u4_sk2_cs");
  EXPECT_NO_THROW(jit::check_operands(al, DType::bf16, fake({64, 4093}, 4093, 4098, 8194)));
  EXPECT_NO_THROW(jit::check_operands(al, DType::bf16, fake({64, 4093}, 4095, 4110, 8206)));
  EXPECT_NO_THROW(jit::check_operands(al4, DType::bf16, fake({64, 4093}, 4093, 4098, 8194, 3, 4095)));
  EXPECT_NO_THROW(jit::check_operands(al, DType::f32, fake({64, 4093}, 4093, 4100, 8196)));
  EXPECT_THROW(jit::check_operands(plain, DType::bf16, fake({64, 4093}, 4093, 4096, 8192)), InvalidArgument);
  EXPECT_THROW(jit::check_operands(al, DType::bf16, fake({64, 4093}, 4093, 4097, 8192)), InvalidArgument);
  EXPECT_THROW(jit::check_operands(al, DType::f32, fake({64, 4093}, 4093, 4096, 8194)), InvalidArgument);
}

TEST(GemvAlignedBodyGpu, EveryOffsetBf16) {
  check_dtype(DType::bf16,
              {"t128_r1_kw1_v16_u4_sk1_cs_pdl_al", "t64_r2_kw2_v16_u2_sk2_cs_al", "t256_r4_kw1_v16_u2_sk3_nc_pdl_pf_al",
               "t128_r1_kw4_v16_u8_sk1_cs_pdl_pf_al", "t128_r8_kw1_v16_u1_sk1_cs_al", "t128_r2_kw1_v16_u2_sk2_cs_pdl_al_m4",
               "t256_r1_kw2_v16_u4_sk1_cs_pdl_al_m16"},
              {0, 3, 37, 300, 1100});
}

// The tensor cores' aligned body: one and several tiles a warp (rows 128 apart), warps along K
// (the edge chunks shared among them), split-K (slices that end inside a row's last blocks, and
// empty ones at K = 3), the read-only path without PDL, m tiles of one and two batch tiles, full
// and not; row sets of several blocks in one band (r1 kw8: one a block) and of one.
TEST(GemvAlignedBodyGpu, TensorCoresEveryOffsetBf16) {
  check_dtype(DType::bf16,
              {"tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m16", "tc_t128_r2_kw1_v16_u2_sk2_cs_pdl_al_m8",
               "tc_t256_r2_kw2_v16_u1_sk4_cs_pdl_al_m4", "tc_t64_r4_kw1_v16_u2_sk1_nc_al_m2",
               "tc_t256_r4_kw4_v16_u2_sk3_cs_pdl_al_m13", "tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_al_m9"},
              {0, 3, 37, 300, 1100});
}

TEST(GemvAlignedBodyGpu, TensorCoresEveryOffsetFp16) {
  check_dtype(DType::f16, {"tc_t256_r1_kw4_v16_u4_sk2_cs_pdl_al_m16", "tc_t128_r2_kw1_v16_u4_sk1_cs_al_m6"}, {0, 5, 300});
}

TEST(GemvAlignedBodyGpu, EveryOffsetFp16) {
  check_dtype(DType::f16,
              {"t128_r2_kw1_v16_u4_sk2_cs_pdl_al", "t128_r1_kw2_v16_u2_sk1_cs_pdl_al_m3", "t256_r1_kw1_v16_u4_sk1_cs_pdl_al"},
              {0, 5, 300});
}

TEST(GemvAlignedBodyGpu, EveryOffsetFp32) {
  check_dtype(DType::f32, {"t128_r1_kw1_v16_u8_sk3_cs_pdl_al", "t64_r4_kw1_v16_u2_sk1_nc_al",
                           "t128_r2_kw2_v16_u2_sk1_cs_pdl_pf_al_m8", "t64_r1_kw1_v16_u4_sk2_cs_pdl_al"},
              {0, 9, 1000});
}
