// Kernels loaded into one context, by name: compiled through the process-wide KernelCache and
// loaded once per context, shared by every caller (thread-safe).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "jit/cuda_handles.hpp"
#include "jit/gemv_launch.hpp"

namespace gemvtune::jit {

class LoadedKernels {
 public:
  explicit LoadedKernels(const Context& ctx) : ctx_(ctx) {}
  // Compiles (once per process) and loads (once per context) the kernel of config c.
  std::shared_ptr<const LoadedGemv> get(const KernelConfig& c, DType t, WeightFormat w = WeightFormat::dense);
  const Context& context() const { return ctx_; }

 private:
  const Context& ctx_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const LoadedGemv>> loaded_;
};

}  // namespace gemvtune::jit
