// The streaming read kernels behind measure_peak (include/gemvtune/tuner.hpp), exposed so a
// test can compile them with NVRTC without a GPU.
#pragma once
#include <string>
#include <vector>

namespace gemvtune {

struct PeakKernel {
  std::string name;       // entry point in peak_kernel_source()
  int loads_per_thread;   // 16-byte loads in flight per thread per tile
};

const std::string& peak_kernel_source();               // one program, several entry points
const std::vector<PeakKernel>& peak_kernels();         // the entry points, all timed

}  // namespace gemvtune
