// gemv.cu: y = W x for one decode step (batch 1). W is row-major N x K with row stride ld;
// up to GEMV_MAX_SEGMENTS such products sharing x can run as one launch (fused projections).
//
// This file is a kernel template: it compiles on its own with the defaults below
// (nvcc -arch=sm_90 -c templates/gemv.cu), and the generator (generator/source.cpp) prepends
// #defines for one KernelConfig. It includes no header, so NVRTC needs no include path.
//
// Work layout: each warp owns GEMV_ROWS_PER_WARP rows; its 32 lanes walk along K with
// GEMV_VEC_BYTES-wide loads (coalesced: one warp load is 32 x VEC contiguous bytes), keeping
// GEMV_UNROLL loads per row in flight before the first use. GEMV_K_WARPS warps share one row
// set and interleave along K, reducing through shared memory. gridDim.y blocks split K
// (split-K); the last block of a row block to finish sums the partials in split order, so the
// result is bitwise reproducible, and resets its ticket so no memset is needed between calls.

#ifndef GEMV_DTYPE
#define GEMV_DTYPE 2  // 0 fp32, 1 fp16, 2 bf16
#endif
#ifndef GEMV_THREADS
#define GEMV_THREADS 128
#endif
#ifndef GEMV_ROWS_PER_WARP
#define GEMV_ROWS_PER_WARP 1
#endif
#ifndef GEMV_K_WARPS
#define GEMV_K_WARPS 1
#endif
#ifndef GEMV_VEC_BYTES
#define GEMV_VEC_BYTES 16
#endif
#ifndef GEMV_UNROLL
#define GEMV_UNROLL 2
#endif
#ifndef GEMV_STREAMING
#define GEMV_STREAMING 1  // weights are read once: evict-first loads keep x and partials in L2
#endif
#ifndef GEMV_PDL
#define GEMV_PDL 0
#endif
#ifndef GEMV_PREFETCH_L2
#define GEMV_PREFETCH_L2 0  // with PDL only: L2 prefetch of the warp's weights before the wait
#endif
#ifndef GEMV_NAME
#define GEMV_NAME gemv_kernel
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
#define GEMV_MAX_SEGMENTS 4
struct GemvSegments {
  const elem_t* w[GEMV_MAX_SEGMENTS];
  elem_t* y[GEMV_MAX_SEGMENTS];
  long long ld[GEMV_MAX_SEGMENTS];
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

__device__ __forceinline__ elem_t* row_output(const GemvSegments& seg, int row) {
  elem_t* y = seg.y[0];
  int begin = 0;
#pragma unroll
  for (int i = 1; i < GEMV_MAX_SEGMENTS; ++i)
    if (i < seg.count && row >= seg.row_begin[i]) {
      y = seg.y[i];
      begin = seg.row_begin[i];
    }
  return y + (row - begin);
}

// ---- kernel ----------------------------------------------------------------------------
#define GEMV_WARPS (GEMV_THREADS / 32)
#define GEMV_BLOCK_ROWS (GEMV_WARPS / GEMV_K_WARPS * GEMV_ROWS_PER_WARP)
// Split boundaries fall on 128-byte lines so no warp load straddles two splits' lines.
#define GEMV_SPLIT_ALIGN (GEMV_VE > 128 / GEMV_ESIZE ? GEMV_VE : 128 / GEMV_ESIZE)

// Min blocks 1: ptxas otherwise picked a register target that spilled on some configs
// (fp16 t256 r4), while the same kernel needs at most ~80 registers.
extern "C" __global__ void __launch_bounds__(GEMV_THREADS, 1)
GEMV_NAME(const GemvSegments seg, const elem_t* x, int n, int k,
          float* __restrict__ partials, unsigned* __restrict__ tickets) {
  constexpr int R = GEMV_ROWS_PER_WARP, U = GEMV_UNROLL, KW = GEMV_K_WARPS, VE = GEMV_VE;
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

  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.f;
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
          for (int e = 0; e < VE; ++e) acc[r] = fmaf(wf[e], xf[e], acc[r]);
        }
      }
    }
  }
  if (!waited) wait_for_previous_grid();
  if (active) {
    // Fewer than U chunks left for this warp: one at a time.
    for (; c < full_chunks; c += KW) {
      float xf[VE];
      vec_to_floats(load_x(xk + c * CHUNK), xf);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float wf[VE];
        vec_to_floats(load_weights(wrow[r] + c * CHUNK), wf);
#pragma unroll
        for (int e = 0; e < VE; ++e) acc[r] = fmaf(wf[e], xf[e], acc[r]);
      }
    }
    // Tail shorter than one warp-wide load: whole vectors, then single elements (K % VE).
    if (kw == KW - 1) {
      const int tail = kb + full_chunks * CHUNK;
      const int vec_end = kb + (ke - kb) / VE * VE;
      for (int e = tail + lane * VE; e + VE <= vec_end; e += CHUNK) {
        float xf[VE];
        vec_to_floats(load_x(x + e), xf);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          float wf[VE];
          vec_to_floats(load_weights(wrow[r] - kb - lane * VE + e), wf);
#pragma unroll
          for (int j = 0; j < VE; ++j) acc[r] = fmaf(wf[j], xf[j], acc[r]);
        }
      }
      for (int e = vec_end + lane; e < ke; e += 32) {
        const float xe = elem_to_float(load_x_element(x + e));
#pragma unroll
        for (int r = 0; r < R; ++r) acc[r] = fmaf(elem_to_float(wrow[r][e - kb - lane * VE]), xe, acc[r]);
      }
    }
  }
#if !GEMV_PDL
  allow_next_grid();  // lets a PDL-launched successor start while this grid reduces
#endif

#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], off);

  if (KW == 1 && splits == 1) {  // each warp writes its own rows
#pragma unroll
    for (int r = 0; r < R; ++r)
      if (lane == r && row0 + r < n) *row_output(seg, row0 + r) = float_to_elem(acc[r]);
    return;
  }

  // Combine the KW warps of each row set in a fixed order.
  __shared__ float warp_sums[GEMV_WARPS * R];
  if (lane == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r) warp_sums[(row_group * KW + kw) * R + r] = acc[r];
  }
  __syncthreads();
  const int row = blockIdx.x * GEMV_BLOCK_ROWS + tid;
  float sum = 0.f;
  if (tid < GEMV_BLOCK_ROWS) {
    const int g = tid / R, r = tid % R;
#pragma unroll
    for (int j = 0; j < KW; ++j) sum += warp_sums[(g * KW + j) * R + r];
  }
  if (splits == 1) {
    if (tid < GEMV_BLOCK_ROWS && row < n) *row_output(seg, row) = float_to_elem(sum);
    return;
  }

  // Split-K: publish this split's partial sums; the last block of this row block to arrive
  // adds all splits in split order (deterministic) and re-arms the ticket for the next call.
  if (tid < GEMV_BLOCK_ROWS && row < n) partials[static_cast<long long>(blockIdx.y) * n + row] = sum;
  __threadfence();
  __syncthreads();
  __shared__ bool is_last;
  if (tid == 0) is_last = atomicAdd(&tickets[blockIdx.x], 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  if (tid < GEMV_BLOCK_ROWS && row < n) {
    float total = 0.f;
    for (int s = 0; s < splits; ++s) total += __ldcg(&partials[static_cast<long long>(s) * n + row]);
    *row_output(seg, row) = float_to_elem(total);
  }
  if (tid == 0) tickets[blockIdx.x] = 0;
}
