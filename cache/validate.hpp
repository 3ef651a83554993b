// Input checks for what goes into the cache, shared by store() and import_json() so a bad
// record is refused the same way whichever door it comes through.
#pragma once
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

// Each throws InvalidArgument saying which field is wrong and why.
void validate_key(const CacheKey& k);
void validate_record(const TuneRecord& r);
void validate_peak(const PeakRecord& p);

}  // namespace gemvtune::cache
