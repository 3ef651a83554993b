// The streaming read kernels behind measure_peak (include/gemvtune/tuner.hpp), exposed so a
// test can compile them with NVRTC without a GPU.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "jit/nvrtc_compiler.hpp"

namespace gemvtune {

struct PeakKernel {
  std::string name;       // entry point in peak_kernel_source()
  int loads_per_thread;   // 16-byte loads in flight per thread per tile
};

const std::string& peak_kernel_source();               // one program, several entry points
const std::vector<PeakKernel>& peak_kernels();         // the entry points, all timed

// The peak program compiled for arch, once a process: measure_peak's, which tune_on_devices
// starts early (start_peak_program) where a cache has no ceiling yet, so that its compile
// overlaps the context's creation and the problem's setup instead of adding to the setup (an
// NVRTC compile of four kernels, on a freshly started machine the longest part of it). Throws
// CompileError, again for every caller, when compiling fails.
std::shared_ptr<const jit::CompiledKernel> peak_program(const std::string& arch);
void start_peak_program(const std::string& arch);  // on a thread of its own; returns at once, never throws

}  // namespace gemvtune
