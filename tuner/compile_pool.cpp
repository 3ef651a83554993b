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

CompilePool::CompilePool(int threads, Compile compile) : compile_(std::move(compile)) {
  if (!compile_)
    compile_ = [](const KernelConfig& c, DType t, WeightFormat w, const std::string& arch) {
      return jit::KernelCache::instance().get(c, t, w, arch);
    };
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
                                          WeightFormat w, std::deque<std::shared_ptr<Task>>& to, bool at_front) {
  auto task = std::make_shared<Task>();
  task->key = std::move(key);
  task->config = code;
  task->dtype = t;
  task->weights = w;
  task->arch = arch;
  Future future = task->promise.get_future().share();
  requested_.emplace(task->key, future);
  if (at_front) to.push_front(std::move(task));
  else to.push_back(std::move(task));
  wake_.notify_one();
  return future;
}

std::deque<std::shared_ptr<CompilePool::Task>>::iterator CompilePool::find_idle(const std::string& key) {
  return std::find_if(idle_queue_.begin(), idle_queue_.end(), [&](const auto& x) { return x->key == key; });
}

CompilePool::Future CompilePool::request(const KernelConfig& c, DType t, const std::string& arch, WeightFormat w) {
  auto [key, code] = kernel_key(c, t, arch, w);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = requested_.find(key);
  if (it == requested_.end()) return add_task(std::move(key), code, t, arch, w, queue_);
  // Requested before: still waiting for an idle thread? Then it is wanted now.
  const auto idle = find_idle(key);
  if (idle != idle_queue_.end()) {
    queue_.push_back(std::move(*idle));
    idle_queue_.erase(idle);
  }
  return it->second;
}

CompilePool::Future CompilePool::request_when_idle(const KernelConfig& c, DType t, const std::string& arch,
                                                   WeightFormat w, IdleOrder order) {
  auto [key, code] = kernel_key(c, t, arch, w);
  const bool first = order == IdleOrder::first;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = requested_.find(key);
  if (it == requested_.end()) return add_task(std::move(key), code, t, arch, w, idle_queue_, first);
  const auto idle = find_idle(key);
  if (first && idle != idle_queue_.end()) {
    std::shared_ptr<Task> task = std::move(*idle);
    idle_queue_.erase(idle);
    idle_queue_.push_front(std::move(task));
  }
  return it->second;
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
      task->promise.set_value(compile_(task->config, task->dtype, task->weights, task->arch));
    } catch (const CompileError&) {
      task->promise.set_exception(std::current_exception());  // deterministic: every later job's answer too
    } catch (...) {
      // Anything else (out of memory) may not happen again: the jobs waiting now get it, a later
      // request compiles afresh rather than fail the config in every job that follows.
      {
        std::lock_guard<std::mutex> lock(mutex_);
        requested_.erase(task->key);
      }
      task->promise.set_exception(std::current_exception());
    }
  }
}

}  // namespace gemvtune
