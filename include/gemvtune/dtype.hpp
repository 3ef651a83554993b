// Element types of W, x and y. Accumulation is always fp32.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace gemvtune {

enum class DType { f32, f16, bf16 };

// "fp32", "fp16", "bf16": the names used in the CLI, the cache and kernel names.
std::string_view to_string(DType t);
// Accepts "fp32"/"f32"/"float32", "fp16"/"f16"/"float16"/"half", "bf16"/"bfloat16".
// Throws InvalidArgument naming the text for anything else.
DType parse_dtype(std::string_view text);
std::size_t dtype_size(DType t);

inline constexpr DType kAllDTypes[] = {DType::f32, DType::f16, DType::bf16};

}  // namespace gemvtune
