// Reading and writing TuneRecords (the `tuned` winner rows and their `candidates` rows).
// Shared by the TuningCache API and JSON import; writers expect the caller to hold a
// WriteTransaction so a record is replaced all at once. Readers return only rows that pass
// validate_record: an unusable row reads as absent (and is described in `skipped` where
// asked), an unusable candidate is left out of its record.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/sqlite.hpp"
#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

std::optional<TuneRecord> load_tuned(const Connection& conn, const CacheKey& key,
                                     bool with_candidates);
// Only the winner's time, for merging; nothing when the row is missing or unusable.
std::optional<double> load_tuned_time(const Connection& conn, const CacheKey& key);
// Whether any row, usable or not, holds `key`.
bool has_tuned_row(const Connection& conn, const CacheKey& key);
// All usable winners ordered by gpu, dtype, n, k, batch, weights, template_version; one line per
// skipped row or candidate goes to `skipped` when given.
std::vector<TuneRecord> load_all_tuned(const Connection& conn, bool with_candidates,
                                       std::vector<std::string>* skipped = nullptr);
// Usable winners with the same gpu, dtype, batch, weights and template_version as `key`, any
// shape.
std::vector<TuneRecord> load_same_family(const Connection& conn, const CacheKey& key);

// Deletes the winner of r.key and its candidates, then inserts r. Call inside a transaction.
void replace_tuned(const Connection& conn, const TuneRecord& r);

}  // namespace gemvtune::cache
