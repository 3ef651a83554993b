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
struct GemvSegments {
  const elem_t* w[GEMV_MAX_SEGMENTS];
  elem_t* y[GEMV_MAX_SEGMENTS];
  long long ld[GEMV_MAX_SEGMENTS];
  long long ldy[GEMV_MAX_SEGMENTS];
  int row_begin[GEMV_MAX_SEGMENTS];  // first row of each segment; row_begin[0] == 0
  int count;
};

__device__ __forceinline__ const elem_t* row_weights(const GemvSegments& seg, int row) {
  const elem_t* w = seg.w[0];
  long long ld = seg.ld[0];
  int begin = 0;
#pragma unroll
  for (int i = 1; i < GEMV_MAX_SEGMENTS; ++i)
    if (i < seg.count && row >= seg.row_begin[i]) {
      w = seg.w[i];
      ld = seg.ld[i];
      begin = seg.row_begin[i];
    }
  return w + static_cast<long long>(row - begin) * ld;
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

// ---- the block's finish: outputs, or split-K partials combined in split order -------------
// sum_of(idx) is this block's sum for output idx = mi * BLOCK_ROWS + rb (batch row mi, row
// rb of the block), each taken once. Without split-K it is the output. With split-K each
// block publishes its partial sums; the last block of a row block to arrive adds all splits in
// split order (bitwise reproducible) and re-arms the ticket, so no memset between calls.
// partials holds gridDim.y x GEMV_M_TILE x n floats.
template <int BLOCK_ROWS, int THREADS, class SumOf>
__device__ __forceinline__ void finish_block(const GemvSegments& seg, const SumOf& sum_of, int m,
                                             int n, float* __restrict__ partials,
                                             unsigned* __restrict__ tickets) {
  const int tid = threadIdx.x, splits = gridDim.y;
  const int row_base = blockIdx.x * BLOCK_ROWS;
  constexpr int OUTPUTS = BLOCK_ROWS * GEMV_M_TILE;
  if (splits == 1) {
    for (int idx = tid; idx < OUTPUTS; idx += THREADS) {
      const int mi = idx / BLOCK_ROWS, row = row_base + idx % BLOCK_ROWS;
      if (mi < m && row < n) *row_output(seg, row, mi) = float_to_elem(sum_of(idx));
    }
    return;
  }
  for (int idx = tid; idx < OUTPUTS; idx += THREADS) {
    const int mi = idx / BLOCK_ROWS, row = row_base + idx % BLOCK_ROWS;
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
  for (int idx = tid; idx < OUTPUTS; idx += THREADS) {
    const int mi = idx / BLOCK_ROWS, row = row_base + idx % BLOCK_ROWS;
    if (mi < m && row < n) {
      float total = 0.f;
      for (int s = 0; s < splits; ++s)
        total += __ldcg(&partials[(static_cast<long long>(s) * GEMV_M_TILE + mi) * n + row]);
      *row_output(seg, row, mi) = float_to_elem(total);
    }
  }
  if (tid == 0) tickets[blockIdx.x] = 0;
}

#endif  // GEMV_PRELUDE
