// One GEMV problem on the GPU: random weights (rotated through copies so timing measures HBM,
// not L2), x, a poisonable y, the split-K workspace, and the float64 reference.
#pragma once
#include <functional>
#include <random>
#include <vector>

#include "jit/cuda_handles.hpp"
#include "jit/gemv_launch.hpp"
#include "tuner/host_data.hpp"

namespace gemvtune {

class DeviceProblem {
 public:
  // rotate_bytes: the weight copies together cover at least this many bytes (0: one copy).
  DeviceProblem(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed,
                std::int64_t rotate_bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return inputs_.shape; }
  int copies() const { return static_cast<int>(weights_.size()); }
  jit::GemvOperands operands(int copy) const;
  jit::SplitKWorkspace& workspace() { return workspace_; }

  // Bytes one call must move at least: W once, x once, y once.
  double bytes_per_call() const;

  void poison_y();                    // every y element NaN
  HostArray read_y() const;
  const std::vector<double>& reference();  // computed on first use

 private:
  DType dtype_;
  GemvInputs inputs_;
  std::vector<double> reference_;
  std::vector<jit::DeviceBuffer> weights_;
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
