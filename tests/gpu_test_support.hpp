// Shared by the GPU tests: skip with a clear message where there is no driver or GPU.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/search_space.hpp"
#include "jit/driver_api.hpp"
#include "jit/gemv_launch.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

// Use first in a TEST body that needs a GPU.
#define GEMVTUNE_REQUIRE_GPU()                                                   \
  do {                                                                            \
    std::string gemvtune_why;                                                     \
    if (!::gemvtune::jit::driver_available(&gemvtune_why))                        \
      GTEST_SKIP() << "needs a CUDA GPU, none here: " << gemvtune_why;            \
  } while (0)

// The whole-space suites check every config where the GPU is; for compute-sanitizer runs and
// quick looks, GEMVTUNE_TEST_CONFIG_STRIDE=n checks every n-th config (or case) only, and
// GEMVTUNE_TEST_CONFIG_FILTER=text only the configs whose name contains text (e.g. "tc_" for the
// tensor-core families; "tc_+_ring": every '+'-separated part), filtered before the stride.
inline std::size_t config_stride() {
  const char* s = std::getenv("GEMVTUNE_TEST_CONFIG_STRIDE");
  return s ? static_cast<std::size_t>(std::max(1, std::atoi(s))) : 1;
}
// GEMVTUNE_TEST_CONFIG_OFFSET=r picks the configs (or cases) i with i % stride == r % stride
// instead of those with i % stride == 0, so that runs at offsets 0 to stride - 1 (in leases too
// short for one run at stride 1) together check the whole space.
inline std::size_t config_offset(std::size_t stride) {
  const char* s = std::getenv("GEMVTUNE_TEST_CONFIG_OFFSET");
  return s ? static_cast<std::size_t>(std::max(0, std::atoi(s))) % stride : 0;
}
inline bool config_picked(std::size_t i, std::size_t stride) { return i % stride == config_offset(stride); }
inline const char* config_filter() { return std::getenv("GEMVTUNE_TEST_CONFIG_FILTER"); }
inline std::vector<gemvtune::KernelConfig> filtered(std::vector<gemvtune::KernelConfig> configs) {
  const char* f = config_filter();
  if (!f) return configs;
  std::vector<gemvtune::KernelConfig> kept;
  for (const gemvtune::KernelConfig& c : configs)
    if (gemvtune::config_text_matches(gemvtune::to_string(c), f)) kept.push_back(c);
  return kept;
}

// Compiles the distinct kernels of `configs` on every core at once, so that the checks after it
// load them: a kernel first asked for by a check compiles there, one at a time (a quantized group
// of test_gemv_quant_gpu at GEMVTUNE_TEST_CONFIG_STRIDE=11 took about a minute on the H200 when
// the configs it compiled ahead were not the ones it checked). Pass the configs the checks launch.
inline void precompile(gemvtune::jit::LoadedKernels& kernels, gemvtune::DType t,
                       const std::vector<gemvtune::KernelConfig>& configs,
                       gemvtune::WeightFormat w = gemvtune::WeightFormat::dense) {
  std::vector<std::future<void>> jobs;
  for (const gemvtune::KernelConfig& c : gemvtune::distinct_kernels(configs))
    jobs.push_back(std::async(std::launch::async, [&kernels, c, t, w] { kernels.get(c, t, w); }));
  for (auto& j : jobs) j.get();
}

// Y after c runs on `problem` with each way its split-K blocks may finish (bits[0]: in a cluster
// where jit::cluster_blocks_for chooses one; bits[1]: through the workspace), each run checked
// against float64 first; `failed` describes the first check that failed (then bits are partial).
struct BothFinishes {
  std::string failed;
  std::array<std::vector<unsigned char>, 2> bits;
};
inline BothFinishes run_both_finishes(const gemvtune::jit::LoadedGemv& kernel, const gemvtune::KernelConfig& c,
                                      gemvtune::DeviceProblem& problem, const gemvtune::jit::Stream& stream) {
  using gemvtune::jit::SplitKFinish;
  BothFinishes out;
  for (SplitKFinish finish : {SplitKFinish::cluster_where_chosen, SplitKFinish::workspace}) {
    const gemvtune::LaunchFn launch = [&](int copy, CUstream s) {
      gemvtune::jit::launch_gemv(kernel, c, problem.operands(copy), problem.workspace(), s, finish);
    };
    const gemvtune::Comparison cmp = gemvtune::verify_calls(launch, problem, stream);
    if (!cmp.ok) {
      out.failed = cmp.describe();
      return out;
    }
    const gemvtune::HostArray y = problem.read_y();
    out.bits[finish == SplitKFinish::workspace].assign(y.bytes.begin(), y.bytes.end());
  }
  return out;
}
