// Runtime: resolves a (shape, dtype) to a config, loads its kernels from the kernel store or
// compiles them, and memoizes the plan so a repeated lookup is one shared-lock hash lookup.
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "gemvtune/cache.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/runtime.hpp"
#include "jit/driver_api.hpp"
#include "jit/kernel_cache.hpp"
#include "runtime/kernel_store.hpp"
#include "runtime/plan.hpp"

namespace gemvtune {

namespace {
// n and k are at most 31 bits (kMaxDim), dtype 2 bits: one word, and the batch (5 bits) with
// the weight format in a second, so the hot lookup hashes two integers instead of a string.
struct PlanKey {
  std::uint64_t shape_dtype;
  int batch;  // batch | weight format << 8
  bool operator==(const PlanKey& o) const { return shape_dtype == o.shape_dtype && batch == o.batch; }
};
struct PlanKeyHash {
  std::size_t operator()(const PlanKey& k) const {
    return std::hash<std::uint64_t>()(k.shape_dtype ^ (static_cast<std::uint64_t>(k.batch) * 0x9e3779b97f4a7c15ull));
  }
};
PlanKey plan_key(const Shape& s, DType t, int batch, WeightFormat w) {
  return {(static_cast<std::uint64_t>(s.n) << 33) | (static_cast<std::uint64_t>(s.k) << 2) |
              static_cast<std::uint64_t>(t),
          batch | static_cast<int>(w) << 8};
}
using PlanFuture = std::shared_future<std::shared_ptr<const Plan>>;
}  // namespace

struct Runtime::Impl {
  RuntimeOptions options;
  std::shared_ptr<const jit::Context> context;
  std::string cache_path;
  std::string store_dir;
  std::optional<TuningCache> cache;  // nullopt: file missing
  std::mutex cache_mutex;            // one TuningCache object is not for two threads at once

  std::optional<runtime::KernelStore> store;
  std::mutex store_mutex;  // serializes store file access and the loaded-kernel map
  std::map<std::string, std::shared_ptr<const jit::LoadedGemv>> loaded;  // by kernel name

  std::shared_mutex plans_mutex;
  std::unordered_map<PlanKey, PlanFuture, PlanKeyHash> plans;

  std::atomic<std::size_t> plans_created{0}, from_store{0}, from_nvrtc{0}, from_process{0}, write_failures{0};

  std::shared_ptr<const jit::LoadedGemv> load_kernel(const KernelConfig& c, DType t, WeightFormat w);
  std::shared_ptr<const Plan> create_plan(const Shape& s, DType t, int batch, WeightFormat w);
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& r = *impl_;
  r.options = std::move(options);
  // The device first: on a machine without a GPU this is the error that matters.
  r.context = std::make_shared<const jit::Context>(r.options.device);
  r.cache_path = r.options.cache_path.empty() ? TuningCache::default_path() : r.options.cache_path;
  std::error_code ec;
  if (!r.options.read_only || std::filesystem::exists(r.cache_path, ec))
    r.cache.emplace(r.cache_path, r.options.read_only ? CacheMode::read_only : CacheMode::read_write);
  r.store_dir = r.options.kernel_store_dir ? *r.options.kernel_store_dir : r.cache_path + ".kernels";
  if (!r.store_dir.empty()) r.store.emplace(r.store_dir);
}

Runtime::~Runtime() {
  // Unloading the runtime's modules needs a current context; the destroying thread may have
  // none. Plans still held elsewhere keep their own modules and the context alive.
  impl_->context->make_current_if_none_noexcept();
}

const GpuInfo& Runtime::gpu() const { return impl_->context->info(); }
const std::string& Runtime::cache_path() const { return impl_->cache_path; }
bool Runtime::has_cache() const { return impl_->cache.has_value(); }
const std::string& Runtime::kernel_store_dir() const { return impl_->store_dir; }

RuntimeStats Runtime::stats() const {
  RuntimeStats s;
  s.plans_created = impl_->plans_created.load();
  s.kernels_from_store = impl_->from_store.load();
  s.kernels_from_nvrtc = impl_->from_nvrtc.load();
  s.kernels_from_process = impl_->from_process.load();
  s.store_writes_failed = impl_->write_failures.load();
  std::lock_guard<std::mutex> lock(impl_->store_mutex);
  s.store_files_rejected = impl_->store ? impl_->store->files_rejected() : 0;
  return s;
}

// The store is consulted before the process-wide KernelCache: a restarted server must find its
// kernels on disk, and a test can see the difference although KernelCache outlives runtimes.
std::shared_ptr<const jit::LoadedGemv> Runtime::Impl::load_kernel(const KernelConfig& c, DType t, WeightFormat w) {
  const std::string name = kernel_name(c, t, w);
  const std::string& arch = context->info().arch;
  {
    std::lock_guard<std::mutex> lock(store_mutex);
    if (auto it = loaded.find(name); it != loaded.end()) return it->second;
    if (store) {
      if (auto bytes = store->load(name, arch)) {
        auto compiled = std::make_shared<jit::CompiledKernel>();
        compiled->name = name;
        compiled->arch = arch;
        compiled->cubin = std::move(*bytes);
        compiled->log = "loaded from " + store->path_of(name, arch);
        try {
          auto kernel = std::make_shared<const jit::LoadedGemv>(std::move(compiled), c, t, w);
          ++from_store;
          loaded.emplace(name, kernel);
          return kernel;
        } catch (const CudaError& e) {
          // The driver refused the image itself: the recompile below replaces the file. Any
          // other failure (out of memory, a context already broken) says nothing against it.
          if (e.code() != CUDA_ERROR_INVALID_IMAGE && e.code() != CUDA_ERROR_NO_BINARY_FOR_GPU &&
              e.code() != CUDA_ERROR_INVALID_PTX && e.code() != CUDA_ERROR_NOT_FOUND &&
              e.code() != CUDA_ERROR_INVALID_SOURCE && e.code() != CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
            throw;
          store->discard(name, arch);
        }
      }
    }
  }
  // Outside the lock: other plans' kernels compile in parallel; KernelCache joins duplicates.
  bool compiled_here = false;
  auto compiled = jit::KernelCache::instance().get(c, t, w, arch, &compiled_here);
  ++(compiled_here ? from_nvrtc : from_process);
  std::lock_guard<std::mutex> lock(store_mutex);
  if (auto it = loaded.find(name); it != loaded.end()) return it->second;
  if (store && !store->save(name, arch, compiled->cubin)) ++write_failures;
  auto kernel = std::make_shared<const jit::LoadedGemv>(std::move(compiled), c, t, w);
  loaded.emplace(name, kernel);
  return kernel;
}

std::shared_ptr<const Plan> Runtime::Impl::create_plan(const Shape& s, DType t, int batch, WeightFormat w) {
  check_shape(s);
  check_weight_layout(w, t, s.n, s.k, s.k);  // names a K that is not a multiple of the group
  context->make_current();  // module loads and the workspace allocation below need it
  Resolved resolved;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    resolved = resolve_config(cache ? &*cache : nullptr, context->info().id, s, t, batch, w);
  }
  auto impl = std::make_unique<Plan::Impl>();
  impl->context = context;
  impl->shape = s;
  impl->dtype = t;
  impl->weights = w;
  impl->batch = batch;
  impl->config = resolved.config;
  impl->source = resolved.source;
  impl->source_text = resolved.source_text;
  if (!options.allow_pdl && impl->config.pdl) {
    impl->config.pdl = false;
    impl->config.prefetch_l2 = false;
    impl->source_text += ", PDL disabled";
  }
  check_config(impl->config, t, s, batch, w);
  // Without split-K's workspace (allow_split_k = false): the split stays where its blocks finish
  // in a cluster, which needs no workspace (the kernel's arch decides, so after loading it).
  const auto settle_split_k = [&] {
    if (options.allow_split_k || impl->config.split_k == 1) return;
    const jit::LoadedGemv& kernel = *impl->variants.front();
    if (jit::cluster_blocks_for(impl->config, w, s, kernel.compiled().arch) == impl->config.split_k) {
      impl->split_k_in_clusters_only = true;
      impl->source_text += ", split-K in clusters only";
    } else {
      impl->config.split_k = 1;  // one pass is valid wherever the split one was
      impl->source_text += ", split-K disabled";
    }
  };
  if (is_quantized(w)) {  // packed weights are read 16 bytes at a time: one kernel, no narrower ones
    impl->variants.push_back(load_kernel(impl->config, t, w));
    settle_split_k();
    if (!impl->split_k_in_clusters_only) impl->workspace.reserve(impl->config, s);
    ++plans_created;
    return std::shared_ptr<const Plan>(new Plan(std::move(impl)));
  }
  // What every narrower width down to the element size runs (misaligned_variant), compiled now:
  // launch() must never compile when a caller's pointers or ld do not allow the widest loads.
  // A 16-byte config's is its aligned-body variant (al), one kernel for any element-aligned
  // operands; tensor cores' is their own al kernel at m tile > 1, the CUDA-core one at 1.
  const int esize = static_cast<int>(dtype_size(t));
  const auto prepare = [&](KernelConfig variant) {
    if (why_invalid_for(variant, t, s, batch)) return;  // never stricter than the config; kept as a guard
    variant.split_k = 1;
    const bool prepared = std::any_of(impl->variants.begin(), impl->variants.end(),
                                      [&](const auto& v) { return v->config() == variant; });
    if (!prepared) impl->variants.push_back(load_kernel(variant, t, w));
  };
  for (int width = impl->config.vec_bytes; width >= esize && width >= 2; width /= 2)
    prepare(misaligned_variant(impl->config, width));
  // A tensor-core al kernel reads a warp's rows (128 R apart) at one offset, so fused segments
  // that start inside its bands run the CUDA-core al kernel (Plan::launch_fused): prepared where
  // the plan's own rows are misaligned (K x element size not a multiple of 16), one more compile.
  const bool misaligned_rows = s.k * esize % 16 != 0;
  if (misaligned_rows && tensor_core_aligned_body_twin(impl->config))
    if (auto cc = cuda_core_aligned_body_twin(impl->config)) prepare(*cc);
  settle_split_k();
  if (!impl->split_k_in_clusters_only)
    for (const auto& v : impl->variants) {  // no-op for split_k == 1
      KernelConfig split = v->config();      // a CUDA-core variant of a tensor-core config has
      split.split_k = impl->config.split_k;  // more row blocks, so more tickets
      impl->workspace.reserve(split, s);
    }
  ++plans_created;
  return std::shared_ptr<const Plan>(new Plan(std::move(impl)));
}

std::shared_ptr<const Plan> Runtime::plan(const Shape& shape, DType dtype, int batch, WeightFormat weights) {
  check_shape(shape);  // first: only valid n, k fit the key's 31-bit fields
  check_batch(batch);
  const PlanKey key = plan_key(shape, dtype, batch, weights);
  Impl& r = *impl_;
  {
    std::shared_lock<std::shared_mutex> lock(r.plans_mutex);
    if (auto it = r.plans.find(key); it != r.plans.end()) {
      PlanFuture future = it->second;
      lock.unlock();
      return future.get();  // ready after the first creation: no waiting
    }
  }
  std::promise<std::shared_ptr<const Plan>> promise;
  PlanFuture future;
  {
    std::unique_lock<std::shared_mutex> lock(r.plans_mutex);
    if (auto it = r.plans.find(key); it != r.plans.end()) {
      future = it->second;
    } else {
      future = promise.get_future().share();
      r.plans.emplace(key, future);
      lock.unlock();
      try {
        promise.set_value(r.create_plan(shape, dtype, batch, weights));
      } catch (...) {
        {  // not memoized, before the waiting callers hear of it: the next call tries again
          std::unique_lock<std::shared_mutex> relock(r.plans_mutex);
          r.plans.erase(key);
        }
        promise.set_exception(std::current_exception());
      }
    }
  }
  return future.get();  // rethrows the creation error to every waiting caller
}

}  // namespace gemvtune
