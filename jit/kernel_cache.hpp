// In-process cache of compiled kernels: each (kernel, arch) is compiled by NVRTC once per
// process, even when many threads ask for it at the same moment (they wait for the one compile).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "gemvtune/config.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune::jit {

class KernelCache {
 public:
  static KernelCache& instance();  // the process-wide cache

  // The compiled kernel for config (split_k ignored: it is a launch parameter) and dtype.
  // Throws CompileError (again, for every caller) when compiling fails.
  // compiled_here (optional) is set to whether this call ran NVRTC, or found the kernel
  // compiled (or being compiled) by an earlier call in this process.
  std::shared_ptr<const CompiledKernel> get(const KernelConfig& c, DType t, const std::string& arch,
                                            bool* compiled_here = nullptr) {
    return get(c, t, WeightFormat::dense, arch, compiled_here);
  }
  // The kernel of weight format w (the quantized family unless dense).
  std::shared_ptr<const CompiledKernel> get(const KernelConfig& c, DType t, WeightFormat w,
                                            const std::string& arch, bool* compiled_here = nullptr);

  std::size_t compiles() const;  // NVRTC compiles run so far, successful or not

 private:
  KernelCache() = default;
  struct Impl;
  std::shared_ptr<Impl> impl() const;
};

}  // namespace gemvtune::jit
