// The generator: CUDA source for one (KernelConfig, dtype), from templates/gemv.cu.
#pragma once
#include <string>

#include "gemvtune/config.hpp"

namespace gemvtune {

// Entry point name, built from the parameters that change the code:
// "gemv_bf16_t128_r2_kw1_v16_u4_cs". split_k is a launch parameter and not part of it.
std::string kernel_name(const KernelConfig& c, DType t);

// Complete, header-free source; the same (config, dtype) always gives byte-identical text.
// Throws InvalidArgument when why_invalid(c) says the config cannot be built.
std::string generate_source(const KernelConfig& c, DType t);

// Hash (16 hex digits) of the templates and the generator's version: part of every cache key
// so results tuned against older kernels are never reused silently.
const std::string& template_version();

}  // namespace gemvtune
