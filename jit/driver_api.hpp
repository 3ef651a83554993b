// The CUDA Driver API, loaded at run time from libcuda.so.1.
//
// Linking libcuda directly would make every binary (CLI, tests) fail to start on a machine
// without the driver, before main() could say why. Loading it with dlopen lets a machine with
// no GPU build, run the CPU-only tests, and get a one-line "no CUDA driver" error.
#pragma once
#include <cuda.h>

#include <string>

namespace gemvtune::jit {

// The functions gemvtune calls. cuda.h maps several names to versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2); the table is filled with the versioned ones.
#define GEMVTUNE_DRIVER_FUNCTIONS(X)                                                          \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)             \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)               \
  X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload)               \
  X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx)         \
  X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemsetD8)   \
  X(cuMemsetD8Async) X(cuMemcpyDtoHAsync) X(cuMemcpyHtoDAsync)                            \
  X(cuMemsetD32) X(cuMemGetInfo) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventRecordWithFlags)             \
  X(cuEventSynchronize)                                                                      \
  X(cuEventElapsedTime) X(cuStreamBeginCapture) X(cuStreamEndCapture)                        \
  X(cuGraphInstantiateWithFlags) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)    \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor) X(cuFuncSetAttribute) X(cuCtxGetDevice)

struct DriverApi {
#define GEMVTUNE_DRIVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
  GEMVTUNE_DRIVER_FUNCTIONS(GEMVTUNE_DRIVER_MEMBER)
#undef GEMVTUNE_DRIVER_MEMBER
};

// The loaded table, after cuInit(0). Throws NoGpu when libcuda.so.1 is missing, a symbol is
// missing, or cuInit fails (no GPU); the message says which. Thread-safe; loads once.
const DriverApi& driver();

// True when driver() would succeed; otherwise *why (if given) says what is missing.
bool driver_available(std::string* why = nullptr);

// Throws CudaError naming `call` and the driver's error name and string unless r == CUDA_SUCCESS.
void cu_check(CUresult r, const char* call);

// Human-readable "CUDA_ERROR_X: text" for r (never throws).
std::string cu_error_text(CUresult r);

}  // namespace gemvtune::jit

// GEMVTUNE_CU(cuMemAlloc, &ptr, bytes): calls the loaded function, throws naming it on failure.
#define GEMVTUNE_CU(fn, ...) ::gemvtune::jit::cu_check(::gemvtune::jit::driver().fn(__VA_ARGS__), #fn)
