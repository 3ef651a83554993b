// CPU threads that compile a batch of kernels: NVRTC is thread-safe and KernelCache
// shares each compile, so the tuner times compiled kernels while the next ones compile.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
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

  // What a thread does with a task: KernelCache's compile, or a test's stand-in.
  using Compile = std::function<std::shared_ptr<const jit::CompiledKernel>(const KernelConfig&, DType, WeightFormat,
                                                                           const std::string& arch)>;
  explicit CompilePool(int threads, Compile compile = {});  // at least one thread
  // Drops queued compiles (their futures throw), waits for the running ones.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // The compile of c's kernel (split_k ignored) for arch, queued (first in, first out) unless
  // already requested. The future rethrows CompileError for a failed compile.
  Future request(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w = WeightFormat::dense);
  // Where request_when_idle queues a kernel among the other idle requests.
  enum class IdleOrder {
    last,   // after them: the first rounds of the jobs behind the current one
    first,  // before them: a kernel this job will likely want (the leader's balanced twins)
  };
  // The same, compiled only by a thread that finds nothing requested: a kernel the tuner will
  // want soon, compiled while the GPU times the current job's kernels instead of after. A later
  // request() of it moves it to the back of the first queue; one already queued idle moves to
  // the front of the idle queue when asked for again with IdleOrder::first.
  Future request_when_idle(const KernelConfig& c, DType t, const std::string& arch,
                           WeightFormat w = WeightFormat::dense, IdleOrder order = IdleOrder::last);

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
  // at the back of `to` (its front with at_front); its future.
  Future add_task(std::string key, const KernelConfig& code, DType t, const std::string& arch, WeightFormat w,
                  std::deque<std::shared_ptr<Task>>& to, bool at_front = false);
  // Under mutex_: the idle queue's task of `key`, or its end.
  std::deque<std::shared_ptr<Task>>::iterator find_idle(const std::string& key);

  std::deque<std::shared_ptr<Task>> queue_;
  std::deque<std::shared_ptr<Task>> idle_queue_;  // request_when_idle, taken when queue_ is empty
  std::map<std::string, Future> requested_;
  Compile compile_;
  std::vector<std::thread> threads_;  // last: they start work at construction
};

}  // namespace gemvtune
