// cuBLAS, the baseline of `gemvtune bench`: Y = X W^T (y = W x at batch 1) through
// cublasGemmEx with the same dtype and fp32 compute. libcublas is loaded with dlopen by the bench alone, so neither
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

  // Enqueues Y = X W^T on `stream`. W row-major N x K with row stride ld is, to column-major
  // cuBLAS, a K x N matrix with leading dimension ld: Y^T = A^T X^T, one GEMM with n = m.
  void launch(DType t, const jit::GemvOperands& op, CUstream stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemvtune::bench
