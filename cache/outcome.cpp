// Names of candidate outcomes: the text stored in the cache and shown by the CLI.
#include <string>

#include "gemvtune/cache.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::passed: return "passed";
    case Outcome::incorrect: return "incorrect";
    case Outcome::compile_failed: return "compile_failed";
    case Outcome::launch_failed: return "launch_failed";
    case Outcome::not_supported: return "not_supported";
  }
  return "unknown";  // only for a value cast from an out-of-range integer
}

Outcome parse_outcome(std::string_view text) {
  for (Outcome o : {Outcome::passed, Outcome::incorrect, Outcome::compile_failed,
                    Outcome::launch_failed, Outcome::not_supported}) {
    if (to_string(o) == text) return o;
  }
  throw InvalidArgument("unknown candidate outcome '" + std::string(text) +
                        "' (expected passed, incorrect, compile_failed, launch_failed or "
                        "not_supported)");
}

}  // namespace gemvtune
