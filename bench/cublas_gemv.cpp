// cuBLAS through dlopen (see cublas_gemv.hpp).
#include "bench/cublas_gemv.hpp"

#include <cublas_v2.h>
#include <dlfcn.h>

#include "gemvtune/error.hpp"
#include "jit/cuda_handles.hpp"

namespace gemvtune::bench {

namespace {
using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SetWorkspaceFn = cublasStatus_t (*)(cublasHandle_t, void*, size_t);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                    int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                    cublasGemmAlgo_t);

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string(call) + " failed with cuBLAS status " + std::to_string(s));
}
}  // namespace

struct CublasGemv::Impl {
  void* lib = nullptr;
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn set_stream = nullptr;
  SetWorkspaceFn set_workspace = nullptr;
  GemmExFn gemm = nullptr;
  cublasHandle_t handle = nullptr;
  jit::DeviceBuffer workspace{32u << 20};
};

CublasGemv::CublasGemv() : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!m.lib) m.lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  if (!m.lib) throw Error(std::string("cannot load cuBLAS (libcublas.so.13): ") + dlerror());
  auto sym = [&](const char* name) {
    void* p = dlsym(m.lib, name);
    if (!p) throw Error(std::string("cuBLAS has no ") + name);
    return p;
  };
  m.create = reinterpret_cast<CreateFn>(sym("cublasCreate_v2"));
  m.destroy = reinterpret_cast<DestroyFn>(sym("cublasDestroy_v2"));
  m.set_stream = reinterpret_cast<SetStreamFn>(sym("cublasSetStream_v2"));
  m.set_workspace = reinterpret_cast<SetWorkspaceFn>(sym("cublasSetWorkspace_v2"));
  m.gemm = reinterpret_cast<GemmExFn>(sym("cublasGemmEx"));
  check(m.create(&m.handle), "cublasCreate");
  check(m.set_workspace(m.handle, reinterpret_cast<void*>(m.workspace.get()), m.workspace.bytes()),
        "cublasSetWorkspace");
}

CublasGemv::~CublasGemv() {
  if (impl_->handle) impl_->destroy(impl_->handle);
  // The library stays loaded: cuBLAS keeps process-wide state that outlives handles.
}

void CublasGemv::launch(DType t, const jit::GemvOperands& op, CUstream stream) {
  Impl& m = *impl_;
  const cudaDataType type = t == DType::f32 ? CUDA_R_32F : t == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  const float alpha = 1.f, beta = 0.f;
  check(m.set_stream(m.handle, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  // Batch: X (m x K row-major) is K x m column-major with leading dimension ldx, and Y (m x N
  // row-major) is N x m column-major with leading dimension ldy.
  const int ldx = static_cast<int>(op.ldx ? op.ldx : op.shape.k), ldy = static_cast<int>(op.ldy ? op.ldy : op.shape.n);
  check(m.gemm(m.handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(op.shape.n), op.m, static_cast<int>(op.shape.k),
               &alpha, reinterpret_cast<const void*>(op.w), type, static_cast<int>(op.ld),
               reinterpret_cast<const void*>(op.x), type, ldx, &beta,
               reinterpret_cast<void*>(op.y), type, ldy, CUBLAS_COMPUTE_32F,
               CUBLAS_GEMM_DEFAULT),
        "cublasGemmEx");
}

}  // namespace gemvtune::bench
