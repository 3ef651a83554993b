// RAII owners of CUDA Driver API handles. Destructors never throw: a failure while releasing is
// ignored (there is nothing a caller could do with it, and throwing would terminate).
#pragma once
#include <cuda.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "gemvtune/gpu.hpp"
#include "jit/driver_api.hpp"

namespace gemvtune::jit {

// Moves a handle out of `other`, leaving it empty.
template <typename T>
T take(T& other) { return std::exchange(other, T{}); }

// The primary context of one device, retained for the object's lifetime and made current on
// construction (and by make_current() on other threads).
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  void make_current() const;
  // Makes this context current only when the calling thread has none, so a caller's own
  // context choice is never changed behind its back. Throws CudaError.
  void make_current_if_none() const;
  // The same for destructors: never throws, reports whether a context is current afterwards.
  bool make_current_if_none_noexcept() const noexcept;
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }
  const GpuInfo& info() const { return info_; }

 private:
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  GpuInfo info_;
};

int device_count();  // throws NoGpu when there is no driver or GPU

// Waits for the work on the legacy default stream. The driver's plain memset and its copies from
// pageable host memory or device to device run there and may return before the device has done
// them (CUDA's "API synchronization behavior"), while every kernel here runs on a non-blocking
// Stream, which does not wait for the legacy stream: without this a kernel could read weights
// before they land, or write y before its NaN poison does. On the H200 one aligned-body check in
// about 18,000 (tests/jit/gemv_aligned_body_gpu_test.cpp, 2026-12-03) read NaN for a correct y.
void finish_legacy_stream();
GpuInfo read_gpu_info(int ordinal);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(take(o.ptr_)), bytes_(take(o.bytes_)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  CUdeviceptr get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }
  // upload and fill_bytes return once the device holds the bytes (see finish_legacy_stream).
  void upload(const void* src, std::size_t bytes, std::size_t offset = 0);
  void download(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  void fill_bytes(unsigned char value);

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
};

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  CUstream get() const { return s_; }
  void synchronize() const;

 private:
  CUstream s_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  CUevent get() const { return e_; }
  void record(CUstream s) const;
  // Into a stream being captured: an event-record node of the graph (CU_EVENT_RECORD_EXTERNAL),
  // so each replay records the event when the GPU reaches that point of the graph.
  void record_in_capture(CUstream s) const;
  // Milliseconds from `start` to this event; both must have completed.
  float elapsed_ms_since(const Event& start) const;

 private:
  CUevent e_ = nullptr;
};

// A module loaded from a cubin into the current context.
class Module {
 public:
  Module() = default;
  explicit Module(const std::vector<char>& image);
  ~Module();
  Module(Module&& o) noexcept : m_(take(o.m_)) {}
  Module& operator=(Module&& o) noexcept;
  CUfunction function(const std::string& name) const;

 private:
  CUmodule m_ = nullptr;
};

// A graph captured from a stream and instantiated: replay() launches all of it at once.
class CapturedGraph {
 public:
  // Begins capture on s; call end_capture(s) after enqueuing the work.
  static void begin_capture(CUstream s);
  static CapturedGraph end_capture(CUstream s);
  CapturedGraph() = default;
  ~CapturedGraph();
  CapturedGraph(CapturedGraph&& o) noexcept : graph_(take(o.graph_)), exec_(take(o.exec_)) {}
  CapturedGraph& operator=(CapturedGraph&& o) noexcept;
  void replay(CUstream s) const;

 private:
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
};

}  // namespace gemvtune::jit
