// Reading and writing TuneRecords (the `tuned` winner rows and their `candidates` rows).
// Shared by the TuningCache API and JSON import; writers expect the caller to hold a
// WriteTransaction so a record is replaced all at once.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

std::optional<TuneRecord> load_tuned(const Connection& conn, const CacheKey& key,
                                     bool with_candidates);
// Only the winner's time, for merging without loading candidates.
std::optional<double> load_tuned_time(const Connection& conn, const CacheKey& key);
// All winners ordered by gpu, dtype, n, k, batch, template_version.
std::vector<TuneRecord> load_all_tuned(const Connection& conn, bool with_candidates);
// Winners with the same gpu, dtype, batch and template_version as `key`, any shape.
std::vector<TuneRecord> load_same_family(const Connection& conn, const CacheKey& key);

// Deletes the winner of r.key and its candidates, then inserts r. Call inside a transaction.
void replace_tuned(const Connection& conn, const TuneRecord& r);

}  // namespace gemvtune::cache
