// An L2-evicting pass for timing small problems (docs/tuning.md, "Timing that measures HBM"):
// one kernel reads a scratch buffer larger than L2, so every line L2 held before is replaced by
// a clean scratch line and the next GEMV finds none of its weights there.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "jit/cuda_handles.hpp"

namespace gemvtune {

class L2Flush {
 public:
  // Allocates `bytes` of scratch (rounded up to 16) and loads the kernel into the current
  // context. Throws CudaError.
  explicit L2Flush(std::int64_t bytes);

  // Enqueues one pass over the scratch on s: plain (L2-allocating) 16-byte loads, no stores.
  // Reads rather than writes, so L2 is left holding clean lines and the timed calls that follow
  // pay no write-back of the pass's data.
  void enqueue(CUstream s) const;
  std::int64_t bytes() const { return static_cast<std::int64_t>(scratch_.bytes()); }

 private:
  jit::Module module_;
  CUfunction fn_ = nullptr;
  jit::DeviceBuffer scratch_, sink_;
};

// The kernel's PTX (sm_70 and later; the driver compiles it for the device, so no NVRTC and no
// architecture are needed). Entry point "gemvtune_l2_flush"(src, words, sink).
const char* l2_flush_ptx();

}  // namespace gemvtune
