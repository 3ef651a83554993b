// RAII owners of CUDA Driver API handles (see cuda_handles.hpp).
#include "jit/cuda_handles.hpp"

#include "gemvtune/error.hpp"

namespace gemvtune::jit {

int device_count() {
  int n = 0;
  GEMVTUNE_CU(cuDeviceGetCount, &n);
  if (n == 0) throw NoGpu("no CUDA device found");
  return n;
}

GpuInfo read_gpu_info(int ordinal) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw InvalidArgument("device " + std::to_string(ordinal) + " does not exist (this machine has " +
                          std::to_string(count) + ")");
  CUdevice dev;
  GEMVTUNE_CU(cuDeviceGet, &dev, ordinal);
  GpuInfo info;
  char name[256] = {};
  GEMVTUNE_CU(cuDeviceGetName, name, sizeof name - 1, dev);
  info.id.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    GEMVTUNE_CU(cuDeviceGetAttribute, &v, a, dev);
    return v;
  };
  info.id.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.id.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.id.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  std::size_t mem = 0;
  GEMVTUNE_CU(cuDeviceTotalMem, &mem, dev);
  info.global_mem_bytes = static_cast<std::int64_t>(mem);
  GEMVTUNE_CU(cuDriverGetVersion, &info.driver_version);
  info.arch = "sm_" + std::to_string(info.id.cc_major) + std::to_string(info.id.cc_minor);
  return info;
}

Context::Context(int ordinal) : ordinal_(ordinal), info_(read_gpu_info(ordinal)) {
  GEMVTUNE_CU(cuDeviceGet, &device_, ordinal);
  GEMVTUNE_CU(cuDevicePrimaryCtxRetain, &ctx_, device_);
  try {
    make_current();
  } catch (...) {
    driver().cuDevicePrimaryCtxRelease(device_);
    throw;
  }
}

Context::~Context() {
  if (ctx_) driver().cuDevicePrimaryCtxRelease(device_);
}

void Context::make_current() const { GEMVTUNE_CU(cuCtxSetCurrent, ctx_); }

void Context::make_current_if_none() const {
  CUcontext current = nullptr;
  GEMVTUNE_CU(cuCtxGetCurrent, &current);
  if (!current) make_current();
}

bool Context::make_current_if_none_noexcept() const noexcept {
  try {
    CUcontext current = nullptr;
    if (driver().cuCtxGetCurrent(&current) != CUDA_SUCCESS) return false;
    return current != nullptr || driver().cuCtxSetCurrent(ctx_) == CUDA_SUCCESS;
  } catch (...) {
    return false;
  }
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  GEMVTUNE_CU(cuMemAlloc, &ptr_, bytes);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree(ptr_);
    ptr_ = take(o.ptr_);
    bytes_ = take(o.bytes_);
  }
  return *this;
}

void DeviceBuffer::upload(const void* src, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > bytes_) throw InvalidArgument("upload past the end of a device buffer");
  if (!bytes) return;
  GEMVTUNE_CU(cuMemcpyHtoD, ptr_ + offset, src, bytes);
  finish_legacy_stream();
}

void DeviceBuffer::download(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw InvalidArgument("download past the end of a device buffer");
  if (bytes) GEMVTUNE_CU(cuMemcpyDtoH, dst, ptr_ + offset, bytes);
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  if (!bytes_) return;
  GEMVTUNE_CU(cuMemsetD8, ptr_, value, bytes_);
  finish_legacy_stream();
}

void finish_legacy_stream() { GEMVTUNE_CU(cuStreamSynchronize, nullptr); }

Stream::Stream() { GEMVTUNE_CU(cuStreamCreate, &s_, CU_STREAM_NON_BLOCKING); }
Stream::~Stream() {
  if (s_) driver().cuStreamDestroy(s_);
}
void Stream::synchronize() const { GEMVTUNE_CU(cuStreamSynchronize, s_); }

Event::Event() { GEMVTUNE_CU(cuEventCreate, &e_, CU_EVENT_DEFAULT); }
Event::~Event() {
  if (e_) driver().cuEventDestroy(e_);
}
void Event::record(CUstream s) const { GEMVTUNE_CU(cuEventRecord, e_, s); }
void Event::record_in_capture(CUstream s) const { GEMVTUNE_CU(cuEventRecordWithFlags, e_, s, CU_EVENT_RECORD_EXTERNAL); }
float Event::elapsed_ms_since(const Event& start) const {
  GEMVTUNE_CU(cuEventSynchronize, e_);
  float ms = 0;
  GEMVTUNE_CU(cuEventElapsedTime, &ms, start.e_, e_);
  return ms;
}

Module::Module(const std::vector<char>& image) { GEMVTUNE_CU(cuModuleLoadData, &m_, image.data()); }
Module::~Module() {
  if (m_) driver().cuModuleUnload(m_);
}
Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (m_) driver().cuModuleUnload(m_);
    m_ = take(o.m_);
  }
  return *this;
}
CUfunction Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  GEMVTUNE_CU(cuModuleGetFunction, &f, m_, name.c_str());
  return f;
}

void CapturedGraph::begin_capture(CUstream s) {
  GEMVTUNE_CU(cuStreamBeginCapture, s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
CapturedGraph CapturedGraph::end_capture(CUstream s) {
  CapturedGraph g;
  GEMVTUNE_CU(cuStreamEndCapture, s, &g.graph_);
  GEMVTUNE_CU(cuGraphInstantiateWithFlags, &g.exec_, g.graph_, 0);
  return g;
}
CapturedGraph::~CapturedGraph() {
  if (exec_) driver().cuGraphExecDestroy(exec_);
  if (graph_) driver().cuGraphDestroy(graph_);
}
CapturedGraph& CapturedGraph::operator=(CapturedGraph&& o) noexcept {
  if (this != &o) {
    if (exec_) driver().cuGraphExecDestroy(exec_);
    if (graph_) driver().cuGraphDestroy(graph_);
    graph_ = take(o.graph_);
    exec_ = take(o.exec_);
  }
  return *this;
}
void CapturedGraph::replay(CUstream s) const { GEMVTUNE_CU(cuGraphLaunch, exec_, s); }

}  // namespace gemvtune::jit
