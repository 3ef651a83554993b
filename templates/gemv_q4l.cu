// gemv_q4l.cu, int4g128 weights on tensor cores at m = 1 with whole-line register loads: y = W x
// with W in int4g128 (docs/weights.md), x and y bf16 or fp16, mma.sync m16n8k16 with fp32
// accumulation. Fused segments, split-K and PDL as in the other families. The int4 tensor-core
// configs without ring at m tile 1 (gemv_tc.cu loads them at m > 1, gemv_qtc.cu's ring at any m).
//
// A kernel template: compiles alone (nvcc -arch=sm_90 -c templates/gemv_q4l.cu, which includes
// prelude.cu); the generator prepends #defines for one KernelConfig and the prelude's text.
//
// Why: gemv_tc.cu's lanes load 16 bytes of rows g and g + 8 each, so a load instruction asks for
// 64-byte halves of eight rows' lines; gemv_qtc.cu copies whole lines but through a cp.async
// ring, whose copies alone streamed 28672x4096 at 77% of the read ceiling on the H200. Here
// load p (0..3) of a stage takes rows 4 p + lane / 8 of a 16-row tile, 16 bytes at column
// lane % 8 of the stage's 128 bytes (two groups), straight into registers: every instruction
// asks for four whole 128-byte lines. With the arithmetic left out these loads streamed
// 28672x4096 at 85% of the read ceiling and 128256x4096 at the ceiling; with it, and the next
// trip's loads issued before this trip's arithmetic (two register sets), the standalone probe
// (bench/probes/int4_line_loads.cu) ran 128256x4096 in 71.4 us against the ring's 76.4. This
// kernel, with segments, split-K and PDL, beat the ring on 4096x14336 (12.9 against 14.7 us)
// and 4096x4096 and trailed it by 2-5% on the other preset shapes (128256x4096 77.8 against
// 75.7): bench/results/h200.md, 2026-12-02.
//
// The fragments: lane (g = lane / 4, t = lane % 4) holds, of chunk (group) g & 1 of the stage,
// the 32 weights at 32 t of rows a + 4 p (a = g / 2). An mma's A operand takes rows g and g + 8
// of a tile from each lane; here those "tile rows" are the lane's loads p and p + 2, so tile X
// (p = 0, 2) holds weight rows a and 8 + a, tile Y (p = 1, 3) rows 4 + a and 12 + a, each lane's
// rows from chunk g & 1. The rows of one mma thus mix two chunks of K. B's column n comes from
// lanes g = n: every lane supplies x of its own chunk, so column 0 carries chunk 0's x and
// column 1 chunk 1's (the other six columns are idle at m = 1 anyway), and tile row g reads
// D[g][g & 1]. Pairs, x's matching order, the bias trick and the group's scale and zero are
// gemv_qtc.cu's (prelude: i4_pair, i4_x_pairs; x staged in shared memory with each chunk's sum).
//
// Work layout: a warp owns GEMV_ROWS_PER_WARP 16-row tiles; GEMV_K_WARPS warps share a row set
// and take stages (two chunks) in turn; a trip is GEMV_UNROLL of a warp's stages; gridDim.y
// blocks split K. At the end the lanes move their sums into the mma D layout of finish_tc_tiles.

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
#define GEMV_UNROLL 2  // stages per trip; two trips' loads are in registers
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_q4l_kernel
#endif
#ifndef GEMV_DTYPE
#define GEMV_DTYPE 2
#endif
#ifndef GEMV_WFORMAT
#define GEMV_WFORMAT 4
#endif
#ifndef GEMV_GROUP
#define GEMV_GROUP 128
#endif
#ifndef GEMV_M_TILE
#define GEMV_M_TILE 1
#endif
#if GEMV_DTYPE == 0 || GEMV_WFORMAT != 4 || GEMV_GROUP != 128 || GEMV_M_TILE != 1
#error "gemv_q4l.cu takes int4g128 weights, bf16 or fp16 activations and m tile 1"
#endif
#undef GEMV_VEC_BYTES
#define GEMV_VEC_BYTES 16

#ifndef GEMV_PRELUDE
#include "prelude.cu"
#endif

#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_WARP_ROWS (16 * GEMV_ROWS_PER_WARP)
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_WARP_ROWS)
#define GEMV_SPLIT_ALIGN 256  // split boundaries on whole stages (128 bytes of each row)
// x is staged for 16 stages (32 chunks) at a time: K = 4096 in one go. A trip never straddles
// two slices (16 is a multiple of unroll x k_warps), so the slices' barriers fall between trips.
#define GEMV_Q4L_SLICE_STAGES 16

// A pointer the compiler takes as it is: without this it rebuilt the rows' addresses from the
// segment, row and stride inside the loop and kept those live, 28 registers more (152 instead
// of 125 at one tile x two stages, NVRTC 13.0), which cost a quarter of the warps an SM holds.
template <class T>
__device__ __forceinline__ const T* pinned(const T* p) {
  asm("mov.b64 %0, %0;" : "+l"(p));
  return p;
}

// 16 bytes of weights (a quarter of a line), issued where written: volatile, so that the next
// trip's loads stay ahead of this trip's arithmetic. L2::256B: a warp reads 128 bytes of each of
// its rows a stage, and the next stage reads the next 128, so a miss fetches both lines of the
// pair; on the H200 that made every config 0.3-1.2% faster (geometric mean by shape) and the best
// of 128256x4096 2.7% (74.0 -> 72.1 us), where dense kernels lost with it (prelude.cu,
// load_tc_weights). Its bulk form, cp.async.bulk.prefetch.L2 of each row's next 512 bytes or
// of its whole split ahead, was 1-3% slower on the large shapes (bench/results/h200.md,
// 2026-12-03).
__device__ __forceinline__ uint4 load_line_part(const unsigned char* p) {
  uint4 v;
#if GEMV_STREAMING
  asm volatile("ld.global.cs.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#else
  asm volatile("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
#endif
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
#if GEMV_Q4L_SLICE_STAGES % (GEMV_UNROLL * GEMV_K_WARPS) != 0
#error "unroll x k_warps must divide the 16 stages of an x slice"
#endif

// One tile x two stages, one warp along K, held at 128 registers (ptxas took 130; with warps
// along K the cap spilled 12-16 bytes), so that an SM holds 16 warps, not 12: with 12 the 1792
// warps of 28672x4096 do not fit one wave. At 256 threads the cap spilled 36 bytes (x staged
// two units at a time), so those take what ptxas needs.
#if GEMV_ROWS_PER_WARP == 1 && GEMV_UNROLL == 2 && GEMV_K_WARPS == 1 && GEMV_THREADS <= 128
#define GEMV_Q4L_MIN_BLOCKS GEMV_BLOCKS_AT_REGISTERS(128)
#else
#define GEMV_Q4L_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(GEMV_THREADS, GEMV_Q4L_MIN_BLOCKS)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS;
  constexpr int SLICE = GEMV_Q4L_SLICE_STAGES, SLICE_CHUNKS = 2 * SLICE;
  // x_pairs[c][t][q]: lane t's pairs of word q of chunk c of the slice (5 uint4 per (c, t): the
  // four t of a load in different banks); x_sum[c]: the chunk's sum of x.
  __shared__ __align__(16) uint4 x_pairs[SLICE_CHUNKS][4][5];
  __shared__ float x_sum[SLICE_CHUNKS];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, a = g >> 1, par = g & 1;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * GEMV_WARP_ROWS;
  static_cast<void>(ldx);  // one row of x

  const KSlice slice = split_k_slice<GEMV_SPLIT_ALIGN>(k);
  const int kb = slice.begin, ke = slice.end;
  const int chunks = (ke - kb) / GEMV_GROUP;  // K is a multiple of the group
  const int stages = (chunks + 1) / 2;         // the last of an odd count has one chunk
  // This warp's stages kw, kw + KW, ...; its trips of U of them.
  const int mine = row0 < n && kw < stages ? (stages - kw + KW - 1) / KW : 0;
  const int trips = (mine + U - 1) / U;

  // Load p of tile i: row row0 + 16 i + 4 p + lane / 8 (rows past N read row N - 1 and are
  // never written), 16 bytes at column lane % 8 of each stage's 128.
  const unsigned char* wp[R][4];
  // This lane's factor of each tile half (h: X or Y): lane t of quad g loads the scale (t even)
  // or zero (t odd) of tile row g (t < 2) or g + 8, at group 2 s + par of stage s.
  const elem_t* fp[R][2];
  const auto point = [&](const WarpRows& rows) {  // with_rows says why
#pragma unroll
    for (int i = 0; i < R; ++i) {
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        const QuantRow qr = quant_row(rows, min(row0 + 16 * i + 4 * p + (lane >> 3), n - 1));
        wp[i][p] = pinned(qr.q + q_byte(kb) + 16 * (lane & 7));
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const QuantRow qr = quant_row(rows, min(row0 + 16 * i + 4 * h + 8 * (t >> 1) + a, n - 1));
        fp[i][h] = pinned(static_cast<const elem_t*>(t & 1 ? qr.zeros : qr.scales) + qr.row * (k / GEMV_GROUP) +
                          kb / GEMV_GROUP + par);
      }
    }
  };
  with_rows(seg, min(row0, n - 1), min(row0 + 16 * R - 1, n - 1), point);
  const unsigned opaque = static_cast<unsigned>(m) >> 31;  // 0: m >= 1
  const unsigned bias = GEMV_I4_BIAS | (opaque << 4), mask = 0x000F000Fu | (opaque << 5);

  // Trip j's loads (stages kw + (j U + u) KW): past the warp's last stage a load repeats the
  // last stage (valid memory, never used), and where a stage's second chunk is past the split's
  // end (an odd count) its lanes load the first chunk again (the second may lie past the
  // allocation; x staged as zeros there makes their share nothing). Addresses rather than
  // predicates: every load is issued.
  struct Trip {
    uint4 w[U][R][4];
    unsigned short f[U][R][2];
  };
  const auto load_trip = [&](int j, Trip& tr) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int s = kw + min(j * U + u, mine - 1) * KW;
      const int back = par && 2 * s + 1 >= chunks;  // 1: this lane's chunk is past the end
#pragma unroll
      for (int i = 0; i < R; ++i) {
#pragma unroll
        for (int p = 0; p < 4; ++p) tr.w[u][i][p] = load_line_part(wp[i][p] + 128 * s - 64 * back);
#pragma unroll
        for (int h = 0; h < 2; ++h) tr.f[u][i][h] = load_elem_bits(fp[i][h] + 2 * s - back);
      }
    }
  };

  // sum[i][h][e]: this lane's share of tile i, half h (X: rows a, 8 + a; Y: 4 + a, 12 + a), e: the
  // first or second of them, from chunk par of every stage.
  float sum[R][2][2];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) sum[i][h][0] = sum[i][h][1] = 0.f;
  const unsigned x_read = shared_address(&x_pairs[0][t][0]), x_sum_read = shared_address(&x_sum[0]);
  const auto compute_trip = [&](int j, const Trip& tr) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (j * U + u >= mine) break;
      const int s = kw + (j * U + u) * KW;
      const int cs = (2 * s + par) % SLICE_CHUNKS;  // this lane's chunk within the slice
      const float xs = load_shared4(x_sum_read + 4 * cs);
      uint4 xp[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) xp[q] = load_shared16(x_read + cs * sizeof(x_pairs[0]) + q * 16);
#pragma unroll
      for (int i = 0; i < R; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint4 lo = tr.w[u][i][h], hi = tr.w[u][i][h + 2];
          const unsigned l4[4] = {lo.x, lo.y, lo.z, lo.w}, h4[4] = {hi.x, hi.y, hi.z, hi.w};
          float d[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            mma_16816(d, i4_pair(l4[q], 0, mask, bias), i4_pair(h4[q], 0, mask, bias), i4_pair(l4[q], 1, mask, bias),
                      i4_pair(h4[q], 1, mask, bias), xp[q].x, xp[q].y);
            mma_16816(d, i4_pair(l4[q], 2, mask, bias), i4_pair(h4[q], 2, mask, bias), i4_pair(l4[q], 3, mask, bias),
                      i4_pair(h4[q], 3, mask, bias), xp[q].z, xp[q].w);
          }
          float sc[2], bz[2];  // the scale and B + zero of rows g and g + 8 (valid at t = 0)
          i4_group_factors_t0(elem_bits_to_float(tr.f[u][i][h]), sc, bz);
          sum[i][h][0] = fmaf(sc[0], fmaf(-bz[0], xs, par ? d[1] : d[0]), sum[i][h][0]);
          sum[i][h][1] = fmaf(sc[1], fmaf(-bz[1], xs, par ? d[3] : d[2]), sum[i][h][1]);
        }
    }
  };

  // x of slice `slice` into x_pairs and x_sum, by the whole block: unit u is word q of lane t's
  // 32 elements of chunk u / 16, and the 16 units of a chunk, 16 adjacent lanes, add up its sum.
  // A thread loads up to four of its units before it uses the first: one trip to L2 for four
  // units, where a loop of load, use, load waited for L2 once per unit (the best configs 12-18%
  // slower, 04a5625); more at once than four spilled at 64 threads.
  const auto stage_x = [&](int slice) {
    // Units per thread; where the threads do not divide the slice's units (448 threads, say)
    // the last round's units past the slice load and store nothing, but their lanes (whole
    // groups of 16) still take part in the shuffles.
    constexpr int ALL = SLICE_CHUNKS * 16, UNITS = (ALL + GEMV_THREADS - 1) / GEMV_THREADS;
    constexpr int BATCH = UNITS <= 4 ? UNITS : UNITS % 4 == 0 ? 4 : UNITS % 3 == 0 ? 3 : UNITS % 2 == 0 ? 2 : 1;
    constexpr bool RAGGED = ALL % GEMV_THREADS != 0;  // tid < GEMV_THREADS is not known to the compiler
    const int c0 = slice * SLICE_CHUNKS, count = min(SLICE_CHUNKS, chunks - c0);
#pragma unroll 1
    for (int r0 = 0; r0 < UNITS; r0 += BATCH) {
      uint4 v[BATCH];
#pragma unroll
      for (int r = 0; r < BATCH; ++r) {
        const int u = (r0 + r) * GEMV_THREADS + tid, c = u >> 4, tt = (u >> 2) & 3, q = u & 3;
        if ((!RAGGED || u < ALL) && c < count) v[r] = load_x(x + kb + (c0 + c) * GEMV_GROUP + 32 * tt + 8 * q);
      }
#pragma unroll
      for (int r = 0; r < BATCH; ++r) {
        const int u = (r0 + r) * GEMV_THREADS + tid, c = u >> 4, tt = (u >> 2) & 3, q = u & 3;
        float xsum = 0.f;
        if (RAGGED && u >= ALL) {
          // past the slice: nothing to stage
        } else if (c >= count) {
          // Past the split's last chunk: zeros, so the lanes of a last stage's missing second
          // chunk (an odd count) add D = 0 and sum x = 0, nothing, whatever weights they loaded.
          x_pairs[c][tt][q] = make_uint4(0, 0, 0, 0);
        } else {
          unsigned pr[4];
          i4_x_pairs(v[r], pr);
          x_pairs[c][tt][q] = make_uint4(pr[0], pr[1], pr[2], pr[3]);
          float f[8];
          vec_to_floats(v[r], f);
#pragma unroll
          for (int e = 0; e < 8; ++e) xsum += f[e];
        }
#pragma unroll
        for (int off = 8; off > 0; off >>= 1) xsum += __shfl_xor_sync(0xffffffffu, xsum, off);
        if ((u & 15) == 0 && (!RAGGED || u < ALL)) x_sum[c] = xsum;
      }
    }
  };

#if GEMV_PDL
  allow_next_grid();  // see gemv.cu: successors fill free slots while this grid drains
#endif
  // The first trip's weights go out before the wait: they do not depend on the previous grid.
  Trip ta, tb;
  if (trips > 0) load_trip(0, ta);
  wait_for_previous_grid();  // x may be the previous grid's output

  // Slices of x, the same count for every warp of the block (the barriers need them all); the
  // trips of a slice alternate between the two register sets, the next one's loads issued
  // before this one's arithmetic.
  const int slices = (stages + SLICE - 1) / SLICE;
  constexpr int SLICE_TRIPS = SLICE / (U * KW);
  int j = 0;
  for (int slice = 0; slice < slices; ++slice) {
    __syncthreads();  // every warp is done with the previous slice
    stage_x(slice);
    __syncthreads();
    for (const int end = min(trips, (slice + 1) * SLICE_TRIPS); j < end; ++j) {
      if ((j & 1) == 0) {
        if (j + 1 < trips) load_trip(j + 1, tb);
        compute_trip(j, ta);
      } else {
        if (j + 1 < trips) load_trip(j + 1, ta);
        compute_trip(j, tb);
      }
    }
  }
#if !GEMV_PDL
  allow_next_grid();
#endif

  // Rows a, 8 + a (X) and 4 + a, 12 + a (Y) of each tile: chunk 0's share in lane (2a, t),
  // chunk 1's in (2a + 1, t); added, then moved to finish_tc_tiles' D layout, where lane
  // (g, 0) holds rows g (j = 0) and g + 8 (j = 2) of batch row 0: rows g < 4 are X's, from lane
  // 8 g; rows 4 <= g < 8 are Y's, from lane 8 (g - 4).
  float acc[R][1][4];
  const int src = 8 * (g & 3);
#pragma unroll
  for (int i = 0; i < R; ++i) {
    float whole[2][2];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) whole[h][e] = sum[i][h][e] + __shfl_xor_sync(0xffffffffu, sum[i][h][e], 4);
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float from_x = __shfl_sync(0xffffffffu, whole[0][e], src);
      const float from_y = __shfl_sync(0xffffffffu, whole[1][e], src);
      acc[i][0][2 * e] = g < 4 ? from_x : from_y;
      acc[i][0][2 * e + 1] = 0.f;  // batch row 1: never written
    }
  }
  finish_tc_tiles<R, 1, KW, GEMV_THREADS>(seg, acc, row0, m, n, partials, tickets);
}
