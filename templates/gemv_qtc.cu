// gemv_qtc.cu, int4 weights on tensor cores through a shared-memory ring (the configs with
// ring; without it gemv_tc.cu loads the same weights into registers): Y = X W^T with W in int4g128 (docs/weights.md: a
// scale and a zero per 128 elements of K), X and Y bf16 or fp16, m <= GEMV_M_TILE rows, with
// mma.sync m16n8k16 and fp32 accumulation. Fused segments as in gemv.cu.
//
// A kernel template: compiles alone (nvcc -arch=sm_90 -c templates/gemv_qtc.cu, which includes
// prelude.cu); the generator prepends #defines for one KernelConfig and the prelude's text.
//
// Why tensor cores at m = 1: an int4 weight stream delivers four times as many weights per byte
// as bf16, and on CUDA cores the per-weight permute and FMA then fill the issue slots before HBM
// is busy (gemv_q.cu). Here a 32-bit word of eight weights becomes four bf16 (or fp16) pairs with
// one shift and one LOP3 each, and the products are the mma's: about one instruction per
// weight, with the tensor pipe under half busy even though seven of the eight columns are idle
// at m = 1.
//
// Lane (g = lane / 4, t = lane % 4) owns rows g
// and g + 8 of a 16-row tile and reads 16 bytes of each, the 32 weights at K offset 32 t of a
// 128-element chunk, which is one int4g128 group: the four lanes of a row cover the group, so
// every mma sums one group only and the group's scale applies to its result. The mma's K order
// is free as long as A and B agree: word j of a lane's load gives the pairs (k, k + 4) for
// k = 8 j .. 8 j + 3, as (w >> 4 i) & 0x000F000F | bias puts nibbles i and i + 4 into one
// register, and X's pairs are rebuilt to match with byte permutes of a plain 16-byte load.
//
// Zero points without subtracting: the bias trick gives A = B + q (B = 128 in bf16, 1024 in
// fp16, both exact), so the mma yields D = B sum x + sum q x over the group. A second mma with
// A = 1 yields sum x; the group adds s (D - (B + z) sum x) = s sum (q - z) x to the result.
//
// Bytes in flight without registers: weights go global -> shared memory by cp.async (L2
// evict-first under the streaming hint), GEMV_UNROLL stages ahead of the one being consumed, in
// a ring of GEMV_UNROLL + 1 stages per warp. A stage is two chunks (256 elements, 128 bytes) of
// each of the warp's rows, and each copy instruction takes four whole rows' 128 bytes (8 lanes a
// row): every instruction asks for four full 128-byte lines. The lanes used to copy exactly
// what they would read (their 16 bytes of rows g and g + 8, so 64-byte halves of eight rows per
// instruction); on the H200, with the arithmetic left out, the old kernel's copies took 19% less
// time when they read whole lines (bench/results/h200.md, "Why the int4 tensor-core kernel sat
// near 24 us"), and this kernel took 24.1 -> 21.1 us on 28672x4096. A lane now reads bytes other
// lanes copied, so each stage is taken after cp.async.wait_group and a __syncwarp. (TMA bulk
// copies of 64 bytes with an mbarrier per slot were 1.76x slower in a probe.) The first version kept the chunks in flight in registers: ptxas gave it
// 172-255 registers per thread, 8 warps per SM, 40% of the read ceiling (Nsight Compute,
// bench/results/raw/0d0e147_h200_ncu_1.txt).
//
// Work layout: a warp owns GEMV_ROWS_PER_WARP 16-row tiles; GEMV_K_WARPS warps share a row set
// and take stages (two chunks) in turn along K; gridDim.y blocks split K.

#ifndef GEMV_THREADS
#define GEMV_THREADS 128
#endif
#ifndef GEMV_ROWS_PER_WARP
#define GEMV_ROWS_PER_WARP 2  // 16-row tiles per warp
#endif
#ifndef GEMV_K_WARPS
#define GEMV_K_WARPS 1
#endif
#ifndef GEMV_UNROLL
#define GEMV_UNROLL 1  // ring stages ahead (two ring stages of two tiles fill 32 KB at 128 threads)
#endif
#ifndef GEMV_M_TILE
#define GEMV_M_TILE 1
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_qtc_kernel
#endif
#ifndef GEMV_DTYPE
#define GEMV_DTYPE 2
#endif
#if GEMV_DTYPE == 0
#error "the int4 tensor-core family takes bf16 or fp16 activations"
#endif
#ifndef GEMV_WFORMAT
#define GEMV_WFORMAT 4
#endif
#ifndef GEMV_GROUP
#define GEMV_GROUP 128
#endif
#if GEMV_WFORMAT != 4 || GEMV_GROUP != 128
#error "the int4 tensor-core family takes int4g128 weights"
#endif
#undef GEMV_VEC_BYTES
#define GEMV_VEC_BYTES 16

#ifndef GEMV_PRELUDE
#include "prelude.cu"
#endif

#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_WARP_ROWS (16 * GEMV_ROWS_PER_WARP)
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_WARP_ROWS)
#define GEMV_N_TILES ((GEMV_M_TILE + 7) / 8)
#define GEMV_QTC_CHUNK 128  // elements of K per chunk: one group, 16 bytes for each of 4 lanes
#define GEMV_QTC_STAGE_CHUNKS 2  // chunks per ring stage: 128 bytes of each row
// Split boundaries fall on 128-byte lines of weights (256 elements, two groups).
#define GEMV_SPLIT_ALIGN 256
// At m = 1 the block stages x once for all its warps: each chunk's pairs in the mma's K order
// and the chunk's sum of x, in shared memory, GEMV_QTC_X_SLICE chunks at a time. Every warp
// then reads its pairs with four shared loads instead of loading x, permuting it and summing
// it with a second mma for every chunk (8 of a tile's 16 mma at one tile per warp).
#define GEMV_QTC_STAGED_X (GEMV_M_TILE == 1)
#define GEMV_QTC_X_SLICE 16

extern "C" __global__ void __launch_bounds__(GEMV_THREADS)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, NT = GEMV_N_TILES;
  constexpr int CHUNK = GEMV_QTC_CHUNK, SC = GEMV_QTC_STAGE_CHUNKS, STAGES = U + 1;
  // ring[warp][stage][tile][row][16-byte column]: a stage of a tile is 16 rows x 128 bytes. Row
  // r's columns are stored XOR 4 (r & 1), so that the eight lanes of a 16-byte shared load
  // (rows g and g + 1, columns 4 cc + t) fall in eight different bank groups.
  __shared__ __align__(16) uint4 ring[GEMV_WARPS][STAGES][R][16][8];
#if GEMV_QTC_STAGED_X
  // x_pairs[c][t][q]: lane t's pairs of word q of chunk c of the slice; 5 uint4 per (c, t) so
  // that the four t of a load fall in different banks. x_sum[c]: the chunk's sum of x.
  __shared__ __align__(16) uint4 x_pairs[GEMV_QTC_X_SLICE][4][5];
  __shared__ float x_sum[GEMV_QTC_X_SLICE];
#endif
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * GEMV_WARP_ROWS;

  const KSlice slice = split_k_slice<GEMV_SPLIT_ALIGN>(k);
  const int kb = slice.begin, ke = slice.end;
  const int chunks = (ke - kb) / CHUNK;  // K is a multiple of the group: no partial chunk
  // This warp's stages: kw, kw + KW, ... of the split's (chunks + 1) / 2; stage j of mine
  // starts at chunk (kw + j KW) SC of the split (the last stage of an odd count has one chunk).
  const int split_stages = (chunks + SC - 1) / SC;
  const int mine = row0 < n && kw < split_stages ? (split_stages - kw + KW - 1) / KW : 0;
  constexpr int STAGE_STEP = KW * SC;  // chunks from one stage of mine to the next

  // Copies: instruction p of a tile takes rows 4 p + lane / 8, 16 bytes at column lane % 8 of the
  // stage's 128 bytes. Rows past N read row N-1 and are never written.
  const int copy_col = lane & 7;
  const unsigned char* wp[R][4];
  // This lane's scale or zero of each tile (i4_lane_factors), one group per chunk.
  const elem_t* fp[R];
  const auto point = [&](const WarpRows& rows) {  // with_rows says why
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int p = 0; p < 4; ++p)
        wp[i][p] = quant_row(rows, min(row0 + 16 * i + 4 * p + (lane >> 3), n - 1)).q +
                   q_byte(kb + kw * SC * CHUNK) + 16 * copy_col;
      fp[i] = i4_lane_factors(rows, row0 + 16 * i, g, t, n, k, kb);
    }
  };
  with_rows(seg, min(row0, n - 1), min(row0 + 16 * R - 1, n - 1), point);
  constexpr int W_STEP = SC * CHUNK * KW / 2;  // bytes of weights per stage of mine
  // Batch row 8 nt + g of X, or row m - 1 past the batch: its columns of D are never written,
  // and every lane loads, so no lane idles on a predicate.
#if !GEMV_QTC_STAGED_X
  const elem_t* xr[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) xr[nt] = x + min(8 * nt + g, m - 1) * ldx + kb + 32 * t;
#endif

  // The mma's constant operands, kept in registers for the whole loop: made from m so that the
  // compiler cannot rematerialize them (it did, at four moves per ones-mma).
  const unsigned opaque = static_cast<unsigned>(m) >> 31;  // 0: m >= 1
#if !GEMV_QTC_STAGED_X
  const unsigned ones0 = GEMV_I4_ONES | opaque, ones1 = GEMV_I4_ONES | (opaque << 1),
                 ones2 = GEMV_I4_ONES | (opaque << 2), ones3 = GEMV_I4_ONES | (opaque << 3);
#endif
  const unsigned bias = GEMV_I4_BIAS | (opaque << 4), mask = 0x000F000Fu | (opaque << 5);
  unsigned long long policy = 0;
#if GEMV_STREAMING
  policy = evict_first_policy();
#endif
  constexpr unsigned ROW_BYTES = 8 * 16, TILE_BYTES = 16 * ROW_BYTES, STAGE_BYTES = R * TILE_BYTES;
  // This lane's destination in stage 0 for copy p of tile 0: row 4 p + lane / 8, whose parity
  // is lane / 8's, so the swizzled column is the same for every p.
  const unsigned ring_lane = shared_address(&ring[warp][0][0][lane >> 3][copy_col ^ (((lane >> 3) & 1) << 2)]);
  // Stage j of mine into its slot; a group is committed even when empty, so that
  // wait_group<U> always means "stage j has arrived". The second chunk of a stage past the
  // split's end (an odd count) is not copied.
  const auto issue = [&](int j, int slot) {
    if (j < mine) {
      const unsigned dst = ring_lane + slot * STAGE_BYTES;
      if (copy_col < 4 || (kw + j * KW) * SC + 1 < chunks)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int p = 0; p < 4; ++p)
            copy16_async(dst + i * TILE_BYTES + 4 * p * ROW_BYTES, wp[i][p] + static_cast<long long>(j) * W_STEP, policy);
    }
    async_commit();
  };

  float acc[R][NT][4];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][nt][j] = 0.f;

#if GEMV_PDL
  allow_next_grid();  // see gemv.cu: successors fill free slots while this grid drains
#endif
#pragma unroll
  for (int j = 0; j < U; ++j) issue(j, j);
  // The rows' scales and zeros for this split, asked of L2 now: they are read a chunk ahead of
  // their first use, which hides an L2 hit but not a first touch of HBM.
#pragma unroll
  for (int i = 0; i < R; ++i)
    for (int b = 0; mine > 0 && b < chunks * GEMV_ESIZE; b += 128) prefetch_l2(reinterpret_cast<const char*>(fp[i]) + b);
  wait_for_previous_grid();  // x may be the previous grid's output

  // X of each chunk, loaded one chunk ahead of its use: the warps of a block reach a chunk
  // together, and the first of them to read its lines waits for L2.
#if GEMV_QTC_STAGED_X
  // Chunks [c0, c1) of the split into x_pairs and x_sum, by the whole block: unit u is word q of
  // lane t's 32 elements of chunk c0 + u / 16, and the 16 units of a chunk, 16 adjacent lanes,
  // add up its sum by shuffles. Every thread runs the same trip count (the shuffles need them all).
  const auto stage_x = [&](int c0, int c1) {
    constexpr int UNITS = GEMV_QTC_X_SLICE * 16;
#pragma unroll 1
    for (int u0 = 0; u0 < UNITS; u0 += GEMV_THREADS) {
      const int u = u0 + tid, c = u >> 4, tt = (u >> 2) & 3, q = u & 3;
      float sum = 0.f;
      if (u < UNITS && c < c1 - c0) {
        const uint4 v = load_x(x + kb + (c0 + c) * CHUNK + 32 * tt + 8 * q);
        unsigned xp[4];
        i4_x_pairs(v, xp);
        x_pairs[c][tt][q] = make_uint4(xp[0], xp[1], xp[2], xp[3]);
        float f[8];
        vec_to_floats(v, f);
#pragma unroll
        for (int e = 0; e < 8; ++e) sum += f[e];
      }
#pragma unroll
      for (int off = 8; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      if (u < UNITS && c < c1 - c0 && (u & 15) == 0) x_sum[c] = sum;
    }
  };
#else
  uint4 x_next[NT][4];
  const auto load_x_chunk = [&](int c) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int q = 0; q < 4; ++q) x_next[nt][q] = load_x(xr[nt] + static_cast<long long>(c) * CHUNK + 8 * q);
  };
  if (mine > 0) load_x_chunk(kw * SC);
#endif

  // This lane's factors of each tile for the two chunks of stage c (c even; low half: chunk c),
  // loaded during the previous stage's last chunk: one 4-byte load where the pair is aligned (an
  // even number of groups a row and a 4-byte aligned array), else two 2-byte loads. Each lane's
  // factors are a 2-byte element of another row's line, so a warp's factor load asks L1 for 32
  // sectors for 64 bytes, as many as a stage's weight copies ask for 2 KB (R = 1); one load a
  // stage instead of one a chunk made the ring configs 6% faster at m = 1 on the H200
  // (bench/results/h200.md, 2026-12-01 18:30).
  unsigned f_next[R];
  bool f_pair[R];
#pragma unroll
  for (int i = 0; i < R; ++i) f_pair[i] = (reinterpret_cast<unsigned long long>(fp[i]) & 3) == 0;
  const auto load_factors = [&](int c) {
#pragma unroll
    for (int i = 0; i < R; ++i) {
      if (f_pair[i] && c + 1 < chunks) {
        f_next[i] = load_elem_pair_bits(fp[i] + c);
      } else {
        f_next[i] = load_elem_bits(fp[i] + c);
        if (c + 1 < chunks) f_next[i] |= load_elem_bits(fp[i] + c + 1) << 16;
      }
    }
  };
  if (mine > 0) load_factors(kw * SC);
  static_assert(GEMV_QTC_STAGE_CHUNKS == 2, "a stage's factors are one 32-bit pair");

  // Slices of GEMV_QTC_X_SLICE chunks where x is staged (the same count for every warp of the
  // block: the barriers need them all), one slice otherwise. Slots of stage j (consumed now)
  // and of stage j + U (issued now) are kept as counters.
  constexpr int SLICE = GEMV_QTC_STAGED_X ? GEMV_QTC_X_SLICE : (1 << 30);
  static_assert(SLICE % SC == 0, "a slice holds whole stages");
  const int slices = GEMV_QTC_STAGED_X ? (chunks + SLICE - 1) / SLICE : 1;
  // Where this lane reads its 16 bytes of row g of a tile in a ring slot, chunk cc of the stage:
  // column 4 cc + t XOR 4 (g & 1), i.e. t + 4 (cc XOR (g & 1)).
  // As 32-bit shared addresses, read with load_shared16: from pointers into shared memory the
  // compiler rebuilt generic addresses at every chunk. With the fixed-distance factor shuffles
  // below (m = 1) a stage of t128_r1_kw2_u1 went from 271 to 237 instructions and 66 to 63
  // registers; on the H200 the ring configs ran 2% faster at m = 1 (mean over every config of 7
  // shapes), 128256x4096 at its best 77.9 -> 74.5 us, the rest of the bests level
  // (bench/results/h200.md, 2026-12-01 18:30).
  const unsigned ring_read[SC] = {shared_address(&ring[warp][0][0][g][t + 4 * (g & 1)]),
                                  shared_address(&ring[warp][0][0][g][t + 4 * (1 - (g & 1))])};
  static_assert(SC == 2, "ring_read holds two chunks");
#if GEMV_QTC_STAGED_X
  const unsigned x_read = shared_address(&x_pairs[0][t][0]), x_sum_read = shared_address(&x_sum[0]);
#endif
  int j = 0, slot = 0, ahead = U, cbase = kw * SC;
  for (int slice = 0; slice < slices; ++slice) {
    const int c0 = slice * SLICE, c1 = min(chunks, c0 + SLICE);
#if GEMV_QTC_STAGED_X
    __syncthreads();  // every warp is done with the previous slice
    stage_x(c0, c1);
    __syncthreads();
#endif
    for (; j < mine && cbase < c1;
         ++j, cbase += STAGE_STEP, slot = slot == U ? 0 : slot + 1, ahead = ahead == U ? 0 : ahead + 1) {
      issue(j + U, ahead);  // into the slot of stage j - 1, which every lane is done with
      async_wait<U>();        // stage j is in the ring: this lane's copies ...
      __syncwarp();         // ... and the other lanes'
#pragma unroll
      for (int cc = 0; cc < SC; ++cc) {
        const int c = cbase + cc;
        if (cc > 0 && c >= chunks) break;  // the last stage of an odd count
        float s[R][2], bz[R][2];  // the groups' scales and B + zero of rows g and g + 8
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const float f = elem_bits_to_float(cc == 0 ? f_next[i] & 0xFFFFu : f_next[i] >> 16);
#if GEMV_M_TILE == 1
          i4_group_factors_t0(f, s[i], bz[i]);
#else
          i4_group_factors(f, lane, s[i], bz[i]);
#endif
        }
        if (cc == SC - 1 && j + 1 < mine) load_factors(cbase + STAGE_STEP);
#if GEMV_QTC_STAGED_X
        const int cs = c - c0;  // this chunk within the slice
#else
        const bool more = cc + 1 < SC ? c + 1 < chunks : j + 1 < mine;
        const int c_next = cc + 1 < SC ? c + 1 : cbase + STAGE_STEP;
        uint4 xv[NT][4];
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int qq = 0; qq < 4; ++qq) xv[nt][qq] = x_next[nt][qq];
        if (more) load_x_chunk(c_next);
#endif
        uint4 wv[R][2];  // this lane's 16 bytes of rows g and g + 8 of each tile
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) wv[i][h] = load_shared16(ring_read[cc] + (slot * R + i) * TILE_BYTES + h * 8 * ROW_BYTES);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          float xs[4];  // sum of x over the group, as the D fragment of A = 1
          float d[R][4];
#pragma unroll
          for (int i = 0; i < R; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[i][e] = 0.f;
#if GEMV_QTC_STAGED_X
          const float x_sum_c = load_shared4(x_sum_read + 4 * cs);
#pragma unroll
          for (int e = 0; e < 4; ++e) xs[e] = x_sum_c;
#else
#pragma unroll
          for (int e = 0; e < 4; ++e) xs[e] = 0.f;
#endif
          // One accumulator chain per tile: splitting it in two (the first and second mma of
          // each word) raised registers by a third and measured the same (28672x4096, H200).
#pragma unroll
          for (int qq = 0; qq < 4; ++qq) {  // word qq of each lane's 16 bytes: 8 weights per row
            unsigned xp[4];
#if GEMV_QTC_STAGED_X
            const uint4 pv = load_shared16(x_read + cs * sizeof(x_pairs[0]) + qq * 16);
            xp[0] = pv.x;
            xp[1] = pv.y;
            xp[2] = pv.z;
            xp[3] = pv.w;
#else
            i4_x_pairs(xv[nt][qq], xp);
            mma_16816(xs, ones0, ones1, ones2, ones3, xp[0], xp[1]);
            mma_16816(xs, ones0, ones1, ones2, ones3, xp[2], xp[3]);
#endif
#pragma unroll
            for (int i = 0; i < R; ++i) {
              const unsigned lo = qq == 0 ? wv[i][0].x : qq == 1 ? wv[i][0].y : qq == 2 ? wv[i][0].z : wv[i][0].w;
              const unsigned hi = qq == 0 ? wv[i][1].x : qq == 1 ? wv[i][1].y : qq == 2 ? wv[i][1].z : wv[i][1].w;
              mma_16816(d[i], i4_pair(lo, 0, mask, bias), i4_pair(hi, 0, mask, bias), i4_pair(lo, 1, mask, bias),
                      i4_pair(hi, 1, mask, bias), xp[0], xp[1]);
              mma_16816(d[i], i4_pair(lo, 2, mask, bias), i4_pair(hi, 2, mask, bias), i4_pair(lo, 3, mask, bias),
                      i4_pair(hi, 3, mask, bias), xp[2], xp[3]);
            }
          }
          // D fragment e: row g + 8 (e / 2) of the tile, batch row 8 nt + 2 t + e % 2; the group
          // adds s (D - (B + z) sum x) = s sum (q - z) x.
#pragma unroll
          for (int i = 0; i < R; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              if (GEMV_M_TILE == 1 && e % 2 == 1) continue;  // batch row 2 t + 1: never written
              acc[i][nt][e] = fmaf(s[i][e / 2], fmaf(-bz[i][e / 2], xs[e], d[i][e]), acc[i][nt][e]);
            }
        }
      }
      __syncwarp();  // every lane is done with this slot before the next issue refills it
    }
  }
  async_wait<0>();  // nothing in flight past the end (the empty groups of the last issues)
#if !GEMV_PDL
  allow_next_grid();
#endif

  finish_tc_tiles<R, NT, KW, GEMV_THREADS>(seg, acc, row0, m, n, partials, tickets);
}
