// A probe, not part of the build: Y (m x N) = X (m x K) W^T at m = 16 with bf16 or int8 weights,
// the products on tensor cores two ways, in one harness:
//   mode 0: wgmma (m64n16k16, sm_90a), W the A operand from registers (each warp's 16 rows, loaded
//           and converted as gemv_tc.cu does), X the B operand from shared memory: the block
//           stages its whole K slice of X once, in the K order of the weights' registers, and a
//           warpgroup's four warps share every X read.
//   mode 1: mode 0 with one wgmma group and one wait a trip of U chunks instead of one a chunk.
//   mode 2: mma.sync m16n8k16 as gemv_tc.cu: every warp loads its X fragments from global memory
//           (L1) for every chunk of its rows.
//   mode 4: mode 1 with X staged asynchronously (4-byte cp.async, an mbarrier per eighth of
//           the K slice, each warp waiting only when its trips reach that eighth).
//   mode 5: mode 1 with X in two 512-element slice buffers (32 KB): the next slice loaded into
//           registers when a slice starts and stored after its last trip, one barrier a slice.
//   mode 6: mode 5 with the block's warpgroups on the same 64 rows, taking turns of U chunks
//           along K (as the library's warps along K, kw), summed through shared memory.
//   mode 7: mode 5 with X pre-permuted in global memory once (outside the timing) and each
//           16 KB slice brought in by one cp.async.bulk completing an mbarrier.
//   mode 8: mode 2 with the library's trip: the trip's weights loaded at its start, all its X
//           before the first mma; mode 9: mode 2's cross-trip weights, X as mode 8.
//   mode 3: mode 2 after the staging of mode 0 (what staging alone costs).
// Question (bench/results/h200.md, 2026-12-04): at m = 16, X's loads hold the quantized tensor-
// core kernels 13-27% above their weight stream (X left out: int8 16x28672x4096 36.0 -> 30.7 us).
// X read per 16-row warp costs 2 bytes of X per weight byte at int8 (1 at bf16); per 64-row
// warpgroup a quarter of that. Does that pay for staging X in shared memory?
// Answer on the H200 (h200.md, "Session of 2026-12-04 15:45-16:06 UTC" and the one after it):
// not when each block stages X (5-6% slower than the tuned kernels on bf16); with X permuted
// beforehand (mode 7) level on bf16 and up to 10% faster on int8, the permuting pass not counted.
//
// K order: lane (g = lane / 4, t = lane % 4) loads 16 bytes of rows g and g + 8 at element L t
// of a chunk of 4 L elements (L = 8 bf16, 16 int8); the mma step s of (half h of) the chunk
// takes words {2 s, 2 s + 1} of each (half's) 8 elements: logical k = 8 kc + 2 t + j is element
// L t + 8 h + 4 s + 2 kc + j. X is staged in that order: step (c, h, s) is a 512-byte block of
// four core matrices (kc, nc) at kc * 128 + nc * 256, each 8 batch rows x 16 bytes (K-major, no
// swizzle), so the descriptor's leading (K) byte offset is 128 and its stride (N) offset 256.
// The host also tries the two swapped, should the hardware read them the other way round.
//
// Splits along K (gridDim.y) write fp32 partials that a second kernel sums (timed with it).
// Every launch is programmatic (PDL), as the library's: weights before griddepcontrol.wait.
// Build: nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -o batch_wgmma bench/probes/batch_wgmma.cu
// (plain -arch=sm_90a gave NVCC 13.0 compute_90 PTX, which has no wgmma)
// Run:   batch_wgmma bf16|int8 NxK...   (one line per config: us, GB/s of weights, max error;
//        PROBE_MODES=2,8,9 runs only those modes)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "probe_timing.cuh"


constexpr int M = 16;

__device__ __forceinline__ uint4 ldw(const void* p) {
  uint4 v;
  asm volatile("ld.global.cs.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ uint4 ldx(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}
__device__ __forceinline__ void mma(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                    unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void wgmma16(float (&d)[8], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                                        unsigned long long desc) {
  asm volatile(
      "{.reg .pred p;\n setp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0;}"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc));
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// int8 -> bf16, exact (gemv_tc.cu's tc8_half): half h of a lane's 16 bytes as 8 bf16 in K order.
__device__ __forceinline__ uint4 i8_half(const uint4& v, int h) {
  const unsigned words[2] = {h ? v.z : v.x, h ? v.w : v.y};
  unsigned r[4];
#pragma unroll
  for (int w = 0; w < 2; ++w)
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const unsigned spread = __byte_perm(words[w], 0u, q ? 0x4342 : 0x4140);
      unsigned low7, sign;
      asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(low7) : "r"(spread), "r"(0x007F007Fu), "r"(0x43004300u));
      asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(sign) : "r"(spread), "r"(0x00800080u), "r"(0x43004300u));
      asm("sub.rn.bf16x2 %0, %1, %2;" : "=r"(r[2 * w + q]) : "r"(low7), "r"(sign));
    }
  return make_uint4(r[0], r[1], r[2], r[3]);
}

// Mode 7: X permuted once into the staged layout in global memory (xp_prepare, outside the
// timing: what a previous kernel's epilogue would write), every step's 512 bytes in K order, so
// that a block's slice is one contiguous bulk copy.
__device__ const unsigned char* g_xp;

// WF 0: bf16 weights (L = 8 elements a lane, one half); 1: int8 (L = 16, two halves).
template <int WF>
struct Fmt {
  static constexpr int L = WF ? 16 : 8, H = WF ? 2 : 1, CH = 4 * L, BPW = WF ? 1 : 2;
};

// One 16-byte unit of the staged layout: word `word` (2 s + kc) of each of the four lanes'
// 16-byte X vectors of a chunk half (lane t's word lands at position t).
__device__ __forceinline__ uint4 staged_unit(const uint4 (&src)[4], int word) {
  const auto pick = [&](const uint4& v) { return word == 0 ? v.x : word == 1 ? v.y : word == 2 ? v.z : v.w; };
  return make_uint4(pick(src[0]), pick(src[1]), pick(src[2]), pick(src[3]));
}

template <int WF>
__global__ void xp_prepare(const __nv_bfloat16* __restrict__ x, int m, int k, unsigned char* __restrict__ xp) {
  using F = Fmt<WF>;
  constexpr int L = F::L, H = F::H, CH = F::CH;
  const int it = blockIdx.x * blockDim.x + threadIdx.x, items = k / CH * H * 16;
  if (it >= items) return;
  const int nrow = it & 15, ch = it >> 4, c = ch / H, h = ch % H;
  uint4 src[4];
#pragma unroll
  for (int tt = 0; tt < 4; ++tt)
    src[tt] = nrow < m ? *reinterpret_cast<const uint4*>(x + static_cast<long long>(nrow) * k + c * CH + L * tt + 8 * h)
                       : make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int s = 0; s < 2; ++s)
#pragma unroll
    for (int kc = 0; kc < 2; ++kc) {
      *reinterpret_cast<uint4*>(xp + static_cast<long long>(ch * 2 + s) * 512 + kc * 128 + (nrow >> 3) * 256 + (nrow & 7) * 16) =
          staged_unit(src, 2 * s + kc);
    }
}

template <int MODE, int WF, int U, int WG>
__global__ void __launch_bounds__(WG * 128) probe(const unsigned char* __restrict__ w, const float* __restrict__ scales,
                                                  const __nv_bfloat16* __restrict__ x, int m, int n, int k,
                                                  float* __restrict__ part, __nv_bfloat16* __restrict__ y,
                                                  unsigned lbo, unsigned sbo) {
  using F = Fmt<WF>;
  constexpr int L = F::L, H = F::H, CH = F::CH, BPW = F::BPW;
  extern __shared__ __align__(128) unsigned char xs[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2, wq = warp & 3;
  // Mode 6: the block's warpgroups share 64 rows and take turns along K (the library's kw).
  constexpr bool KW = MODE == 6;
  const int row_lo = (KW ? blockIdx.x * 64 : (blockIdx.x * WG + wg) * 64) + 16 * wq + g, row_hi = row_lo + 8;
  const int first = KW ? wg * U : 0;  // this warpgroup's first chunk and its stride
  constexpr int STRIDE = KW ? WG * U : U;
  const int splits = gridDim.y, ks = k / splits, kb = blockIdx.y * ks, chunks = ks / CH;
  const unsigned char* wlo = w + (static_cast<long long>(row_lo) * k + kb + L * t) * BPW;
  const unsigned char* whi = w + (static_cast<long long>(row_hi) * k + kb + L * t) * BPW;

  // The first trip's weights go out before X is staged.
  uint4 wv[U][2];
  if constexpr (MODE != 8)
#pragma unroll
    for (int u = 0; u < U; ++u) wv[u][0] = ldw(wlo + (first + u) * CH * BPW), wv[u][1] = ldw(whi + (first + u) * CH * BPW);
  // Programmatic dependent launch, as the library's kernels: the next call's blocks may start
  // (and issue their weights) while this one drains; X and the outputs wait for the previous.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");

  // Mode 4: X staged by 4-byte cp.async into the same permuted layout, slice j of SLICES
  // completing mbarrier j; each warp waits for a slice only when its trip reaches it.
  constexpr int SLICES = 8;
  __shared__ __align__(8) unsigned long long mbar[SLICES];
  if constexpr (MODE == 4) {
    if (tid == 0)
#pragma unroll
      for (int j = 0; j < SLICES; ++j)
        asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(&mbar[j]))),
                     "r"(static_cast<unsigned>(blockDim.x)));
    __syncthreads();
    const unsigned xs_base = static_cast<unsigned>(__cvta_generic_to_shared(xs));
    const int items = chunks * H * 16 / SLICES;  // per slice
    for (int j = 0; j < SLICES; ++j) {
      for (int it = j * items + tid; it < (j + 1) * items; it += blockDim.x) {
        const int nrow = it & 15, ch = it >> 4, c = ch / H, h = ch % H;
        const __nv_bfloat16* src = x + static_cast<long long>(min(nrow, m - 1)) * k + kb + c * CH + 8 * h;
        const unsigned bytes = nrow < m ? 4 : 0;  // zero fill past m
#pragma unroll
        for (int s = 0; s < 2; ++s)
#pragma unroll
          for (int kc = 0; kc < 2; ++kc) {
            const int step = (c * H + h) * 2 + s;
            const unsigned dst = xs_base + step * 512 + kc * 128 + (nrow >> 3) * 256 + (nrow & 7) * 16;
#pragma unroll
            for (int tt = 0; tt < 4; ++tt)
              asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst + 4 * tt),
                           "l"(src + L * tt + 4 * s + 2 * kc), "r"(bytes)
                           : "memory");
          }
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(&mbar[j])))
                   : "memory");
    }
  }
  const auto wait_slice = [&](int c0) {
    if constexpr (MODE == 4) {
      const int per = chunks / SLICES;
      if (c0 % per) return;
      const unsigned addr = static_cast<unsigned>(__cvta_generic_to_shared(&mbar[c0 / per]));
      unsigned done = 0;
      while (!done)
        asm volatile("{.reg .pred P1;\n mbarrier.try_wait.parity.shared.b64 P1, [%1], 0;\n selp.u32 %0, 1, 0, P1;\n}"
                     : "=r"(done)
                     : "r"(addr)
                     : "memory");
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
  };

  if constexpr (MODE == 0 || MODE == 1 || MODE == 3) {
    // Stage: item (c, h, nrow) loads the 4 lanes' 16-byte X vectors of that chunk half and
    // writes the 4 units (s, kc) of its row, a 4 x 4 transpose of words.
    const int items = chunks * H * 16;
    for (int it = tid; it < items; it += blockDim.x) {
      const int nrow = it & 15, ch = it >> 4, c = ch / H, h = ch % H;
      uint4 src[4];
#pragma unroll
      for (int tt = 0; tt < 4; ++tt)
        src[tt] = nrow < m ? ldx(x + static_cast<long long>(nrow) * k + kb + c * CH + L * tt + 8 * h) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int kc = 0; kc < 2; ++kc) {
          const int step = (c * H + h) * 2 + s;
          uint4* dst = reinterpret_cast<uint4*>(xs + step * 512 + kc * 128 + (nrow >> 3) * 256 + (nrow & 7) * 16);
          *dst = staged_unit(src, 2 * s + kc);
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // generic-proxy writes, async-proxy reads
    __syncthreads();
  }

  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(xs));
  const unsigned long long desc0 = (static_cast<unsigned long long>((base & 0x3FFFF) >> 4)) |
                                   (static_cast<unsigned long long>((lbo & 0x3FFFF) >> 4) << 16) |
                                   (static_cast<unsigned long long>((sbo & 0x3FFFF) >> 4) << 32);
  float d[8] = {0, 0, 0, 0, 0, 0, 0, 0};      // mode 0: n blocks 0, 1 x {g c, g c+1, g+8 c, g+8 c+1}
  float e0[2][4] = {}, e1[2][4] = {};         // mode 2: two chains per batch tile
  const __nv_bfloat16* xr[2] = {x + static_cast<long long>(min(g, m - 1)) * k + kb + L * t,
                                x + static_cast<long long>(min(8 + g, m - 1)) * k + kb + L * t};

  // Mode 5: X in two 512-element slice buffers, the next slice loaded into registers at the
  // start of a slice and stored after its last trip, one barrier a slice.
  constexpr int SLC = 512 / CH, SLB = SLC * H * 2 * 512, SITEMS = SLC * H * 16;
  constexpr int IPT = (SITEMS + WG * 128 - 1) / (WG * 128);
  uint4 xst[IPT][4];
  const auto load_slice = [&](int j) {
#pragma unroll
    for (int i = 0; i < IPT; ++i) {
      const int it = tid + i * WG * 128, nrow = it & 15, ch = it >> 4, c = j * SLC + ch / H, h = ch % H;
#pragma unroll
      for (int tt = 0; tt < 4; ++tt)
        xst[i][tt] = it < SITEMS && nrow < m ? ldx(x + static_cast<long long>(nrow) * k + kb + c * CH + L * tt + 8 * h)
                                             : make_uint4(0, 0, 0, 0);
    }
  };
  const auto store_slice = [&](int j) {
#pragma unroll
    for (int i = 0; i < IPT; ++i) {
      const int it = tid + i * WG * 128, nrow = it & 15, ch = it >> 4;
      if (it >= SITEMS) continue;
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int kc = 0; kc < 2; ++kc) {
          uint4* dst = reinterpret_cast<uint4*>(xs + (j & 1) * SLB + (ch * 2 + s) * 512 + kc * 128 + (nrow >> 3) * 256 +
                                                (nrow & 7) * 16);
          *dst = staged_unit(xst[i], 2 * s + kc);
        }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
  };
  const int slices = chunks / SLC;
  if constexpr (MODE == 5 || MODE == 6) {
    load_slice(0);
    store_slice(0);
  }
  // Mode 7: slice j of the block's contiguous part of g_xp by one bulk copy into buffer j & 1,
  // completing mbarrier j & 1 (phase (j >> 1) & 1); slices 0 and 1 go out at once, slice j + 2
  // after the barrier that ends slice j.
  const unsigned bar_base = static_cast<unsigned>(__cvta_generic_to_shared(&mbar[0]));
  const auto bulk_slice = [&](int j) {
    const unsigned bar = bar_base + 8 * (j & 1), dst = static_cast<unsigned>(__cvta_generic_to_shared(xs)) + (j & 1) * SLB;
    const unsigned char* src = g_xp + (static_cast<long long>(kb / CH) * H * 2 + static_cast<long long>(j) * SLC * H * 2) * 512;
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(static_cast<unsigned>(SLB)) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(static_cast<unsigned>(SLB)), "r"(bar)
                 : "memory");
  };
  const auto bulk_wait = [&](int j) {
    const unsigned bar = bar_base + 8 * (j & 1), parity = (j >> 1) & 1;
    unsigned done = 0;
    while (!done)
      asm volatile("{.reg .pred P1;\n mbarrier.try_wait.parity.shared::cta.b64 P1, [%1], %2;\n selp.u32 %0, 1, 0, P1;\n}"
                   : "=r"(done)
                   : "r"(bar), "r"(parity)
                   : "memory");
  };
  if constexpr (MODE == 7) {
    if (tid == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_base) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar_base + 8) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
      bulk_slice(0);
      if (slices > 1) bulk_slice(1);
    }
  }
  // Byte offset in xs of step 0 of chunk c's half h.
  const auto xoff = [&](int c, int h) {
    return MODE >= 5 ? ((c / SLC) & 1) * SLB + (((c % SLC) * H + h) * 2) * 512 : ((c * H + h) * 2) * 512;
  };

  // One wait a trip: the trip's operands converted first, then all its wgmma in one group.
  const auto wg_trip = [&](int c0) {
    uint4 A[U][H][2];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = c0 + u;
      const uint4 lo = wv[u][0], hi = wv[u][1];
      if (c + STRIDE < chunks) wv[u][0] = ldw(wlo + (c + STRIDE) * CH * BPW), wv[u][1] = ldw(whi + (c + STRIDE) * CH * BPW);
#pragma unroll
      for (int h = 0; h < H; ++h) A[u][h][0] = WF ? i8_half(lo, h) : lo, A[u][h][1] = WF ? i8_half(hi, h) : hi;
    }
    wg_fence();
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int h = 0; h < H; ++h) {
        const uint4 a = A[u][h][0], b = A[u][h][1];
        const unsigned long long desc = desc0 + static_cast<unsigned long long>(xoff(c0 + u, h) >> 4);
        wgmma16(d, a.x, b.x, a.y, b.y, desc);
        wgmma16(d, a.z, b.z, a.w, b.w, desc + (512 >> 4));
      }
    wg_commit();
    wg_wait0();
  };
  if constexpr (MODE == 7) {
    for (int j = 0; j < slices; ++j) {
      bulk_wait(j);
      for (int c0 = j * SLC + first; c0 < (j + 1) * SLC; c0 += STRIDE) wg_trip(c0);
      if (j + 2 < slices) {
        __syncthreads();  // every warpgroup is done with buffer j & 1
        if (tid == 0) bulk_slice(j + 2);
      }
    }
  } else if constexpr (MODE == 5 || MODE == 6) {
    // Slice j: the next slice's X into registers, this warpgroup's trips of slice j, then the
    // next slice into its buffer and one barrier (store_slice).
    for (int j = 0; j < slices; ++j) {
      if (j + 1 < slices) load_slice(j + 1);
      for (int c0 = j * SLC + first; c0 < (j + 1) * SLC; c0 += STRIDE) wg_trip(c0);
      if (j + 1 < slices) store_slice(j + 1);
    }
  } else
  for (int c0 = 0; c0 < chunks; c0 += U) {
    wait_slice(c0);
    if constexpr (MODE == 1 || MODE == 4) {
      wg_trip(c0);
    } else if constexpr (MODE == 8 || MODE == 9) {
      // The library's trip (templates/gemv_tc.cu's run loop): mode 8 loads the trip's weights at
      // its start (no cross-trip prefetch) and all its X before the first mma; mode 9 keeps
      // mode 2's cross-trip weights but loads all the trip's X before the first mma.
      uint4 w_now[U][2];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int c = c0 + u;
        if constexpr (MODE == 8) {
          w_now[u][0] = ldw(wlo + c * CH * BPW), w_now[u][1] = ldw(whi + c * CH * BPW);
        } else {
          w_now[u][0] = wv[u][0], w_now[u][1] = wv[u][1];
          if (c + U < chunks) wv[u][0] = ldw(wlo + (c + U) * CH * BPW), wv[u][1] = ldw(whi + (c + U) * CH * BPW);
        }
      }
      uint4 xq[U][H][2];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int h = 0; h < H; ++h)
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) xq[u][h][nt] = ldx(xr[nt] + (c0 + u) * CH + 8 * h);
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int h = 0; h < H; ++h) {
          const uint4 a = WF ? i8_half(w_now[u][0], h) : w_now[u][0], b = WF ? i8_half(w_now[u][1], h) : w_now[u][1];
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            mma(e0[nt], a.x, b.x, a.y, b.y, xq[u][h][nt].x, xq[u][h][nt].y);
            mma(e1[nt], a.z, b.z, a.w, b.w, xq[u][h][nt].z, xq[u][h][nt].w);
          }
        }
    } else {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int c = c0 + u;
      const uint4 lo = wv[u][0], hi = wv[u][1];
      // The next trip's chunk u goes out as soon as this one's registers are free.
      if (c + U < chunks) wv[u][0] = ldw(wlo + (c + U) * CH * BPW), wv[u][1] = ldw(whi + (c + U) * CH * BPW);
#pragma unroll
      for (int h = 0; h < H; ++h) {
        const uint4 a = WF ? i8_half(lo, h) : lo, b = WF ? i8_half(hi, h) : hi;
        if constexpr (MODE == 0) {
          const unsigned long long desc = desc0 + static_cast<unsigned long long>(((c * H + h) * 2) * 512 >> 4);
          wg_fence();
          wgmma16(d, a.x, b.x, a.y, b.y, desc);
          wgmma16(d, a.z, b.z, a.w, b.w, desc + (512 >> 4));
          wg_commit();
          wg_wait0();
        } else {
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            const uint4 xv = ldx(xr[nt] + c * CH + 8 * h);
            mma(e0[nt], a.x, b.x, a.y, b.y, xv.x, xv.y);
            mma(e1[nt], a.z, b.z, a.w, b.w, xv.z, xv.w);
          }
        }
      }
    }
    }
  }
  if constexpr (MODE == 2 || MODE == 3 || MODE == 8 || MODE == 9)
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) d[4 * nt + e] = e0[nt][e] + e1[nt][e];

  if constexpr (KW && WG > 1) {
    // Warpgroups 1.. hand their sums to warpgroup 0 through shared memory (X is no longer read).
    __syncthreads();
    float* red = reinterpret_cast<float*>(xs);
    if (wg > 0)
#pragma unroll
      for (int e = 0; e < 8; ++e) red[((wg - 1) * 8 + e) * 128 + (tid & 127)] = d[e];
    __syncthreads();
    if (wg > 0) return;
#pragma unroll
    for (int q = 1; q < WG; ++q)
#pragma unroll
      for (int e = 0; e < 8; ++e) d[e] += red[((q - 1) * 8 + e) * 128 + tid];
  }
  const float s_lo = WF ? scales[row_lo] : 1.f, s_hi = WF ? scales[row_hi] : 1.f;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int b = 8 * nt + 2 * t + (e & 1), row = e < 2 ? row_lo : row_hi;
      const float v = d[4 * nt + e] * (e < 2 ? s_lo : s_hi);
      if (b >= m) continue;
      if (splits == 1)
        y[static_cast<long long>(b) * n + row] = __float2bfloat16(v);
      else
        part[(static_cast<long long>(blockIdx.y) * m + b) * n + row] = v;
    }
}

__global__ void reduce_splits(const float* __restrict__ part, __nv_bfloat16* __restrict__ y, int mn, int splits) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (i >= mn) return;
  float s = 0.f;
  for (int j = 0; j < splits; ++j) s += part[static_cast<long long>(j) * mn + i];
  y[i] = __float2bfloat16(s);
}

struct Problem {
  int wf, n, k, copies;
  size_t wbytes;
  std::vector<unsigned char*> w;
  float* scales;
  __nv_bfloat16* x;
  __nv_bfloat16* y;
  float* part;
  std::vector<unsigned char> hw;
  std::vector<float> hs;
  std::vector<__nv_bfloat16> hx;
  std::vector<double> ref;  // [row / 7][batch row]
};

using Kernel = void (*)(const unsigned char*, const float*, const __nv_bfloat16*, int, int, int, float*, __nv_bfloat16*,
                        unsigned, unsigned);

// float64 over the bf16 / int8 inputs, every 7th row.
static void reference(Problem& P) {
  for (int r = 0; r < P.n; r += 7)
    for (int b = 0; b < M; ++b) {
      double ref = 0;
      for (int kk = 0; kk < P.k; ++kk) {
        double wv;
        if (P.wf) {
          wv = static_cast<signed char>(P.hw[static_cast<size_t>(r) * P.k + kk]) * static_cast<double>(P.hs[r]);
        } else {
          __nv_bfloat16 b16;
          std::memcpy(&b16, &P.hw[(static_cast<size_t>(r) * P.k + kk) * 2], 2);
          wv = bf_to_f(b16);
        }
        ref += wv * bf_to_f(P.hx[static_cast<size_t>(b) * P.k + kk]);
      }
      P.ref.push_back(ref);
    }
}

// Max |error| / max |reference| over the reference's rows.
static double check(const Problem& P) {
  std::vector<__nv_bfloat16> hy(static_cast<size_t>(M) * P.n);
  CK(cudaMemcpy(hy.data(), P.y, hy.size() * 2, cudaMemcpyDeviceToHost));
  double worst = 0, scale = 0;
  size_t i = 0;
  for (int r = 0; r < P.n; r += 7)
    for (int b = 0; b < M; ++b, ++i) {
      const double got = bf_to_f(hy[static_cast<size_t>(b) * P.n + r]);
      worst = std::isnan(got) ? INFINITY : std::max(worst, std::fabs(P.ref[i] - got));
      scale = std::max(scale, std::fabs(P.ref[i]));
    }
  return worst / std::max(scale, 1e-30);
}

template <int MODE, int WF, int U, int WG>
static void run(Problem& P, int splits, unsigned& lbo, unsigned& sbo) {
  using F = Fmt<WF>;
  if (P.wf != WF || P.n % (64 * WG) || P.k % (splits * F::CH * U)) return;
  if (MODE == 6 && WG == 1) return;  // mode 5
  if (MODE == 4 && (P.k / splits / F::CH) % (8 * U)) return;  // slices of whole trips
  if (MODE >= 5 && MODE <= 7 && (P.k / splits) % 512) return;
  if (const char* only = std::getenv("PROBE_MODES"))  // e.g. "2,8,9": only these modes
    if (!std::strchr(only, '0' + MODE)) return;
  if (MODE == 7 && (512 / F::CH) % U) return;                  // whole 512-element slices
  if (MODE == 6 && (512 / F::CH) % (WG * U)) return;               // every warpgroup's trips in a slice
  const size_t smem = MODE >= 8   ? 0
                      : MODE >= 5   ? 2 * 16384
                      : MODE != 2 ? static_cast<size_t>(P.k / splits) / F::CH * F::H * 2 * 512
                                  : 0;
  if (smem > 227 * 1024) return;
  Kernel kern = probe<MODE, WF, U, WG>;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const dim3 grid(MODE == 6 ? P.n / 64 : P.n / (64 * WG), splits);
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  cudaLaunchAttribute pdl[1];
  pdl[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  pdl[0].val.programmaticStreamSerializationAllowed = 1;
  const auto launch = [&](int copy) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(WG * 128);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = pdl;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, kern, static_cast<const unsigned char*>(P.w[copy]), static_cast<const float*>(P.scales),
                          static_cast<const __nv_bfloat16*>(P.x), M, P.n, P.k, P.part, P.y, lbo, sbo));
    if (splits > 1) {
      cudaLaunchConfig_t rc = cfg;
      rc.gridDim = dim3((M * P.n + 255) / 256);
      rc.blockDim = dim3(256);
      rc.dynamicSmemBytes = 0;
      CK(cudaLaunchKernelEx(&rc, reduce_splits, static_cast<const float*>(P.part), P.y, M * P.n, splits));
    }
  };
  // Correctness first, output poisoned; mode 0 tries the descriptor's offsets both ways.
  double err = 1;
  for (int attempt = 0; attempt < (MODE != 2 && MODE != 3 && MODE < 8 ? 2 : 1); ++attempt) {
    CK(cudaMemset(P.y, 0xFF, static_cast<size_t>(M) * P.n * 2));
    launch(0);
    CK(cudaStreamSynchronize(st));
    CK(cudaGetLastError());
    err = check(P);
    if (err < 1e-2) break;
    std::printf("# mode%d u%d wg%d sk%d lbo%u sbo%u: err %.2e\n", MODE, U, WG, splits, lbo, sbo, err);
    if (MODE != 2 && MODE != 3 && MODE < 8) std::swap(lbo, sbo);
  }
  const double us = graph_median_us(st, 64, [&](int i) { launch(i % P.copies); });
  std::printf("%dx%dx%d %s mode%d u%d wg%d sk%d smem%zuK lbo%u sbo%u %8.2f us %7.0f GB/s err %.2e%s\n", M, P.n, P.k,
              WF ? "int8" : "bf16", MODE, U, WG, splits, smem / 1024, lbo, sbo, us, P.wbytes / us / 1e3, err,
              err < 1e-2 ? "" : " WRONG");
  std::fflush(stdout);
  CK(cudaStreamDestroy(st));
}

template <int WF, int U, int WG>
static void sweep_one(Problem& P, unsigned& lbo, unsigned& sbo) {
  for (int splits : {1, 2, 4, 7, 8})
    if (P.k % splits == 0) {
      run<0, WF, U, WG>(P, splits, lbo, sbo);
      run<1, WF, U, WG>(P, splits, lbo, sbo);
      run<2, WF, U, WG>(P, splits, lbo, sbo);
      run<3, WF, U, WG>(P, splits, lbo, sbo);
      run<4, WF, U, WG>(P, splits, lbo, sbo);
      run<5, WF, U, WG>(P, splits, lbo, sbo);
      run<6, WF, U, WG>(P, splits, lbo, sbo);
      run<7, WF, U, WG>(P, splits, lbo, sbo);
      run<8, WF, U, WG>(P, splits, lbo, sbo);
      run<9, WF, U, WG>(P, splits, lbo, sbo);
    }
}

template <int WF>
static void sweep(Problem& P) {
  unsigned lbo = 128, sbo = 256;
  {  // mode 7's pre-permuted X (the whole of K: every split's part is contiguous in it)
    unsigned char* xp;
    const size_t bytes = static_cast<size_t>(P.k) / Fmt<WF>::CH * Fmt<WF>::H * 2 * 512;
    CK(cudaMalloc(&xp, bytes));
    const int items = P.k / Fmt<WF>::CH * Fmt<WF>::H * 16;
    xp_prepare<WF><<<(items + 255) / 256, 256>>>(P.x, M, P.k, xp);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpyToSymbol(g_xp, &xp, sizeof(xp)));
  }
  sweep_one<WF, 2, 1>(P, lbo, sbo);
  sweep_one<WF, 4, 1>(P, lbo, sbo);
  sweep_one<WF, 8, 1>(P, lbo, sbo);
  sweep_one<WF, 2, 2>(P, lbo, sbo);
  sweep_one<WF, 4, 2>(P, lbo, sbo);
  sweep_one<WF, 8, 2>(P, lbo, sbo);
  sweep_one<WF, 4, 4>(P, lbo, sbo);
  sweep_one<WF, 2, 4>(P, lbo, sbo);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s bf16|int8 NxK...\n", argv[0]);
    return 2;
  }
  const int wf = std::string(argv[1]) == "int8" ? 1 : 0;
  for (int a = 2; a < argc; ++a) {
    Problem P{};
    if (std::sscanf(argv[a], "%dx%d", &P.n, &P.k) != 2) return 2;
    P.wf = wf;
    P.wbytes = static_cast<size_t>(P.n) * P.k * (wf ? 1 : 2);
    P.copies = static_cast<int>(std::max<size_t>(2, (200ull << 20) / P.wbytes + 1));  // 200 MB: past the 60 MB L2
    std::mt19937 rng(a);
    P.hw.resize(P.wbytes);
    if (wf) {
      for (auto& b : P.hw) b = static_cast<unsigned char>(rng() & 0xFF);
    } else {
      std::normal_distribution<float> nd(0.f, 1.f);
      for (size_t i = 0; i < P.wbytes / 2; ++i) {
        const __nv_bfloat16 v = __float2bfloat16(nd(rng));
        std::memcpy(&P.hw[2 * i], &v, 2);
      }
    }
    P.hs.resize(P.n);
    for (auto& s : P.hs) s = 0.001f + (rng() % 1000) * 1e-5f;
    P.hx.resize(static_cast<size_t>(M) * P.k);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : P.hx) v = __float2bfloat16(nd(rng));
    for (int c = 0; c < P.copies; ++c) {
      unsigned char* p;
      CK(cudaMalloc(&p, P.wbytes));
      CK(cudaMemcpy(p, P.hw.data(), P.wbytes, cudaMemcpyHostToDevice));
      P.w.push_back(p);
    }
    CK(cudaMalloc(&P.scales, P.n * 4));
    CK(cudaMemcpy(P.scales, P.hs.data(), P.n * 4, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&P.x, P.hx.size() * 2));
    CK(cudaMemcpy(P.x, P.hx.data(), P.hx.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&P.y, static_cast<size_t>(M) * P.n * 2));
    reference(P);
    CK(cudaMalloc(&P.part, static_cast<size_t>(8) * M * P.n * 4));
    if (wf)
      sweep<1>(P);
    else
      sweep<0>(P);
    for (auto* p : P.w) CK(cudaFree(p));
    CK(cudaFree(P.scales));
    CK(cudaFree(P.x));
    CK(cudaFree(P.y));
    CK(cudaFree(P.part));
  }
  return 0;
}
