// The JSON form of cache records, used by export_json/import_json. Decoding is strict and
// names the offending place ("tuned[3].time_us: expected a number, got \"fast\"").
#pragma once
#include <istream>
#include <vector>

#include <nlohmann/json.hpp>

#include "gemvtune/cache.hpp"

namespace gemvtune::cache {

// Identifies the document; bumped when a change would make older builds misread it.
//   1: the first form
//   2: a tuned record has "weights" (its weight format); a build of version 1 would ignore it
//      and take a quantized result for a dense one. A record without it is dense, so version 1
//      documents still import.
inline constexpr const char* kJsonFormatName = "gemvtune-cache";
inline constexpr int kJsonFormatVersion = 2;

// ordered_json keeps fields in the order written, which reads better than alphabetical.
using Json = nlohmann::ordered_json;

// The document's content; public as gemvtune::CacheDocument (runtime/c_api_offline.cpp
// names it here).
using CacheDocument = gemvtune::CacheDocument;

// Deeper than any document of the format (document, tuned, record, candidates, candidate),
// and shallow enough that nothing recursive over the parsed value can run out of stack.
inline constexpr int kMaxJsonDepth = 16;

// The text of a JSON value as every --json answer and C API document prints it. Paths are
// bytes on Linux and need not be UTF-8, which JSON text must be: invalid bytes are written as
// U+FFFD, where dump() would throw after the work the document reports on was done.
std::string json_text(const Json& j, int indent = -1);
std::string json_text(const nlohmann::json& j, int indent = -1);

Json encode_document(const CacheDocument& doc);
// Parses JSON text, refusing nesting deeper than kMaxJsonDepth while reading (InvalidArgument)
// before a deep value is ever built. Malformed text throws Json::exception.
Json parse_json(std::istream& in);
// Throws InvalidArgument naming the JSON location that is missing, mistyped or invalid.
CacheDocument decode_document(const Json& j);

}  // namespace gemvtune::cache
