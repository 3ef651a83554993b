// gemv_tc.cu, the tensor-core family: Y = X W^T for m <= GEMV_M_TILE tokens (bf16 or fp16),
// with mma.sync m16n8k16 and fp32 accumulation. W is row-major N x K with row stride ld; X is
// m x K with row stride ldx; Y is m x N with row stride ldy; fused segments as in gemv.cu.
//
// A kernel template: compiles alone (nvcc -arch=sm_90 -c templates/gemv_tc.cu, which includes
// prelude.cu); the generator prepends #defines for one KernelConfig and the prelude's text.
//
// Why tensor cores: at m = 16 every weight element feeds 16 products, and on CUDA cores the
// conversions and FMAs then cost about as much time as streaming the weights. One mma does
// 16 x 8 x 16 products per instruction, so the kernel stays bound by the weight stream.
//
// The product is D (W rows x batch) = W (rows x K) * X^T (K x batch): W is the A operand (a
// 16-row tile per mma), X the B operand (one n8 tile for m <= 8, two for m <= 16).
//
// Loads without shared memory: the mma fragment gives lane (g = lane / 4, t = lane % 4) of
// A the K positions {2t, 2t+1, 2t+8, 2t+9} of rows g and g+8, and of B the same K positions of
// column (batch row) g. The order of K inside a dot product is free as long as W and X use the
// same one, so each lane loads 16 contiguous bytes (8 elements) of its W rows and of its X row
// at K offset 8t of a 32-element chunk, and feeds words 0-1 to one mma step and words 2-3 to
// the next. The 4 lanes of a row read 64 contiguous bytes; U consecutive chunks are in flight
// per row.
//
// Work layout: a warp owns GEMV_ROWS_PER_WARP 16-row tiles; GEMV_K_WARPS warps share one row
// set and take turns along K in runs of U chunks; gridDim.y blocks split K (finish_block
// combines in fixed order).
//
// 8-row tiles (GEMV_TC_W8, the "w8" knob, dense weights): the operands swap, D (batch x W rows)
// = X (batch x K) * W^T (K x 8 rows), X the A operand (batch rows g and g + 8) and W the B
// operand (row g), with the same K positions per lane, so each lane loads 16 bytes of one W
// row and of its two X rows. A tile is then 8 rows of W: twice the tiles of the 16-row layout,
// so a small N still spreads over the SMs without split-K (1024 rows: 128 tiles, not 64). At
// m <= 8 the A operand's rows g + 8 are zeros; each tile costs two mma per chunk whatever m.
//
// 8-bit weights (GEMV_WFORMAT 1, 2, 3: int8, fp8 e4m3 with a scale per row or per tensor; the
// prelude's quantized formats): the same loads and mma, with W's 16 bytes a lane holding 16
// weights, so a chunk is 64 elements of a row (4 lanes x 16) and each lane converts its bytes
// into two 8-element halves in the activation dtype (tc8_half) and loads X for both (K offsets
// 16 t and 16 t + 8). The conversion is exact: int8 -> fp16 by a byte permute under 1024 and one
// subtract per pair; int8 -> bf16 by two LOP3s under 128 and one subtract per pair; fp8 -> fp16 by
// the hardware's e4m3x2 conversion; fp8 -> bf16 through fp32 and a pack. The row's scale
// multiplies the accumulators at the end. Why: on CUDA cores (gemv_q.cu)
// every weight costs an FMA per batch row, and at M = 16 the 8-bit kernels ran at 0.17-0.28x
// bf16 cuBLAS on the H200; here the products are the mma's whatever M.
//
// int4g128 weights (GEMV_WFORMAT 4, the tuner's int4 tensor-core configs without ring at m tile
// > 1; at m tile 1 they run gemv_q4l.cu's whole-line loads): the same loads, each lane's 16
// bytes now 32 four-bit weights, so a chunk is 128 elements of a row, one group. The pairs, x's
// matching permutes, the zero points through a second mma with A = 1 and the group's scale are
// gemv_qtc.cu's (i4_chunk); what differs is that the chunks in flight are in registers, U per row
// as for dense weights, where gemv_qtc.cu's ring copies them through shared memory by cp.async.
// On the H200 neither wins everywhere (bench/results/h200.md, 2026-12-01: registers 31.9 us on
// 16x28672x4096 against 38.5), so the tuner measures both.

#ifndef GEMV_THREADS
#define GEMV_THREADS 128
#endif
#ifndef GEMV_ROWS_PER_WARP
#define GEMV_ROWS_PER_WARP 1  // 16-row tiles per warp
#endif
#ifndef GEMV_K_WARPS
#define GEMV_K_WARPS 1
#endif
#ifndef GEMV_UNROLL
#define GEMV_UNROLL 2
#endif
#ifndef GEMV_PREFETCH_L2
#define GEMV_PREFETCH_L2 0
#endif
#ifndef GEMV_M_TILE
#define GEMV_M_TILE 16
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_tc_kernel
#endif
#ifndef GEMV_DTYPE
#define GEMV_DTYPE 2
#endif
#ifndef GEMV_WFORMAT
#define GEMV_WFORMAT 0  // dense; 1, 2, 3: 8-bit weights (see above)
#endif
#ifndef GEMV_TC_W8
#define GEMV_TC_W8 0  // 1: 8-row tiles, W the mma's B operand (see above)
#endif
#if GEMV_TC_W8 && GEMV_WFORMAT != 0
#error "8-row tiles (w8) take dense weights"
#endif
#if GEMV_WFORMAT == 4 && GEMV_GROUP != 128
#error "int4 on tensor cores takes int4g128 weights"
#endif
#if GEMV_DTYPE == 0
#error "the tensor-core family takes bf16 or fp16"
#endif
#undef GEMV_VEC_BYTES
#define GEMV_VEC_BYTES 16

#ifndef GEMV_PRELUDE
#include "prelude.cu"
#endif

#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_TILE_ROWS (GEMV_TC_W8 ? 8 : 16)
#define GEMV_TILE_LOADS (GEMV_TC_W8 ? 1 : 2)  // W rows a lane loads per tile: g (and g + 8)
#define GEMV_WARP_ROWS (GEMV_TILE_ROWS * GEMV_ROWS_PER_WARP)
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_WARP_ROWS)
#define GEMV_N_TILES ((GEMV_M_TILE + 7) / 8)  // batch rows g + 8 nt a lane loads X for
#define GEMV_ACC_TILES (GEMV_TC_W8 ? 1 : GEMV_N_TILES)  // D fragments per W tile
#if GEMV_WFORMAT == 0
#define GEMV_TC_CHUNK 32  // elements of one row a warp-wide load covers (4 lanes x 8)
#define GEMV_SPLIT_ALIGN (128 / GEMV_ESIZE)  // split boundaries fall on 128-byte lines
typedef elem_t welem_t;
#define GEMV_TC_STEP GEMV_TC_CHUNK  // welem_t per chunk of a row
#elif GEMV_WFORMAT == 4
#define GEMV_TC_CHUNK 128  // 4 lanes x 32 four-bit weights: one int4g128 group
#define GEMV_SPLIT_ALIGN 256
#define GEMV_TC_STEP 64
typedef unsigned char welem_t;
#else
#define GEMV_TC_CHUNK 64  // 4 lanes x 16 one-byte weights
#define GEMV_SPLIT_ALIGN 128
#define GEMV_TC_STEP 64
typedef unsigned char welem_t;
#endif
#define GEMV_TC_XV (GEMV_TC_CHUNK / 32)  // 16-byte loads of X per chunk and batch tile

#if GEMV_WFORMAT != 0 && GEMV_WFORMAT != 4
// Half s (weights 8 s .. 8 s + 7) of a lane's 16 bytes of 8-bit weights, as the 16 bytes of 8
// elements of the activation dtype, pairs in K order with the first in the low half (the mma's
// order, as X's words). Exact either way.
__device__ __forceinline__ uint4 tc8_half(const uint4& v, int s) {
  const unsigned words[2] = {s ? v.z : v.x, s ? v.w : v.y};
  unsigned r[4];
#pragma unroll
  for (int w = 0; w < 2; ++w) {
#if GEMV_DTYPE == 2 && GEMV_WFORMAT == 1
    // bf16 from int8 pairs, exact: b = (b & 0x7F) - 128 s (s: its sign bit). Byte b spread into
    // the low byte of a 16-bit half, under bf16's 128 (0x4300) its low 7 bits make 128 + (b & 0x7F)
    // and its sign bit alone makes 0x4380 (256) or 0x4300 (128): one LOP3 each and one bf16x2
    // subtract per pair, where the fp32 route below takes two permutes, two subtracts and a pack.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned spread = __byte_perm(words[w], 0u, h ? 0x4342 : 0x4140);  // bytes 2h, 2h + 1
      unsigned low7, sign;
      asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(low7) : "r"(spread), "r"(0x007F007Fu), "r"(0x43004300u));
      asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(sign) : "r"(spread), "r"(0x00800080u), "r"(0x43004300u));
      asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(r[2 * w + h]) : "r"(low7), "r"(sign));
    }
#elif GEMV_DTYPE == 2
    // bf16 has no room for an 8-bit magic number: the prelude's fp32 values, packed in pairs
    // (every e4m3 value is a bf16 value).
    float f[4];
    q_word_values(words[w], f);
#pragma unroll
    for (int h = 0; h < 2; ++h) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r[2 * w + h]) : "f"(f[2 * h + 1]), "f"(f[2 * h]));
#elif GEMV_WFORMAT == 1
    // fp16: 0x64 over (b + 128) is 1024 + b + 128, exact; one subtract of 1152 per pair leaves b.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned f = __byte_perm(words[w] ^ 0x80808080u, 0x64646464u, h ? 0x5342 : 0x5140);
      asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r[2 * w + h]) : "r"(f), "r"(0x64806480u));
    }
#else
    // fp16 from e4m3 pairs: the hardware's conversion.
    asm("{.reg .b16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n cvt.rn.f16x2.e4m3x2 %1, hi;}"
        : "=r"(r[2 * w]), "=r"(r[2 * w + 1]) : "r"(words[w]));
#endif
  }
  return make_uint4(r[0], r[1], r[2], r[3]);
}
#endif

// One chunk of a tile for every batch tile: lo/hi are the 16-byte loads of rows g and g+8,
// xv[nt] the GEMV_TC_XV loads of X of batch tile nt. 8-bit weights are converted once, whatever
// the batch tiles (in the loop over them, the PTX of m tile 16 held every conversion twice).
template <int NT, int XV>
__device__ __forceinline__ void mma_tile_chunk(float (&d0)[NT][4], float (&d1)[NT][4], const uint4& lo, const uint4& hi,
                                               const uint4 (&xv)[NT][XV]) {
#if GEMV_WFORMAT == 0
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) mma_chunk(d0[nt], d1[nt], lo, hi, xv[nt][0]);
#elif GEMV_WFORMAT == 4
  static_cast<void>(d0), static_cast<void>(d1), static_cast<void>(lo), static_cast<void>(hi), static_cast<void>(xv);
#else
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const uint4 a = tc8_half(lo, s), b = tc8_half(hi, s);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) mma_chunk(d0[nt], d1[nt], a, b, xv[nt][s]);
  }
#endif
}

// One chunk of one tile, whichever tile layout: w this lane's 16-byte loads of the tile's rows
// (g and g + 8, or g alone with 8-row tiles), xv[nt] the loads of X of batch rows g + 8 nt.
template <int NT, int XV>
__device__ __forceinline__ void tile_chunk(float (&d0)[GEMV_ACC_TILES][4], float (&d1)[GEMV_ACC_TILES][4],
                                           const uint4 (&w)[GEMV_TILE_LOADS], const uint4 (&xv)[NT][XV]) {
#if GEMV_TC_W8
  // A = X: a0/a2 batch row g, a1/a3 row g + 8 (zeros at m tile <= 8); B = W row g.
  const uint4 lo = xv[0][0], hi = NT > 1 ? xv[NT - 1][0] : make_uint4(0, 0, 0, 0);
  mma_16816(d0[0], lo.x, hi.x, lo.y, hi.y, w[0].x, w[0].y);
  mma_16816(d1[0], lo.z, hi.z, lo.w, hi.w, w[0].z, w[0].w);
#else
  mma_tile_chunk<NT, XV>(d0, d1, w[0], w[1], xv);
#endif
}

#if GEMV_WFORMAT == 4
// One int4g128 chunk (one group of 128 elements of K) of R tiles for every batch tile: w[i][h]
// this lane's 16 bytes of rows g and g + 8 of tile i (32 weights each), xv[nt][qq] the 8 x
// elements at K offset 32 t + 8 qq of batch tile nt, f[i] this lane's factor of tile i's group
// (t = 0: scale of row g, 1: zero of row g, 2: scale of row g + 8, 3: zero of row g + 8, shared
// by shuffles). As in gemv_qtc.cu: word qq's nibbles i and i + 4 make a pair B + q by one LOP3,
// x's pairs are permuted to match, and a second mma with A = 1 gives the group's sum of x, so
// that s (D - (B + z) sum x) = s sum (q - z) x without a subtract per weight.
template <int R, int NT>
__device__ __forceinline__ void i4_chunk(float (&acc)[R][NT][4], const uint4 (&w)[R][2], const uint4 (&xv)[NT][4],
                                         const unsigned (&f)[R], int lane, unsigned ones, unsigned mask,
                                         unsigned bias) {
  float xs[NT][4], d[R][NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      xs[nt][e] = 0.f;
#pragma unroll
      for (int i = 0; i < R; ++i) d[i][nt][e] = 0.f;
    }
#pragma unroll
  for (int qq = 0; qq < 4; ++qq) {
    unsigned a[R][8];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const unsigned lo = qq == 0 ? w[i][0].x : qq == 1 ? w[i][0].y : qq == 2 ? w[i][0].z : w[i][0].w;
      const unsigned hi = qq == 0 ? w[i][1].x : qq == 1 ? w[i][1].y : qq == 2 ? w[i][1].z : w[i][1].w;
#pragma unroll
      for (int p = 0; p < 4; ++p) a[i][2 * p] = i4_pair(lo, p, mask, bias), a[i][2 * p + 1] = i4_pair(hi, p, mask, bias);
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      unsigned xp[4];
      i4_x_pairs(xv[nt][qq], xp);
      mma_16816(xs[nt], ones, ones, ones, ones, xp[0], xp[1]);
      mma_16816(xs[nt], ones, ones, ones, ones, xp[2], xp[3]);
#pragma unroll
      for (int i = 0; i < R; ++i) {
        mma_16816(d[i][nt], a[i][0], a[i][1], a[i][2], a[i][3], xp[0], xp[1]);
        mma_16816(d[i][nt], a[i][4], a[i][5], a[i][6], a[i][7], xp[2], xp[3]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i) {
    float sc[2], bz[2];
    i4_group_factors(elem_bits_to_float(f[i]), lane, sc, bz);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][nt][e] = fmaf(sc[e / 2], fmaf(-bz[e / 2], xs[nt][e], d[i][nt][e]), acc[i][nt][e]);
  }
}
#endif

#if GEMV_WFORMAT != 0 && GEMV_WFORMAT != 4
// 16 one-byte weights at p[0..15], those at or past `count` zero (int8 0 and e4m3 +0); the
// prelude's load_window reads 16-bit elements likewise.
__device__ __forceinline__ uint4 load_partial(const unsigned char* p, int count) {
  unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
  for (int j = 0; j < 16; ++j)
    if (j < count) w[j / 4] |= unsigned(p[j]) << (8 * (j % 4));
  return make_uint4(w[0], w[1], w[2], w[3]);
}
#endif

// The register cap (the "rc" knob, quantized weights at m tile > 1): ask ptxas for the blocks an
// SM holds at GEMV_TC_REG_CAP registers a thread. 8-bit tiles at m tile 16 take 156-241
// registers, so 128-thread blocks fit three an SM; capped at 128 (spilling 8-40 bytes at one or
// two tiles a warp) they fit four, and on the H200 16x28672x4096 fp8 ran 34.0 us against the
// uncapped best 37.0, 16x14336x4096 18.5 against 19.9; the best of 16x6144x4096 int8 spilled
// there and lost, so the tuner measures the capped twins beside their configs
// (bench/results/h200.md, 2026-12-04 14:30).
#ifdef GEMV_TC_REG_CAP
#define GEMV_TC_MIN_BLOCKS GEMV_BLOCKS_AT_REGISTERS(GEMV_TC_REG_CAP)
#else
#define GEMV_TC_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(GEMV_THREADS, GEMV_TC_MIN_BLOCKS)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, NT = GEMV_N_TILES;
  constexpr int CHUNK = GEMV_TC_CHUNK, XV = GEMV_TC_XV;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * GEMV_WARP_ROWS;

  const KSlice slice = split_k_slice<GEMV_SPLIT_ALIGN>(k);
  const int kb = slice.begin, ke = slice.end;
  const int full_chunks = (ke - kb) / CHUNK;

  // Rows g and g+8 of each tile (g alone with 8-row tiles); rows past N read row N-1 and are
  // never written.
  constexpr int LANE_K = CHUNK / 4;  // elements of a row per lane and chunk
  constexpr int TL = GEMV_TILE_LOADS, TR = GEMV_TILE_ROWS, AT = GEMV_ACC_TILES;
  const welem_t* wr[R][TL];
#if GEMV_WFORMAT == 4
  // This lane's scale or zero of each tile (i4_lane_factors), one group per chunk.
  const elem_t* fp[R];
  // The mma's and LOP3's constant operands, made opaque from m so that they stay in registers
  // (as in gemv_qtc.cu).
  const unsigned opaque = static_cast<unsigned>(m) >> 31;  // 0: m >= 1
  const unsigned ones = GEMV_I4_ONES | opaque, mask = 0x000F000Fu | (opaque << 1), bias = GEMV_I4_BIAS | (opaque << 2);
#elif GEMV_WFORMAT != 0
  float scale[R][2];  // the rows' scales (int8, fp8) or the tensor's (fp8t)
#endif
  const auto point = [&](const WarpRows& rows) {  // with_rows says why
#pragma unroll
    for (int i = 0; i < R; ++i) {
#if GEMV_WFORMAT == 4
      fp[i] = i4_lane_factors(rows, row0 + 16 * i, g, t, n, k, kb);
#endif
#pragma unroll
      for (int h = 0; h < TL; ++h) {
#if GEMV_WFORMAT == 0
        wr[i][h] = row_weights(rows, min(row0 + TR * i + 8 * h + g, n - 1)) + kb + t * LANE_K;
#elif GEMV_WFORMAT == 4
        wr[i][h] = quant_row(rows, min(row0 + 16 * i + 8 * h + g, n - 1)).q + q_byte(kb + t * LANE_K);
#else
        const QuantRow qr = quant_row(rows, min(row0 + 16 * i + 8 * h + g, n - 1));
        wr[i][h] = qr.q + kb + t * LANE_K;
        scale[i][h] = q_row_scale(qr);
#endif
      }
    }
  };
  with_rows(seg, min(row0, n - 1), min(row0 + GEMV_WARP_ROWS - 1, n - 1), point);
  // Batch row 8 nt + g of X; rows at or past m feed zeros (warp-divergent loads, uniform mma).
  const elem_t* xr[NT];
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    xok[nt] = 8 * nt + g < m;
    xr[nt] = x + (xok[nt] ? (8 * nt + g) * ldx : 0) + kb + t * LANE_K;
  }

  float acc[R][AT][4], acc2[R][AT][4];  // the two mma chains of each tile (mma_chunk)
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < AT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][nt][j] = acc2[i][nt][j] = 0.f;

  bool waited = !GEMV_PDL;
#if GEMV_PDL
  allow_next_grid();  // see gemv.cu: successors fill free slots while this grid drains
#endif
  const bool active = row0 < n;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // Each warp takes U consecutive chunks per trip (a run of U x 64 contiguous bytes per row),
  // the warps of a row set taking turns: with chunks interleaved one by one, a row's bytes
  // came in 64-byte pieces from different warps, and the H200 streamed them ~8% slower.
  const int runs = full_chunks / U;
  if (active) {
    for (int run = kw; run < runs; run += KW) {
      const int c0 = run * U;
      uint4 wv[U][R][TL];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < TL; ++h) wv[u][i][h] = load_tc_weights(wr[i][h] + (c0 + u) * GEMV_TC_STEP);
#if GEMV_WFORMAT == 4
      unsigned fv[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int i = 0; i < R; ++i) fv[u][i] = load_elem_bits(fp[i] + c0 + u);
#endif
      if (!waited) {
#if GEMV_PREFETCH_L2
        // This warp's later runs: lane t asks for every 4th 128-byte line of each, per row.
        constexpr int LINE = 128 / static_cast<int>(sizeof(welem_t));  // elements of a line
#pragma unroll 1
        for (int later = run + KW; later < runs; later += KW)
#pragma unroll 1
          for (int e = t * LINE; e < U * CHUNK; e += 4 * LINE)
#pragma unroll
            for (int i = 0; i < R; ++i)
#pragma unroll
              for (int h = 0; h < TL; ++h) prefetch_l2(wr[i][h] - t * LANE_K + later * U * CHUNK + e);
#endif
        wait_for_previous_grid();
        waited = true;
      }
      uint4 xv[U][NT][XV];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int s = 0; s < XV; ++s) xv[u][nt][s] = xok[nt] ? load_x(xr[nt] + (c0 + u) * CHUNK + 8 * s) : zero;
#if GEMV_WFORMAT == 4
#pragma unroll
      for (int u = 0; u < U; ++u) i4_chunk<R, NT>(acc, wv[u], xv[u], fv[u], lane, ones, mask, bias);
#else
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int i = 0; i < R; ++i) tile_chunk<NT, XV>(acc[i], acc2[i], wv[u][i], xv[u]);
#endif
    }
    // Fewer than U chunks left after the runs, spread over the warps (c = runs U + kw, + KW,
    // ...: at most LU per warp), in one predicated trip with every load issued before the
    // first mma, as in a run. They used to go one chunk at a time, each waiting a whole round
    // trip to HBM: the same loop in the dense CUDA-core kernel made configs whose unrolled
    // stride does not divide K 1.3-2x slower on the H200 (bf16 256000 x 3584, 6-7 chunks a row:
    // 537 us against 400). Here a row has at most U - 1 of them; not yet measured. ok[u] is
    // the same on every lane (mma.sync takes the whole warp), and a chunk that is not ok is not
    // loaded. U = 1 leaves none.
    constexpr int LU = U > 1 ? (U - 2) / KW + 1 : 1;
    const int c0 = runs * U + kw;
    if (U > 1 && c0 < full_chunks) {
      bool ok[LU];
      uint4 wv[LU][R][TL];
#pragma unroll
      for (int u = 0; u < LU; ++u) {
        ok[u] = c0 + u * KW < full_chunks;
        if (ok[u])
#pragma unroll
          for (int i = 0; i < R; ++i)
#pragma unroll
            for (int h = 0; h < TL; ++h) wv[u][i][h] = load_tc_weights(wr[i][h] + (c0 + u * KW) * GEMV_TC_STEP);
      }
#if GEMV_WFORMAT == 4
      unsigned fv[LU][R];
#pragma unroll
      for (int u = 0; u < LU; ++u)
        if (ok[u])
#pragma unroll
          for (int i = 0; i < R; ++i) fv[u][i] = load_elem_bits(fp[i] + c0 + u * KW);
#endif
      if (!waited) {
        wait_for_previous_grid();
        waited = true;
      }
      uint4 xv[LU][NT][XV];
#pragma unroll
      for (int u = 0; u < LU; ++u)
        if (ok[u])
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int s = 0; s < XV; ++s)
              xv[u][nt][s] = xok[nt] ? load_x(xr[nt] + (c0 + u * KW) * CHUNK + 8 * s) : zero;
#pragma unroll
      for (int u = 0; u < LU; ++u)
        if (ok[u]) {
#if GEMV_WFORMAT == 4
          i4_chunk<R, NT>(acc, wv[u], xv[u], fv[u], lane, ones, mask, bias);
#else
#pragma unroll
          for (int i = 0; i < R; ++i) tile_chunk<NT, XV>(acc[i], acc2[i], wv[u][i], xv[u]);
#endif
        }
    }
  }
  if (!waited) wait_for_previous_grid();
  if (active) {
    // The last partial chunk (K or the split's end not a multiple of the chunk): element loads
    // with zeros past the end, by one warp of the row set.
    const int rest = GEMV_WFORMAT == 4 ? 0 : ke - kb - full_chunks * CHUNK;  // int4: K is whole groups
#if GEMV_WFORMAT != 4
    if (rest > 0 && kw == KW - 1) {
      const int off = full_chunks * CHUNK, count = rest - t * LANE_K;
      uint4 wv[R][TL];
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int h = 0; h < TL; ++h) {
#if GEMV_WFORMAT == 0
          wv[i][h] = load_window<false>(wr[i][h] + off, 0, count);
#else
          wv[i][h] = load_partial(wr[i][h] + off, count);
#endif
        }
      uint4 xv[NT][XV];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int s = 0; s < XV; ++s) xv[nt][s] = xok[nt] ? load_window<true>(xr[nt] + off + 8 * s, 0, count - 8 * s) : zero;
#pragma unroll
      for (int i = 0; i < R; ++i) tile_chunk<NT, XV>(acc[i], acc2[i], wv[i], xv);
    }
#else
    static_cast<void>(rest);
#endif
  }
#if !GEMV_PDL
  allow_next_grid();
#endif

#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < AT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        acc[i][nt][j] += acc2[i][nt][j];
#if GEMV_WFORMAT != 0 && GEMV_WFORMAT != 4
        acc[i][nt][j] *= scale[i][j / 2];  // D fragment j: row g + 8 (j / 2)
#endif
      }
  finish_tc_tiles<R, AT, KW, GEMV_THREADS, TR>(seg, acc, row0, m, n, partials, tickets);
}
