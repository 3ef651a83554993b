// The analytic model against one GPU's measurements: the rows of a cache (every passed
// candidate of the GPU's tuned problems at this build's templates) and the constants that
// tuner/model_fit.hpp refits from them, beside the shipped ones (GpuModelParams), each with the
// rows it used and the RMS log error of model / measured either way, and the model's picks
// either way (picks_over_best: what the untuned default and the tuner's first round stand on).
// `gemvtune fit` prints it. The constants are compiled in; the report says what another GPU
// would want, it changes nothing.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gemvtune/cache.hpp"
#include "gemvtune/model.hpp"
#include "tuner/model_fit.hpp"

namespace gemvtune {

// Every passed candidate with a time of `gpu`'s tuned problems at this build's templates, with
// the GPU's stored read ceiling (0: none stored). Candidates whose config this build does not
// parse are left out.
std::vector<FitRow> fit_rows(const TuningCache& cache, const GpuIdentity& gpu);

struct FitConstant {
  std::string name;  // the GpuModelParams member
  double shipped = 0, fitted = 0;
  std::size_t rows = 0;  // rows that inform it; 0: the fit kept the shipped value
  double error_shipped = 0, error_fitted = 0;  // RMS log error over those rows
};

struct FitReport {
  std::size_t rows = 0, problems = 0;  // rows used, and the (shape, M, dtype, format) groups they form
  std::vector<FitConstant> constants;
  double error_shipped = 0, error_fitted = 0;  // RMS log error over every row
  double picks_shipped = 1, picks_fitted = 1;  // picks_over_best over every row
  GpuModelParams fitted;
};

// The report over `rows` with `shipped` as the starting point (its sm_count and read ceiling
// those of the GPU measured).
FitReport fit_report(const std::vector<FitRow>& rows, const GpuModelParams& shipped);

// `gemvtune fit` (and gemvtune_fit): the report of the cache at `path` for `gpu`, or without
// one for the cache's only GPU model with entries of this build's templates, the shipped
// parameters taking that GPU's SMs and stored read ceiling. Throws InvalidArgument saying why
// there is nothing to fit: no cache file, nothing tuned at these templates, several GPU models
// and none chosen, no measured candidates of the one chosen.
struct CacheFit {
  std::string path;
  GpuIdentity gpu;
  FitReport report;
};
CacheFit fit_cache(const std::string& path, const std::optional<GpuIdentity>& gpu);

}  // namespace gemvtune
