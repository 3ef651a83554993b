// prelude.cu: what every kernel family shares, prepended by the generator ahead of one family's
// template (gemv.cu: CUDA cores; gemv_tc.cu: tensor cores). Element types and conversions,
// 16-byte loads with cache hints, x loads that are safe under programmatic dependent launch,
// the PDL helpers, fused segments and the deterministic split-K finish.
//
// Header-free on purpose: a server may embed the library with only the driver and libnvrtc,
// no toolkit headers, so nothing here may #include anything.

#ifndef GEMV_PRELUDE
#define GEMV_PRELUDE 1

#ifndef GEMV_DTYPE
#define GEMV_DTYPE 2  // 0 fp32, 1 fp16, 2 bf16
#endif
#ifndef GEMV_VEC_BYTES
#define GEMV_VEC_BYTES 16
#endif
#ifndef GEMV_STREAMING
#define GEMV_STREAMING 1  // weights are read once: evict-first loads keep x and partials in L2
#endif
#ifndef GEMV_PDL
#define GEMV_PDL 0
#endif
#ifndef GEMV_M_TILE
#define GEMV_M_TILE 1  // rows of X (batch) one kernel computes at most; m <= GEMV_M_TILE at launch
#endif
#ifndef GEMV_WFORMAT
#define GEMV_WFORMAT 0  // dense weights (the quantized formats are described further down)
#endif
// Split-K blocks may finish as a thread block cluster (finish_block): dense and 8-bit weights.
// On the H200 it took 0.4-1.6 us off dense split-K calls and 3.6-4.2% off the best int8 / fp8
// ones at 16x4096x14336, but made an int4 tensor-core split-K config 19% slower
// (bench/results/h200.md, "Split-K blocks as one cluster" and "Split-K finish");
// jit::cluster_blocks_for launches clusters for the same kernels.
#define GEMV_CLUSTER_SPLIT_K (GEMV_WFORMAT != 4)
// The most outputs (block rows x m tile) a block keeps for its cluster, 8 KB of shared memory:
// more would push the largest tensor-core blocks (t256_r4 at m tile 13 or 16: 32 KB of
// fragments) past the 48 KB of static shared memory a kernel may have. Those keep the global
// fix-up; jit::cluster_blocks_for does not launch them as clusters (jit::kClusterSplitOutputs).
#define GEMV_CLUSTER_OUTPUTS 2048

// ---- element type ---------------------------------------------------------------------
#if GEMV_DTYPE == 0
typedef float elem_t;
#define GEMV_ESIZE 4
#else
typedef unsigned short elem_t;  // raw fp16 / bf16 bits: no cuda_fp16.h or cuda_bf16.h needed
#define GEMV_ESIZE 2
#endif

__device__ __forceinline__ float elem_to_float(elem_t v) {
#if GEMV_DTYPE == 0
  return v;
#elif GEMV_DTYPE == 1
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
#else
  return __uint_as_float(static_cast<unsigned>(v) << 16);
#endif
}

__device__ __forceinline__ elem_t float_to_elem(float f) {
#if GEMV_DTYPE == 0
  return f;
#else
  unsigned short r;
#if GEMV_DTYPE == 1
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
#else
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
#endif
  return r;
#endif
}

// Two packed 16-bit elements of one 32-bit word, or one fp32 element.
__device__ __forceinline__ void word_to_floats(unsigned w, float* out) {
#if GEMV_DTYPE == 0
  out[0] = __uint_as_float(w);
#elif GEMV_DTYPE == 1
  asm("{.reg .f16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.f32.f16 %0, lo;\n cvt.f32.f16 %1, hi;}"
      : "=f"(out[0]), "=f"(out[1]) : "r"(w));
#else
  out[0] = __uint_as_float(w << 16);
  out[1] = __uint_as_float(w & 0xffff0000u);
#endif
}

// ---- vector loads ----------------------------------------------------------------------
#define GEMV_VE (GEMV_VEC_BYTES / GEMV_ESIZE)  // elements per vector load
// The blocks of GEMV_THREADS an SM's 65536 registers hold at `regs` registers a thread: what
// a family's launch bounds ask of ptxas to hold a kernel to `regs`.
#define GEMV_BLOCKS_AT_REGISTERS(regs) (65536 / (regs) / GEMV_THREADS)
#if GEMV_VEC_BYTES == 16
typedef uint4 vec_t;
#elif GEMV_VEC_BYTES == 8
typedef uint2 vec_t;
#elif GEMV_VEC_BYTES == 4
typedef unsigned int vec_t;
#else
typedef unsigned short vec_t;
#endif

__device__ __forceinline__ void vec_to_floats(vec_t v, float* out) {
  constexpr int per_word = 4 / GEMV_ESIZE;
#if GEMV_VEC_BYTES == 16
  word_to_floats(v.x, out);
  word_to_floats(v.y, out + per_word);
  word_to_floats(v.z, out + 2 * per_word);
  word_to_floats(v.w, out + 3 * per_word);
#elif GEMV_VEC_BYTES == 8
  word_to_floats(v.x, out);
  word_to_floats(v.y, out + per_word);
#elif GEMV_VEC_BYTES == 4
  word_to_floats(v, out);
#else
  out[0] = elem_to_float(v);
#endif
}

__device__ __forceinline__ vec_t load_weights(const elem_t* p) {
#if GEMV_STREAMING
  return __ldcs(reinterpret_cast<const vec_t*>(p));
#else
  return __ldg(reinterpret_cast<const vec_t*>(p));
#endif
}

// x may be the previous kernel's output. Without PDL that kernel has finished before this one
// starts, so the read-only path is safe. With PDL the two overlap: ld.global.nc (and __ldg,
// which the compiler treats as invariant and may hoist above griddepcontrol.wait) would break
// the read-only contract. So x is read with plain, coherent ld.global in volatile asm: it stays
// after the wait (volatile asm keeps its order with the wait's volatile asm), the previous grid's
// writes are visible after the wait as with cudaGridDependencySynchronize, and lines stay in
// L1 for the other warps of the block. No "memory" clobber: that would pin the weight loads
// around every x load (see docs/performance.md, "x under PDL").
#if GEMV_PDL
__device__ __forceinline__ vec_t load_x(const elem_t* p) {
  vec_t v;
#if GEMV_VEC_BYTES == 16
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
#elif GEMV_VEC_BYTES == 8
  asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
#elif GEMV_VEC_BYTES == 4
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
#else
  asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p));
#endif
  return v;
}
__device__ __forceinline__ elem_t load_x_element(const elem_t* p) {
#if GEMV_DTYPE == 0
  unsigned u;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(u) : "l"(p));
  return __uint_as_float(u);
#else
  unsigned short h;
  asm volatile("ld.global.u16 %0, [%1];" : "=h"(h) : "l"(p));
  return h;
#endif
}
#else
__device__ __forceinline__ vec_t load_x(const elem_t* p) {
  return __ldg(reinterpret_cast<const vec_t*>(p));
}
__device__ __forceinline__ elem_t load_x_element(const elem_t* p) { return __ldg(p); }
#endif

// ---- programmatic dependent launch -------------------------------------------------------
__device__ __forceinline__ void wait_for_previous_grid() {
#if GEMV_PDL && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Asks L2 for the 128-byte line at p; no register is written, nothing waits for it. Volatile so
// that it stays ahead of griddepcontrol.wait.
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

__device__ __forceinline__ void allow_next_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

// ---- fused segments ----------------------------------------------------------------------
// One launch can compute several GEMVs that share x (Q, K and V; gate and up), each with its
// own weights, row stride and output: their rows are stacked into one row space, and a row
// finds its segment by comparing with the segments' first rows. Constant indices only, so the
// struct stays in the parameter bank (a run-time index would copy it to local memory).
// Batch row i of a segment's output starts at y + i * ldy.
#define GEMV_MAX_SEGMENTS 4
// Quantized weights (gemv_q.cu) use w as packed bytes, ld in elements (weights) and their
// scales and zeros (docs/weights.md); the dense families ignore scales and zeros.
struct GemvSegments {
  const elem_t* w[GEMV_MAX_SEGMENTS];
  elem_t* y[GEMV_MAX_SEGMENTS];
  long long ld[GEMV_MAX_SEGMENTS];
  long long ldy[GEMV_MAX_SEGMENTS];
  const void* scales[GEMV_MAX_SEGMENTS];
  const void* zeros[GEMV_MAX_SEGMENTS];
  int row_begin[GEMV_MAX_SEGMENTS];  // first row of each segment; row_begin[0] == 0
  int count;
};

// One segment's fields, found once for rows that all lie in it: each search reads every
// segment's fields from the constant bank (17 loads and selects), and a kernel that searched
// for each of its lanes' rows spent hundreds of instructions before its first weight load.
struct RowSegment {
  const void* w;
  const void* scales;  // quantized weights only
  const void* zeros;
  long long ld;
  int begin;
};

__device__ __forceinline__ RowSegment segment_of(const GemvSegments& seg, int row) {
  RowSegment r = {seg.w[0], seg.scales[0], seg.zeros[0], seg.ld[0], 0};
#pragma unroll
  for (int i = 1; i < GEMV_MAX_SEGMENTS; ++i)
    if (i < seg.count && row >= seg.row_begin[i]) {
      r.w = seg.w[i];
      r.scales = seg.scales[i];
      r.zeros = seg.zeros[i];
      r.ld = seg.ld[i];
      r.begin = seg.row_begin[i];
    }
  return r;
}

// The rows of one warp: `single` where they all lie in segment `one` (the usual case: only
// a warp whose rows straddle a boundary searches for each row). with_rows makes them with
// single a constant, so each call of point compiles to one of the two.
struct WarpRows {
  const GemvSegments& all;
  RowSegment one;
  bool single;
};
__device__ __forceinline__ RowSegment segment_of(const WarpRows& rows, int row) {
  return rows.single ? rows.one : segment_of(rows.all, row);
}
template <class Point>
__device__ __forceinline__ void with_rows(const GemvSegments& seg, int first, int last, const Point& point) {
  const RowSegment one = segment_of(seg, first);
  if (one.begin == segment_of(seg, last).begin)
    point(WarpRows{seg, one, true});
  else
    point(WarpRows{seg, one, false});
}

// Row `row`'s weights; s, rows or seg holds it.
__device__ __forceinline__ const elem_t* row_weights(const RowSegment& s, int row) {
  return static_cast<const elem_t*>(s.w) + static_cast<long long>(row - s.begin) * s.ld;
}
__device__ __forceinline__ const elem_t* row_weights(const WarpRows& rows, int row) {
  return row_weights(segment_of(rows, row), row);
}
__device__ __forceinline__ const elem_t* row_weights(const GemvSegments& seg, int row) {
  return row_weights(segment_of(seg, row), row);
}

// Output element (batch row mi, weight row `row`).
__device__ __forceinline__ elem_t* row_output(const GemvSegments& seg, int row, int mi) {
  elem_t* y = seg.y[0];
  long long ldy = seg.ldy[0];
  int begin = 0;
#pragma unroll
  for (int i = 1; i < GEMV_MAX_SEGMENTS; ++i)
    if (i < seg.count && row >= seg.row_begin[i]) {
      y = seg.y[i];
      ldy = seg.ldy[i];
      begin = seg.row_begin[i];
    }
  return y + static_cast<long long>(mi) * ldy + (row - begin);
}

// ---- thread block clusters (sm_90): the split-K blocks of a row block as one cluster --------
// The number of blocks in this block's cluster (1 when launched without clusters).
__device__ __forceinline__ unsigned cluster_blocks() {
#if __CUDA_ARCH__ >= 900
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
  return r;
#else
  return 1;
#endif
}
// Every thread of every block of the cluster arrives; shared-memory writes before it are
// visible to the cluster's reads after it (release / acquire).
__device__ __forceinline__ void cluster_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
// The 32-bit shared-window address of p, a pointer into this block's __shared__ memory (for
// cp.async and mapa).
__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned a;
  asm("{.reg .u64 t;\n cvta.to.shared.u64 t, %1;\n cvt.u32.u64 %0, t;}" : "=r"(a) : "l"(p));
  return a;
}
// Loads from a 32-bit shared-memory address. Volatile: kept in order with the cp.async waits and
// barriers around them: the compiler does not move code with side effects (volatile asm, barriers)
// across each other.
__device__ __forceinline__ uint4 load_shared16(unsigned a) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}
__device__ __forceinline__ float load_shared4(unsigned a) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(a));
  return v;
}

// ---- cp.async: 16 bytes global -> shared, completion tracked per thread in commit groups ----
// The rings of the quantized families (gemv_qtc.cu, and gemv_q.cu's ring): bytes in flight that
// hold no registers. Under the streaming hint the copies carry an L2 evict-first policy.
__device__ __forceinline__ unsigned long long evict_first_policy() {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void copy16_async(unsigned dst, const void* src, unsigned long long policy) {
#if GEMV_STREAMING
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "l"(policy)
               : "memory");
#else
  (void)policy;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
#endif
}
__device__ __forceinline__ void async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
// The float at p (a __shared__ address of this block) in block `rank` of the cluster.
__device__ __forceinline__ float cluster_load(const float* p, unsigned rank) {
#if __CUDA_ARCH__ >= 900
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(shared_address(p)), "r"(rank));
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  return *p;
#endif
}

// ---- split-K: this block's slice of K ------------------------------------------------------
// gridDim.y splits of ceil(K / splits) elements each, rounded up to ALIGN elements (whole
// 128-byte lines, or whole int4 stages, so that no load straddles two splits); the last splits
// may be short or empty (begin == end == K).
struct KSlice {
  int begin, end;
};
template <int ALIGN>
__device__ __forceinline__ KSlice split_k_slice(int k) {
  const int splits = gridDim.y;
  int per_split = (k + splits - 1) / splits;
  per_split = (per_split + ALIGN - 1) / ALIGN * ALIGN;
  const int begin = min(k, static_cast<int>(blockIdx.y) * per_split);
  return {begin, min(k, begin + per_split)};
}

// ---- the block's finish: outputs, or split-K partials combined in split order -------------
// sum_of(idx) is this block's sum for output idx = mi * BLOCK_ROWS + rb (batch row mi, row
// rb of the block), each taken once. Without split-K it is the output. With split-K the splits
// are added in split order (bitwise reproducible, and the same bits either way below):
// - launched as clusters of the gridDim.y splits (the runtime does so on sm_90 for the dense
//   families, GEMV_CLUSTER_SPLIT_K, where jit::cluster_blocks_for's rules hold):
//   each block keeps its sums in shared memory, and after a cluster barrier block y adds up
//   the y-th slice of the outputs from every block's shared memory. No global partials, no
//   fence, no ticket: the fix-up is two barriers and a few distributed shared loads instead of
//   a store, a fence, an atomic and the last block's loads, each a round trip to L2 that the
//   next kernel in a chain waits for.
// - otherwise each block publishes its partial sums; the last block of a row block to arrive
//   adds all splits and re-arms the ticket, so no memset between calls. partials holds
//   gridDim.y x GEMV_M_TILE x n floats.
// row_of(rb) is the row of block row rb: blockIdx.x * BLOCK_ROWS + rb but in gemv_tcal.cu, whose
// blocks take rows 8 apart (the overload below).
template <int BLOCK_ROWS, int THREADS, class SumOf, class RowOf>
__device__ __forceinline__ void finish_block(const GemvSegments& seg, const SumOf& sum_of, const RowOf& row_of, int m,
                                             int n, float* __restrict__ partials, unsigned* __restrict__ tickets) {
  const int tid = threadIdx.x, splits = gridDim.y;
  constexpr int OUTPUTS = BLOCK_ROWS * GEMV_M_TILE;
  if (splits == 1) {
    for (int idx = tid; idx < OUTPUTS; idx += THREADS) {
      const int mi = idx / BLOCK_ROWS, row = row_of(idx % BLOCK_ROWS);
      if (mi < m && row < n) *row_output(seg, row, mi) = float_to_elem(sum_of(idx));
    }
    return;
  }
#if GEMV_CLUSTER_SPLIT_K
  if constexpr (OUTPUTS <= GEMV_CLUSTER_OUTPUTS) {
    if (cluster_blocks() == static_cast<unsigned>(splits)) {
      __shared__ float split_sums[OUTPUTS];
      for (int idx = tid; idx < OUTPUTS; idx += THREADS) split_sums[idx] = sum_of(idx);
      cluster_sync();
      // Block y (its rank in the cluster: the cluster spans gridDim.y) takes outputs
      // [y * per, (y + 1) * per).
      const int per = (OUTPUTS + splits - 1) / splits, y = blockIdx.y;
      for (int idx = y * per + tid; idx < min(OUTPUTS, (y + 1) * per); idx += THREADS) {
        const int mi = idx / BLOCK_ROWS, row = row_of(idx % BLOCK_ROWS);
        if (mi < m && row < n) {
          float total = 0.f;
          for (int s = 0; s < splits; ++s) total += cluster_load(&split_sums[idx], s);
          *row_output(seg, row, mi) = float_to_elem(total);
        }
      }
      cluster_sync();  // no block exits while another still reads its shared memory
      return;
    }
  }
#endif
  for (int idx = tid; idx < OUTPUTS; idx += THREADS) {
    const int mi = idx / BLOCK_ROWS, row = row_of(idx % BLOCK_ROWS);
    if (mi < m && row < n)
      partials[(static_cast<long long>(blockIdx.y) * GEMV_M_TILE + mi) * n + row] = sum_of(idx);
  }
  __threadfence();
  __syncthreads();
  __shared__ bool is_last;
  if (tid == 0) is_last = atomicAdd(&tickets[blockIdx.x], 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  // The last block of a row block sums its outputs' splits alone while the other blocks have
  // left, so its loads must overlap: a thread's outputs (up to 8 at a time) and their splits
  // (up to 8 at a time) are all loaded before any add. The adds are the same, in the same split
  // order, as one load at a time, so the bits do not change. On the H200 this took a median 3.5%
  // off int8 split-K configs at 16x4096x14336, up to 15% off int4 ones (bench/results/h200.md,
  // "Split-K finish"). With one output a thread (the CUDA-core blocks at m = 1) 4 splits at a
  // time: 8 made a 64-register fp16 `_al` config spill.
  constexpr int PER_THREAD = (OUTPUTS + THREADS - 1) / THREADS;
  constexpr int GROUP = PER_THREAD < 8 ? PER_THREAD : 8;
  constexpr int SPLIT_LOADS = GROUP > 1 ? 8 : 4;
  const long long stride = static_cast<long long>(GEMV_M_TILE) * n;  // between splits
  for (int j0 = 0; j0 < PER_THREAD; j0 += GROUP) {
    const float* p[GROUP];
    float total[GROUP];
#pragma unroll
    for (int j = 0; j < GROUP; ++j) {
      const int idx = tid + (j0 + j) * THREADS;
      const int mi = idx / BLOCK_ROWS, row = row_of(idx % BLOCK_ROWS);
      p[j] = idx < OUTPUTS && mi < m && row < n ? &partials[static_cast<long long>(mi) * n + row] : nullptr;
      total[j] = 0.f;
    }
    for (int s0 = 0; s0 < splits; s0 += SPLIT_LOADS) {
      float v[GROUP][SPLIT_LOADS];
#pragma unroll
      for (int j = 0; j < GROUP; ++j)
#pragma unroll
        for (int q = 0; q < SPLIT_LOADS; ++q)
          v[j][q] = p[j] && s0 + q < splits ? __ldcg(p[j] + (s0 + q) * stride) : 0.f;
#pragma unroll
      for (int j = 0; j < GROUP; ++j)
#pragma unroll
        for (int q = 0; q < SPLIT_LOADS; ++q)
          if (s0 + q < splits) total[j] += v[j][q];
    }
#pragma unroll
    for (int j = 0; j < GROUP; ++j) {
      const int idx = tid + (j0 + j) * THREADS;
      if (p[j]) *row_output(seg, row_of(idx % BLOCK_ROWS), idx / BLOCK_ROWS) = float_to_elem(total[j]);
    }
  }
  if (tid == 0) tickets[blockIdx.x] = 0;
}
template <int BLOCK_ROWS, int THREADS, class SumOf>
__device__ __forceinline__ void finish_block(const GemvSegments& seg, const SumOf& sum_of, int m, int n,
                                             float* __restrict__ partials, unsigned* __restrict__ tickets) {
  const int row_base = blockIdx.x * BLOCK_ROWS;
  finish_block<BLOCK_ROWS, THREADS>(seg, sum_of, [row_base](int rb) { return row_base + rb; }, m, n, partials, tickets);
}

// ---- the end of a CUDA-core kernel (gemv.cu, gemv_q.cu) -----------------------------------
// acc[r][mi], already summed over the LK lanes of the lane's row group (every lane of the group
// holds every sum): weight row row0 + sub R + r times batch row mi, where sub = lane / LK is the
// group (32 / LK groups side by side per warp, LK = 32: one group, the whole warp). With one
// warp per row set and no split-K each warp writes its own rows; otherwise the KW warps of a row
// set (row_group; kw: the warp's place in it) are combined in a fixed order and finish_block
// writes or publishes them.
template <int R, int MT, int KW, int THREADS, int LK = 32>
__device__ __forceinline__ void finish_cc_rows(const GemvSegments& seg, const float (&acc)[R][MT], int row0, int m,
                                               int n, int lane, int row_group, int kw, float* __restrict__ partials,
                                               unsigned* __restrict__ tickets) {
  constexpr int RW = R * (32 / LK);  // rows of the warp
  constexpr int WARPS = THREADS / 32, BLOCK_ROWS = WARPS / KW * RW;
  const int sub = lane / LK, kl = lane % LK;
  if (KW == 1 && gridDim.y == 1) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
        if (kl == (r * MT + mi) % LK && mi < m && row0 + sub * R + r < n)
          *row_output(seg, row0 + sub * R + r, mi) = float_to_elem(acc[r][mi]);
    return;
  }
  __shared__ float warp_sums[WARPS * RW * MT];
  if (kl == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) warp_sums[((row_group * KW + kw) * RW + sub * R + r) * MT + mi] = acc[r][mi];
  }
  __syncthreads();
  const auto block_sum = [&](int idx) {
    const int mi = idx / BLOCK_ROWS, rb = idx % BLOCK_ROWS;
    const int g = rb / RW, r = rb % RW;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < KW; ++j) sum += warp_sums[((g * KW + j) * RW + r) * MT + mi];
    return sum;
  };
  finish_block<BLOCK_ROWS, THREADS>(seg, block_sum, m, n, partials, tickets);
}

// ---- tensor cores (gemv_tc.cu, gemv_qtc.cu, gemv_q4l.cu) -----------------------------------
#if GEMV_DTYPE != 0
// d += a * b for one m16n8k16 tile, fp32 accumulators.
__device__ __forceinline__ void mma_16816(float* d, unsigned a0, unsigned a1, unsigned a2,
                                          unsigned a3, unsigned b0, unsigned b1) {
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

// 16 bytes of weights for the tensor-core kernels. In gemv_tc.cu a warp's load asks for 64-byte
// halves of eight rows' 128-byte lines (the other halves come with the next chunk); the L2::128B
// prefetch size has L2 fetch each whole line at the first request. On the H200 that made every
// swept (shape, M) pair 0.5-3% faster (2x28672x4096 55.3 -> 53.7 us); L2::256B made them slower.
__device__ __forceinline__ uint4 load_tc_weights(const void* p) {
  uint4 v;
#if GEMV_STREAMING
  asm("ld.global.cs.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
#else
  asm("ld.global.nc.L2::128B.v4.u32 {%0, %1, %2, %3}, [%4];"
#endif
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// The two mma steps of one 32-element chunk (gemv_tc.cu, gemv_tcal.cu): lo/hi a lane's 16-byte
// loads of rows g and g + 8, xv its 16 bytes of x at the same K positions. The steps go to two
// accumulators (summed at the end): at m = 16 a chain of dependent mma held each warp's next
// loads back, and two chains ran 16x6144x4096 in 15.2 us instead of 15.6 on the H200
// (bench/results/h200.md, "Tensor cores at M = 4 to 16: what holds them back").
__device__ __forceinline__ void mma_chunk(float* d0, float* d1, const uint4& lo, const uint4& hi, const uint4& xv) {
  mma_16816(d0, lo.x, hi.x, lo.y, hi.y, xv.x, xv.y);
  mma_16816(d1, lo.z, hi.z, lo.w, hi.w, xv.z, xv.w);
}

// The 8 elements p[0..7] at K positions k0 .. k0 + 7, those outside [0, k) zero and never read
// (K tails, and gemv_tcal.cu's rows' first and last blocks: zero in both W and x, so padding never
// adds anything, not even NaN from memory outside the row).
template <bool IS_X>
__device__ __forceinline__ uint4 load_window(const elem_t* p, int k0, int k) {
  unsigned short e[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) e[j] = k0 + j >= 0 && k0 + j < k ? (IS_X ? load_x_element(p + j) : p[j]) : 0;
  return make_uint4(e[0] | (unsigned(e[1]) << 16), e[2] | (unsigned(e[3]) << 16), e[4] | (unsigned(e[5]) << 16),
                    e[6] | (unsigned(e[7]) << 16));
}

#endif  // GEMV_DTYPE != 0

// ---- the end of a tensor-core kernel (gemv_tc.cu, gemv_qtc.cu, gemv_q4l.cu) ---------------
// acc[i][nt][j] is the D fragment of the warp's tile i and batch tile nt: with 16-row tiles
// (TILE 16) weight row row0 + 16 i + g + 8 (j / 2), batch row 8 nt + 2 t + j % 2 (g = lane / 4,
// t = lane % 4); with 8-row tiles (TILE 8, gemv_tc.cu's w8: X is the A operand, NT 1) weight
// row row0 + 8 i + 2 t + j % 2, batch row g + 8 (j / 2).
// With one warp per row set and no split-K each lane writes its own outputs; otherwise the KW
// warps of a row set are combined in a fixed order and finish_block writes or publishes them.
template <int TILE>
__device__ __forceinline__ int tc_fragment_row(int i, int g, int t, int j) {
  return TILE == 8 ? 8 * i + 2 * t + j % 2 : 16 * i + g + 8 * (j / 2);
}
template <int TILE>
__device__ __forceinline__ int tc_fragment_batch_row(int nt, int g, int t, int j) {
  return TILE == 8 ? g + 8 * (j / 2) : 8 * nt + 2 * t + j % 2;
}
// finish_tc_tiles_at: the rows of block row q (warp's row set x WARP_ROWS + fragment row) are
// row_of(q) (gemv_tcal.cu's rows 8 apart); finish_tc_tiles: blockIdx.x * BLOCK_ROWS + q, where row0
// is the warp's first row.
template <int R, int NT, int KW, int THREADS, int TILE = 16, class RowOf>
__device__ __forceinline__ void finish_tc_tiles_at(const GemvSegments& seg, const float (&acc)[R][NT][4], const RowOf& row_of,
                                                   int m, int n, float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int WARPS = THREADS / 32, WARP_ROWS = TILE * R, BLOCK_ROWS = WARPS / KW * WARP_ROWS;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  if (KW == 1 && gridDim.y == 1) {
#pragma unroll
    for (int i = 0; i < R; ++i)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int row = row_of(warp / KW * WARP_ROWS + tc_fragment_row<TILE>(i, g, t, j));
          const int mi = tc_fragment_batch_row<TILE>(nt, g, t, j);
          if (mi < m && row < n) *row_output(seg, row, mi) = float_to_elem(acc[i][nt][j]);
        }
    return;
  }
  constexpr int FRAG = R * NT * 4;
  __shared__ float frags[WARPS * FRAG * 32];
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int j = 0; j < 4; ++j) frags[(warp * FRAG + (i * NT + nt) * 4 + j) * 32 + lane] = acc[i][nt][j];
  __syncthreads();
  const auto block_sum = [&](int idx) {
    const int mi = idx / BLOCK_ROWS, rb = idx % BLOCK_ROWS;
    const int group = rb / WARP_ROWS, i = rb % WARP_ROWS / TILE, rr = rb % TILE;
    // The lane and fragment holding (rr, mi): the inverse of tc_fragment_row / _batch_row.
    const int nt = TILE == 8 ? 0 : mi / 8;
    const int j = TILE == 8 ? (mi / 8) * 2 + rr % 2 : (rr / 8) * 2 + mi % 2;
    const int src = TILE == 8 ? (mi % 8) * 4 + rr / 2 : (rr % 8) * 4 + (mi % 8) / 2;
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < KW; ++w) sum += frags[((group * KW + w) * FRAG + (i * NT + nt) * 4 + j) * 32 + src];
    return sum;
  };
  finish_block<BLOCK_ROWS, THREADS>(seg, block_sum, row_of, m, n, partials, tickets);
}
template <int R, int NT, int KW, int THREADS, int TILE = 16>
__device__ __forceinline__ void finish_tc_tiles(const GemvSegments& seg, const float (&acc)[R][NT][4], int row0, int m,
                                                int n, float* __restrict__ partials, unsigned* __restrict__ tickets) {
  const int row_base = row0 - (threadIdx.x >> 5) / KW * TILE * R;
  finish_tc_tiles_at<R, NT, KW, THREADS, TILE>(seg, acc, [row_base](int q) { return row_base + q; }, m, n, partials,
                                               tickets);
}

// ---- quantized weight formats (docs/weights.md) -------------------------------------------
// A format is these few functions: which bytes hold a row, how a 32-bit word of them turns into
// values in K order, and what scales those values. The quantized family (gemv_q.cu) asks for
// values and never looks at bits. GEMV_WFORMAT: 0 dense (none of this is used), 1 int8 and
// 2 fp8 e4m3 with an fp32 scale per row, 3 fp8 e4m3 with one fp32 scale, 4 int4 with a scale and
// a zero (activation dtype) per GEMV_GROUP elements of K.
#ifndef GEMV_GROUP
#define GEMV_GROUP 128
#endif
#if GEMV_WFORMAT != 0
#define GEMV_QK (GEMV_WFORMAT == 4 ? 32 : 16)  // weights in one 16-byte load
#define GEMV_QWORD (GEMV_QK / 4)               // weights in one 32-bit word

// Byte offset of element k within a row (int4: two per byte, k even in the low nibble).
__device__ __forceinline__ long long q_byte(long long k) { return GEMV_WFORMAT == 4 ? k / 2 : k; }

struct QuantRow {
  const unsigned char* q;  // the row's packed weights
  const void* scales;      // the segment's scales
  const void* zeros;       // the segment's zeros (int4)
  long long row;           // row within its segment
};

// Row `row`; s, rows or seg holds it.
__device__ __forceinline__ QuantRow quant_row(const RowSegment& s, int row) {
  QuantRow r;
  r.row = row - s.begin;
  r.q = static_cast<const unsigned char*>(s.w) + r.row * q_byte(s.ld);
  r.scales = s.scales;
  r.zeros = s.zeros;
  return r;
}
__device__ __forceinline__ QuantRow quant_row(const WarpRows& rows, int row) {
  return quant_row(segment_of(rows, row), row);
}
__device__ __forceinline__ QuantRow quant_row(const GemvSegments& seg, int row) {
  return quant_row(segment_of(seg, row), row);
}

// The values of one 32-bit word of packed weights, in K order: GEMV_QWORD of them.
//   int8: exact. Byte b, made unsigned (b + 128), is placed under the exponent of 2^23 by a
//         byte permute, so the float is 2^23 + b + 128; one subtract leaves b. (An I2F per byte
//         issues at a quarter of the FMA rate; this is a permute and an add.)
//   fp8:  exact: the hardware converts pairs of e4m3 to f16x2, then to fp32. The scale is
//         applied once per row (q_row_scale).
//   int4: v = 1 + q / 128, a byte permute puts (0x80 | q) under the exponent of 1.0. The kernel
//         sums v x and x over a group and recovers sum (q - z) x as 128 (sum v x - sum x) -
//         z sum x (q_group_apply): one permute and one FMA per weight, no subtract.
__device__ __forceinline__ void q_word_values(unsigned w, float* v) {
#if GEMV_WFORMAT == 1
  const unsigned u = w ^ 0x80808080u;
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7650 | j)) - 8388736.f;
#elif GEMV_WFORMAT == 2 || GEMV_WFORMAT == 3
  unsigned h01, h23;
  asm("{.reg .b16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n cvt.rn.f16x2.e4m3x2 %1, hi;}"
      : "=r"(h01), "=r"(h23) : "r"(w));
  asm("{.reg .f16 a, b;\n mov.b32 {a, b}, %2;\n cvt.f32.f16 %0, a;\n cvt.f32.f16 %1, b;}"
      : "=f"(v[0]), "=f"(v[1]) : "r"(h01));
  asm("{.reg .f16 a, b;\n mov.b32 {a, b}, %2;\n cvt.f32.f16 %0, a;\n cvt.f32.f16 %1, b;}"
      : "=f"(v[2]), "=f"(v[3]) : "r"(h23));
#else
  const unsigned even = (w & 0x0F0F0F0Fu) | 0x80808080u, odd = ((w >> 4) & 0x0F0F0F0Fu) | 0x80808080u;
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = __uint_as_float(__byte_perm(even, 0x3F000000u, 0x7054 | (j << 8)));
    v[2 * j + 1] = __uint_as_float(__byte_perm(odd, 0x3F000000u, 0x7054 | (j << 8)));
  }
#endif
}

// The value of element k of a row read one byte at a time (K tails of int8 and fp8).
__device__ __forceinline__ float q_element_value(const unsigned char* q, long long k) {
  float v[4];
  q_word_values(q[k], v);  // the byte in the lowest position of a word
  return v[0];
}

// Whether the family must also sum x over a group (int4's zero point and bias).
#define GEMV_Q_GROUPED (GEMV_WFORMAT == 4)

#if GEMV_Q_GROUPED
// The scale and zero of group g of a row, as stored. Loaded together with the group's weights
// (they are part of the stream), so their latency hides behind the same wait.
struct QuantGroup {
  elem_t scale, zero;
};
__device__ __forceinline__ QuantGroup q_group(const QuantRow& r, long long groups_per_row, long long g) {
  const long long i = r.row * groups_per_row + g;
  QuantGroup q;
  q.scale = __ldg(static_cast<const elem_t*>(r.scales) + i);
  q.zero = __ldg(static_cast<const elem_t*>(r.zeros) + i);
  return q;
}
// One 16-bit scale or zero, read-only, zero-extended into a 32-bit register (a u16 load into a
// 16-bit variable costs a byte permute to merge it), and its value.
__device__ __forceinline__ unsigned load_elem_bits(const elem_t* p) {
  unsigned v;
  asm("ld.global.nc.u16 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
// Two adjacent 2-byte elements at p (4-byte aligned), p[0] in the low half.
__device__ __forceinline__ unsigned load_elem_pair_bits(const elem_t* p) {
  unsigned v;
  asm("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ float elem_bits_to_float(unsigned v) {
#if GEMV_DTYPE == 2
  return __uint_as_float(v << 16);
#else
  return elem_to_float(static_cast<elem_t>(v));
#endif
}
// Adds one group's share to acc: dot = sum v x and xs = sum x over the group's elements here.
__device__ __forceinline__ float q_group_apply(const QuantGroup& q, float dot, float xs, float acc) {
  const float scale = elem_to_float(q.scale), zero = elem_to_float(q.zero);
  return fmaf(scale, fmaf(128.f, dot - xs, -zero * xs), acc);
}
#else
// The factor of a whole row (int8, fp8) or of the tensor (fp8t).
__device__ __forceinline__ float q_row_scale(const QuantRow& r) {
  const float* s = static_cast<const float*>(r.scales);
  return __ldg(s + (GEMV_WFORMAT == 3 ? 0 : r.row));
}
#endif
#if GEMV_WFORMAT == 4 && GEMV_DTYPE != 0
// int4 on tensor cores (gemv_qtc.cu's ring and gemv_tc.cu's register loads): a word of 8
// weights becomes four pairs of 16-bit values B + q, whose products with x's pairs (rebuilt in
// the same K order) an mma sums; a second mma with A = 1 sums x, and the group adds
// s (D - (B + z) sum x) = s sum (q - z) x. B is exact in both dtypes.
#if GEMV_DTYPE == 1
#define GEMV_I4_BIAS 0x64006400u  // fp16 1024 + q
#define GEMV_I4_BIAS_F 1024.f
#define GEMV_I4_ONES 0x3C003C00u  // fp16 1.0, 1.0
#else
#define GEMV_I4_BIAS 0x43004300u  // bf16 128 + q
#define GEMV_I4_BIAS_F 128.f
#define GEMV_I4_ONES 0x3F803F80u  // bf16 1.0, 1.0
#endif

// Nibbles i and i + 4 of w as a pair B + q: one LOP3 ((w >> 4i) & mask) | bias with mask =
// 0x000F000F and bias = GEMV_I4_BIAS in registers (as C, with two immediates, it compiles to
// two LOP3s).
__device__ __forceinline__ unsigned i4_pair(unsigned w, int i, unsigned mask, unsigned bias) {
  unsigned r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(w >> (4 * i)), "r"(mask), "r"(bias));
  return r;
}

// Scales and zeros: lane t of a row quad loads one of the four factors its quad needs for a
// tile (t = 0: scale of row g, 1: zero of row g, 2: scale of row g + 8, 3: zero of row g + 8)
// and the quad shares them by shuffles: one load per tile and group instead of four. The
// lane's factor of the tile whose rows start at tile_row, at the group holding element kb.
__device__ __forceinline__ const elem_t* i4_lane_factors(const WarpRows& rows, int tile_row, int g, int t, int n, int k,
                                                          int kb) {
  const QuantRow qr = quant_row(rows, min(tile_row + 8 * (t / 2) + g, n - 1));
  return static_cast<const elem_t*>(t % 2 ? qr.zeros : qr.scales) + qr.row * (k / GEMV_GROUP) + kb / GEMV_GROUP;
}
// The quad's factors of one group from each lane's one (f): the scale and B + zero of rows g
// (h = 0) and g + 8 (h = 1).
__device__ __forceinline__ void i4_group_factors(float f, int lane, float (&s)[2], float (&bz)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    s[h] = __shfl_sync(0xffffffffu, f, (lane & ~3) | (2 * h));
    bz[h] = GEMV_I4_BIAS_F + __shfl_sync(0xffffffffu, f, (lane & ~3) | (2 * h + 1));
  }
}

// The same where only lane t = 0 of each quad is read (m = 1: finish_tc_tiles takes batch row
// 0 from t = 0), with shuffles by a fixed distance: no source lane to compute at every group.
// The other lanes get other quads' factors, and their results are never read.
__device__ __forceinline__ void i4_group_factors_t0(float f, float (&s)[2], float (&bz)[2]) {
  s[0] = f;
  bz[0] = GEMV_I4_BIAS_F + __shfl_down_sync(0xffffffffu, f, 1);
  s[1] = __shfl_down_sync(0xffffffffu, f, 2);
  bz[1] = GEMV_I4_BIAS_F + __shfl_down_sync(0xffffffffu, f, 3);
}

// X's pairs in the weights' K order for one 16-byte load (8 elements of one batch row):
// xp[i] = (x[i], x[i + 4]) for i = 0..3.
__device__ __forceinline__ void i4_x_pairs(const uint4& v, unsigned* xp) {
  xp[0] = __byte_perm(v.x, v.z, 0x5410);
  xp[1] = __byte_perm(v.x, v.z, 0x7632);
  xp[2] = __byte_perm(v.y, v.w, 0x5410);
  xp[3] = __byte_perm(v.y, v.w, 0x7632);
}
#endif
#endif  // GEMV_WFORMAT != 0

#endif  // GEMV_PRELUDE
