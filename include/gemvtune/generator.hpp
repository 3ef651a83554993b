// The generator: CUDA source for one (KernelConfig, dtype), from templates/gemv.cu.
#pragma once
#include <string>

#include "gemvtune/config.hpp"

namespace gemvtune {

// Entry point name, built from the parameters that change the code:
// "gemv_bf16_t128_r2_kw1_v16_u4_cs". split_k is a launch parameter and not part of it.
// Quantized weights: "gemv_q_int4g128_bf16_t128_r2_kw1_v16_u2_cs" (templates/gemv_q.cu), on
// tensor cores "gemv_qtc_int4g128_bf16_..." (templates/gemv_qtc.cu).
std::string kernel_name(const KernelConfig& c, DType t, WeightFormat w = WeightFormat::dense);

// Complete, header-free source; the same (config, dtype) always gives byte-identical text.
// Throws InvalidArgument when why_invalid(c) says the config cannot be built.
// w != dense: the quantized family for that weight format.
std::string generate_source(const KernelConfig& c, DType t, WeightFormat w = WeightFormat::dense);

// Hash (16 hex digits) of the templates and the generator's version: part of every cache key
// so results tuned against older kernels are never reused silently.
const std::string& template_version();

}  // namespace gemvtune
