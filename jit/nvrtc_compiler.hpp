// NVRTC: CUDA source to cubin for one architecture, with ptxas' resource report.
#pragma once
#include <string>
#include <vector>

namespace gemvtune::jit {

struct CompiledKernel {
  std::string name;          // entry point
  std::string arch;          // "sm_90"
  std::vector<char> cubin;
  std::string log;           // NVRTC log, including ptxas' -v report
  int registers = -1;        // per thread (ptxas' report, else the cubin's .nv.info)
  int spill_store_bytes = 0; // from ptxas' report only (0 when the log lacks it)
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0; // ptxas' report or the cubin, the larger: spills need a frame
  int shared_bytes = 0;      // shared memory a block takes (static + the system's reserve), from the cubin

  // Whether ptxas spilled registers (a spill needs a stack frame, which the cubin shows too).
  bool spills() const { return spill_store_bytes || spill_load_bytes || stack_frame_bytes; }
};

// Compiles `source` for `arch` ("sm_90"; a real architecture, so NVRTC emits a cubin).
// Throws CompileError carrying the log and options on failure. Thread-safe (NVRTC is).
CompiledKernel compile_kernel(const std::string& source, const std::string& kernel_name,
                              const std::string& arch);

// "13.0": the NVRTC library this process loaded.
std::string nvrtc_version();

}  // namespace gemvtune::jit
