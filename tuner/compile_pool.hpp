// CPU threads that compile a batch of kernels: NVRTC is thread-safe and KernelCache
// shares each compile, so the tuner times compiled kernels while the next ones compile.
#pragma once
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gemvtune/config.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune {

class CompilePool {
 public:
  using Future = std::shared_future<std::shared_ptr<const jit::CompiledKernel>>;

  explicit CompilePool(int threads);  // at least one thread
  // Drops queued compiles (their futures throw), waits for the running ones.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // The compile of c's kernel (split_k ignored) for arch, queued (first in, first out) unless
  // already requested. The future rethrows CompileError for a failed compile.
  Future request(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w = WeightFormat::dense);

 private:
  struct Task {
    std::string key;
    KernelConfig config;
    DType dtype;
    WeightFormat weights;
    std::string arch;
    std::promise<std::shared_ptr<const jit::CompiledKernel>> promise;
  };
  void work();

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::deque<std::shared_ptr<Task>> queue_;
  std::map<std::string, Future> requested_;
  std::vector<std::thread> threads_;
};

}  // namespace gemvtune
