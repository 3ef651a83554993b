// The kernels a model-strategy tune compiles first, known before any CUDA context exists:
// tune_on_devices starts compiling the first job's while the device's context is created and its
// cache opened, and Tuner::tune asks the same pool for the same kernels.
#pragma once
#include <optional>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/gpu.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"

namespace gemvtune {

// The model a tune ranks with on this GPU: its SMs, and the read ceiling where one is known
// (stored in the cache or measured); the model's default ceiling otherwise.
GpuModelParams tuning_model(const GpuIdentity& gpu, std::optional<double> read_ceiling_gbps);

// The job's first round under `model` (empty for a job whose space cannot be built: its tune
// reports why).
std::vector<KernelConfig> first_round_of(const TuneJob& job, const GpuModelParams& model);

}  // namespace gemvtune
