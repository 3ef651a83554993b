// KernelCache: a map from kernel identity to a shared_future, so concurrent requests for one
// kernel share a single NVRTC compile.
#include "jit/kernel_cache.hpp"

#include <atomic>
#include <future>
#include <mutex>
#include <unordered_map>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::jit {

struct KernelCache::Impl {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<const CompiledKernel>>> kernels;
  std::atomic<std::size_t> compiles{0};
};

std::shared_ptr<KernelCache::Impl> KernelCache::impl() const {
  static const auto instance = std::make_shared<Impl>();
  return instance;
}

KernelCache& KernelCache::instance() {
  static KernelCache cache;
  return cache;
}

std::shared_ptr<const CompiledKernel> KernelCache::get(const KernelConfig& c, DType t, WeightFormat w,
                                                       const std::string& arch, bool* compiled_here) {
  const std::string name = kernel_name(c, t, w);
  const std::string key = name + "@" + arch;
  auto state = impl();
  std::promise<std::shared_ptr<const CompiledKernel>> promise;
  std::shared_future<std::shared_ptr<const CompiledKernel>> future;
  bool compile_here = false;
  {
    std::lock_guard<std::mutex> lock(state->mutex);
    auto it = state->kernels.find(key);
    if (it != state->kernels.end()) {
      future = it->second;
    } else {
      future = promise.get_future().share();
      state->kernels.emplace(key, future);
      compile_here = true;
    }
  }
  if (compiled_here) *compiled_here = compile_here;
  if (compile_here) {  // outside the lock: other kernels compile in parallel
    ++state->compiles;
    try {
      promise.set_value(std::make_shared<const CompiledKernel>(
          compile_kernel(generate_source(c, t, w), name, arch)));
    } catch (const CompileError&) {
      promise.set_exception(std::current_exception());  // the same source fails the same way: kept
    } catch (...) {
      // Anything else (out of memory) may not happen again: the callers waiting now get it, a
      // later caller compiles afresh (a plan that failed is retried on the next call).
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->kernels.erase(key);
      }
      promise.set_exception(std::current_exception());
    }
  }
  return future.get();  // rethrows the compile error for every caller
}

std::size_t KernelCache::compiles() const { return impl()->compiles.load(); }

}  // namespace gemvtune::jit
