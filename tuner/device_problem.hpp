// One GEMV problem on the GPU: random weights (rotated through copies so timing measures HBM,
// not L2), X (m rows), a poisonable Y (m rows), the split-K workspace, and the float64
// reference. The one harness the tuner, run, bench and the sweep measure with.
#pragma once
#include <functional>
#include <random>
#include <vector>

#include "gemvtune/gpu.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/gemv_launch.hpp"
#include "tuner/host_data.hpp"

namespace gemvtune {

// Bytes the weight copies must cover so that no call finds its weights in L2: 2.5 x the L2.
// The one rule for every measurement (tuner, run, bench, sweep).
inline std::int64_t rotation_bytes(const GpuInfo& gpu) { return gpu.l2_bytes * 5 / 2; }

// The seed of measurements that report a time (run, bench, sweep); the tuner's is in TuneOptions.
inline constexpr std::uint64_t kMeasureSeed = 12345;

class DeviceProblem {
 public:
  // rotate_bytes: the weight copies together cover at least this many bytes (0: one copy).
  // m rows of X with row stride ldx (0: K) and of Y with row stride ldy (0: N).
  DeviceProblem(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed,
                std::int64_t rotate_bytes, int m = 1, std::int64_t ldx = 0, std::int64_t ldy = 0);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return inputs_.shape; }
  int batch() const { return inputs_.m; }
  int copies() const { return static_cast<int>(weights_.size()); }
  jit::GemvOperands operands(int copy) const;
  jit::SplitKWorkspace& workspace() { return workspace_; }

  // Bytes one call must move at least: W once, X once, Y once.
  double bytes_per_call() const;

  void poison_y();                    // every Y element (and padding) NaN
  HostArray read_y() const;           // m x N, rows packed
  const std::vector<double>& reference();  // computed on first use

 private:
  DType dtype_;
  GemvInputs inputs_;
  std::vector<double> reference_;
  std::vector<jit::DeviceBuffer> weights_;
  std::int64_t ldy_;
  jit::DeviceBuffer x_, y_;
  jit::SplitKWorkspace workspace_;
};

// Median time of one call, from CUDA events around replays of a graph of `calls` launches
// back to back (graph) or around `calls` launches from the host (eager), after warm-up.
struct CallTiming {
  double us_per_call = 0;
  double gbps = 0;
};
enum class LaunchMode { graph, eager };
using LaunchFn = std::function<void(int copy, CUstream)>;
CallTiming time_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream,
                      LaunchMode mode, int replays = 9);

// Launches once on copy 0 into a poisoned y and compares with the float64 reference.
Comparison verify_calls(const LaunchFn& launch, DeviceProblem& p, const jit::Stream& stream);

}  // namespace gemvtune
