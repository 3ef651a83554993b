// Resource usage read from a cubin's .nv.info section: registers per thread and stack frame
// (spills need a frame); and the shared memory a block takes, the size of the kernel's
// .nv.shared section. The same facts as ptxas' -v report, but they do not depend on NVRTC
// putting that report into the program log, which it did not always do on the GPU machine.
#pragma once
#include <optional>
#include <vector>

namespace gemvtune::jit {

struct CubinResources {
  int registers = 0;          // the most any kernel of the cubin uses
  int stack_frame_bytes = 0;  // the largest frame of any kernel
  // Shared memory a block takes: the size of the kernel's .nv.shared.<kernel> section, the most
  // of any kernel; on sm_90 that is the static variables plus the 1 KB the system reserves per
  // block (ptxas' -v report leaves the reserve out).
  int shared_bytes = 0;
};

// nullopt when the bytes are not a well-formed ELF with a .nv.info section.
std::optional<CubinResources> read_cubin_resources(const std::vector<char>& cubin);

}  // namespace gemvtune::jit
