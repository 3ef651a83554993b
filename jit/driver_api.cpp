// dlopen/dlsym of libcuda.so.1 into a DriverApi table (see driver_api.hpp for why).
#include "jit/driver_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include "gemvtune/error.hpp"

namespace gemvtune::jit {

namespace {
#define GEMVTUNE_STR2(x) #x
#define GEMVTUNE_STR(x) GEMVTUNE_STR2(x)  // expands cuMemAlloc to "cuMemAlloc_v2" first

struct Loaded {
  DriverApi api;
  std::string error;  // empty when api is usable
};

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    out.error = std::string("no CUDA driver: cannot load libcuda.so.1 (") + (e ? e : "?") + ")";
    return out;
  }
#define GEMVTUNE_DRIVER_LOAD(fn)                                                        \
  out.api.fn = reinterpret_cast<decltype(out.api.fn)>(dlsym(lib, GEMVTUNE_STR(fn)));    \
  if (!out.api.fn) {                                                                    \
    out.error = "CUDA driver too old: libcuda.so.1 has no " GEMVTUNE_STR(fn);           \
    return out;                                                                         \
  }
  GEMVTUNE_DRIVER_FUNCTIONS(GEMVTUNE_DRIVER_LOAD)
#undef GEMVTUNE_DRIVER_LOAD
  CUresult r = out.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    out.api.cuGetErrorName(r, &name);
    out.error = std::string("no usable GPU: cuInit failed with ") + (name ? name : "?") +
                (r == CUDA_ERROR_NO_DEVICE ? " (no CUDA device found)" : "");
  }
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();  // thread-safe initialisation, once per process
  return instance;
}
}  // namespace

const DriverApi& driver() {
  const Loaded& l = loaded();
  if (!l.error.empty()) throw NoGpu(l.error);
  return l.api;
}

bool driver_available(std::string* why) {
  const Loaded& l = loaded();
  if (why) *why = l.error;
  return l.error.empty();
}

std::string cu_error_text(CUresult r) {
  const Loaded& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.api.cuGetErrorName) l.api.cuGetErrorName(r, &name);
  if (l.api.cuGetErrorString) l.api.cuGetErrorString(r, &text);
  return std::string(name ? name : "CUDA error") + ": " + (text ? text : "unknown");
}

void cu_check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const Loaded& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.api.cuGetErrorName) l.api.cuGetErrorName(r, &name);
  if (l.api.cuGetErrorString) l.api.cuGetErrorString(r, &text);
  throw CudaError(call, static_cast<int>(r), name ? name : "CUDA error", text ? text : "unknown");
}

}  // namespace gemvtune::jit
