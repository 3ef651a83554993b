// The default search space: block size, rows per warp, warps along K, unroll depth, load hint,
// programmatic dependent launch (with or without L2 prefetch) and split-K, with 16-byte loads
// (narrower widths are the fallback for misaligned pointers). At batch M > 1 the tensor-core
// family (bf16/fp16) with an m tile of M, and the CUDA-core family where it can win. Shapes whose
// rows are misaligned (K x element size not a multiple of 16) add aligned-body configs (al).
#include <algorithm>
#include <iterator>
#include <set>
#include <string>

#include "gemvtune/search_space.hpp"

namespace gemvtune {

namespace {
// M > 1, kept to about 1000 configs so a (shape, M) pair tunes in about a second: streaming
// loads only (the read-only path won no batched shape on the H200), split-K in powers of two,
// PDL without the L2 prefetch (it won 1 of 28 batched pairs, by noise). Tensor cores with up
// to 4 tiles (64 rows) per warp: every warp reads all of X from L1/L2 once per K pass, so more
// rows per warp means less X traffic at long K. CUDA cores in 128- or 256-thread blocks, and
// only up to M = 2 for bf16/fp16: their conversions and FMAs grow with M. On the H200 at M = 4
// the best CUDA-core candidate was 38-56% slower than tensor cores on six of the seven
// Llama-3.1-8B shapes (bench/results/h200.md, "Batched decode"), and in the bench runs of
// 6148431 tensor cores won all seven at M = 4 in bf16 and fp16, where the model's untuned
// default for 1024x4096, a CUDA-core config, took 2.3x the winner's time (9.7 us, 0.78x
// cuBLAS). At M = 2 CUDA cores still win 1024x4096. fp32 CUDA cores with 32 or 8 lanes per row
// (ln8: 4 rows share each x load; at M = 16 on the H200 1.28-1.37x faster than 32 lanes on three
// of four shapes, while at bf16 M = 2 it lost every pair to 32 lanes or tensor cores).
constexpr int kMaxCudaCoreBatch = 2;

// Dense tensor cores also split a block's 16-row tiles along K among 8 warps of 256 threads, or
// 16 of 512. A small grid then keeps every SM streaming without split-K, reducing in shared
// memory: on the H200 (bench/results/h200.md, "Wide tensor-core blocks") 4096x4096 at M = 4 to
// 16 ran 6-11% and 1024x4096 8-10% faster than the best config of at most 4 warps along K;
// larger shapes, whose grid fills the GPU, gained nothing. 512 threads leave 128 registers a
// thread under the launch bounds: one tile a warp and PDL (without PDL, unroll 2 spilled 12-16
// bytes at m <= 8; 8 warps along K in 512 threads spilled likewise and won no swept pair).
// 8-row tiles (w8) make twice the tensor-core tiles of a 16-row layout, which pays where 16-row
// tiles are too few to give every SM a block: on the H200, every PDL tensor-core config swept
// (bench/results/h200.md, "8-row tensor-core tiles"), 1024x4096 (64 tiles of 16 rows) ran 10% faster at
// M = 4 and 6% at M = 8 with them, and 4096x4096, 6144x4096 and 14336x4096 (256 or more tiles)
// 1-15% slower. So the search space holds them for shapes of at most kMaxRowsForEightRowTiles
// rows (search_space_for), a warp one tile: two 8-row tiles a warp load and multiply as one
// 16-row tile does.

bool wide_knobs_kept(const KernelConfig& c) {
  if (c.threads == 512) return c.k_warps == 16 && c.rows_per_warp == 1 && c.pdl;
  return true;
}

void add_batched(DType t, int m, Family family, std::vector<KernelConfig>& out, bool wide_k = false) {
  const bool tc = family == Family::tensor_core;
  for (int threads : {64, 128, 256, 512})
    for (int k_warps : {1, 2, 4, 8, 16})
      for (int rows : {1, 2, 4})
        for (int unroll : {1, 2, 4})
          for (int overlap : {0, 1})
            for (int split : kBatchedSplitK)
            for (int lanes : {32, 8})
            for (int tile_rows : {16, 8}) {
              if (!tc && threads == 64) continue;
              // 8-row tiles one a warp only: two of them load and multiply as one 16-row tile.
              if (tile_rows == 8 && !(tc && rows == 1)) continue;
              if ((tc || t != DType::f32) && lanes != 32) continue;  // ln8 lost every bf16 M = 2 pair
              KernelConfig c;
              c.lanes_per_row = lanes;
              c.tile_rows = tile_rows;
              c.family = family;
              c.threads = threads;
              c.k_warps = k_warps;
              c.rows_per_warp = rows;
              c.vec_bytes = 16;
              c.unroll = unroll;
              c.split_k = split;
              c.pdl = overlap > 0;
              c.prefetch_l2 = overlap == 2;
              c.m_tile = m;
              if (wide_k_block(c) && !(tc && wide_k && wide_knobs_kept(c))) continue;
              if (!why_invalid(c) && !why_invalid_weights(c, t, WeightFormat::dense) &&
                  c.vec_bytes >= static_cast<int>(dtype_size(t)))
                out.push_back(c);
            }
}
// Quantized weights: fewer bytes per weight than dense make x the larger share of the loads
// (int4: four bytes of bf16 x per byte of weights), so up to 8 rows per warp share each x load.
// With `ring`, the 8-bit weights through the shared-memory ring: in H200 sweeps of every ring
// config of int8 and fp8 at M = 1 (bench/results/h200.md, "The ring") the winners held 1 or 2
// rows per warp, one warp along K, 64 or 128 threads and 2 to 8 stages ahead; more warps along
// K lost 10-50% (each warp's ring then covers too little of a row). So 144 ring configs next to
// the 864 register-trip ones.
void add_quantized(int m, bool ring, std::vector<KernelConfig>& out) {
  using list = std::vector<int>;
  const list threads_list = ring ? list{64, 128} : list{64, 128, 256};
  const list k_warps_list = ring ? list{1} : list{1, 2, 4};
  const list rows_list = ring ? list{1, 2, 4} : list{1, 2, 4, 8};
  const list unroll_list = ring ? list{2, 4, 8} : list{1, 2, 4};
  for (int threads : threads_list)
    for (int k_warps : k_warps_list)
      for (int rows : rows_list)
        for (int unroll : unroll_list)
          for (bool pdl : {false, true})
            for (int split : kBatchedSplitK) {
              KernelConfig c;
              c.threads = threads;
              c.k_warps = k_warps;
              c.rows_per_warp = rows;
              c.vec_bytes = 16;
              c.unroll = unroll;
              c.split_k = split;
              c.pdl = pdl;
              c.ring = ring;
              c.m_tile = m;
              if (!why_invalid(c)) out.push_back(c);
            }
}

// Aligned-body (al) variants of the CUDA-core configs, for rows that are not 16-byte aligned
// (K x element size not a multiple of 16: the tuner's own W has ld = K). Streaming loads with
// PDL (with or without the L2 prefetch at M = 1), split-K in powers of two: 576 configs next to
// the 2592 of M = 1, so the model strategy, which ranks them as the 16-byte configs they are
// (above the narrowed ones), measures them first within a budget a fifth larger. At M > 1 the
// CUDA-core family at every M (a third of the CUDA-core configs), and in bf16 and fp16 the
// tensor cores' own (templates/gemv_tcal.cu): those of the tensor-core space without w8 or pf.
void add_aligned_body(DType t, int m, std::vector<KernelConfig>& out) {
  std::vector<KernelConfig> base;
  if (m > 1) {
    add_batched(t, m, Family::cuda_core, base);
    // With the wide blocks (eight warps along K), which the dense default often picks: on an
    // H100 the default's al twin tc_t256_r1_kw8_v16_u4 ran 4096x4093 at M = 2-8 in 13.1-13.5 us,
    // the tune's best without them 13.9-14.6 (bench/results/h200.md, 2026-12-06 11:19 UTC).
    if (t != DType::f32) add_batched(t, m, Family::tensor_core, base, /*wide_k=*/true);
  } else {
    base = default_search_space(t, 1);
  }
  for (KernelConfig c : base)
    if (c.vec_bytes == 16 && c.hint == LoadHint::streaming && c.pdl && (c.split_k & (c.split_k - 1)) == 0 &&
        (c.family == Family::cuda_core || (m > 1 && c.tile_rows == 16 && !c.prefetch_l2))) {
      c.aligned_body = true;
      if (!why_invalid(c) && !why_invalid_weights(c, t, WeightFormat::dense) &&
          std::find(out.begin(), out.end(), c) == out.end())
        out.push_back(c);
    }
}
}  // namespace

std::vector<KernelConfig> default_search_space(DType t, int m, WeightFormat weights) {
  std::vector<KernelConfig> out;
  if (is_quantized(weights)) {
    add_quantized(m, /*ring=*/false, out);
    if (!is_int4(weights)) add_quantized(m, /*ring=*/true, out);
    // Tensor cores for bf16/fp16 activations, with the knobs of the dense tensor-core family:
    // the 8-bit formats and int4g128 with register loads (templates/gemv_tc.cu, converting in
    // registers; int4g128 at m tile 1 templates/gemv_q4l.cu's whole-line loads), and int4g128
    // through a shared-memory ring of chunks too (ring, templates/gemv_qtc.cu). Each int4 config
    // comes ring first: the model tells the two apart only by the ring's shared memory (and at
    // m tile 1 the registers), so on a tie its default and first picks are the ring's,
    // as before the register kernel (H200, 2026-12-01: the register loads ran 16x28672x4096 in 31.9 us
    // against the ring's 38.5, 4096x14336 at M = 1 in 12.95 against 16.0, but 28672x4096 at
    // M = 1 in 22.2 against 20.6; bench/results/h200.md).
    if ((weights == WeightFormat::int4_g128 || !is_int4(weights)) && t != DType::f32) {
      std::vector<KernelConfig> tc;
      // Wide blocks (8 warps along K in 256 threads, 16 in 512) for int4g128, register loads
      // only: more warps share each row set, so a small N still fills the SMs with warps that
      // each stream a short trip. On the H200 (bench/results/h200.md, 2026-12-02 18:38-18:47)
      // at M = 1 (gemv_q4l.cu, which stages x once per block for all its warps)
      // tc_t256_r1_kw8_u1 ran 4096x4096 in 4.19-4.25 us against 4.61 for the best config of the
      // space; at M = 4, 8, 16 t512_r1_kw16_u2 ran 1024x4096 in 2.89, 3.32, 4.71 us and
      // t256_r{1,2}_kw8 4096x4096 in 5.28, 6.31, 7.87 against 5.87, 7.35, 9.11 (M = 16's best of
      // the whole space 5.53 on 1024x4096). Their ring twins mostly exceed the shared memory
      // and never won there.
      add_batched(t, m, Family::tensor_core, tc, /*wide_k=*/weights == WeightFormat::int4_g128);
      for (KernelConfig c : tc) {
        if (is_int4(weights)) {
          // Register loads only where the ring's shared memory fits (where it runs, but for
          // the ring's own register rule, which leaves its twin's registers alone): the model
          // estimates both alike but for the ring's shared memory, so the two kinds are ranked
          // side by side and the register loads are measured where the ring is. Not at m tile
          // 1, where they are templates/gemv_q4l.cu's own kernel: there 256 threads with two
          // stages or two tiles a warp run where the ring's 8 warps do not fit (x staged once
          // for 8 warps, and since 04a5625 its 256-thread configs are the best of the recorded
          // sweep on 5 of 6 shapes). Nor for the wide blocks, which have no ring twin.
          c.ring = true;
          const bool ring_fits = static_shared_bytes(c, weights).total() <= kMaxStaticSharedBytes;
          const bool ring_runs = !why_invalid_weights(c, t, weights);
          if (!ring_fits && m > 1 && !wide_k_block(c)) continue;
          // At M = 1 the ring runs one stage ahead only. Deeper rings were never the best of a
          // recorded M = 1 sweep (1.4-30% behind one stage, sweeps/h200_int4g128_m1_*), and where
          // one tied in a tune (28672x4096, 2026-12-01) it made the PDL decode chain 0.25 ms
          // slower: 8 us a call more than one stage, the stages it asks for before
          // griddepcontrol.wait competing with the call before it (bench/results/h200.md).
          if (ring_runs && (m > 1 || c.unroll == 1) && !wide_k_block(c)) out.push_back(c);
          c.ring = false;
        }
        out.push_back(c);
      }
    }
    std::vector<KernelConfig> runnable;
    for (const KernelConfig& c : out)
      if (!why_invalid_weights(c, t, weights)) runnable.push_back(c);
    return runnable;
  }
  if (m > 1) {
    if (t == DType::f32 || m <= kMaxCudaCoreBatch) add_batched(t, m, Family::cuda_core, out);
    if (t != DType::f32) add_batched(t, m, Family::tensor_core, out, /*wide_k=*/true);
    return out;
  }
  for (int threads : {64, 128, 256})
    for (int k_warps : {1, 2, 4})
      for (int rows : {1, 2, 4})
        for (int unroll : {1, 2, 4, 8})
          for (LoadHint hint : {LoadHint::streaming, LoadHint::readonly})
            for (int overlap : {0, 1, 2})  // none, pdl, pdl with L2 prefetch
            for (int split : kSplitKChoices) {
              KernelConfig c;
              c.threads = threads;
              c.k_warps = k_warps;
              c.rows_per_warp = rows;
              c.vec_bytes = 16;
              c.unroll = unroll;
              c.hint = hint;
              c.split_k = split;
              c.pdl = overlap > 0;
              c.prefetch_l2 = overlap == 2;
              if (!why_invalid(c) && c.vec_bytes >= static_cast<int>(dtype_size(t)))
                out.push_back(c);
            }
  return out;
}

std::vector<int> split_k_choices(int m, WeightFormat weights) {
  if (m == 1 && !is_quantized(weights)) return {std::begin(kSplitKChoices), std::end(kSplitKChoices)};
  return {std::begin(kBatchedSplitK), std::end(kBatchedSplitK)};
}

bool wide_k_block(const KernelConfig& c) { return c.k_warps > 4 || c.threads > 256; }

std::vector<KernelConfig> distinct_kernels(const std::vector<KernelConfig>& configs) {
  std::vector<KernelConfig> out;
  std::set<std::string> seen;
  for (KernelConfig c : configs) {
    c.split_k = 1;
    if (seen.insert(to_string(c)).second) out.push_back(c);
  }
  return out;
}

std::vector<KernelConfig> balanced_twins(const KernelConfig& c, DType t, const Shape& s, int m, WeightFormat weights,
                                         int sm_count) {
  constexpr int kMaxTwinThreads = 512;  // the largest block of the space: 128 registers a thread
  std::vector<KernelConfig> out;
  if (c.family != Family::tensor_core || c.ring || sm_count <= 0 || s.n <= 0) return out;
  // Row groups (warps' worth of rows, k_warps warps each) of the shape, times the splits:
  // the units of work the grid hands out.
  const std::int64_t groups = (s.n + c.warp_rows() - 1) / c.warp_rows() * c.split_k;
  for (int b = 1; b <= 4; ++b) {
    const std::int64_t per_block = (groups + std::int64_t{sm_count} * b - 1) / (std::int64_t{sm_count} * b);
    const std::int64_t threads = 32 * c.k_warps * per_block;
    if (threads > kMaxTwinThreads || threads == c.threads) continue;
    // Past 256 threads one tile a warp, as the space's 512-thread blocks: several tiles a warp
    // in 9 to 16 warps overran a block's 48 KB of static shared memory (the tiles' fragments
    // in finish_tc_tiles) or its registers.
    if (threads > 256 && c.rows_per_warp > 1) continue;
    KernelConfig twin = c;
    twin.threads = static_cast<int>(threads);
    if (why_invalid_for(twin, t, s, m, weights)) continue;
    if (std::find(out.begin(), out.end(), twin) == out.end()) out.push_back(twin);
  }
  return out;
}

std::optional<KernelConfig> register_capped_twin(const KernelConfig& c, DType t, const Shape& s, int m,
                                                 WeightFormat weights) {
  if (c.reg_cap || c.family != Family::tensor_core) return std::nullopt;  // CUDA cores: cuda_core_capped_twin
  KernelConfig twin = c;
  twin.reg_cap = kRegCap;
  if (why_invalid_for(twin, t, s, m, weights)) return std::nullopt;
  return twin;
}

std::optional<int> occupancy_step_cap(int registers, int threads) {
  constexpr int kRegisters = 65536, kMaxBlocks = 32, kMaxThreads = 2048, kUnit = 8;
  if (registers < 1 || threads < 32 || threads > 1024) return std::nullopt;
  const int allocated = (std::min(registers, 255) + kUnit - 1) / kUnit * kUnit;
  const int blocks = std::min({kMaxBlocks, kMaxThreads / threads, kRegisters / (allocated * threads)});
  const int more = blocks + 1;
  if (more > kMaxBlocks || more * threads > kMaxThreads) return std::nullopt;
  const int cap = kRegisters / (more * threads) / kUnit * kUnit;
  if (cap < 32) return std::nullopt;
  return cap;
}

std::optional<KernelConfig> cuda_core_capped_twin(const KernelConfig& c, DType t, const Shape& s, int m, int registers,
                                                  WeightFormat weights) {
  if (c.family != Family::cuda_core || c.reg_cap) return std::nullopt;
  const std::optional<int> cap = occupancy_step_cap(registers, c.threads);
  if (!cap || registers - *cap > kMaxCapSqueeze) return std::nullopt;
  KernelConfig twin = c;
  twin.reg_cap = *cap;
  if (why_invalid_for(twin, t, s, m, weights)) return std::nullopt;
  return twin;
}

std::vector<KernelConfig> search_space_for(DType t, const Shape& s, int m, WeightFormat weights) {
  std::vector<KernelConfig> out;
  for (const KernelConfig& c : default_search_space(t, m, weights))
    if (!why_invalid_for(c, t, s, m, weights) && (c.tile_rows == 16 || s.n <= kMaxRowsForEightRowTiles))
      out.push_back(c);
  if (!is_quantized(weights) && s.k * static_cast<std::int64_t>(dtype_size(t)) % 16 != 0) {
    std::vector<KernelConfig> al;
    add_aligned_body(t, m, al);
    for (const KernelConfig& c : al)
      if (!why_invalid_for(c, t, s, m)) out.push_back(c);
  }
  return out;
}

}  // namespace gemvtune
