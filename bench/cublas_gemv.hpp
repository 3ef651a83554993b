// cuBLAS at batch 1, the baseline of `gemvtune bench`: y = W x through cublasGemmEx with the
// same dtype and fp32 compute. libcublas is loaded with dlopen by the bench alone, so neither
// the library nor the CLI needs cuBLAS to start.
#pragma once
#include <cuda.h>

#include <memory>

#include "gemvtune/dtype.hpp"
#include "jit/gemv_launch.hpp"

namespace gemvtune::bench {

class CublasGemv {
 public:
  // Creates a handle on the current context with its own workspace (so graph capture needs
  // no allocation). Throws Error naming what is missing when libcublas cannot be loaded.
  CublasGemv();
  ~CublasGemv();
  CublasGemv(const CublasGemv&) = delete;
  CublasGemv& operator=(const CublasGemv&) = delete;

  // Enqueues y = W x on `stream`. W row-major N x K with row stride ld is, to column-major
  // cuBLAS, a K x N matrix with leading dimension ld: y = A^T x, one GEMM with n = 1.
  void launch(DType t, const jit::GemvOperands& op, CUstream stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemvtune::bench
