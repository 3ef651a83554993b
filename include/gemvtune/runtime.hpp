// The server-embedding runtime: given a shape and dtype, the tuned (or nearest, or default)
// config, compiled once and kept, launched with no allocation or synchronization so a server
// can call it per token and capture it into CUDA graphs. See docs/runtime.md.
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/dtype.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/gpu.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/resolve.hpp"

namespace gemvtune {

struct RuntimeOptions {
  // Tuning cache file; empty: TuningCache::default_path(). A missing file is fine: every plan
  // then uses the analytic model's default config.
  std::string cache_path;
  int device = 0;  // CUDA device ordinal
  // Opens the cache read-only (never writes it, works on a write-protected deployment).
  bool read_only = true;
  // Directory of compiled kernels kept across restarts. nullopt: "<cache path>.kernels";
  // an empty string disables the store (every process then compiles with NVRTC).
  std::optional<std::string> kernel_store_dir;
  // Split-K plans (config().split_k > 1) carry one workspace whose tickets make two launches
  // of the same plan that overlap in time on different streams race. false makes every plan
  // safe on any number of concurrent streams: a plan keeps its split-K only where the splits
  // finish in a thread block cluster (sm_90, dense weights: jit::cluster_blocks_for), which
  // adds them in shared memory and never touches a workspace, and a launch the cluster rules
  // do not cover (the CUDA-core kernel a tensor-core plan runs for misaligned operands, whose
  // grid is larger) runs as one pass; elsewhere the plan is one pass (slower for few rows and
  // long K).
  bool allow_split_k = true;
  // Programmatic dependent launch as tuned (Hopper): a plan whose config has it lets its
  // kernel start while the previous kernel in the stream drains, loading weights before it
  // waits for that kernel's output. false launches every plan without it.
  bool allow_pdl = true;
};

// The operands of one launch, Y = X W^T (y = W x at batch 1), all device pointers of the plan's
// dtype, row-major, strides in elements: W is N x K (row stride ld, 0 meaning K), X is m x K
// (ldx, 0 meaning K), Y is m x N (ldy, 0 meaning N). m = 0 means the plan's batch; any m from
// 1 up to the plan's batch runs with the same kernel.
struct Operands {
  CUdeviceptr w = 0, x = 0, y = 0;
  std::int64_t ld = 0, ldx = 0, ldy = 0;
  int m = 0;
  // Quantized plans: w holds the packed weights (ld counts weights), scales and zeros their
  // factors (zeros for int4 only: int8 and fp8 refuse one), as docs/weights.md lays them out.
  // Dense plans: both 0.
  CUdeviceptr scales = 0, zeros = 0;
};

// One GEMV of a fused launch (see Plan::launch_fused): its weights (rows x K, row stride ld
// elements, 0 meaning K) and output.
struct FusedSegment {
  CUdeviceptr w = 0, y = 0;
  std::int64_t rows = 0;
  std::int64_t ld = 0;
  CUdeviceptr scales = 0, zeros = 0;  // quantized plans (see Operands)
};

// Counters of one Runtime (monotonic).
struct RuntimeStats {
  std::size_t plans_created = 0;        // distinct (batch, shape, dtype) plans built
  std::size_t kernels_from_store = 0;   // kernels loaded from kernel_store_dir
  std::size_t kernels_from_nvrtc = 0;   // kernels this runtime had NVRTC compile
  std::size_t kernels_from_process = 0; // kernels already compiled in this process (another
                                        // runtime or plan asked first), neither store nor NVRTC
  std::size_t store_files_rejected = 0; // truncated/corrupt store files removed and recompiled
  std::size_t store_writes_failed = 0;  // cubins that could not be written to the store
};

// A ready-to-launch Y = X W^T for one (batch M, shape, dtype) on the runtime's device. Immutable after
// creation; launch() may be called from any thread.
//
// Concurrency rule for split-K: when config().split_k > 1 the plan owns one split-K
// workspace, so launches of that plan must not overlap in time on different streams (launches
// on one stream, or streams ordered by events, are fine, and so is replaying a graph that
// captured it on one stream at a time). stream_concurrent() says whether the plan is free of
// this rule; RuntimeOptions::allow_split_k = false makes every plan free of it (split-K then
// only where it finishes in a thread block cluster, without the workspace).
class Plan {
 public:
  ~Plan();
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const KernelConfig& config() const;
  ConfigSource source() const;             // exact / nearest / model_default
  const std::string& source_text() const;  // "exact", "nearest 4096x4096", "default (...)"
  const Shape& shape() const;
  DType dtype() const;
  WeightFormat weights() const;  // dense, or the quantized format of W
  int batch() const;  // the most rows of X one launch takes
  bool stream_concurrent() const;
  // Vector widths (bytes) of the kernels compiled for this plan, config()'s first, so misaligned
  // pointers or odd ld never compile: a 16-byte config adds its aligned-body variant (al, 16
  // again: 16-byte loads for any element-aligned operands), a narrower one every narrower width
  // down to the element size (see misaligned_variant in config.hpp).
  std::vector<int> prepared_vec_bytes() const;

  // Enqueues y = W x on `stream`. w, x, y: device pointers of the plan's dtype; ld: row stride
  // of W in elements (0 means K). Uses the config's kernel when w, x and ld allow its loads,
  // else the prepared variant for the widest width they allow. No allocation, no
  // synchronization, no host-device copy: can be captured into a CUDA graph. The calling thread
  // needs the runtime's device context current if it has any context current; when none is
  // current the plan makes its own (the primary) current.
  // Throws InvalidArgument (null/misaligned pointers, ld < K) before launching anything,
  // CudaError when the driver refuses the launch.
  void launch(CUdeviceptr w, CUdeviceptr x, CUdeviceptr y, CUstream stream,
              std::int64_t ld = 0) const;
  // The same for m rows of X and Y with their own row strides (see Operands). Throws
  // InvalidArgument also for m outside 1..batch() and strides below K (X) or N (Y).
  void launch(const Operands& op, CUstream stream) const;

  // Fused projections: one launch computes `count` (1..kMaxFusedSegments) GEMVs that share x,
  // each with its own weights and output (Q, K and V; gate and up). Their rows must add up to
  // this plan's N: plan the stacked shape (e.g. 6144x4096 for Llama-3.1-8B's q, k and v), so
  // the fused launch is tuned and cached as one entry. Same guarantees as launch().
  void launch_fused(const FusedSegment* segments, int count, CUdeviceptr x, CUstream stream) const;

  struct Impl;  // runtime/plan.hpp

 private:
  friend class Runtime;
  explicit Plan(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One device's runtime: holds its primary context (retained), the tuning cache and the
// plans. Thread-safe. Plans stay valid after the Runtime is destroyed (they keep the context).
// The runtime and its plans retain the device's primary context (the one the CUDA runtime API
// uses too) while any of them lives. Streams and buffers a caller makes in that context need
// the caller's own hold on it (the CUDA runtime API keeps one; a driver-API caller retains it),
// or destroying the last plan destroys the context underneath them.
class Runtime {
 public:
  // Throws NoGpu (no driver/GPU), CudaError, CacheError (cache file present but unusable),
  // InvalidArgument (bad device ordinal).
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The plan of (batch M in 1..kMaxBatch, shape, dtype): resolved from the cache, loaded from the kernel store or
  // JIT-compiled on first use (also the narrower vector widths and the split-K workspace),
  // then memoized; a repeated call is one shared-lock map lookup. Threads asking for the same
  // new key at once wait for one creation. Creating a plan makes the runtime's context current
  // on the calling thread. Throws InvalidArgument (bad shape), CompileError (with the NVRTC log), CudaError;
  // a failed creation is not memoized (the next call tries again).
  // weights: the format of W (quantized plans take packed weights with scales and zeros; K a
  // multiple of an int4 format's group).
  std::shared_ptr<const Plan> plan(const Shape& shape, DType dtype, int batch = 1,
                                   WeightFormat weights = WeightFormat::dense);

  const GpuInfo& gpu() const;
  const std::string& cache_path() const;
  bool has_cache() const;                       // false when the cache file was missing
  const std::string& kernel_store_dir() const;  // empty when disabled
  RuntimeStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemvtune
