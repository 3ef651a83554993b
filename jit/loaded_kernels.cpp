// LoadedKernels (see loaded_kernels.hpp).
#include "jit/loaded_kernels.hpp"

#include "gemvtune/generator.hpp"
#include "jit/kernel_cache.hpp"

namespace gemvtune::jit {

std::shared_ptr<const LoadedGemv> LoadedKernels::get(const KernelConfig& c, DType t, WeightFormat w) {
  const std::string name = kernel_name(c, t, w);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loaded_.find(name);
    if (it != loaded_.end()) return it->second;
  }
  auto compiled = KernelCache::instance().get(c, t, w, ctx_.info().arch);  // may take a while
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loaded_.find(name);
  if (it != loaded_.end()) return it->second;
  ctx_.make_current();
  auto kernel = std::make_shared<const LoadedGemv>(std::move(compiled), c, t, w);
  loaded_.emplace(name, kernel);
  return kernel;
}

}  // namespace gemvtune::jit
