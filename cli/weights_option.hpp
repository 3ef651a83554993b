// --weights FORMAT: the format of W, part of the problem (and so of the cache key). One parser
// and one help text so every command that takes it accepts and refuses the same texts.
#pragma once
#include <string>

#include "gemvtune/dtype.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune::cli {

inline const char* const kWeightsDefault = "dense";

inline const char* const kWeightsHelp =
    "weight format of W: dense (W in the activation dtype; that dtype's name also means dense), "
    "int8, fp8, fp8t, int4g32, int4g64 or int4g128 (default dense); see docs/weights.md";

// parse_weights_option: a format name, or the activation dtype's name meaning dense. Throws
// InvalidArgument (exit status 2) naming the text and listing the accepted names.
inline WeightFormat parse_weights(const std::string& text, DType activation) {
  try {
    return parse_weights_option(text, activation);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("bad --weights: " + std::string(e.what()));
  }
}

// Whether W of this format can be stored for shape s (check_weight_layout, the packed layout's
// one rule: K against an int4 group, sizes), checked before any GPU is touched; throws
// InvalidArgument (exit status 2) with `command` and the problem in front, e.g. "cannot tune
// 4096x4000 bf16 int4g128: int4g128 weights 4096x4000 (bf16 activations): K = 4000 is not a
// multiple of the group size 128 of int4g128". ld is W's row stride in elements (0: K).
inline void check_weights_fit(const std::string& command, const std::string& problem, WeightFormat w, DType t,
                              const Shape& s, std::int64_t ld = 0) {
  try {
    check_weight_layout(w, t, s.n, s.k, ld == 0 ? s.k : ld);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument("cannot " + command + " " + problem + ": " + e.what());
  }
}

}  // namespace gemvtune::cli
