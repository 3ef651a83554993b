// gemv_tcal.cu, tensor cores on rows that are not 16-byte aligned (the tensor-core family's "al"):
// Y = X W^T for m <= GEMV_M_TILE tokens (bf16 or fp16), W row-major N x K with any row stride ld,
// W and x aligned to the element only (K = 4099, or a view into a wider matrix).
//
// A kernel template: compiles alone (nvcc -arch=sm_90 -c templates/gemv_tcal.cu, which includes
// prelude.cu); the generator prepends #defines for one KernelConfig and the prelude's text.
//
// Why: gemv_tc.cu loads 16 bytes of a row a lane, so its rows must start on 16 bytes. Without
// it misaligned rows ran on CUDA cores (gemv.cu's aligned body), whose M FMAs a weight made
// 4097x4099 at M = 16 take 107.7 us on an H100 against cuBLAS's 41.5 (docs/batch.md).
//
// How: a row that starts o elements past a 16-byte boundary (o = 0..7) is read in whole aligned
// 16-byte blocks, block b holding its K positions 8 b - o .. 8 b - o + 7. Rows r and r + 8 are
// 8 ld elements = a multiple of 16 bytes apart, so they share o: a tile takes the 16 rows c, c +
// 8, ..., c + 120 of a 128-row band (c = 0..7), one o for all its lanes, and the weights stream
// into the mma as they are, in gemv_tc.cu's lane order (lane g, t holds rows g and g + 8 of the
// tile, 16 bytes of each at block 4 j + t of chunk j). x, the B operand shared by the tile's
// rows, is brought to those K positions instead: each lane loads the two aligned blocks of its
// batch row around them and funnel-shifts by (p - o) mod 8 elements (p: the x row's own offset),
// about 19 instructions per 16 bytes of x. A warp's R tiles take residue c of R consecutive
// bands (rows 128 apart share o too), so one realigned x serves them all.
//
// Edges: a row's first block holds o elements before the row and its last the next row's (or
// bytes past the matrix), so the chunks that hold them are read element by element with zeros
// outside [0, K), in W and in x (never NaN from memory outside the row).
//
// Layout: row set s (= block x (warps / k_warps) + the warp's row set) is residue s % 8 of bands
// (s / 8) R .. (s / 8) R + R - 1; the grid has 8 ceil(N / 128 R) row sets (row_blocks), and
// finish_tc_tiles_at puts each output at its row. Rows of one warp must share o, so fused
// segments start on multiples of 128 R rows (jit/gemv_launch.cpp checks).

#ifndef GEMV_THREADS
#define GEMV_THREADS 256
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
#ifndef GEMV_M_TILE
#define GEMV_M_TILE 16
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_tcal_kernel
#endif
#ifndef GEMV_DTYPE
#define GEMV_DTYPE 2
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
#define GEMV_ROW_SETS (GEMV_WARPS / GEMV_K_WARPS)  // row sets a block
#define GEMV_N_TILES ((GEMV_M_TILE + 7) / 8)      // batch rows g + 8 nt a lane loads x for

// Elements s .. s + 7 (s = 0..7) of the 16 in blocks lo, hi: words s / 2 .. s / 2 + 4, shifted
// by one element where s is odd (element 2 w is word w's low half).
__device__ __forceinline__ uint4 window16(const uint4& lo, const uint4& hi, int s) {
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int q = s >> 1;
  unsigned a[5];
#pragma unroll
  for (int i = 0; i < 5; ++i) a[i] = q == 0 ? w[i] : q == 1 ? w[i + 1] : q == 2 ? w[i + 2] : w[i + 3];
  const unsigned sh = (s & 1) * 16;
  return make_uint4(__funnelshift_r(a[0], a[1], sh), __funnelshift_r(a[1], a[2], sh), __funnelshift_r(a[2], a[3], sh),
                    __funnelshift_r(a[3], a[4], sh));
}

// Offset of p within its 16-byte block, in elements.
__device__ __forceinline__ int block_offset(const elem_t* p) {
  return static_cast<int>(reinterpret_cast<unsigned long long>(p) >> 1) & 7;
}

extern "C" __global__ void __launch_bounds__(GEMV_THREADS, 1)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, NT = GEMV_N_TILES;
  constexpr int CHUNK = 32;  // K positions of a chunk: 4 lanes x one 16-byte block
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int kw = warp % KW, row_group = warp / KW;
  const int set = blockIdx.x * GEMV_ROW_SETS + row_group;
  // Tile i: rows r0(i) + 8 rr, in band (set / 8) R + i.
  const auto tile_row0 = [&](int i) { return 128 * ((set / 8) * R + i) + set % 8; };

  // Slices start on 128-byte lines (whole blocks and chunks). A slice [kb, ke) reads a row's
  // blocks kb / 8 .. ke / 8 - 1 (the last slice: up to the row's last block, ceil((K + o) / 8)),
  // K positions kb - o .. ke - o - 1: consecutive slices meet.
  const KSlice slice = split_k_slice<128 / GEMV_ESIZE>(k);
  const int kb = slice.begin, ke = slice.end;

  // This lane's rows g and g + 8 of each tile at K = 0 (rows past N read row N - 1, whose own
  // offset only places its loads, and are never written), and o, the warp's rows' offset.
  const elem_t* wrow[R][2];
  int o = 0;
  const auto point = [&](const WarpRows& rows) {
    o = block_offset(row_weights(rows, min(tile_row0(0), n - 1)));
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) wrow[i][h] = row_weights(rows, min(tile_row0(i) + 8 * (g + 8 * h), n - 1));
  };
  with_rows(seg, min(tile_row0(0), n - 1), min(tile_row0(R - 1) + 120, n - 1), point);
  // Aligned loads: block kb / 8 + t of each row, chunk j 32 elements on.
  const elem_t* wa[R][2];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) wa[i][h] = wrow[i][h] - block_offset(wrow[i][h]) + kb + 8 * t;

  // x: batch row 8 nt + g. Its blocks around K position 8 b - o start d = p - o elements on
  // from block b (p: the x row's offset): block b + floor(d / 8), shifted by s = d mod 8. Batch
  // rows at or past m read row 0 in the fast loop: they only make outputs of columns that are
  // never written (B's column g feeds D's column g alone), and a branch around their loads kept
  // the compiler from issuing a run's x loads together.
  const elem_t* xrow[NT];
  const elem_t* xa[NT];
  int xs[NT], xh[NT];  // the shift, and where the second block is (0: not needed, read the first)
  bool xok[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    xok[nt] = 8 * nt + g < m;
    xrow[nt] = x + (xok[nt] ? (8 * nt + g) * ldx : 0);
    const int p = block_offset(xrow[nt]), d = p - o;
    xs[nt] = d & 7;
    xh[nt] = xs[nt] ? 8 : 0;
    xa[nt] = xrow[nt] - p + (d < 0 ? -8 : 0) + kb + 8 * t;
  }

  // Chunks of this slice: j0 .. j1 - 1 have every block inside [0, K) (the fast loop); chunk 0
  // of the first slice where o > 0, and j1 .. jn - 1, go by elements. An empty slice (kb == ke
  // == K, splits past K) has none.
  const bool any = kb < ke, last_slice = ke == k;
  const int inner_end = last_slice ? (k + o) / 8 : ke / 8;  // first block not whole inside
  const int blocks_end = last_slice ? (k + o + 7) / 8 : ke / 8;
  const int j0 = any && kb == 0 && o > 0 ? 1 : 0;
  const int j1 = any ? max(j0, (inner_end - kb / 8) / 4) : 0;
  const int jn = any ? (blocks_end - kb / 8 + 3) / 4 : 0;

  float acc[R][NT][4], acc2[R][NT][4];  // two mma chains a tile (the prelude's mma_chunk says why)
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][nt][j] = acc2[i][nt][j] = 0.f;

  bool waited = !GEMV_PDL;
#if GEMV_PDL
  allow_next_grid();  // see gemv.cu: successors fill free slots while this grid drains
#endif
  const bool active = tile_row0(0) < n;
  const uint4 zero = make_uint4(0, 0, 0, 0);

  // The work of a row set: `runs` runs of U whole chunks, the KW warps taking turns, then
  // `singles` whole chunks one at a time and `edges` edge chunks, one a warp in turn from the
  // first warp that had a run fewer (warp runs % KW): each is a round trip to memory at the end
  // of a warp's work, and the call waits for the warp with most. 4097x4099 at kw8 u4 (127 whole
  // chunks: 31 runs, 3 singles, 2 edges) gave warp 0 six trips where warp 7 had three.
  const int runs = (j1 - j0) / U, singles = j1 - j0 - runs * U;
  const int turn = (kw - runs % KW + KW) % KW;               // this warp's place in the turns
  const int first_edge = ((turn - singles) % KW + KW) % KW;  // its first edge (turns go on after the singles)
  // The edge chunks' weights (read element by element after the loop) are asked of L2 now, so
  // that those loads wait for L2 rather than HBM at the end of a warp's work.
  const int edges = j0 + max(0, jn - j1);
  const auto edge_chunk = [&](int e) { return e < j0 ? 0 : j1 + e - j0; };
  if (active)
    for (int e = first_edge; e < edges; e += KW) {
      const int k0 = min(max(kb + edge_chunk(e) * CHUNK + 8 * t - o, 0), k - 1);
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) prefetch_l2(wrow[i][h] + k0);
    }
  if (active) {
    // Runs of U chunks, the KW warps of a row set taking turns (as gemv_tc.cu): every load of
    // a run, W's then x's, before its first mma.
    for (int run = kw; run < runs; run += KW) {
      const int c0 = j0 + run * U;
      uint4 wv[U][R][2];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int h = 0; h < 2; ++h) wv[u][i][h] = load_tc_weights(wa[i][h] + (c0 + u) * CHUNK);
      if (!waited) {
        wait_for_previous_grid();
        waited = true;
      }
      // x: every block of the run first, then the windows (in a run's loop of load, shift,
      // load, shift each shift waited for its load: 4 round trips to L1 a run).
      uint4 xv[U][NT], xn[U][NT];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
          const elem_t* p = xa[nt] + (c0 + u) * CHUNK;
          xv[u][nt] = load_x(p);
          xn[u][nt] = load_x(p + xh[nt]);
        }
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) xv[u][nt] = window16(xv[u][nt], xn[u][nt], xs[nt]);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int i = 0; i < R; ++i)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) mma_chunk(acc[i][nt], acc2[i][nt], wv[u][i][0], wv[u][i][1], xv[u][nt]);
    }
    // Fewer than U whole chunks left: one at a time, the warps taking turns.
    for (int c = j0 + runs * U + turn; c < j1; c += KW) {
      uint4 wv[R][2];
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) wv[i][h] = load_tc_weights(wa[i][h] + c * CHUNK);
      if (!waited) {
        wait_for_previous_grid();
        waited = true;
      }
      uint4 xv[NT];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const elem_t* p = xa[nt] + c * CHUNK;
        xv[nt] = window16(load_x(p), load_x(p + xh[nt]), xs[nt]);
      }
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) mma_chunk(acc[i][nt], acc2[i][nt], wv[i][0], wv[i][1], xv[nt]);
    }
  }
  if (!waited) wait_for_previous_grid();
  if (active) {
    // The edge chunks, element by element: this lane's block of chunk j holds K positions
    // kb + 32 j + 8 t - o .. + 7.
    for (int e = first_edge; e < edges; e += KW) {
      const int k0 = kb + edge_chunk(e) * CHUNK + 8 * t - o;
      uint4 xv[NT];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) xv[nt] = xok[nt] ? load_window<true>(xrow[nt] + k0, k0, k) : zero;
#pragma unroll
      for (int i = 0; i < R; ++i) {
        const uint4 lo = load_window<false>(wrow[i][0] + k0, k0, k), hi = load_window<false>(wrow[i][1] + k0, k0, k);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) mma_chunk(acc[i][nt], acc2[i][nt], lo, hi, xv[nt]);
      }
    }
  }
#if !GEMV_PDL
  allow_next_grid();
#endif

#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) acc[i][nt][j] += acc2[i][nt][j];
  // Block row q (the warp's row set x 16 R + 16 i + fragment row rr) is row tile_row0(i) + 8 rr
  // of its row set.
  const int set0 = blockIdx.x * GEMV_ROW_SETS;
  const auto row_of = [set0](int q) {
    const int s = set0 + q / (16 * R), i = q / 16 % R, rr = q % 16;
    return 128 * ((s / 8) * R + i) + s % 8 + 8 * rr;
  };
  finish_tc_tiles_at<R, NT, KW, GEMV_THREADS>(seg, acc, row_of, m, n, partials, tickets);
}
