// The JSON forms of what the CLI's --json and the C API's cache commands answer with: one
// definition each, so `gemvtune tune --json` and gemvtune_tune() (and Python) print the same.
#pragma once
#include <string>
#include <vector>

#include "cache/json_records.hpp"
#include "gemvtune/presets.hpp"
#include "gemvtune/tuner.hpp"
#include "tuner/fit_report.hpp"

namespace gemvtune::report {

using Json = cache::Json;

// One record exactly as `export` writes it; candidates dropped unless asked for.
Json record_json(const TuneRecord& r, bool with_candidates);
Json peak_json(const PeakRecord& p);
// One job of a tune run: tuned (with its record), skipped (what the cache holds) or failed.
Json outcome_json(const JobOutcome& o);
// The tuned jobs' phases, summed: where a run's time went.
TunePhases total_phases(const std::vector<JobOutcome>& outcomes);
// The answer of `tune --json` (and gemvtune_tune): the cache, the strategy, the counts, the
// run's wall time, its total_phases and each job's outcome_json, in the outcomes' order.
Json tune_run_json(const std::vector<JobOutcome>& outcomes, const std::string& db, Strategy strategy, double seconds);
Json preset_json(const Preset& p);
// The answer of `query --json` (and gemvtune_query): the problem (with its weight format),
// the config it resolved to, where from, and the cache entry used.
Json query_json(const TuneJob& job, const GpuIdentity& gpu, const Resolved& r, const std::string& db);

// The answer of `fit --json` (and gemvtune_fit): the cache, the GPU, the rows, each constant
// shipped and fitted with its rows and RMS log errors, the whole model's errors and picks.
Json fit_json(const CacheFit& fit);

// "NVIDIA H200/132sm/cc9.0" (GpuIdentity::key()) back into its parts (the name may hold '/'),
// held to the cache's rules for a GPU identity. Throws InvalidArgument saying what is wrong.
GpuIdentity parse_gpu_key(const std::string& text);

}  // namespace gemvtune::report
