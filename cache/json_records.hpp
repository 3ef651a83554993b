// The JSON form of cache records, used by export_json/import_json. Decoding is strict and
// names the offending place ("tuned[3].time_us: expected a number, got \"fast\"").
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

// Identifies the document; bumped when a change would make older builds misread it.
inline constexpr const char* kJsonFormatName = "gemvtune-cache";
inline constexpr int kJsonFormatVersion = 1;

// ordered_json keeps fields in the order written, which reads better than alphabetical.
using Json = nlohmann::ordered_json;

struct CacheDocument {
  std::vector<TuneRecord> tuned;
  std::vector<PeakRecord> peaks;
};

Json encode_document(const CacheDocument& doc);
// Throws InvalidArgument naming the JSON location that is missing, mistyped or invalid.
CacheDocument decode_document(const Json& j);

}  // namespace gemvtune::cache
