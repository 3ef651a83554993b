// gemv_q.cu, the quantized-weight family on CUDA cores: Y = X W^T with W in a packed weight
// format (docs/weights.md; the prelude's "quantized weight formats": int8 or fp8 e4m3 with a
// scale per row or per tensor, int4 with a scale and a zero per group of K), X and Y in the
// activation dtype (bf16, fp16 or fp32), m <= GEMV_M_TILE rows of X. Fused segments as in
// gemv.cu, each with its own weights, scales and zeros.
//
// A kernel template: compiles alone (nvcc -arch=sm_90 -c templates/gemv_q.cu, which includes
// prelude.cu); the generator prepends #defines for one KernelConfig and weight format, and the
// prelude's text.
//
// Work layout as in gemv.cu: a warp owns GEMV_ROWS_PER_WARP rows; its lanes walk along K with
// 16-byte loads of packed weights (16 int8/fp8 or 32 int4 weights each), GEMV_UNROLL of them
// per row in flight; GEMV_K_WARPS warps share a row set; gridDim.y blocks split K and the last
// one sums the splits in order. Each weight load needs GEMV_QK values of x (two or four 16-byte
// loads in bf16), which come from L1 and feed every row of the warp: fewer weight bytes per
// value than the dense kernels make x the larger share of the loads, so more rows per warp pay.
//
// Why CUDA cores: at m = 1 the arithmetic per weight is a byte permute and an FMA (see
// q_word_values), well inside the issue budget of a bandwidth-bound stream for 8-bit weights
// and, for int4, about two thirds of it.

#ifndef GEMV_THREADS
#define GEMV_THREADS 128
#endif
#ifndef GEMV_ROWS_PER_WARP
#define GEMV_ROWS_PER_WARP 2
#endif
#ifndef GEMV_K_WARPS
#define GEMV_K_WARPS 1
#endif
#ifndef GEMV_UNROLL
#define GEMV_UNROLL 2
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_q_kernel
#endif
#ifndef GEMV_WFORMAT
#define GEMV_WFORMAT 4
#endif
#ifndef GEMV_Q_RING
#define GEMV_Q_RING 0  // weights through a shared-memory ring (cp.async) instead of register trips
#endif
#if GEMV_WFORMAT == 0
#error "gemv_q.cu is the family of quantized weight formats (GEMV_WFORMAT 1..4)"
#endif
#undef GEMV_VEC_BYTES
#define GEMV_VEC_BYTES 16  // x loads; weight loads are 16 bytes as well

#ifndef GEMV_PRELUDE
#include "prelude.cu"
#endif

#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_ROWS_PER_WARP)
// Split boundaries fall on 128-byte lines of weights (and on int4 groups: 256 elements are a
// multiple of every group size).
#define GEMV_SPLIT_ALIGN (GEMV_WFORMAT == 4 ? 256 : 128)

// sum over the GEMV_QK weights of one 16-byte load of v * x, with x given as floats. Two
// chains, so consecutive FMAs do not wait on each other.
__device__ __forceinline__ float q_dot(const uint4& wv, const float* xf) {
  const unsigned words[4] = {wv.x, wv.y, wv.z, wv.w};
  float d0 = 0.f, d1 = 0.f;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    float v[GEMV_QWORD];
    q_word_values(words[j], v);
#pragma unroll
    for (int e = 0; e < GEMV_QWORD; e += 2) {
      d0 = fmaf(v[e], xf[j * GEMV_QWORD + e], d0);
      d1 = fmaf(v[e + 1], xf[j * GEMV_QWORD + e + 1], d1);
    }
  }
  return d0 + d1;
}

// The GEMV_QK values of x at p (16-byte aligned), as floats.
__device__ __forceinline__ void q_load_x(const elem_t* p, float* xf) {
  constexpr int XV = 16 / GEMV_ESIZE;  // elements per 16-byte load
  vec_t xv[GEMV_QK / XV];
#pragma unroll
  for (int i = 0; i < GEMV_QK / XV; ++i) xv[i] = load_x(p + i * XV);
#pragma unroll
  for (int i = 0; i < GEMV_QK / XV; ++i) vec_to_floats(xv[i], xf + i * XV);
}

// rcN (a twin the tuner measures, occupancy_step_cap): the registers that let one more block
// onto an SM; otherwise ptxas takes what it needs (int8 r2 u2: 107-110 registers).
#ifdef GEMV_REG_CAP
#define GEMV_Q_MIN_BLOCKS GEMV_BLOCKS_AT_REGISTERS(GEMV_REG_CAP)
#else
#define GEMV_Q_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(GEMV_THREADS, GEMV_Q_MIN_BLOCKS)
GEMV_NAME(const GemvSegments seg, const elem_t* x, long long ldx, int m, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, MT = GEMV_M_TILE;
  constexpr int QK = GEMV_QK;
  constexpr int CHUNK = 32 * QK;  // elements one warp-wide load covers
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int kw = warp % KW, row_group = warp / KW;
  const int row0 = blockIdx.x * GEMV_BLOCK_ROWS + row_group * R;

  const KSlice slice = split_k_slice<GEMV_SPLIT_ALIGN>(k);
  const int kb = slice.begin, ke = slice.end;
  const int full_chunks = (ke - kb) / CHUNK;
#if GEMV_Q_GROUPED
  const long long groups_per_row = k / GEMV_GROUP;
#endif

  // Rows past N read row N-1 (valid memory) and are never written.
  QuantRow qr[R];
  const unsigned char* wrow[R];  // this lane's first byte in the split
#pragma unroll
  for (int r = 0; r < R; ++r) {
    qr[r] = quant_row(seg, min(row0 + r, n - 1));
    wrow[r] = qr[r].q + q_byte(kb + lane * QK);
  }

  float acc[R][MT];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) acc[r][mi] = 0.f;

  // The scales and zeros of this lane's group at element e, one per row (int4).
#if GEMV_Q_GROUPED
  typedef QuantGroup group_t;
  const auto load_groups = [&](group_t* gv, int e) {
#pragma unroll
    for (int r = 0; r < R; ++r) gv[r] = q_group(qr[r], groups_per_row, e / GEMV_GROUP);
  };
#else
  typedef int group_t;  // nothing to load: the scale is the row's
  const auto load_groups = [](group_t*, int) {};
#endif

  // One 16-byte load per row at element e (this lane's), times every row of x.
  const auto consume = [&](const uint4* wv, const group_t* gv, int e) {
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
      if (mi < m) {
        float xf[QK];
        q_load_x(x + mi * ldx + e, xf);
#if GEMV_Q_GROUPED
        float xs0 = 0.f, xs1 = 0.f;
#pragma unroll
        for (int j = 0; j < QK; j += 2) {
          xs0 += xf[j];
          xs1 += xf[j + 1];
        }
        const float xs = xs0 + xs1;
#pragma unroll
        for (int r = 0; r < R; ++r)
          acc[r][mi] = q_group_apply(gv[r], q_dot(wv[r], xf), xs, acc[r][mi]);
#else
        (void)gv;
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r][mi] += q_dot(wv[r], xf);
#endif
      }
    }
  };

  bool waited = !GEMV_PDL;
#if GEMV_PDL
  allow_next_grid();  // see gemv.cu: successors fill free slots while this grid drains
#endif
  const bool active = row0 < n;

  const int rest = (ke - kb - full_chunks * CHUNK) / QK;
#if GEMV_Q_RING
  // The ring: this warp's chunks kw, kw + KW, ... go global -> shared by cp.async, U stages
  // ahead of the one being consumed, in a ring of U + 1 slots of R rows x 512 bytes. Each lane
  // copies and later reads its own 16 bytes of each row, so wait_group alone makes them visible
  // (no barrier). The bytes in flight hold no registers: the register trips (the #else below)
  // keep U x R loads in registers until the trip's arithmetic is done, and during that
  // arithmetic the warp has nothing in flight.
  __shared__ __align__(16) uint4 ring[GEMV_WARPS][U + 1][R][32];
  const unsigned long long policy = evict_first_policy();
  const int total = full_chunks + (rest > 0 ? 1 : 0);
  const int mine = active && kw < total ? (total - kw + KW - 1) / KW : 0;
  const unsigned ring_lane = shared_address(&ring[warp][0][0][lane]);
  constexpr unsigned SLOT_BYTES = R * 32 * 16;
  // Whether this lane has 16 bytes in chunk cu of mine (the last, partial chunk: lanes < rest).
  const auto lane_has = [&](int cu) { return cu < full_chunks || lane < rest; };
  // Stage i of mine into slot `slot`; a group is committed even when empty, so that
  // wait_group<U> always means "stage i has arrived".
  const auto issue = [&](int i, int slot) {
    const int cu = kw + i * KW;
    if (i < mine && lane_has(cu)) {
#pragma unroll
      for (int r = 0; r < R; ++r)
        copy16_async(ring_lane + slot * SLOT_BYTES + r * 32 * 16, wrow[r] + q_byte(cu * CHUNK), policy);
    }
    async_commit();
  };
#pragma unroll
  for (int i = 0; i < U; ++i) issue(i, i);
  int slot = 0, next = U;  // the slot consumed now, the slot the next issue fills
  for (int i = 0; i < mine; ++i) {
    issue(i + U, next);
    next = next == U ? 0 : next + 1;
    async_wait<U>();
    if (!waited) {
      wait_for_previous_grid();
      waited = true;
    }
    const int cu = kw + i * KW;
    if (lane_has(cu)) {
      uint4 wv[R];
      group_t gv[R];
#pragma unroll
      for (int r = 0; r < R; ++r) wv[r] = ring[warp][slot][r][lane];
      const int e = kb + cu * CHUNK + lane * QK;
      load_groups(gv, e);
      consume(wv, gv, e);
    }
    slot = slot == U ? 0 : slot + 1;
  }
  async_wait<0>();  // nothing in flight past the end (the empty groups of the last issues)
#else
  int c = kw;
  if (active) {
    for (; c + (U - 1) * KW < full_chunks; c += U * KW) {
      uint4 wv[U][R];
      group_t gv[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u) {
#pragma unroll
        for (int r = 0; r < R; ++r)
          wv[u][r] = load_weights(reinterpret_cast<const elem_t*>(wrow[r] + q_byte((c + u * KW) * CHUNK)));
        load_groups(gv[u], kb + (c + u * KW) * CHUNK + lane * QK);
      }
      if (!waited) {
        wait_for_previous_grid();
        waited = true;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) consume(wv[u], gv[u], kb + (c + u * KW) * CHUNK + lane * QK);
    }
    // The last trip: this warp's remaining chunks (fewer than U) and the tail shorter than one
    // warp-wide load (chunk full_chunks: whole 16-byte loads on lanes below `rest`, taken by
    // the warp whose sequence kw, kw + KW, ... holds that index), predicated, with every load
    // issued before the first use as in the loop above. They used to go one chunk at a time,
    // each waiting a whole round trip to HBM: the same loop in the dense CUDA-core kernel made
    // configs whose unrolled stride does not divide K 1.3-2x slower on the H200 (bf16
    // 256000 x 3584, 6-7 chunks a row after the loop: 537 us against 400); not yet measured
    // here. A load that is not ok is not issued: nothing is read past the split or the row.
    if (c < full_chunks + (rest > 0 ? 1 : 0)) {
      bool ok[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int cu = c + u * KW;
        ok[u] = cu < full_chunks || (cu == full_chunks && lane < rest);
      }
      uint4 wv[U][R];
      group_t gv[U][R];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) {
#pragma unroll
          for (int r = 0; r < R; ++r)
            wv[u][r] = load_weights(reinterpret_cast<const elem_t*>(wrow[r] + q_byte((c + u * KW) * CHUNK)));
          load_groups(gv[u], kb + (c + u * KW) * CHUNK + lane * QK);
        }
      if (!waited) {
        wait_for_previous_grid();
        waited = true;
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (ok[u]) consume(wv[u], gv[u], kb + (c + u * KW) * CHUNK + lane * QK);
    }
  }
#endif  // GEMV_Q_RING
  if (!waited) wait_for_previous_grid();
#if !GEMV_Q_GROUPED
  // Single elements past the last whole 16-byte load (int8, fp8; K not a multiple of 16). int4
  // has none: K is a multiple of its group, and every split a multiple of 256.
  if (active && kw == KW - 1) {
    for (int e = kb + (ke - kb) / QK * QK + lane; e < ke; e += 32) {
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        if (mi < m) {
          const float xe = elem_to_float(load_x_element(x + mi * ldx + e));
#pragma unroll
          for (int r = 0; r < R; ++r) acc[r][mi] = fmaf(q_element_value(qr[r].q, e), xe, acc[r][mi]);
        }
      }
    }
  }
#endif
#if !GEMV_PDL
  allow_next_grid();
#endif

#pragma unroll
  for (int r = 0; r < R; ++r) {
#if !GEMV_Q_GROUPED
    const float scale = q_row_scale(qr[r]);
#endif
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) acc[r][mi] += __shfl_xor_sync(0xffffffffu, acc[r][mi], off);
#if !GEMV_Q_GROUPED
      acc[r][mi] *= scale;
#endif
    }
  }

  finish_cc_rows<R, MT, KW, GEMV_THREADS>(seg, acc, row0, m, n, lane, row_group, kw, partials, tickets);
}
