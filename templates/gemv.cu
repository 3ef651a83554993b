// gemv.cu, the CUDA-core family: Y = X W^T for one decode step of m <= GEMV_M_TILE tokens
// (y = W x at batch 1). W is row-major N x K with row stride ld; X is m x K with row stride ldx;
// Y is m x N with row stride ldy. Up to GEMV_MAX_SEGMENTS such products sharing X can run as
// one launch (fused projections).
//
// This file is a kernel template: it compiles on its own with the defaults below
// (nvcc -arch=sm_90 -c templates/gemv.cu, which includes prelude.cu), and the generator
// (generator/source.cpp) prepends #defines for one KernelConfig and the prelude's text, so NVRTC
// needs no include path.
//
// Work layout: each warp owns GEMV_ROWS_PER_WARP rows; its 32 lanes walk along K with
// GEMV_VEC_BYTES-wide loads (coalesced: one warp load is 32 x VEC contiguous bytes), keeping
// GEMV_UNROLL loads per row in flight before the first use. GEMV_K_WARPS warps share one row
// set and interleave along K, reducing through shared memory. gridDim.y blocks split K
// (split-K); the last block of a row block to finish sums the partials in split order, so the
// result is bitwise reproducible, and resets its ticket so no memset is needed between calls.

#ifndef GEMV_THREADS
#define GEMV_THREADS 128
#endif
#ifndef GEMV_ROWS_PER_WARP
#define GEMV_ROWS_PER_WARP 1
#endif
#ifndef GEMV_K_WARPS
#define GEMV_K_WARPS 1
#endif
#ifndef GEMV_UNROLL
#define GEMV_UNROLL 2
#endif
#ifndef GEMV_PREFETCH_L2
#define GEMV_PREFETCH_L2 0  // with PDL only: L2 prefetch of the warp's weights before the wait
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_kernel
#endif

#ifndef GEMV_PRELUDE
#include "prelude.cu"
#endif

// ---- kernel ----------------------------------------------------------------------------
#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_ROWS_PER_WARP)
// Split boundaries fall on 128-byte lines so no warp load straddles two splits' lines.
#define GEMV_SPLIT_ALIGN (GEMV_VE > 128 / GEMV_ESIZE ? GEMV_VE : 128 / GEMV_ESIZE)

// Min blocks 1: ptxas otherwise picked a register target that spilled on some configs
// (fp16 t256 r4), while the same kernel needs at most ~80 registers.
extern "C" __global__ void __launch_bounds__(GEMV_THREADS, 1)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, VE = GEMV_VE;
  constexpr int MT = GEMV_M_TILE;
  constexpr int CHUNK = 32 * VE;  // elements one warp-wide load covers
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * R;

  // This block's slice of K.
  const int splits = gridDim.y;
  int per_split = (k + splits - 1) / splits;
  per_split = (per_split + GEMV_SPLIT_ALIGN - 1) / GEMV_SPLIT_ALIGN * GEMV_SPLIT_ALIGN;
  const int kb = min(k, static_cast<int>(blockIdx.y) * per_split);
  const int ke = min(k, kb + per_split);
  const int full_chunks = (ke - kb) / CHUNK;

  // Rows past N read row N-1 (valid memory) and are never written.
  const elem_t* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    wrow[r] = row_weights(seg, min(row0 + r, n - 1)) + kb + lane * VE;
  const elem_t* xk = x + kb + lane * VE;

  // acc[r][mi]: row r of this warp times batch row mi. Batch rows mi >= m are never loaded
  // (warp-uniform branch) and never written.
  float acc[R][MT];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) acc[r][mi] = 0.f;
  bool waited = !GEMV_PDL;  // with PDL, x is read only after the previous grid finished
#if GEMV_PDL
  // The next kernel may be scheduled once every block of this one has started (so never
  // ahead of this grid's own last wave): its blocks take free slots and issue their weight
  // loads while this grid drains, hiding the launch gap and the ramp.
  allow_next_grid();
#endif
  const bool active = row0 < n;

  int c = kw;
  if (active) {
    for (; c + (U - 1) * KW < full_chunks; c += U * KW) {
      vec_t wv[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int r = 0; r < R; ++r) wv[u][r] = load_weights(wrow[r] + (c + u * KW) * CHUNK);
      if (!waited) {
#if GEMV_PREFETCH_L2
        // While the previous grid drains, ask L2 for the rest of this warp's weights, so HBM
        // is kept busy through the hand-over; the loads after the wait then hit L2. A 128-byte
        // line per lane: LINES lanes cover one warp-wide load, so one instruction covers
        // 32 / LINES of this warp's loads along K.
        constexpr int LINES = GEMV_VEC_BYTES >= 4 ? GEMV_VEC_BYTES / 4 : 1;
#pragma unroll 1
        for (int j = c + U * KW + lane / LINES * KW; j < full_chunks; j += 32 / LINES * KW)
#pragma unroll
          for (int r = 0; r < R; ++r)
            prefetch_l2(reinterpret_cast<const char*>(wrow[r] - lane * VE + j * CHUNK) + lane % LINES * 128);
#endif
        wait_for_previous_grid();
        waited = true;
      }
#if GEMV_M_TILE == 1
      // One x row: all its loads go out before the first use, as the weights' do.
      vec_t xv[U];
#pragma unroll
      for (int u = 0; u < U; ++u) xv[u] = load_x(xk + (c + u * KW) * CHUNK);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float xf[VE];
        vec_to_floats(xv[u], xf);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          float wf[VE];
          vec_to_floats(wv[u][r], wf);
#pragma unroll
          for (int e = 0; e < VE; ++e) acc[r][0] = fmaf(wf[e], xf[e], acc[r][0]);
        }
      }
#else
      // Several x rows: each weight vector is converted once and feeds MT rows of x, which
      // come from L1/L2 (every warp of the grid reads the same X).
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float wf[R][VE];
#pragma unroll
        for (int r = 0; r < R; ++r) vec_to_floats(wv[u][r], wf[r]);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          if (mi < m) {
            float xf[VE];
            vec_to_floats(load_x(xk + mi * ldx + (c + u * KW) * CHUNK), xf);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
              for (int e = 0; e < VE; ++e) acc[r][mi] = fmaf(wf[r][e], xf[e], acc[r][mi]);
          }
        }
      }
#endif
    }
  }
  if (!waited) wait_for_previous_grid();
  if (active) {
    // Fewer than U chunks left for this warp: one at a time.
    for (; c < full_chunks; c += KW) {
      float wf[R][VE];
#pragma unroll
      for (int r = 0; r < R; ++r) vec_to_floats(load_weights(wrow[r] + c * CHUNK), wf[r]);
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        if (mi < m) {
          float xf[VE];
          vec_to_floats(load_x(xk + mi * ldx + c * CHUNK), xf);
#pragma unroll
          for (int r = 0; r < R; ++r)
#pragma unroll
            for (int e = 0; e < VE; ++e) acc[r][mi] = fmaf(wf[r][e], xf[e], acc[r][mi]);
        }
      }
    }
    // Tail shorter than one warp-wide load: whole vectors, then single elements (K % VE).
    if (kw == KW - 1) {
      const int tail = kb + full_chunks * CHUNK;
      const int vec_end = kb + (ke - kb) / VE * VE;
      for (int e = tail + lane * VE; e + VE <= vec_end; e += CHUNK) {
        float wf[R][VE];
#pragma unroll
        for (int r = 0; r < R; ++r) vec_to_floats(load_weights(wrow[r] - kb - lane * VE + e), wf[r]);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          if (mi < m) {
            float xf[VE];
            vec_to_floats(load_x(x + mi * ldx + e), xf);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
              for (int j = 0; j < VE; ++j) acc[r][mi] = fmaf(wf[r][j], xf[j], acc[r][mi]);
          }
        }
      }
      for (int e = vec_end + lane; e < ke; e += 32) {
        float wf[R];
#pragma unroll
        for (int r = 0; r < R; ++r) wf[r] = elem_to_float(wrow[r][e - kb - lane * VE]);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          if (mi < m) {
            const float xe = elem_to_float(load_x_element(x + mi * ldx + e));
#pragma unroll
            for (int r = 0; r < R; ++r) acc[r][mi] = fmaf(wf[r], xe, acc[r][mi]);
          }
        }
      }
    }
  }
#if !GEMV_PDL
  allow_next_grid();  // lets a PDL-launched successor start while this grid reduces
#endif

#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[r][mi] += __shfl_xor_sync(0xffffffffu, acc[r][mi], off);

  if (KW == 1 && splits == 1) {  // each warp writes its own rows; every lane holds every sum
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
        if (lane == (r * MT + mi) % 32 && mi < m && row0 + r < n)
          *row_output(seg, row0 + r, mi) = float_to_elem(acc[r][mi]);
    return;
  }

  // Combine the KW warps of each row set in a fixed order, then write or publish the split.
  __shared__ float warp_sums[GEMV_WARPS * R * MT];
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) warp_sums[((row_group * KW + kw) * R + r) * MT + mi] = acc[r][mi];
  }
  __syncthreads();
  const auto block_sum = [&](int idx) {
    const int mi = idx / GEMV_BLOCK_ROWS, rb = idx % GEMV_BLOCK_ROWS;
    const int g = rb / R, r = rb % R;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < KW; ++j) sum += warp_sums[((g * KW + j) * R + r) * MT + mi];
    return sum;
  };
  finish_block<GEMV_BLOCK_ROWS, GEMV_THREADS>(seg, block_sum, m, n, partials, tickets);
}
