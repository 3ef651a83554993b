// A probe, not part of the build: where the GPU's block scheduler puts the blocks of a grid
// that fits in one wave, and how fast a few SMs can stream.
//
// Question (docs/tuning.md, "The dense tensor-core default", 2026-12-05): in the whole-space
// sweep of the dense tensor-core kernel (bench/results/sweeps/h200_batch_4852aee_pdl.csv) grids
// of one wave or less with the same bytes per block and the same blocks ran up to 1.3x apart
// (2x28672x4096: 224 blocks of 128 rows, `tc_t256_r1_kw1_u4` 58.6 us, `tc_t128_r2_kw1_u4` 75.5),
// and the achieved bandwidth of such grids follows ceil(blocks / blocks an SM can hold), the
// SMs a scheduler that fills each SM before the next would use, more closely than the balance
// of an even spread (correlation 0.61-0.88 against 0.14-0.87 over the 26 pairs). The model
// assumes the even spread (tuner/model.cpp, balance). If the hardware fills SMs first, a
// grid smaller than a wave should be given residency limits (shared memory, say) that spread it.
//
// Part 1 (placement): a kernel that records %smid and its start and end (%globaltimer) per
// block and spins 200 us, so every block of a one-wave grid is resident at once; blocks an SM
// holds (cap) set by dynamic shared memory. Printed per (threads, cap, blocks): SMs used, the
// most blocks on one SM, SMs holding 1, 2, ... blocks, TPCs (SM pairs) used, and the spread
// of start times.
// Part 3 (chain): the sweep times graphs of back-to-back calls with programmatic dependent
// launch, where call i + 1's blocks are placed while call i's still run (they become resident
// after every block of call i has passed launch_dependents, then wait). So the placement that
// matters is the one made beside the previous call's blocks: 8 calls of a kernel shaped like
// gemvtune's (griddepcontrol.wait after the start, launch_dependents 20 us before the end of a
// 40 us spin), in a graph, with and without the PDL attribute; per (threads, cap, blocks), the
// SMs used and the most blocks on one SM, averaged over calls 1-7.
// Part 2 (stream): B blocks of 1024 threads, one an SM (shared memory), each streaming its own
// contiguous share of 1 GiB with four 16-byte loads in flight a thread; GB/s over B, so the rate
// of one SM above its share of the ceiling (ceiling / SMs) can be read off.
//
// Build: nvcc -O3 -arch=sm_90 -o block_placement bench/probes/block_placement.cu
// Run:   ./block_placement            (about 15 s; prints three tables)
#include <map>
#include <set>

#include "probe_timing.cuh"  // CK

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void where(unsigned long long* out, unsigned long long spin_ns) {
  extern __shared__ char pad[];
  const unsigned long long t0 = global_ns();
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) pad[0] = 1;  // the dynamic shared memory is really asked for
  while (global_ns() - t0 < spin_ns) {
  }
  if (threadIdx.x == 0) {
    out[3 * blockIdx.x] = smid + pad[0] - 1;
    out[3 * blockIdx.x + 1] = t0;
    out[3 * blockIdx.x + 2] = global_ns();
  }
}

// Part 3's kernel: start, wait for the previous call (PDL), spin, let the next call's blocks in,
// spin, record. Each call writes its own slice of out.
__global__ void where_chained(unsigned long long* out, unsigned long long spin_ns, unsigned long long tail_ns) {
  extern __shared__ char pad[];
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned long long t0 = global_ns();
  if (threadIdx.x == 0) pad[0] = 1;
  while (global_ns() - t0 < spin_ns - tail_ns) {
  }
  asm volatile("griddepcontrol.launch_dependents;");
  while (global_ns() - t0 < spin_ns) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = smid + pad[0] - 1;
}

__global__ void __launch_bounds__(1024) stream(const uint4* __restrict__ w, long long per_block, unsigned* sink) {
  extern __shared__ char pad[];
  const uint4* p = w + blockIdx.x * per_block;
  unsigned acc = 0;
  for (long long i = threadIdx.x; i < per_block; i += 4 * 1024) {
    uint4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const long long j = i + u * 1024;
      v[u] = j < per_block ? __ldcs(p + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) sink[0] = acc + pad[0];  // keeps the loads
}

int main() {
  int dev = 0, sms = 0, smem_optin = 0, smem_sm = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  CK(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, dev));
  std::printf("# %s, %d SMs, %d B shared an SM, %d B a block at most\n", prop.name, sms, smem_sm, smem_optin);
  CK(cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));

  // Part 1.
  const int max_blocks = 1024;
  unsigned long long* d_out = nullptr;
  CK(cudaMalloc(&d_out, 3 * max_blocks * sizeof(unsigned long long)));
  std::vector<unsigned long long> h(3 * max_blocks);
  std::printf("threads cap blocks | SMs used, most blocks on one SM, SMs with 1/2/3/4/5+ blocks, TPCs used, start spread us, all resident\n");
  for (int threads : {128, 256}) {
    for (int cap : {1, 2, 3, 4, 5, 8}) {
      if (cap * threads > 2048) continue;
      // The shared memory that lets `cap` blocks fit an SM and not cap + 1 (1 KB reserved a block).
      const int per_block = smem_sm / cap - 1024;
      const int smem = std::min(per_block, smem_optin);
      int occ = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, where, threads, smem));
      for (int blocks : {33, 66, 100, 132, 192, 224, 264, 330, 384, 448, 528, 660, 768, 896}) {
        if (blocks > occ * sms || blocks > max_blocks) continue;
        where<<<blocks, threads, smem>>>(d_out, 200000ull);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(h.data(), d_out, 3 * blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        std::map<unsigned, int> per_sm;
        std::set<unsigned> tpcs;
        unsigned long long first = ~0ull, last_start = 0, first_end = ~0ull;
        for (int b = 0; b < blocks; ++b) {
          per_sm[static_cast<unsigned>(h[3 * b])]++;
          tpcs.insert(static_cast<unsigned>(h[3 * b]) / 2);
          first = std::min(first, h[3 * b + 1]);
          last_start = std::max(last_start, h[3 * b + 1]);
          first_end = std::min(first_end, h[3 * b + 2]);
        }
        int most = 0, with[6] = {0, 0, 0, 0, 0, 0};
        for (const auto& [sm, count] : per_sm) {
          most = std::max(most, count);
          with[std::min(count, 5)]++;
        }
        std::printf("%7d %3d %6d | %3zu %2d  %3d %3d %3d %3d %3d  %3zu  %6.1f  %s\n", threads, occ, blocks, per_sm.size(),
                    most, with[1], with[2], with[3], with[4], with[5], tpcs.size(), (last_start - first) / 1e3,
                    last_start < first_end ? "yes" : "no");
      }
    }
  }
  CK(cudaFree(d_out));

  // Part 3.
  {
    CK(cudaFuncSetAttribute(where_chained, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_optin));
    const int calls = 8;
    unsigned long long* d_calls = nullptr;
    CK(cudaMalloc(&d_calls, calls * max_blocks * sizeof(unsigned long long)));
    std::vector<unsigned long long> hc(calls * max_blocks);
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    std::printf("\nchain of %d calls in a graph: threads cap blocks | PDL: SMs used, most on one SM | no PDL: the same "
                "(calls 1-%d averaged)\n", calls, calls - 1);
    for (int threads : {128, 256, 448}) {
      for (int cap : {0, 1, 2, 4}) {  // 0: no shared memory, the occupancy the threads allow
        if (cap * threads > 2048) continue;
        // cap 0 still asks for 16 bytes: the kernel writes pad[0], out of bounds with none (the
        // 2026-12-05 H200 run stopped there with an illegal memory access).
        const int smem = cap ? std::min(smem_sm / cap - 1024, smem_optin) : 16;
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, where_chained, threads, smem));
        for (int blocks : {100, 128, 192, 224, 264, 384, 448, 512}) {
          if (blocks > occ * sms || blocks > max_blocks) continue;
          double used[2] = {0, 0}, most[2] = {0, 0};
          for (int pdl = 1; pdl >= 0; --pdl) {
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            for (int c = 0; c < calls; ++c) {
              cudaLaunchConfig_t lc{};
              lc.gridDim = dim3(blocks);
              lc.blockDim = dim3(threads);
              lc.dynamicSmemBytes = smem;
              lc.stream = st;
              cudaLaunchAttribute attr{};
              attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
              attr.val.programmaticStreamSerializationAllowed = 1;
              lc.attrs = &attr;
              lc.numAttrs = pdl ? 1 : 0;
              CK(cudaLaunchKernelEx(&lc, where_chained, d_calls + c * max_blocks, 40000ull, 20000ull));
            }
            CK(cudaStreamEndCapture(st, &graph));
            CK(cudaGraphInstantiate(&exec, graph, 0));
            CK(cudaGraphLaunch(exec, st));
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(hc.data(), d_calls, calls * max_blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
            for (int c = 1; c < calls; ++c) {
              std::map<unsigned, int> per_sm;
              for (int b = 0; b < blocks; ++b) per_sm[static_cast<unsigned>(hc[c * max_blocks + b])]++;
              int m = 0;
              for (const auto& [sm, count] : per_sm) m = std::max(m, count);
              used[pdl] += per_sm.size() / double(calls - 1);
              most[pdl] += m / double(calls - 1);
            }
            CK(cudaGraphExecDestroy(exec));
            CK(cudaGraphDestroy(graph));
          }
          std::printf("%7d %3d %6d | %6.1f %4.1f | %6.1f %4.1f\n", threads, cap ? cap : occ, blocks, used[1], most[1],
                      used[0], most[0]);
        }
      }
    }
    CK(cudaStreamDestroy(st));
    CK(cudaFree(d_calls));
  }

  // Part 2.
  const long long bytes = 1ll << 30;
  uint4* w = nullptr;
  unsigned* sink = nullptr;
  CK(cudaMalloc(&w, bytes));
  CK(cudaMalloc(&sink, sizeof(unsigned)));
  CK(cudaMemset(w, 1, bytes));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const int one_a_sm = std::min(smem_sm - 1024, smem_optin);  // one block an SM
  std::printf("\nstream: blocks (one an SM, 1024 threads) | GB/s (median of 7) | GB/s an SM\n");
  for (int blocks : {1, 2, 4, 8, 16, 33, 66, 99, 132}) {
    if (blocks > sms) continue;
    const long long per_block = bytes / 16 / blocks;
    std::vector<float> ms;
    for (int r = 0; r < 8; ++r) {
      CK(cudaEventRecord(a));
      stream<<<blocks, 1024, one_a_sm>>>(w, per_block, sink);
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float t = 0;
      CK(cudaEventElapsedTime(&t, a, b));
      if (r > 0) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double gbps = per_block * 16.0 * blocks / (ms[ms.size() / 2] * 1e-3) / 1e9;
    std::printf("%6d | %8.0f | %6.1f\n", blocks, gbps, gbps / blocks);
  }
  CK(cudaFree(w));
  CK(cudaFree(sink));
  return 0;
}
