// What identifies a GPU for tuning results: a config tuned on one GPU model is never used on
// another without saying so. Read from the device by jit/device.cpp.
#pragma once
#include <cstdint>
#include <string>

namespace gemvtune {

struct GpuIdentity {
  std::string name;      // "NVIDIA H200"
  int sm_count = 0;      // 132
  int cc_major = 0;      // 9
  int cc_minor = 0;      // 0

  // "NVIDIA H200/132sm/cc9.0": the GPU part of every cache key.
  std::string key() const {
    return name + "/" + std::to_string(sm_count) + "sm/cc" + std::to_string(cc_major) + "." +
           std::to_string(cc_minor);
  }
  bool operator==(const GpuIdentity& o) const {
    return name == o.name && sm_count == o.sm_count && cc_major == o.cc_major &&
           cc_minor == o.cc_minor;
  }
};

// Everything else read off the device that the tuner and the CLI need.
struct GpuInfo {
  GpuIdentity id;
  std::int64_t l2_bytes = 0;
  std::int64_t global_mem_bytes = 0;
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  std::string arch;        // "sm_90"
};

}  // namespace gemvtune
