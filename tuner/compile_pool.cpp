// CompilePool: a FIFO queue, and one for when it is empty, served by a fixed set of threads that
// call the process-wide KernelCache (see compile_pool.hpp).
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
    for (auto& t : idle_queue_) dropped.push_back(std::move(t));
    idle_queue_.clear();
  }
  wake_.notify_all();
  for (auto& t : dropped)
    t->promise.set_exception(std::make_exception_ptr(Error("compile of " + t->key + " cancelled")));
  for (auto& th : threads_) th.join();
}

std::shared_ptr<CompilePool::Task> CompilePool::make_task(const KernelConfig& c, DType t, const std::string& arch,
                                                          WeightFormat w, Future& future) {
  KernelConfig code = c;
  code.split_k = 1;
  auto task = std::make_shared<Task>();
  task->key = kernel_name(code, t, w) + "@" + arch;
  if (auto it = requested_.find(task->key); it != requested_.end()) {
    future = it->second;
    // Requested before: still waiting for an idle thread? Then it is wanted now.
    const auto idle = std::find_if(idle_queue_.begin(), idle_queue_.end(), [&](const auto& x) { return x->key == task->key; });
    return idle == idle_queue_.end() ? nullptr : *idle;
  }
  task->config = code;
  task->dtype = t;
  task->weights = w;
  task->arch = arch;
  future = task->promise.get_future().share();
  requested_.emplace(task->key, future);
  return task;
}

CompilePool::Future CompilePool::request(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  std::lock_guard<std::mutex> lock(mutex_);
  Future future;
  if (auto task = make_task(c, t, arch, w, future)) {
    idle_queue_.erase(std::remove(idle_queue_.begin(), idle_queue_.end(), task), idle_queue_.end());
    queue_.push_back(std::move(task));
    wake_.notify_one();
  }
  return future;
}

void CompilePool::request_when_idle(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  std::lock_guard<std::mutex> lock(mutex_);
  Future future;
  auto task = make_task(c, t, arch, w, future);
  if (task && std::find(idle_queue_.begin(), idle_queue_.end(), task) == idle_queue_.end()) {  // a new one
    idle_queue_.push_back(std::move(task));
    wake_.notify_one();
  }
}

void CompilePool::work() {
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || !idle_queue_.empty(); });
      if (stopping_) return;
      auto& from = queue_.empty() ? idle_queue_ : queue_;
      task = std::move(from.front());
      from.pop_front();
    }
    try {
      task->promise.set_value(jit::KernelCache::instance().get(task->config, task->dtype, task->weights, task->arch));
    } catch (...) {
      task->promise.set_exception(std::current_exception());
    }
  }
}

}  // namespace gemvtune
