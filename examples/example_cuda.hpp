// Helpers of the C++ examples, not part of gemvtune: the CUDA driver API, RAII owners of the
// handles the examples create, and bf16 test data. Uses only cuda.h and the C++ library.
//
// The driver is loaded at run time (dlopen of libcuda.so.1), as gemvtune itself does, so the
// examples start on a machine without a driver and say why they skip (exit 77) instead of
// failing in the dynamic loader. A server that already links libcuda (or the CUDA runtime)
// can call the cu* functions directly instead of through driver().
#pragma once
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace example {

// The driver functions the examples call. cuda.h maps several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); the table holds, and dlsym looks up, the versioned ones.
#define EXAMPLE_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD8Async) X(cuMemcpyDtoHAsync) X(cuStreamCreate)   \
  X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate) X(cuEventDestroy)               \
  X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuStreamBeginCapture)       \
  X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)                      \
  X(cuGraphExecDestroy) X(cuGraphDestroy)

struct Driver {
#define EXAMPLE_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  EXAMPLE_DRIVER_FUNCTIONS(EXAMPLE_DRIVER_MEMBER)
#undef EXAMPLE_DRIVER_MEMBER
  std::string error;  // empty when the table is usable (loaded, and cuInit succeeded)
};

#define EXAMPLE_STR2(x) #x
#define EXAMPLE_STR(x) EXAMPLE_STR2(x)  // expands cuMemAlloc to "cuMemAlloc_v2" first

inline Driver load_driver() {
  Driver d;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    d.error = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (e ? e : "?") + ")";
    return d;
  }
#define EXAMPLE_DRIVER_LOAD(fn)                                                   \
  d.fn = reinterpret_cast<decltype(d.fn)>(dlsym(lib, EXAMPLE_STR(fn)));           \
  if (!d.fn) {                                                                    \
    d.error = "CUDA driver too old: libcuda.so.1 has no " EXAMPLE_STR(fn);        \
    return d;                                                                     \
  }
  EXAMPLE_DRIVER_FUNCTIONS(EXAMPLE_DRIVER_LOAD)
#undef EXAMPLE_DRIVER_LOAD
  const CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    d.cuGetErrorName(r, &name);
    d.error = std::string("no usable GPU: cuInit failed with ") + (name ? name : "?") +
              (r == CUDA_ERROR_NO_DEVICE ? " (no CUDA device found)" : "");
  }
  return d;  // the library stays loaded for the life of the process
}

inline const Driver& loaded_driver() {
  static const Driver d = load_driver();  // once per process, thread-safe
  return d;
}

// True when the driver loaded and found a GPU; otherwise *why says what is missing.
inline bool driver_available(std::string* why) {
  *why = loaded_driver().error;
  return why->empty();
}

// The loaded table; throws when driver_available() would be false.
inline const Driver& driver() {
  const Driver& d = loaded_driver();
  if (!d.error.empty()) throw std::runtime_error(d.error);
  return d;
}

// Throws "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" unless r succeeded.
inline void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const Driver& d = loaded_driver();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(r, &name);
  if (d.cuGetErrorString) d.cuGetErrorString(r, &text);
  throw std::runtime_error(std::string(call) + " failed: " + (name ? name : "CUDA error") + " (" +
                           std::to_string(static_cast<int>(r)) + "): " + (text ? text : "unknown"));
}

}  // namespace example

// EXAMPLE_CU(cuMemAlloc, &ptr, bytes): calls the driver, throws naming the call on failure.
#define EXAMPLE_CU(fn, ...) ::example::check(::example::driver().fn(__VA_ARGS__), #fn)

namespace example {

// RAII owners. Destructors ignore errors: there is nothing to do about a failed release.

// The device's primary context, retained (the gemvtune Runtime holds its own retain; buffers
// and streams made here need ours) and made current on construction.
class PrimaryContext {
 public:
  explicit PrimaryContext(int ordinal) {
    EXAMPLE_CU(cuDeviceGet, &device_, ordinal);
    EXAMPLE_CU(cuDevicePrimaryCtxRetain, &ctx_, device_);
    try {
      make_current();
    } catch (...) {
      driver().cuDevicePrimaryCtxRelease(device_);
      throw;
    }
  }
  ~PrimaryContext() { driver().cuDevicePrimaryCtxRelease(device_); }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  // Makes the context current on the calling thread (each new thread needs it once).
  void make_current() const { EXAMPLE_CU(cuCtxSetCurrent, ctx_); }

 private:
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
};

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes) EXAMPLE_CU(cuMemAlloc, &ptr_, bytes);
  }
  ~DeviceBuffer() {
    if (ptr_) driver().cuMemFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) driver().cuMemFree(ptr_);
      ptr_ = std::exchange(o.ptr_, 0);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  CUdeviceptr get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* src, std::size_t bytes) {
    if (bytes > bytes_) throw std::invalid_argument("upload past the end of a device buffer");
    if (!bytes) return;
    EXAMPLE_CU(cuMemcpyHtoD, ptr_, src, bytes);
    // A copy from pageable memory may return before it lands, on the legacy stream, which the
    // examples' non-blocking streams do not wait for (jit/cuda_handles.hpp, finish_legacy_stream).
    EXAMPLE_CU(cuStreamSynchronize, nullptr);
  }
  void download(void* dst, std::size_t bytes) const {
    if (bytes > bytes_) throw std::invalid_argument("download past the end of a device buffer");
    if (bytes) EXAMPLE_CU(cuMemcpyDtoH, dst, ptr_, bytes);
  }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream() { EXAMPLE_CU(cuStreamCreate, &s_, CU_STREAM_NON_BLOCKING); }
  ~Stream() { driver().cuStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return s_; }
  void synchronize() const { EXAMPLE_CU(cuStreamSynchronize, s_); }

 private:
  CUstream s_ = nullptr;
};

class Event {
 public:
  Event() { EXAMPLE_CU(cuEventCreate, &e_, CU_EVENT_DEFAULT); }
  ~Event() { driver().cuEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(CUstream s) const { EXAMPLE_CU(cuEventRecord, e_, s); }
  // Milliseconds from `start` to this event; waits for this event to complete.
  float elapsed_ms_since(const Event& start) const {
    EXAMPLE_CU(cuEventSynchronize, e_);
    float ms = 0;
    EXAMPLE_CU(cuEventElapsedTime, &ms, start.e_, e_);
    return ms;
  }

 private:
  CUevent e_ = nullptr;
};

// A CUDA graph captured from a stream and instantiated: replay() launches all of it at once.
class CapturedGraph {
 public:
  static void begin_capture(CUstream s) { EXAMPLE_CU(cuStreamBeginCapture, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); }
  static CapturedGraph end_capture(CUstream s) {
    CapturedGraph g;
    EXAMPLE_CU(cuStreamEndCapture, s, &g.graph_);
    EXAMPLE_CU(cuGraphInstantiateWithFlags, &g.exec_, g.graph_, 0);
    return g;
  }
  ~CapturedGraph() {
    if (exec_) driver().cuGraphExecDestroy(exec_);
    if (graph_) driver().cuGraphDestroy(graph_);
  }
  CapturedGraph(CapturedGraph&& o) noexcept
      : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}
  CapturedGraph& operator=(CapturedGraph&&) = delete;
  CapturedGraph(const CapturedGraph&) = delete;
  void replay(CUstream s) const { EXAMPLE_CU(cuGraphLaunch, exec_, s); }

 private:
  CapturedGraph() = default;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

// bf16 as raw bits, as the GPU stores it.
inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline std::uint16_t float_to_bf16(float f) {  // round to nearest even
  if (std::isnan(f)) return 0x7fc0;
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

// Runs body(begin, end) over [0, count) split across the machine's cores.
template <typename Body>
void parallel_for(std::int64_t count, const Body& body) {
  const std::int64_t workers = std::max<std::int64_t>(
      1, std::min<std::int64_t>(std::thread::hardware_concurrency(), count / 4096 + 1));
  const std::int64_t per = (count + workers - 1) / workers;
  std::vector<std::thread> threads;
  for (std::int64_t w = 0; w < workers; ++w) {
    const std::int64_t b = w * per, e = std::min(count, b + per);
    if (b < e) threads.emplace_back([&body, b, e] { body(b, e); });
  }
  for (auto& t : threads) t.join();
}

// Element i of a seed's random stream, uniform in [-1, 1) (a counter-based generator: the same
// seed gives the same data however the work is split). The same data as `gemvtune bench`.
inline float uniform_at(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

// W, N x K row-major bf16: element j is uniform_at(seed, j) rounded to bf16, then, when scale
// is not 1, multiplied by scale and rounded again.
inline std::vector<std::uint16_t> random_weights(std::int64_t n, std::int64_t k, std::uint64_t seed,
                                                 double scale = 1) {
  std::vector<std::uint16_t> w(static_cast<std::size_t>(n * k));
  parallel_for(n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t j = begin * k; j < end * k; ++j) {
      std::uint16_t b = float_to_bf16(uniform_at(seed, static_cast<std::uint64_t>(j)));
      if (scale != 1) b = float_to_bf16(static_cast<float>(bf16_to_float(b) * scale));
      w[static_cast<std::size_t>(j)] = b;
    }
  });
  return w;
}

// X, m x K row-major bf16: row i is drawn from the stream of seed ~seed - i.
inline std::vector<std::uint16_t> random_activations(int m, std::int64_t k, std::uint64_t seed) {
  std::vector<std::uint16_t> x(static_cast<std::size_t>(m * k));
  for (int i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < k; ++c)
      x[static_cast<std::size_t>(i * k + c)] =
          float_to_bf16(uniform_at(~seed - static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(i * k + c)));
  return x;
}

}  // namespace example
