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
  // The same, compiled only by a thread that finds nothing requested: a kernel the tuner will
  // want soon (the next job's first round), compiled while the GPU times the current job's
  // kernels instead of after. A later request() of it moves it to the back of the first queue.
  void request_when_idle(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w = WeightFormat::dense);

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
  // Under mutex_: a task for a kernel not requested before, recorded in requested_ and queued
  // at the back of `to`; its future.
  Future add_task(std::string key, const KernelConfig& code, DType t, const std::string& arch, WeightFormat w,
                  std::deque<std::shared_ptr<Task>>& to);

  std::deque<std::shared_ptr<Task>> queue_;
  std::deque<std::shared_ptr<Task>> idle_queue_;  // request_when_idle, taken when queue_ is empty
  std::map<std::string, Future> requested_;
  std::vector<std::thread> threads_;
};

}  // namespace gemvtune
