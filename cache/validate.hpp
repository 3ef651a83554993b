// Input checks for what goes into the cache, shared by store(), import_json() and the reading
// of rows back from the file, so a bad record is refused the same way whichever door it comes
// through and a bad row written by another tool is never served.
#pragma once
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

// Each throws InvalidArgument saying which field is wrong and why.
void validate_gpu(const GpuIdentity& gpu);
void validate_key(const CacheKey& k);
// The winner's config must parse and pass why_invalid (it is what a server will run); a
// candidate's config must parse, and a passed candidate's must also pass why_invalid.
void validate_record(const TuneRecord& r);
void validate_candidate(const CandidateResult& c);
void validate_peak(const PeakRecord& p);

}  // namespace gemvtune::cache
