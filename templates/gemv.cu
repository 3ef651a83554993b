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
// GEMV_LANES_PER_ROW (LK, the "ln" knob, 32 unless set): LK lanes walk one row and 32 / LK rows
// sit side by side in one warp-wide load (LK 8, 16-byte loads: 4 whole 128-byte lines, as
// coalesced as 32 lanes on one row). The lanes at one place along K of different rows read the
// same x, which L1 serves once: at M > 1 the x loads of a warp cost 32 / LK times fewer L1
// wavefronts, the cost that held fp32 at M = 16 near 1.4 TB/s on the H200 (docs/batch.md).
// GEMV_ALIGNED_BODY (the "al" knob, 16-byte loads only): rows that do not start on a 16-byte
// boundary are read with 16-byte loads too, from each row's first aligned element on (see
// accumulate_aligned_body).

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
#ifndef GEMV_ALIGNED_BODY
#define GEMV_ALIGNED_BODY 0  // 1: rows and x of any element alignment (al)
#endif
#ifndef GEMV_AL_X_OFFSETS  // the aligned body compiled once per x offset (compiles_per_x_offset)
#define GEMV_AL_X_OFFSETS (GEMV_ALIGNED_BODY && GEMV_M_TILE == 1 && GEMV_ROWS_PER_WARP == 1 && GEMV_UNROLL == 4)
#endif
#ifndef GEMV_LANES_PER_ROW
#define GEMV_LANES_PER_ROW 32  // lanes side by side along one row (ln): 32, 16 or 8
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_kernel
#endif

#ifndef GEMV_PRELUDE
#include "prelude.cu"
#endif

// ---- kernel ----------------------------------------------------------------------------
#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_ROW_GROUPS (32 / GEMV_LANES_PER_ROW)  // rows one warp-wide load reads side by side
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_ROWS_PER_WARP * GEMV_ROW_GROUPS)
#if GEMV_LANES_PER_ROW != 32 && (GEMV_ALIGNED_BODY || GEMV_PREFETCH_L2)
#error "lanes per row below 32 (ln) is a knob of the plain kernel without the L2 prefetch"
#endif
// Split boundaries fall on 128-byte lines so no warp load straddles two splits' lines.
#define GEMV_SPLIT_ALIGN (GEMV_VE > 128 / GEMV_ESIZE ? GEMV_VE : 128 / GEMV_ESIZE)

// A PDL kernel's wait for the previous grid, before its first x load (x may be that grid's
// output). With pf, first ask L2 for the rest of this warp's weights, its loads from..
// full_chunks - 1 (every KW-th) of each row, so HBM is kept busy through the hand-over and the
// loads after the wait hit L2. at_lane[r]: row r's element of this lane in load 0. A 128-byte
// line per lane: LINES lanes cover one warp-wide load, so one instruction covers 32 / LINES of
// this warp's loads along K.
__device__ __forceinline__ void prefetch_then_wait(const elem_t* const (&at_lane)[GEMV_ROWS_PER_WARP], int from,
                                                   int full_chunks, int lane, bool& waited) {
#if GEMV_PREFETCH_L2
  constexpr int R = GEMV_ROWS_PER_WARP, KW = GEMV_K_WARPS, VE = GEMV_VE, CHUNK = 32 * VE;
  constexpr int LINES = GEMV_VEC_BYTES >= 4 ? GEMV_VEC_BYTES / 4 : 1;
#pragma unroll 1
  for (int j = from + lane / LINES * KW; j < full_chunks; j += 32 / LINES * KW)
#pragma unroll
    for (int r = 0; r < R; ++r)
      prefetch_l2(reinterpret_cast<const char*>(at_lane[r] - lane * VE + j * CHUNK) + lane % LINES * 128);
#else
  static_cast<void>(at_lane), static_cast<void>(from), static_cast<void>(full_chunks), static_cast<void>(lane);
#endif
  wait_for_previous_grid();
  waited = true;
}

#if GEMV_ALIGNED_BODY
// ---- aligned body (al) ---------------------------------------------------------------------
// For rows that are not 16-byte aligned (K x element size, ld or W's base not a multiple of 16
// bytes), which the plain kernel could read only with narrower loads. Each row's share of the
// block's K slice is cut into a head (its elements before the first 16-byte boundary, fewer
// than VE), a body read with 16-byte loads from aligned addresses exactly as the plain kernel
// reads a row (32 lanes side by side, GEMV_UNROLL loads per row in flight before the first use),
// and a tail. Every row gets the same number of body loads; head and tail together are fewer
// than 3 VE - 2 <= 22 elements, one per lane, loaded ahead of the body.
//
// x: body vector j of row r starts at element kb + head[r] + j VE, so its x elements sit at a
// byte offset within a 16-byte block that differs from row to row (and from batch row to batch
// row). x is read as the two aligned 16-byte blocks that hold them (the same lines the
// neighbouring lanes read, so L1 serves them as in the plain kernel, where every warp reads the
// same x) and the VE elements are picked out in registers: a few selects and funnel shifts per
// load, next to the 2 VE conversions and VE FMAs. The body ends at least VE - 1 elements before
// K, so no block reaches past x + K; the first may start before x, within x's own 16-byte block
// (allocations start 16-byte aligned, and those elements are never used).
#if GEMV_VEC_BYTES != 16
#error "the aligned body (al) reads the weights with 16-byte loads"
#endif

// The VE elements that start `shift` bytes into lo and run on into hi (shift < 16, a multiple
// of the element size; hi is not used when shift is 0).
__device__ __forceinline__ void x_window_to_floats(uint4 lo, uint4 hi, unsigned shift, float* out) {
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  unsigned u[6], v[5];
#pragma unroll
  for (int j = 0; j < 6; ++j) u[j] = (shift & 8u) ? w[j + 2] : w[j];
#pragma unroll
  for (int j = 0; j < 5; ++j) v[j] = (shift & 4u) ? u[j + 1] : u[j];
  uint4 r;
#if GEMV_ESIZE == 2
  const unsigned bits = (shift & 2u) * 8u;  // an odd 16-bit element: half a word further on
  r.x = __funnelshift_r(v[0], v[1], bits);
  r.y = __funnelshift_r(v[1], v[2], bits);
  r.z = __funnelshift_r(v[2], v[3], bits);
  r.w = __funnelshift_r(v[3], v[4], bits);
#else
  r.x = v[0];
  r.y = v[1];
  r.z = v[2];
  r.w = v[3];
#endif
  vec_to_floats(r, out);
}

// The same with the offset a compile-time XS: each element converts straight from its half of
// its word (the conversions of elements outside the window are dead code), so an element that
// is odd in its word costs no funnel shift and picking the window costs nothing.
template <int XS>
__device__ __forceinline__ void x_window_to_floats_at(uint4 lo, uint4 hi, float* out) {
  constexpr int per_word = 4 / GEMV_ESIZE;
  const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  float f[8 * per_word];
#pragma unroll
  for (int j = 0; j < 8; ++j) word_to_floats(w[j], f + j * per_word);
#pragma unroll
  for (int e = 0; e < GEMV_VE; ++e) out[e] = f[XS / GEMV_ESIZE + e];
}

// The byte offset of p within its 16-byte block.
__device__ __forceinline__ unsigned shift16(const elem_t* p) {
  return static_cast<unsigned>(reinterpret_cast<unsigned long long>(p)) & 15u;
}

// x[0..VE) at p of any element alignment, through the aligned blocks that hold them.
__device__ __forceinline__ void load_x_window(const elem_t* p, float* out) {
  const unsigned shift = shift16(p);
  const elem_t* b = p - shift / GEMV_ESIZE;
  x_window_to_floats(load_x(b), load_x(b + (shift ? GEMV_VE : 0)), shift, out);
}

// Where each row of a warp reads: its body (16-byte aligned) and, for one x row, its x blocks.
struct AlignedRows {
  const elem_t* wrow[GEMV_ROWS_PER_WARP];   // the row at kb
  const elem_t* wbody[GEMV_ROWS_PER_WARP];  // this lane's first body vector of the row
  int head[GEMV_ROWS_PER_WARP];             // elements before the body, < VE
#if GEMV_M_TILE == 1
  const elem_t* xblock[GEMV_ROWS_PER_WARP];  // the aligned block of x holding the first element
  unsigned xs[GEMV_ROWS_PER_WARP];           // and that element's byte offset in it
#endif
};

// Heads and tails: fewer than 32 elements of each row (3 VE - 2 at most), one per lane below
// `count`: the row's element kb + e[r] (lane before its body, kb + body VE + lane after it).
// Their weights are loaded before the body's first loads; they are added to the sums in the
// first trip, once x may be read (after the PDL wait), so that their x is not one more round
// trip at the end of every warp: on 4097x4099 (H200) that end cost 5-30% of the call, the more
// the fewer trips a warp has (split K, warps along K).
struct LooseElements {
  int count;  // warp-uniform; 0 once added (or where another warp of the row adds them)
  int e[GEMV_ROWS_PER_WARP];
  elem_t w[GEMV_ROWS_PER_WARP];
};

__device__ __forceinline__ void add_loose(LooseElements& loose, const elem_t* x, long long ldx, int m, int kb,
                                          int lane, float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE]) {
  if (loose.count == 0) return;
  const bool mine = lane < loose.count;
  loose.count = 0;
  if (!mine) return;
#pragma unroll
  for (int mi = 0; mi < GEMV_M_TILE; ++mi)
    if (mi < m) {
#pragma unroll
      for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
        acc[r][mi] = fmaf(elem_to_float(loose.w[r]), elem_to_float(load_x_element(x + mi * ldx + kb + loose.e[r])),
                          acc[r][mi]);
    }
}

// One trip of the body loop: warp-wide loads c, c + KW, ... (U of them, all in flight before
// the first use) of every row. LAST: the warp's remaining loads, fewer than U whole ones and the
// last, partial one (lanes below rest), so the tail of the body also has all its loads in flight.
// XS >= 0: x's byte offset in its blocks, known at compile time (one row per warp at m = 1, see
// aligned_body_loops); -1: each row's own, w.xs[r], at run time.
template <bool LAST, int XS>
__device__ __forceinline__ void aligned_body_trip(const AlignedRows& w, const elem_t* x, long long ldx, int m,
                                                  int kb, int lane, int c, int full_chunks, int rest, bool& waited,
                                                  LooseElements& loose,
                                                  float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE]) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, VE = GEMV_VE;
  constexpr int CHUNK = 32 * VE;
  bool ok[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int cu = c + u * KW;
    ok[u] = !LAST || cu < full_chunks || (cu == full_chunks && lane < rest);
  }
  vec_t wv[U][R];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (ok[u]) wv[u][r] = load_weights(w.wbody[r] + (c + u * KW) * CHUNK);
  if (!waited) prefetch_then_wait(w.wbody, c + U * KW, full_chunks, lane, waited);
  add_loose(loose, x, ldx, m, kb, lane, acc);
#if GEMV_M_TILE == 1
  // x is read just before its use (L1 hits, while the weights come from HBM): holding all of a
  // trip's x blocks would cost 8 registers per load in flight and so blocks per SM.
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (ok[u]) {
        const elem_t* b = w.xblock[r] + (c + u * KW) * CHUNK;
        float wf[VE], xf[VE];
        vec_to_floats(wv[u][r], wf);
        const vec_t lo = load_x(b);
        if constexpr (XS >= 0)
          x_window_to_floats_at<XS>(lo, XS == 0 ? lo : load_x(b + VE), xf);
        else
          x_window_to_floats(lo, load_x(b + (w.xs[r] ? VE : 0)), w.xs[r], xf);
#pragma unroll
        for (int e = 0; e < VE; ++e) acc[r][0] = fmaf(wf[e], xf[e], acc[r][0]);
      }
#else
  // Several x rows: each weight vector is converted once and feeds MT rows of x.
  constexpr int MT = GEMV_M_TILE;
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (ok[u]) {
        float wf[VE];
        vec_to_floats(wv[u][r], wf);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          if (mi < m) {
            float xf[VE];
            load_x_window(x + mi * ldx + kb + w.head[r] + lane * VE + (c + u * KW) * CHUNK, xf);
#pragma unroll
            for (int e = 0; e < VE; ++e) acc[r][mi] = fmaf(wf[e], xf[e], acc[r][mi]);
          }
        }
      }
#endif
}

// The body's trips of this warp: loads kw, kw + KW, ... of each row.
template <int XS>
__device__ __forceinline__ void aligned_body_loop(const AlignedRows& w, const elem_t* x, long long ldx, int m, int kb,
                                                  int lane, int kw, int full_chunks, int rest, bool& waited,
                                                  LooseElements& loose,
                                                  float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE]) {
  constexpr int U = GEMV_UNROLL, KW = GEMV_K_WARPS;
  int c = kw;
  for (; c + (U - 1) * KW < full_chunks; c += U * KW)
    aligned_body_trip<false, XS>(w, x, ldx, m, kb, lane, c, full_chunks, rest, waited, loose, acc);
  if (c < full_chunks + (rest > 0 ? 1 : 0))
    aligned_body_trip<true, XS>(w, x, ldx, m, kb, lane, c, full_chunks, rest, waited, loose, acc);
}

// With one row per warp at m = 1, x's byte offset xs is the same for every lane and every load
// of the warp: the loop is compiled once per offset (0, ESIZE, ..., 16 - ESIZE) and the warp
// takes its own, so picking x's elements out of its two blocks costs nothing (each element is
// converted from its own half word) and offset 0 loads one block. Selecting at run time cost 15
// instructions per load and 14% of the time on 4097x4099 against the plain kernel's same knobs
// on 4096x4096 (H200, 9.93 against 8.67 us). Only with 4 loads per trip, the aligned body's
// winners on large shapes: the eight copies make NVRTC take 3.6x as long (0.27 -> 0.97 s), which
// a small misaligned shape's tune (up to 80 compiles) pays where fewer loads win.
template <int XS>
__device__ __forceinline__ void aligned_body_loops(unsigned xs, const AlignedRows& w, const elem_t* x, long long ldx,
                                                   int m, int kb, int lane, int kw, int full_chunks, int rest,
                                                   bool& waited, LooseElements& loose,
                                                   float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE]) {
  if constexpr (XS + GEMV_ESIZE < 16) {
    if (xs != XS) {
      aligned_body_loops<XS + GEMV_ESIZE>(xs, w, x, ldx, m, kb, lane, kw, full_chunks, rest, waited, loose, acc);
      return;
    }
  }
  aligned_body_loop<XS>(w, x, ldx, m, kb, lane, kw, full_chunks, rest, waited, loose, acc);
}

// The weight loop of the kernel below for the aligned body: acc[r][mi] gets this warp's share of
// row row0 + r times batch row mi over the block's K slice [kb, ke).
__device__ __forceinline__ void accumulate_aligned_body(const GemvSegments& seg, const elem_t* x, long long ldx,
                                                        int m, int n, int k, int kb, int ke, int row0, int lane,
                                                        int kw, float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE]) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, VE = GEMV_VE;
  constexpr int MT = GEMV_M_TILE;
  // Body loads per row: as many as fit in every row's [kb + head, min(ke, K - VE + 1)).
  const int limit = min(ke, k - (VE - 1));
  const int body = max(0, (limit - kb - (VE - 1)) / VE);
  const int full_chunks = body / 32, rest = body % 32;  // rest: lanes of a last, partial load
  const int loose_count = ke - kb - body * VE;            // head + tail elements of each row

  // Rows past N read row N-1 (valid memory) and are never written.
  AlignedRows w;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    w.wrow[r] = row_weights(seg, min(row0 + r, n - 1)) + kb;
    w.head[r] = static_cast<int>((16u - shift16(w.wrow[r])) & 15u) / GEMV_ESIZE;
    w.wbody[r] = w.wrow[r] + w.head[r] + lane * VE;
#if GEMV_M_TILE == 1
    const elem_t* p = x + kb + w.head[r] + lane * VE;
    w.xs[r] = shift16(p);
    w.xblock[r] = p - w.xs[r] / GEMV_ESIZE;
#endif
  }

#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) acc[r][mi] = 0.f;
  bool waited = !GEMV_PDL;  // with PDL, x is read only after the previous grid finished
#if GEMV_PDL
  allow_next_grid();  // as in the plain kernel
#endif
  const bool active = row0 < n;
  LooseElements loose;
  loose.count = active && kw == KW - 1 ? loose_count : 0;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    loose.e[r] = lane < w.head[r] ? lane : body * VE + lane;
    if (lane < loose.count) loose.w[r] = w.wrow[r][loose.e[r]];
  }

  if (active) {
#if GEMV_AL_X_OFFSETS
    aligned_body_loops<0>(w.xs[0], w, x, ldx, m, kb, lane, kw, full_chunks, rest, waited, loose, acc);
#else
    aligned_body_loop<-1>(w, x, ldx, m, kb, lane, kw, full_chunks, rest, waited, loose, acc);
#endif
  }
  if (!waited) wait_for_previous_grid();
  add_loose(loose, x, ldx, m, kb, lane, acc);  // a warp without body loads
}
#endif  // GEMV_ALIGNED_BODY

// acc[r][mi] += the products of row r's converted weights wf[r] and one x vector of batch row mi.
__device__ __forceinline__ void fma_rows(const float (&wf)[GEMV_ROWS_PER_WARP][GEMV_VE], const vec_t& xv,
                                         float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE], int mi) {
  float xf[GEMV_VE];
  vec_to_floats(xv, xf);
#pragma unroll
  for (int r = 0; r < GEMV_ROWS_PER_WARP; ++r)
#pragma unroll
    for (int e = 0; e < GEMV_VE; ++e) acc[r][mi] = fmaf(wf[r][e], xf[e], acc[r][mi]);
}

// One trip of the plain kernel's body loop: warp-wide loads c, c + KW, ... (U of them) of every
// row, all in flight before the first use. LAST: the warp's remaining loads, fewer than U whole
// ones and the last, partial one (lanes below rest), still all in flight at once. They used to go
// out one at a time, a round trip each: on the H200, bf16 256000x3584 (K = 14 warp-wide loads)
// took 537 us with u8 (8 loads in the loop, then 6 one by one) and 400 us with u2 (none left).
template <bool LAST>
__device__ __forceinline__ void plain_body_trip(const elem_t* const (&wrow)[GEMV_ROWS_PER_WARP], const elem_t* xk,
                                                long long ldx, int m, int c, int full_chunks, int rest, int lane,
                                                bool& waited, float (&acc)[GEMV_ROWS_PER_WARP][GEMV_M_TILE]) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, VE = GEMV_VE;
  constexpr int CHUNK = GEMV_LANES_PER_ROW * VE;  // elements of one row that one warp-wide load covers
  // lane: the lane's place along its row (0 .. lanes per row - 1). In the last trip a load past
  // the warp's end reads the slice's first vector instead (always there) and is zeroed before
  // use: predicated loads and FMAs kept U predicates live and cost ptxas up to 30 registers per
  // thread (u8: 96 -> 126), this way about none.
  const auto ok = [&](int u) {
    const int cu = c + u * KW;
    return !LAST || cu < full_chunks || (cu == full_chunks && lane < rest);
  };
  const auto offset = [&](int u) { return ok(u) ? (c + u * KW) * CHUNK : -lane * VE; };
  vec_t wv[U][R];
#pragma unroll
  for (int u = 0; u < U; ++u)
#pragma unroll
    for (int r = 0; r < R; ++r) wv[u][r] = load_weights(wrow[r] + offset(u));
  if (LAST) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r)
        if (!ok(u)) wv[u][r] = vec_t{};
  }
  if (!waited) prefetch_then_wait(wrow, c + U * KW, full_chunks, lane, waited);
#if GEMV_M_TILE == 1
  // One x row: all its loads go out before the first use, as the weights' do.
  vec_t xv[U];
#pragma unroll
  for (int u = 0; u < U; ++u) xv[u] = load_x(xk + offset(u));
  if (LAST) {
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (!ok(u)) xv[u] = vec_t{};  // 0 x, not just 0 w: 0 * inf would be NaN
  }
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
  // Several x rows: each weight vector is converted once and feeds MT rows of x, which come
  // from L1/L2 (every warp of the grid reads the same X).
  constexpr int MT = GEMV_M_TILE;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    float wf[R][VE];
#pragma unroll
    for (int r = 0; r < R; ++r) vec_to_floats(wv[u][r], wf[r]);
    if (!LAST) {
      // All MT x loads of this step go out before the first FMA, without a branch: batch rows
      // mi >= m read row m - 1 (valid memory) into sums that are never written. Behind a branch
      // on mi < m each load waited for the FMAs of the one before: on the H200 at fp32 M = 16
      // this took 28672x4096 from 254 to 185 us and 4096x4096 from 37 to 29 (best configs), at
      // bf16 M = 2 1024x4096 from 4.12 to 3.33 and 4096x4096 from 10.42 to 9.75 (then ahead of
      // tensor cores). ptxas hoists the x loads of the whole trip, so m tile x unroll x 16
      // bytes is held to 512 (why_invalid: no spills).
      vec_t xv[MT];
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) xv[mi] = load_x(xk + min(mi, m - 1) * ldx + offset(u));
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) fma_rows(wf, xv[mi], acc, mi);
    } else {
      // The last trip: a load past the warp's end is skipped, not zeroed (0 w * inf x is NaN).
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        if (mi < m && ok(u)) fma_rows(wf, load_x(xk + mi * ldx + offset(u)), acc, mi);
      }
    }
  }
#endif
}

// Min blocks 1: ptxas otherwise picked a register target that spilled on some configs
// (fp16 t256 r4), while the same kernel needs at most ~80 registers.
#if defined(GEMV_REG_CAP)
// rcN (a twin the tuner measures, occupancy_step_cap): the registers that let one more block
// onto an SM. Since the batch loops came in, ptxas gives some M = 1 kernels a few registers
// more than the round-1 kernel's (t256_r2_kw1_u4: 80 -> 88, 3 -> 2 blocks an SM), which can
// cost a grid its single wave (6144x4096: 384 blocks).
#define GEMV_MIN_BLOCKS GEMV_BLOCKS_AT_REGISTERS(GEMV_REG_CAP)
#elif GEMV_ALIGNED_BODY && GEMV_ROWS_PER_WARP == 1 && GEMV_UNROLL <= 4 && GEMV_M_TILE <= 4
// The aligned body with one row per warp and up to 4 loads in flight: 64 registers, about what
// the plain kernel uses. Left alone, ptxas holds a trip's x blocks ahead (8 registers a load) and
// reaches 72-80 or more, so fewer blocks fit on an SM (a 4096-row matrix took two waves instead
// of one). With 4 loads and warps along K the cap was 80 until x's offset became a compile-time
// constant (aligned_body_loops): every such config (bf16 and fp32, m = 1, 2, 4, K warps 1, 2,
// 4, 1-4 loads, with and without the L2 prefetch) now fits 64 without spilling.
#define GEMV_MIN_BLOCKS GEMV_BLOCKS_AT_REGISTERS(64)
#else
#define GEMV_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(GEMV_THREADS, GEMV_MIN_BLOCKS)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, VE = GEMV_VE;
  constexpr int MT = GEMV_M_TILE;
  constexpr int CHUNK = GEMV_LANES_PER_ROW * VE;  // elements of one row that one warp-wide load covers
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * R * GEMV_ROW_GROUPS;  // the warp's first row
  // The lane's row group (sub) owns rows row0 + sub R .. + R - 1; kl: its place along them.
  const int sub = lane / GEMV_LANES_PER_ROW, kl = lane % GEMV_LANES_PER_ROW;

  // This block's slice of K.
  const KSlice slice = split_k_slice<GEMV_SPLIT_ALIGN>(k);
  const int kb = slice.begin, ke = slice.end;
#if GEMV_ALIGNED_BODY
  static_cast<void>(U), static_cast<void>(CHUNK), static_cast<void>(sub), static_cast<void>(kl);  // the plain loop's
  float acc[R][MT];
  accumulate_aligned_body(seg, x, ldx, m, n, k, kb, ke, row0, lane, kw, acc);
#else
  const int full_chunks = (ke - kb) / CHUNK;

  // Rows past N read row N-1 (valid memory) and are never written.
  const elem_t* wrow[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    wrow[r] = row_weights(seg, min(row0 + sub * R + r, n - 1)) + kb + kl * VE;
  const elem_t* xk = x + kb + kl * VE;

  // acc[r][mi]: row sub R + r of this warp times batch row mi. Batch rows mi >= m are never
  // written; the body's full trips read row m - 1 in their place (plain_body_trip), the rest
  // skip them (warp-uniform branch).
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

  // Whole vectors past the last full warp-wide load: lanes below rest (kl) have one more.
  const int rest = (ke - kb) / VE - full_chunks * GEMV_LANES_PER_ROW;
  if (active) {
    int c = kw;
#pragma unroll 1  // a trip already holds U loads per row in flight; unrolling more only adds registers
    for (; c + (U - 1) * KW < full_chunks; c += U * KW)
      plain_body_trip<false>(wrow, xk, ldx, m, c, full_chunks, rest, kl, waited, acc);
    if (c < full_chunks + (rest > 0 ? 1 : 0))
      plain_body_trip<true>(wrow, xk, ldx, m, c, full_chunks, rest, kl, waited, acc);
  }
  if (!waited) wait_for_previous_grid();
  // Single elements past the last whole vector (K % VE), one per lane of each row group.
  if (active && kw == KW - 1) {
    const int vec_end = kb + (ke - kb) / VE * VE;
    for (int e = vec_end + kl; e < ke; e += GEMV_LANES_PER_ROW) {
      float wf[R];
#pragma unroll
      for (int r = 0; r < R; ++r) wf[r] = elem_to_float(wrow[r][e - kb - kl * VE]);
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
#endif  // GEMV_ALIGNED_BODY
#if !GEMV_PDL
  allow_next_grid();  // lets a PDL-launched successor start while this grid reduces
#endif

#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
      for (int off = GEMV_LANES_PER_ROW / 2; off > 0; off >>= 1)
        acc[r][mi] += __shfl_xor_sync(0xffffffffu, acc[r][mi], off);

  finish_cc_rows<R, MT, KW, GEMV_THREADS, GEMV_LANES_PER_ROW>(seg, acc, row0, m, n, lane, row_group, kw, partials,
                                                             tickets);
}
