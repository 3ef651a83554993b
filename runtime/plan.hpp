// Plan::Impl: the loaded kernels (one per prepared vector width) and split-K workspace of one
// (shape, dtype), shared by runtime.cpp, which builds it, and plan.cpp, which launches it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "gemvtune/runtime.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/gemv_launch.hpp"

namespace gemvtune {

struct Plan::Impl {
  // Declared first so it is destroyed last: modules and the workspace are released while the
  // primary context is still retained.
  std::shared_ptr<const jit::Context> context;
  Shape shape;
  DType dtype = DType::bf16;
  WeightFormat weights = WeightFormat::dense;
  int batch = 1;
  KernelConfig config;  // as resolved (split_k included)
  ConfigSource source = ConfigSource::model_default;
  std::string source_text;
  // config's kernel first, then misaligned_variant(config, width) for each narrower width, once
  // each: a 16-byte config's aligned-body variant (al), else the narrower widths. A tensor-core
  // config's are CUDA-core kernels of the same m tile (mma needs aligned 16-byte loads).
  std::vector<std::shared_ptr<const jit::LoadedGemv>> variants;
  jit::SplitKWorkspace workspace;  // reserved at creation when config.split_k > 1, unless:
  // RuntimeOptions::allow_split_k = false kept config's split-K because it finishes in a
  // thread block cluster: no workspace, and a launch outside the cluster rules runs one pass.
  bool split_k_in_clusters_only = false;
};

// The config a launch of the prepared kernel runs on shape s (the stacked shape of a fused
// launch): the kernel's, with the plan's split-K, or one pass where the plan keeps split-K
// in clusters only and cluster_blocks_for does not give this launch one.
KernelConfig launch_config(const Plan::Impl& p, const jit::LoadedGemv& kernel, const Shape& s);

}  // namespace gemvtune
