// A probe, not part of the build: int4g128 GEMV at M = 1 on tensor cores with the weights loaded
// straight into registers as whole 128-byte lines (no shared-memory ring), against the same
// loads with the arithmetic left out. Question: does the register path stream closer to the
// read ceiling than gemv_qtc.cu's cp.async ring (77% with its arithmetic left out, H200)?
//
// Loads: instruction p (0..3) of a stage takes rows 4p + lane / 8 of a 16-row tile, 16 bytes at
// column lane % 8 of the stage's 128 bytes (two int4g128 groups): every instruction asks for
// four whole lines, as the ring's copies do. Lane (g, t) then holds, of chunk (group) g & 1,
// the 32 weights at 32 t of rows a + 4p (a = g / 2): its mma A fragment for "tile rows" g and
// g + 8 comes from loads p and p + 2 (tiles X: p = 0, 2; Y: p = 1, 3). Rows of one tile mix the
// two chunks, so B's column 0 carries chunk 0's x and column 1 chunk 1's (lanes g = 0 and 1
// supply them; at M = 1 the other columns are idle anyway) and tile row g reads D[g][g & 1].
//
// It became templates/gemv_q4l.cu; with -DWITH_LIBRARY_KERNEL -I templates the probe also times
// that kernel (t128_r1_kw1_u2, no PDL) in this same harness (bench/results/h200.md, 2026-12-02).
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o int4_line_loads bench/probes/int4_line_loads.cu
// (LAYOUTS set: three weight layouts, loads only and with arithmetic; h200.md, 2026-12-03)
// Run:   int4_line_loads NxK...   (prints one line per config: us, GB/s, max error; with
//        LIBRARY_ONLY set, only the library kernel and the probe's t128_r1_kw1_u2)
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


__device__ __forceinline__ unsigned i4_pair(unsigned w, int i) {
  unsigned r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(w >> (4 * i)), "r"(0x000F000Fu), "r"(0x43004300u));
  return r;
}
__device__ __forceinline__ void mma(float* d, unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned b0,
                                    unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint4 ldcs16(const void* p) {
  uint4 v;
  asm volatile("ld.global.cs.L2::128B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}
__device__ __forceinline__ float bf(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }

// THREADS per block, KW warps along K (taking stages in turn), U stages (2 KB of a tile each) per
// trip, all in flight before the first use. ARITH false: the loads only (xor of the words).
// LAYOUT 1 (tiled): q in 16-row tiles, each tile's stages one after another and each stage its
// 16 rows' 128 bytes (2 KB contiguous), so a load instruction reads 512 contiguous bytes and a
// warp streams one contiguous region (a layout a converter would write; the reference is the
// same). LAYOUT 2 (panels): stage-major, every tile's 2 KB of stage 0, then of stage 1, ...: the
// grid's warps, which run their stages in step, read one contiguous panel at a time.
template <int THREADS, int KW, int U, bool ARITH, bool PIPE, int LAYOUT = 0>
__global__ void __launch_bounds__(THREADS) int4_lines(const unsigned char* __restrict__ q,
                                                      const unsigned short* __restrict__ scales,
                                                      const unsigned short* __restrict__ zeros,
                                                      const unsigned short* __restrict__ x, float* __restrict__ y,
                                                      int n, int k) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int WARPS = THREADS / 32;
  const int chunks = k / 128, stages = k / 256, groups = k / 128;
  uint4* x_pairs = reinterpret_cast<uint4*>(smem);  // [chunk][t][5]
  float* x_sum = reinterpret_cast<float*>(smem + static_cast<size_t>(chunks) * 4 * 5 * 16);
  float* red = x_sum + chunks;  // [WARPS][32][4]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, a = g >> 1, col = lane & 7, par = g & 1;
  const int kw = warp % KW, rg = warp / KW;
  const int row0 = (blockIdx.x * (WARPS / KW) + rg) * 16;

  const unsigned char* wp[4];
#pragma unroll
  for (int p = 0; p < 4; ++p)
    wp[p] = LAYOUT == 1   ? q + static_cast<long long>(row0) * (k / 2) + (4 * p + (lane >> 3)) * 128 + 16 * col
            : LAYOUT == 2 ? q + static_cast<long long>(row0 / 16) * 2048 + (4 * p + (lane >> 3)) * 128 + 16 * col
                          : q + static_cast<long long>(min(row0 + 4 * p + (lane >> 3), n - 1)) * (k / 2) + 16 * col;
  // from one stage of a row to the next
  const long long STAGE_BYTES = LAYOUT == 1 ? 2048 : LAYOUT == 2 ? static_cast<long long>(n / 16) * 2048 : 128;
  // Factors: lane t of quad g loads t = 0 scale / 1 zero of tile row g, 2 / 3 of tile row g + 8,
  // for tile X (rows a, 8 + a) and Y (4 + a, 12 + a), group 2 s + par.
  const unsigned short* fpX = (t & 1 ? zeros : scales) + static_cast<long long>(min(row0 + 8 * (t >> 1) + a, n - 1)) * groups + par;
  const unsigned short* fpY = (t & 1 ? zeros : scales) + static_cast<long long>(min(row0 + 4 + 8 * (t >> 1) + a, n - 1)) * groups + par;

  // x of the whole row into shared memory, in the mma's pair order, with each chunk's sum.
  for (int u0 = 0; u0 < chunks * 16; u0 += THREADS) {
    const int u = u0 + tid, c = u >> 4, tt = (u >> 2) & 3, qq = u & 3;
    float sum = 0.f;
    if (u < chunks * 16) {
      const uint4 v = *reinterpret_cast<const uint4*>(x + c * 128 + 32 * tt + 8 * qq);
      x_pairs[(c * 4 + tt) * 5 + qq] = make_uint4(__byte_perm(v.x, v.z, 0x5410), __byte_perm(v.x, v.z, 0x7632),
                                                  __byte_perm(v.y, v.w, 0x5410), __byte_perm(v.y, v.w, 0x7632));
      const unsigned wv[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) sum += bf(wv[e] & 0xFFFF) + bf(wv[e] >> 16);
    }
#pragma unroll
    for (int off = 8; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (u < chunks * 16 && (u & 15) == 0) x_sum[c] = sum;
  }
  __syncthreads();

  float acc[2][2] = {{0.f, 0.f}, {0.f, 0.f}};  // tile X/Y, tile row g / g + 8
  unsigned junk = 0;
  const bool active = row0 < n;
  // One trip: U stages of this warp (stages s0, s0 + KW, ...), 4 loads each.
  const auto load_trip = [&](int s0, uint4 (&w)[U][4], unsigned short (&f)[U][2]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int s = min(s0 + u * KW, stages - 1);  // past the end: a repeat, not used
#pragma unroll
      for (int p = 0; p < 4; ++p) w[u][p] = ldcs16(wp[p] + STAGE_BYTES * s);
      if (ARITH) {
        f[u][0] = fpX[2 * s];
        f[u][1] = fpY[2 * s];
      }
    }
  };
  const auto compute_trip = [&](int s0, const uint4 (&w)[U][4], const unsigned short (&f)[U][2]) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int s = s0 + u * KW;
      if (s >= stages) break;
      if (!ARITH) {
#pragma unroll
        for (int p = 0; p < 4; ++p) junk ^= w[u][p].x ^ w[u][p].y ^ w[u][p].z ^ w[u][p].w;
        continue;
      }
      const int c = 2 * s + par;
      const float xs = x_sum[c];
      uint4 xp[4];
#pragma unroll
      for (int qq = 0; qq < 4; ++qq) xp[qq] = x_pairs[(c * 4 + t) * 5 + qq];
#pragma unroll
      for (int T = 0; T < 2; ++T) {
        const uint4 lo = w[u][T], hi = w[u][T + 2];
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        const unsigned l4[4] = {lo.x, lo.y, lo.z, lo.w}, h4[4] = {hi.x, hi.y, hi.z, hi.w};
#pragma unroll
        for (int qq = 0; qq < 4; ++qq) {
          mma(d, i4_pair(l4[qq], 0), i4_pair(h4[qq], 0), i4_pair(l4[qq], 1), i4_pair(h4[qq], 1), xp[qq].x, xp[qq].y);
          mma(d, i4_pair(l4[qq], 2), i4_pair(h4[qq], 2), i4_pair(l4[qq], 3), i4_pair(h4[qq], 3), xp[qq].z, xp[qq].w);
        }
        const float fv = bf(f[u][T]);
        const float s_lo = fv, bz_lo = 128.f + __shfl_down_sync(0xffffffffu, fv, 1);
        const float s_hi = __shfl_down_sync(0xffffffffu, fv, 2), bz_hi = 128.f + __shfl_down_sync(0xffffffffu, fv, 3);
        acc[T][0] = fmaf(s_lo, fmaf(-bz_lo, xs, par ? d[1] : d[0]), acc[T][0]);
        acc[T][1] = fmaf(s_hi, fmaf(-bz_hi, xs, par ? d[3] : d[2]), acc[T][1]);
      }
    }
  };
  if (!PIPE) {
    for (int s0 = kw; active && s0 < stages; s0 += U * KW) {
      uint4 w[U][4];
      unsigned short f[U][2];
      load_trip(s0, w, f);
      compute_trip(s0, w, f);
    }
  } else if (active && kw < stages) {
    // The next trip's loads go out before this trip's arithmetic (two register sets, ping-pong).
    uint4 wa[U][4], wb[U][4];
    unsigned short fa[U][2], fb[U][2];
    int s0 = kw;
    load_trip(s0, wa, fa);
    for (;;) {
      const int s1 = s0 + U * KW;
      if (s1 < stages) load_trip(s1, wb, fb);
      compute_trip(s0, wa, fa);
      if (s1 >= stages) break;
      const int s2 = s1 + U * KW;
      if (s2 < stages) load_trip(s2, wa, fa);
      compute_trip(s1, wb, fb);
      if (s2 >= stages) break;
      s0 = s2;
    }
  }
  if (!ARITH) acc[0][0] = __uint_as_float(junk & 0x3F) * 1e-30f;
  // Rows a, 8 + a, 4 + a, 12 + a: chunk 0's share in lane (2a, 0), chunk 1's in (2a + 1, 0).
#pragma unroll
  for (int T = 0; T < 2; ++T)
#pragma unroll
    for (int h = 0; h < 2; ++h) acc[T][h] += __shfl_xor_sync(0xffffffffu, acc[T][h], 4);
  if (KW > 1) {
#pragma unroll
    for (int e = 0; e < 4; ++e) red[(warp * 32 + lane) * 4 + e] = acc[e >> 1][e & 1];
    __syncthreads();
    if (kw == 0) {
      for (int o = 1; o < KW; ++o)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[e >> 1][e & 1] += red[((warp + o) * 32 + lane) * 4 + e];
    }
  }
  if (kw == 0 && t == 0 && par == 0 && active) {
    const int rows[2][2] = {{a, 8 + a}, {4 + a, 12 + a}};
#pragma unroll
    for (int T = 0; T < 2; ++T)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (row0 + rows[T][h] < n) y[row0 + rows[T][h]] = acc[T][h];
  }
}

#ifdef WITH_LIBRARY_KERNEL
// The library's kernel (templates/gemv_q4l.cu) at one config, in this same harness: build with
// -DWITH_LIBRARY_KERNEL -I templates.
#define GEMV_NAME q4l_library
#define GEMV_THREADS 128
#define GEMV_ROWS_PER_WARP 1
#define GEMV_K_WARPS 1
#define GEMV_UNROLL 2
#include "gemv_q4l.cu"
#endif

struct Problem {
  int n, k, copies;
  size_t qbytes, fcount;
  unsigned char* q;
  unsigned char* qt;  // the same weights tiled (int4_lines' LAYOUT 1)
  unsigned char* qp;  // and in stage panels (LAYOUT 2)
  unsigned short *s, *z, *x;
  float* y;
  std::vector<unsigned char> hq;
  std::vector<unsigned short> hs, hz, hx;
};

static unsigned short to_bf(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return static_cast<unsigned short>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
static double from_bf(unsigned short b) {
  unsigned u = static_cast<unsigned>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <int THREADS, int KW, int U, bool ARITH, bool PIPE, int LAYOUT = 0>
static void run(Problem& P, const char* name) {
  auto kern = int4_lines<THREADS, KW, U, ARITH, PIPE, LAYOUT>;
  unsigned char* const q = LAYOUT == 1 ? P.qt : LAYOUT == 2 ? P.qp : P.q;
  const int chunks = P.k / 128;
  const size_t smem = static_cast<size_t>(chunks) * 4 * 5 * 16 + chunks * 4 + (THREADS / 32) * 32 * 4 * 4;
  CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const int rows_per_block = THREADS / 32 / KW * 16;
  const dim3 grid((P.n + rows_per_block - 1) / rows_per_block);
  // correctness on copy 0
  CK(cudaMemset(P.y, 0xFF, P.n * 4));
  kern<<<grid, THREADS, smem>>>(q, P.s, P.z, P.x, P.y, P.n, P.k);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<float> hy(P.n);
  CK(cudaMemcpy(hy.data(), P.y, P.n * 4, cudaMemcpyDeviceToHost));
  double maxerr = 0;
  if (ARITH) {
    const int G = P.k / 128;
    for (int r = 0; r < P.n; r += (P.n > 4096 ? 7 : 1)) {
      double ref = 0, mag = 0;
      for (int c = 0; c < P.k; ++c) {
        const int b = P.hq[static_cast<size_t>(r) * (P.k / 2) + c / 2];
        const int qv = c & 1 ? b >> 4 : b & 15;
        const double w = (qv - from_bf(P.hz[r * G + c / 128])) * from_bf(P.hs[r * G + c / 128]);
        ref += w * from_bf(P.hx[c]);
        mag += std::fabs(w * from_bf(P.hx[c]));
      }
      const double err = std::fabs(hy[r] - ref) / (mag + 1e-30);
      if (!(err <= maxerr)) maxerr = std::isnan(err) ? 1e9 : std::max(maxerr, err);
    }
  }
  // timing: a graph of 64 launches rotating over the copies, replayed; median of 7
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const double us = graph_median_us(st, 64, [&](int i) {
    const int c = i % P.copies;
    kern<<<grid, THREADS, smem, st>>>(q + c * P.qbytes, P.s + c * P.fcount, P.z + c * P.fcount, P.x, P.y, P.n, P.k);
  });
  const double bytes = P.qbytes + 2.0 * P.fcount * 2;
  std::printf("%dx%d %-22s %s %8.2f us %7.1f GB/s  err %.2e\n", P.n, P.k, name, ARITH ? "arith" : "loads", us,
              bytes / us / 1e3, maxerr);
  CK(cudaStreamDestroy(st));
}

template <int THREADS, int KW, int U, bool PIPE = false>
static void both(Problem& P) {
  const std::string name = "t" + std::to_string(THREADS) + "_kw" + std::to_string(KW) + "_u" + std::to_string(U) + (PIPE ? "_pipe" : "");
  run<THREADS, KW, U, true, PIPE>(P, name.c_str());
  if (!PIPE) run<THREADS, KW, U, false, PIPE>(P, name.c_str());
}

#ifdef WITH_LIBRARY_KERNEL
static void run_library(Problem& P) {
  const dim3 grid((P.n + 63) / 64);
  unsigned* tickets;
  CK(cudaMalloc(&tickets, 4096 * 4));
  CK(cudaMemset(tickets, 0, 4096 * 4));
  unsigned short* ybf;
  CK(cudaMalloc(&ybf, P.n * 2));
  const auto seg_of = [&](int c) {
    GemvSegments seg{};
    seg.w[0] = reinterpret_cast<const elem_t*>(P.q + c * P.qbytes);
    seg.y[0] = reinterpret_cast<elem_t*>(ybf);
    seg.ld[0] = P.k;
    seg.ldy[0] = P.n;
    seg.scales[0] = P.s + c * P.fcount;
    seg.zeros[0] = P.z + c * P.fcount;
    seg.count = 1;
    return seg;
  };
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  const double us = graph_median_us(st, 64, [&](int i) {
    q4l_library<<<grid, 128, 0, st>>>(seg_of(i % P.copies), reinterpret_cast<const elem_t*>(P.x), P.k, 1, P.n, P.k,
                                      P.y, tickets);
  });
  // check copy 0's output against the probe kernel's float output of the same problem
  std::vector<unsigned short> hy(P.n);
  q4l_library<<<grid, 128, 0, st>>>(seg_of(0), reinterpret_cast<const elem_t*>(P.x), P.k, 1, P.n, P.k, P.y, tickets);
  CK(cudaStreamSynchronize(st));
  CK(cudaMemcpy(hy.data(), ybf, P.n * 2, cudaMemcpyDeviceToHost));
  double maxerr = 0;
  const int G = P.k / 128;
  for (int r = 0; r < P.n; r += 97) {
    double ref = 0, mag = 0;
    for (int c = 0; c < P.k; ++c) {
      const int b = P.hq[static_cast<size_t>(r) * (P.k / 2) + c / 2];
      const int qv = c & 1 ? b >> 4 : b & 15;
      const double w = (qv - from_bf(P.hz[r * G + c / 128])) * from_bf(P.hs[r * G + c / 128]);
      ref += w * from_bf(P.hx[c]);
      mag += std::fabs(w * from_bf(P.hx[c]));
    }
    maxerr = std::max(maxerr, std::fabs(from_bf(hy[r]) - ref) / (mag + 1e-30));
  }
  const double bytes = P.qbytes + 2.0 * P.fcount * 2;
  std::printf("%dx%d %-22s %s %8.2f us %7.1f GB/s  err %.2e\n", P.n, P.k, "library t128_r1_kw1_u2", "arith", us,
              bytes / us / 1e3, maxerr);
  CK(cudaStreamDestroy(st));
  CK(cudaFree(tickets));
  CK(cudaFree(ybf));
}
#endif

int main(int argc, char** argv) {
  for (int a = 1; a < argc; ++a) {
    Problem P;
    if (std::sscanf(argv[a], "%dx%d", &P.n, &P.k) != 2 || P.k % 256 || P.n % 16) {
      std::fprintf(stderr, "shape %s: NxK with K %% 256 == 0 and N %% 16 == 0\n", argv[a]);
      return 2;
    }
    P.qbytes = static_cast<size_t>(P.n) * P.k / 2;
    P.fcount = static_cast<size_t>(P.n) * (P.k / 128);
    const double one = P.qbytes + 4.0 * P.fcount;
    P.copies = std::max(2, static_cast<int>(std::ceil(4 * 60e6 / one)) + 1);
    std::mt19937 rng(a);
    P.hq.resize(P.qbytes);
    for (auto& b : P.hq) b = static_cast<unsigned char>(rng());
    std::uniform_real_distribution<float> us(0.001f, 0.02f), uz(6.f, 9.f), ux(-1.f, 1.f);
    P.hs.resize(P.fcount);
    P.hz.resize(P.fcount);
    for (auto& v : P.hs) v = to_bf(us(rng));
    for (auto& v : P.hz) v = to_bf(uz(rng));
    P.hx.resize(P.k);
    for (auto& v : P.hx) v = to_bf(ux(rng));
    CK(cudaMalloc(&P.q, P.qbytes * P.copies));
    CK(cudaMalloc(&P.qt, P.qbytes * P.copies));
    CK(cudaMalloc(&P.qp, P.qbytes * P.copies));
    std::vector<unsigned char> tiled(P.qbytes), panels(P.qbytes);
    const int stages = P.k / 256;
    for (int r = 0; r < P.n; ++r)
      for (int st = 0; st < stages; ++st) {
        const unsigned char* line = &P.hq[static_cast<size_t>(r) * (P.k / 2) + st * 128];
        std::memcpy(&tiled[((static_cast<size_t>(r / 16) * stages + st) * 16 + r % 16) * 128], line, 128);
        std::memcpy(&panels[((static_cast<size_t>(st) * (P.n / 16) + r / 16) * 16 + r % 16) * 128], line, 128);
      }
    CK(cudaMalloc(&P.s, P.fcount * 2 * P.copies));
    CK(cudaMalloc(&P.z, P.fcount * 2 * P.copies));
    CK(cudaMalloc(&P.x, P.k * 2));
    CK(cudaMalloc(&P.y, P.n * 4));
    for (int c = 0; c < P.copies; ++c) {
      CK(cudaMemcpy(P.q + c * P.qbytes, P.hq.data(), P.qbytes, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(P.qt + c * P.qbytes, tiled.data(), P.qbytes, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(P.qp + c * P.qbytes, panels.data(), P.qbytes, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(P.s + c * P.fcount, P.hs.data(), P.fcount * 2, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(P.z + c * P.fcount, P.hz.data(), P.fcount * 2, cudaMemcpyHostToDevice));
    }
    CK(cudaMemcpy(P.x, P.hx.data(), P.k * 2, cudaMemcpyHostToDevice));
#ifdef WITH_LIBRARY_KERNEL
    run_library(P);
    both<128, 1, 2, true>(P);
    run_library(P);
    const bool library_only = std::getenv("LIBRARY_ONLY") != nullptr;
    if (library_only) {  // the probe's best on tiled weights, and both layouts without arithmetic
      run<128, 1, 2, true, true, true>(P, "t128_kw1_u2_pipe_tiled");
      run<128, 1, 2, false, true, false>(P, "t128_kw1_u2_pipe");
      run<128, 1, 2, false, true, true>(P, "t128_kw1_u2_pipe_tiled");
      run<128, 2, 2, true, true, true>(P, "t128_kw2_u2_pipe_tiled");
      run<256, 2, 2, true, true, true>(P, "t256_kw2_u2_pipe_tiled");
    }
#else
    const bool library_only = false;
#endif
    if (std::getenv("LAYOUTS")) {  // the three layouts, loads only and with arithmetic
      run<256, 1, 1, false, true, 0>(P, "t256_kw1_u1_pipe rows");
      run<256, 1, 1, false, true, 1>(P, "t256_kw1_u1_pipe tiled");
      run<256, 1, 1, false, true, 2>(P, "t256_kw1_u1_pipe panels");
      run<256, 1, 1, true, true, 0>(P, "t256_kw1_u1_pipe rows");
      run<256, 1, 1, true, true, 1>(P, "t256_kw1_u1_pipe tiled");
      run<256, 1, 1, true, true, 2>(P, "t256_kw1_u1_pipe panels");
      run<128, 1, 2, true, true, 0>(P, "t128_kw1_u2_pipe rows");
      run<128, 1, 2, true, true, 2>(P, "t128_kw1_u2_pipe panels");
      run<256, 2, 1, true, true, 0>(P, "t256_kw2_u1_pipe rows");
      run<256, 2, 1, true, true, 2>(P, "t256_kw2_u1_pipe panels");
    } else if (!library_only) {
      both<128, 2, 2>(P);
      both<256, 4, 2>(P);
      both<128, 2, 1, true>(P);
      both<128, 2, 2, true>(P);
      both<128, 1, 2, true>(P);
      both<64, 2, 2, true>(P);
      both<64, 1, 2, true>(P);
      both<256, 2, 1, true>(P);
      both<256, 2, 2, true>(P);
      both<256, 4, 1, true>(P);
      both<256, 4, 2, true>(P);
      both<128, 4, 1, true>(P);
    }
    CK(cudaFree(P.q));
    CK(cudaFree(P.qt));
    CK(cudaFree(P.qp));
    CK(cudaFree(P.s));
    CK(cudaFree(P.z));
    CK(cudaFree(P.x));
    CK(cudaFree(P.y));
  }
  return 0;
}
