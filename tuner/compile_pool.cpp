// CompilePool: a FIFO queue, and one for when it is empty, served by a fixed set of threads that
// call the process-wide KernelCache (see compile_pool.hpp).
#include "tuner/compile_pool.hpp"

#include <algorithm>
#include <utility>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "jit/kernel_cache.hpp"

namespace gemvtune {

namespace {
// The pool's key of c's kernel, and its config: split_k is a launch parameter, so every split
// shares one compile.
std::pair<std::string, KernelConfig> kernel_key(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  KernelConfig code = c;
  code.split_k = 1;
  return {kernel_name(code, t, w) + "@" + arch, code};
}
}  // namespace

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

CompilePool::Future CompilePool::add_task(std::string key, const KernelConfig& code, DType t, const std::string& arch,
                                          WeightFormat w, std::deque<std::shared_ptr<Task>>& to) {
  auto task = std::make_shared<Task>();
  task->key = std::move(key);
  task->config = code;
  task->dtype = t;
  task->weights = w;
  task->arch = arch;
  Future future = task->promise.get_future().share();
  requested_.emplace(task->key, future);
  to.push_back(std::move(task));
  wake_.notify_one();
  return future;
}

CompilePool::Future CompilePool::request(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  auto [key, code] = kernel_key(c, t, arch, w);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = requested_.find(key);
  if (it == requested_.end()) return add_task(std::move(key), code, t, arch, w, queue_);
  // Requested before: still waiting for an idle thread? Then it is wanted now.
  const auto idle = std::find_if(idle_queue_.begin(), idle_queue_.end(), [&](const auto& x) { return x->key == key; });
  if (idle != idle_queue_.end()) {
    queue_.push_back(std::move(*idle));
    idle_queue_.erase(idle);
  }
  return it->second;
}

void CompilePool::request_when_idle(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  auto [key, code] = kernel_key(c, t, arch, w);
  std::lock_guard<std::mutex> lock(mutex_);
  if (requested_.count(key) == 0) add_task(std::move(key), code, t, arch, w, idle_queue_);
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
