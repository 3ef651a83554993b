// Strategy names, and how many candidates each plans to measure for a job.
#include "gemvtune/search_space.hpp"
#include "gemvtune/tuner.hpp"
#include "tuner/strategy.hpp"

namespace gemvtune {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::model: return "model";
    case Strategy::exhaustive: return "exhaustive";
  }
  return "?";
}

Strategy parse_strategy(std::string_view text) {
  if (text == "model") return Strategy::model;
  if (text == "exhaustive") return Strategy::exhaustive;
  throw InvalidArgument("unknown strategy '" + std::string(text) + "' (expected model or exhaustive)");
}

std::size_t planned_measurements(Strategy s, const TuneJob& job) {
  const std::size_t space = search_space_for(job.dtype, job.shape, job.batch, job.weights).size();
  return s == Strategy::exhaustive ? space : model_budget(space);
}

}  // namespace gemvtune
