// CompilePool: one FIFO queue served by a fixed set of threads that call
// the process-wide KernelCache (see compile_pool.hpp).
#include "tuner/compile_pool.hpp"

#include <algorithm>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "jit/kernel_cache.hpp"

namespace gemvtune {

CompilePool::CompilePool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  std::deque<std::shared_ptr<Task>> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_all();
  for (auto& t : dropped)
    t->promise.set_exception(std::make_exception_ptr(Error("compile of " + t->key + " cancelled")));
  for (auto& th : threads_) th.join();
}

CompilePool::Future CompilePool::request(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  KernelConfig code = c;
  code.split_k = 1;
  const std::string key = kernel_name(code, t, w) + "@" + arch;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = requested_.find(key); it != requested_.end()) return it->second;
  auto task = std::make_shared<Task>();
  task->key = key;
  task->config = code;
  task->dtype = t;
  task->weights = w;
  task->arch = arch;
  Future future = task->promise.get_future().share();
  requested_.emplace(key, future);
  queue_.push_back(std::move(task));
  wake_.notify_one();
  return future;
}

void CompilePool::work() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      task->promise.set_value(jit::KernelCache::instance().get(task->config, task->dtype, task->weights, task->arch));
    } catch (...) {
      task->promise.set_exception(std::current_exception());
    }
  }
}

}  // namespace gemvtune
