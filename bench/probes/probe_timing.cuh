// What the standalone probes of bench/probes/ share (each is built alone with nvcc and includes
// this): CK, which ends the probe on a CUDA error, graph_median_us, the library's timing
// method in small: a graph of back-to-back calls (over the weight copies the caller rotates,
// so that the weights come from HBM), one warm-up replay, the median of seven; and bf_to_f, a
// bf16's float on the host for the probes' float64 references.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

// Microseconds per call: launch(i) issues call i (0 .. calls - 1) on st; the calls are captured
// into one graph, replayed once to warm up, then seven times, each replay timed by events.
template <typename Launch>
double graph_median_us(cudaStream_t st, int calls, const Launch& launch) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) launch(i);
  CK(cudaStreamEndCapture(st, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaGraphLaunch(exec, st));
  std::vector<float> us;
  for (int rep = 0; rep < 7; ++rep) {
    CK(cudaEventRecord(e0, st));
    CK(cudaGraphLaunch(exec, st));
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    us.push_back(ms * 1000.f / calls);
  }
  std::sort(us.begin(), us.end());
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return us[3];
}

// A bf16's value on the host: its 16 bits are the top half of the float's.
static inline float bf_to_f(__nv_bfloat16 v) {
  unsigned short b;
  std::memcpy(&b, &v, 2);
  const unsigned u = static_cast<unsigned>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
