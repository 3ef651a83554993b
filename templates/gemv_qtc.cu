// gemv_qtc.cu, int4 weights on tensor cores: Y = X W^T with W in int4g128 (docs/weights.md: a
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
// Loads without shared memory, as in gemv_tc.cu: lane (g = lane / 4, t = lane % 4) owns rows g
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
// Work layout: a warp owns GEMV_ROWS_PER_WARP 16-row tiles; GEMV_K_WARPS warps share a row set
// and take turns along K in runs of GEMV_UNROLL chunks; gridDim.y blocks split K.

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
#define GEMV_UNROLL 2
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
// Split boundaries fall on 128-byte lines of weights (256 elements, two groups).
#define GEMV_SPLIT_ALIGN 256

#if GEMV_DTYPE == 1
#define GEMV_QTC_BIAS 0x64006400u  // fp16 1024 + q
#define GEMV_QTC_BIAS_F 1024.f
#define GEMV_QTC_ONES 0x3C003C00u  // fp16 1.0, 1.0
#else
#define GEMV_QTC_BIAS 0x43004300u  // bf16 128 + q
#define GEMV_QTC_BIAS_F 128.f
#define GEMV_QTC_ONES 0x3F803F80u  // bf16 1.0, 1.0
#endif

// d += a * b for one m16n8k16 tile, fp32 accumulators.
__device__ __forceinline__ void qtc_mma(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                        unsigned b1) {
#if GEMV_DTYPE == 1
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}

// Nibbles i and i + 4 of w as a pair of 16-bit values B + q.
__device__ __forceinline__ unsigned qtc_pair(unsigned w, int i) {
  return ((w >> (4 * i)) & 0x000F000Fu) | GEMV_QTC_BIAS;
}

// X's pairs in the weights' K order for one 16-byte load (8 elements of one batch row):
// xp[i] = (x[i], x[i + 4]) for i = 0..3.
__device__ __forceinline__ void qtc_x_pairs(const uint4& v, unsigned* xp) {
  xp[0] = __byte_perm(v.x, v.z, 0x5410);
  xp[1] = __byte_perm(v.x, v.z, 0x7632);
  xp[2] = __byte_perm(v.y, v.w, 0x5410);
  xp[3] = __byte_perm(v.y, v.w, 0x7632);
}

extern "C" __global__ void __launch_bounds__(GEMV_THREADS, 1)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, NT = GEMV_N_TILES;
  constexpr int CHUNK = GEMV_QTC_CHUNK;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * GEMV_WARP_ROWS;

  const int splits = gridDim.y;
  int per_split = (k + splits - 1) / splits;
  per_split = (per_split + GEMV_SPLIT_ALIGN - 1) / GEMV_SPLIT_ALIGN * GEMV_SPLIT_ALIGN;
  const int kb = min(k, static_cast<int>(blockIdx.y) * per_split);
  const int ke = min(k, kb + per_split);
  const int chunks = (ke - kb) / CHUNK;  // K is a multiple of the group: no partial chunk
  const long long groups_per_row = k / CHUNK;

  // Rows g and g + 8 of each tile; rows past N read row N-1 and are never written.
  QuantRow qr[R][2];
  const unsigned char* wr[R][2];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      qr[i][h] = quant_row(seg, min(row0 + 16 * i + 8 * h + g, n - 1));
      wr[i][h] = qr[i][h].q + q_byte(kb + 32 * t);
    }
  // Batch row 8 nt + g of X; rows at or past m feed zeros (warp-divergent loads, uniform mma).
  const elem_t* xr[NT];
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    xok[nt] = 8 * nt + g < m;
    xr[nt] = x + (xok[nt] ? (8 * nt + g) * ldx : 0) + kb + 32 * t;
  }

  float acc[R][NT][4];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][nt][j] = 0.f;

  // One chunk (group) of this warp's tiles: weights wv, their groups' factors gv.
  const auto consume = [&](const uint4 (*wv)[2], const QuantGroup (*gv)[2], int c) {
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      const uint4 zero = make_uint4(0, 0, 0, 0);
      float xs[4] = {0.f, 0.f, 0.f, 0.f};  // sum of x over the group (the D of A = 1)
      float d[R][4];
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) d[i][j] = 0.f;
#pragma unroll
      for (int q = 0; q < 4; ++q) {  // word q of each lane's load: 8 weights per row
        const uint4 xv = xok[nt] ? load_x(xr[nt] + c * CHUNK + 8 * q) : zero;
        unsigned xp[4];
        qtc_x_pairs(xv, xp);
        qtc_mma(xs, GEMV_QTC_ONES, GEMV_QTC_ONES, GEMV_QTC_ONES, GEMV_QTC_ONES, xp[0], xp[1]);
        qtc_mma(xs, GEMV_QTC_ONES, GEMV_QTC_ONES, GEMV_QTC_ONES, GEMV_QTC_ONES, xp[2], xp[3]);
#pragma unroll
        for (int i = 0; i < R; ++i) {
          const unsigned lo = q == 0 ? wv[i][0].x : q == 1 ? wv[i][0].y : q == 2 ? wv[i][0].z : wv[i][0].w;
          const unsigned hi = q == 0 ? wv[i][1].x : q == 1 ? wv[i][1].y : q == 2 ? wv[i][1].z : wv[i][1].w;
          qtc_mma(d[i], qtc_pair(lo, 0), qtc_pair(hi, 0), qtc_pair(lo, 1), qtc_pair(hi, 1), xp[0], xp[1]);
          qtc_mma(d[i], qtc_pair(lo, 2), qtc_pair(hi, 2), qtc_pair(lo, 3), qtc_pair(hi, 3), xp[2], xp[3]);
        }
      }
      // D fragment j: row g + 8 (j / 2) of the tile, batch row 8 nt + 2 t + j % 2.
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const QuantGroup& q = gv[i][j / 2];
          const float s = elem_to_float(q.scale), z = elem_to_float(q.zero);
          acc[i][nt][j] = fmaf(s, fmaf(-(GEMV_QTC_BIAS_F + z), xs[j], d[i][j]), acc[i][nt][j]);
        }
    }
  };

  bool waited = !GEMV_PDL;
#if GEMV_PDL
  allow_next_grid();  // see gemv.cu: successors fill free slots while this grid drains
#endif
  const bool active = row0 < n;

  // Runs of U consecutive chunks per warp, the warps of a row set taking turns (gemv_tc.cu).
  const int runs = chunks / U;
  if (active) {
    for (int run = kw; run < runs; run += KW) {
      const int c0 = run * U;
      uint4 wv[U][R][2];
      QuantGroup gv[U][R][2];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            wv[u][i][h] = load_weights(reinterpret_cast<const elem_t*>(wr[i][h] + q_byte((c0 + u) * CHUNK)));
            gv[u][i][h] = q_group(qr[i][h], groups_per_row, (kb + (c0 + u) * CHUNK) / CHUNK);
          }
      if (!waited) {
        wait_for_previous_grid();
        waited = true;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) consume(wv[u], gv[u], c0 + u);
    }
  }
  if (!waited) wait_for_previous_grid();
  if (active) {
    // Fewer than U chunks left after the runs: one at a time, spread over the warps.
    for (int c = runs * U + kw; c < chunks; c += KW) {
      uint4 wv[R][2];
      QuantGroup gv[R][2];
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          wv[i][h] = load_weights(reinterpret_cast<const elem_t*>(wr[i][h] + q_byte(c * CHUNK)));
          gv[i][h] = q_group(qr[i][h], groups_per_row, (kb + c * CHUNK) / CHUNK);
        }
      consume(wv, gv, c);
    }
  }
#if !GEMV_PDL
  allow_next_grid();
#endif

  finish_tc_tiles<R, NT, KW, GEMV_THREADS>(seg, acc, row0, m, n, partials, tickets);
}
