// --weights FORMAT: the format of W, part of the problem (and so of the cache key). One parser
// and one help text so every command that takes it accepts and refuses the same texts.
#pragma once
#include <string>

#include "gemvtune/dtype.hpp"
#include "gemvtune/error.hpp"
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

}  // namespace gemvtune::cli
