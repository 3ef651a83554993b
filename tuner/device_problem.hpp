// One GEMV problem on the GPU: random weights (in copies, so timing measures HBM, not L2), X
// (m rows), a poisonable Y (m rows), the split-K workspace, and the float64 reference. The one
// harness the tuner, run, bench and the sweep measure with.
#pragma once
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "gemvtune/gpu.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/gemv_launch.hpp"
#include "tuner/host_data.hpp"
#include "tuner/l2_flush.hpp"

namespace gemvtune {

// Bytes the weight copies must cover so that no call finds its weights in L2: 2.5 x the L2.
// The one rule for every measurement (tuner, run, bench, sweep).
inline std::int64_t rotation_bytes(const GpuInfo& gpu) { return gpu.l2_bytes * 5 / 2; }

// The seed of measurements that report a time (run, bench, sweep); the tuner's is in TuneOptions.
inline constexpr std::uint64_t kMeasureSeed = 12345;

// How time_calls keeps the weights out of L2 (docs/tuning.md, "Timing that measures HBM"). Either
// way, between two reads of one weight copy at least rotate_bytes of other data are read.
enum class TimingMethod {
  automatic,  // rotation where at most kMaxRotationCopies copies cover rotate_bytes, else l2_flush
  rotation,   // copies cover rotate_bytes; a graph of back-to-back calls cycles through them
  l2_flush,   // copies for about 200 MB of calls (kMinFlushCopies to kMaxFlushCopies), each read
              // once per timed run of back-to-back calls; before each run, outside its events, an
              // L2Flush pass reads rotate_bytes of scratch
};
inline constexpr std::int64_t kMaxRotationCopies = 64;  // rotation from 2.4 MB of weights on an H200
inline constexpr std::int64_t kMinFlushCopies = 64, kMaxFlushCopies = 256;

struct TimingPlan {
  TimingMethod method = TimingMethod::rotation;  // rotation or l2_flush
  std::int64_t copies = 1;                       // weight copies to allocate
  std::int64_t flush_bytes = 0;                  // read before each timed run; 0 for rotation
};
// The plan for weights of copy_bytes (with scales and zeros) per copy. rotate_bytes <= 0: one
// copy, rotation (nothing to keep out of L2), whatever `method` asks.
TimingPlan plan_timing(std::int64_t copy_bytes, std::int64_t rotate_bytes,
                       TimingMethod method = TimingMethod::automatic);
// Calls per timed run: rotation as before this plan existed (at least one pass over the copies,
// about 200 MB moved, at most max(copies, 2000)); l2_flush one per copy.
int calls_per_run(const TimingPlan& plan, double bytes_per_call);
// Timed runs of each candidate in a tune's search: 9, and 5 where one run moves 4 GB or more (a
// run of 128256x4096 bf16 is 8 calls of 1.05 GB, 1.9 ms on an H200, and such runs agree within
// a fraction of a percent; its candidates took 9.4 of the 35-pair batch tune's 16.0 s of timing,
// s159). Finalists are timed again at 9 (Tuner's pick_winner), bench always at 9.
int search_replays(const TimingPlan& plan, double bytes_per_call);

class DeviceProblem {
 public:
  // rotate_bytes: other data read between two reads of one weight copy, rotation_bytes(gpu)
  // to time from HBM (0: one copy, found in L2 when it fits); how is up to plan_timing.
  // m rows of X with row stride ldx (0: K) and of Y with row stride ldy (0: N).
  // Quantized weights (weights != dense): random packed weights with their scales and zeros
  // (random_packed_weights), ld raised to the next multiple of 16 bytes of weights and ldx to
  // 16 bytes of x where smaller, since the quantized family reads both 16 bytes at a time.
  DeviceProblem(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed,
                std::int64_t rotate_bytes, int m = 1, std::int64_t ldx = 0, std::int64_t ldy = 0,
                WeightFormat weights = WeightFormat::dense);

  // The same weights (host and device copies, drawn from the same seed) with m rows of X
  // (row stride K) and of Y: what constructing the problem at m would give, without drawing and
  // uploading the weights again (a 1 GB matrix took 1.4-1.8 s of a tune's setup on the H200
  // machine). The reference is recomputed on next use.
  void rebatch(int m);
  // Whether this problem holds the weights a problem of these arguments would draw.
  bool same_weights(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed, std::int64_t rotate_bytes,
                    WeightFormat weights) const;

  DType dtype() const { return dtype_; }
  WeightFormat weights() const { return weights_; }
  const Shape& shape() const { return inputs_.shape; }
  int batch() const { return inputs_.m; }
  int copies() const { return static_cast<int>(w_copies_.size()); }
  const TimingPlan& timing() const { return timing_; }
  // Re-makes the weight copies (and the eviction pass) for `method`; construction chose
  // automatic. A test times one problem both ways with it.
  void set_timing(TimingMethod method);
  const L2Flush* flush() const { return flush_ ? &*flush_ : nullptr; }  // l2_flush only
  jit::GemvOperands operands(int copy) const;
  jit::SplitKWorkspace& workspace() { return workspace_; }

  // Bytes one call must move at least: W once (with its scales and zeros), X once, Y once.
  double bytes_per_call() const;

  void poison_y();                    // every Y element (and padding) NaN
  HostArray read_y() const;           // m x N, rows packed
  const std::vector<double>& reference();  // computed on first use (rows kept across rebatch)

 private:
  // m rows of X (row stride ldx, 0: K) and of Y (row stride ldy, 0: N) beside the weights.
  void draw_batch(int m, std::int64_t ldx, std::int64_t ldy);

  DType dtype_;
  WeightFormat weights_;
  GemvInputs inputs_;     // w is empty for quantized weights: packed_ holds them
  PackedWeights packed_;
  std::vector<double> reference_;  // Y's first rows, m x N once reference() ran
  // timing_.copies copies of the weights (and of their scales and zeros).
  std::vector<jit::DeviceBuffer> w_copies_, scale_copies_, zero_copies_;
  std::int64_t rotate_bytes_ = 0;
  std::int64_t requested_ld_ = 0;  // the constructor's ld (quantized weights raise inputs_.ld)
  std::uint64_t seed_ = 0;
  TimingPlan timing_;
  std::optional<L2Flush> flush_;
  std::int64_t ldy_;
  jit::DeviceBuffer x_, y_;
  jit::SplitKWorkspace workspace_;
};

// The problem's search space as its operands allow it: a config whose loads the pointers, ld or
// ldx do not allow runs with the widest width they do (as `run` and the runtime do), and
// configs that thereby coincide are listed once. Throws Error when nothing can run.
std::vector<KernelConfig> runnable_space(const DeviceProblem& problem);
// The same for the problem DeviceProblem(t, s, s.k, ..., m, 0, 0, weights) would make (fresh
// allocations, rows of K elements), without making it.
std::vector<KernelConfig> runnable_space(DType t, const Shape& s, int m, WeightFormat weights);
// DeviceProblem::bytes_per_call of such a problem: W once (with its scales and zeros), X, Y.
double problem_bytes(DType t, const Shape& s, int m, WeightFormat weights);

// Median time of one call over `replays` timed runs, after a warm-up run. A run is
// calls_per_run(p.timing(), ...) launches back to back, rotating over the copies: replays of a
// graph of them (graph) or launches from the host (eager), with CUDA events around the launches
// only. With l2_flush, p.flush() runs before each run's start event.
struct CallTiming {
  double us_per_call = 0;
  double gbps = 0;
};
enum class LaunchMode { graph, eager };
using LaunchFn = std::function<void(int copy, CUstream)>;
CallTiming time_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream,
                      LaunchMode mode, int replays = 9);
// `launch` as a decode step runs it, right after the call before it: a graph of [before, launch]
// pairs (both problems' weights rotating as in time_calls; `before` takes the copy index and
// picks its own copy), less before_us, the call before's own back-to-back time. The GB/s are
// p's bytes over that difference.
CallTiming time_calls_after(const LaunchFn& before, double before_us, const LaunchFn& launch, DeviceProblem& p,
                            const jit::Stream& stream, int replays = 9);

// Launches once on copy 0 into a poisoned y and compares with the float64 reference.
Comparison verify_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream);

}  // namespace gemvtune
