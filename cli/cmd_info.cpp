// gemvtune info: what the tuner sees of each GPU.
#include <iostream>

#include "cli/cli_common.hpp"
#include "gemvtune/generator.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune::cli {

int cmd_info(const std::vector<std::string>& args) {
  po::options_description desc("info options");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm, "gemvtune info")) return kOk;
  std::cout << "NVRTC " << jit::nvrtc_version() << ", template version " << template_version() << "\n";
  const int count = jit::device_count();  // throws NoGpu with a one-line reason
  for (int i = 0; i < count; ++i) {
    const GpuInfo g = jit::read_gpu_info(i);
    std::cout << "device " << i << ": " << g.id.name << ", " << g.id.sm_count << " SMs, compute capability "
              << g.id.cc_major << "." << g.id.cc_minor << " (" << g.arch << "), L2 " << g.l2_bytes / (1024 * 1024)
              << " MiB (" << g.l2_bytes << " B), memory " << g.global_mem_bytes / (1 << 20) << " MiB, driver API "
              << g.driver_version / 1000 << "." << (g.driver_version % 1000) / 10 << "\n";
  }
  return kOk;
}

}  // namespace gemvtune::cli
