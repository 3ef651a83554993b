// Encoding and strict decoding of the cache's JSON document (see json_records.hpp).
// Every decoded record is also run through the same validation as store(), so an import
// can never put into the cache what store() would have refused.
#include "cache/json_records.hpp"

#include <limits>
#include <string>

#include "cache/text.hpp"
#include "cache/validate.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

// ---- encoding ------------------------------------------------------------------------

Json encode_gpu(const GpuIdentity& g) {
  return Json{{"name", g.name}, {"sm_count", g.sm_count}, {"cc_major", g.cc_major},
              {"cc_minor", g.cc_minor}};
}

Json encode_candidate(const CandidateResult& c) {
  return Json{{"config", c.config},   {"outcome", std::string(to_string(c.outcome))},
              {"reason", c.reason},   {"time_us", c.time_us},
              {"gbps", c.gbps},       {"pct_of_ceiling", c.pct_of_ceiling}};
}

Json encode_tuned(const TuneRecord& r) {
  Json candidates = Json::array();
  for (const CandidateResult& c : r.candidates) candidates.push_back(encode_candidate(c));
  return Json{{"gpu", encode_gpu(r.key.gpu)},
              {"n", r.key.shape.n},
              {"k", r.key.shape.k},
              {"dtype", std::string(to_string(r.key.dtype))},
              {"batch", r.key.batch},
              {"weights", std::string(to_string(r.key.weights))},
              {"template_version", r.key.template_version},
              {"config", r.config},
              {"time_us", r.time_us},
              {"gbps", r.gbps},
              {"pct_of_ceiling", r.pct_of_ceiling},
              {"strategy", r.strategy},
              {"driver_version", r.driver_version},
              {"nvrtc_version", r.nvrtc_version},
              {"timestamp", r.timestamp},
              {"candidates", std::move(candidates)}};
}

Json encode_peak(const PeakRecord& p) {
  return Json{{"gpu", encode_gpu(p.gpu)},
              {"gbps", p.gbps},
              {"bytes", p.bytes},
              {"driver_version", p.driver_version},
              {"timestamp", p.timestamp}};
}

// ---- decoding ------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw InvalidArgument(where + ": " + what);
}

// A short description of a value for a message. Never dumps an array or object: a value
// nested 100000 deep would overflow the stack of the recursive dump (and be unreadable).
std::string shown(const Json& v) {
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
  if (v.is_object()) return "an object of " + std::to_string(v.size()) + " fields";
  if (v.is_string()) return Json(abbreviated(v.get_ref<const std::string&>())).dump();
  return v.dump();  // a number, a boolean or null
}

const Json& field(const Json& obj, const char* name, const std::string& where) {
  if (!obj.is_object()) fail(where, "expected an object, got " + shown(obj));
  const auto it = obj.find(name);
  if (it == obj.end()) fail(where + "." + name, "missing");
  return *it;
}

std::string get_string(const Json& obj, const char* name, const std::string& where) {
  const Json& v = field(obj, name, where);
  if (!v.is_string()) fail(where + "." + name, "expected a string, got " + shown(v));
  return v.get<std::string>();
}

double get_number(const Json& obj, const char* name, const std::string& where) {
  const Json& v = field(obj, name, where);
  if (!v.is_number()) fail(where + "." + name, "expected a number, got " + shown(v));
  return v.get<double>();
}

std::int64_t get_int64(const Json& obj, const char* name, const std::string& where) {
  const Json& v = field(obj, name, where);
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    fail(where + "." + name, "integer out of range: " + shown(v));
  if (!v.is_number_integer()) fail(where + "." + name, "expected an integer, got " + shown(v));
  return v.get<std::int64_t>();
}

int get_int(const Json& obj, const char* name, const std::string& where) {
  const std::int64_t v = get_int64(obj, name, where);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    fail(where + "." + name, "integer out of range: " + std::to_string(v));
  return static_cast<int>(v);
}

const Json& get_array(const Json& obj, const char* name, const std::string& where) {
  const Json& v = field(obj, name, where);
  if (!v.is_array()) fail(where + "." + name, "expected an array, got " + shown(v));
  return v;
}

GpuIdentity decode_gpu(const Json& obj, const std::string& where) {
  const Json& g = field(obj, "gpu", where);
  const std::string at = where + ".gpu";
  return GpuIdentity{get_string(g, "name", at), get_int(g, "sm_count", at),
                     get_int(g, "cc_major", at), get_int(g, "cc_minor", at)};
}

// Re-raises a parse or validation error of one field or record with its JSON location.
template <typename F>
auto at_location(const std::string& where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const InvalidArgument& e) {
    fail(where, abbreviated(e.what(), 300));  // parse_dtype and the like quote the whole text
  }
}

CandidateResult decode_candidate(const Json& c, const std::string& where) {
  CandidateResult out;
  out.config = get_string(c, "config", where);
  const std::string outcome = get_string(c, "outcome", where);
  out.outcome = at_location(where + ".outcome", [&] { return parse_outcome(outcome); });
  out.reason = get_string(c, "reason", where);
  out.time_us = get_number(c, "time_us", where);
  out.gbps = get_number(c, "gbps", where);
  out.pct_of_ceiling = get_number(c, "pct_of_ceiling", where);
  return out;
}

TuneRecord decode_tuned(const Json& t, const std::string& where) {
  TuneRecord r;
  r.key.gpu = decode_gpu(t, where);
  r.key.shape.n = get_int64(t, "n", where);
  r.key.shape.k = get_int64(t, "k", where);
  const std::string dtype = get_string(t, "dtype", where);
  r.key.dtype = at_location(where + ".dtype", [&] { return parse_dtype(dtype); });
  r.key.batch = get_int(t, "batch", where);
  // Absent in documents of format version 1 (before quantized weights): those are dense.
  if (t.contains("weights")) {
    const std::string weights = get_string(t, "weights", where);
    r.key.weights = at_location(where + ".weights", [&] { return parse_weight_format(weights); });
  }
  r.key.template_version = get_string(t, "template_version", where);
  r.config = get_string(t, "config", where);
  r.time_us = get_number(t, "time_us", where);
  r.gbps = get_number(t, "gbps", where);
  r.pct_of_ceiling = get_number(t, "pct_of_ceiling", where);
  r.strategy = get_string(t, "strategy", where);
  r.driver_version = get_int(t, "driver_version", where);
  r.nvrtc_version = get_string(t, "nvrtc_version", where);
  r.timestamp = get_int64(t, "timestamp", where);
  const Json& candidates = get_array(t, "candidates", where);
  for (std::size_t i = 0; i < candidates.size(); ++i)
    r.candidates.push_back(
        decode_candidate(candidates[i], where + ".candidates[" + std::to_string(i) + "]"));
  at_location(where, [&] { validate_record(r); });
  return r;
}

PeakRecord decode_peak(const Json& p, const std::string& where) {
  PeakRecord out;
  out.gpu = decode_gpu(p, where);
  out.gbps = get_number(p, "gbps", where);
  out.bytes = get_int64(p, "bytes", where);
  out.driver_version = get_int(p, "driver_version", where);
  out.timestamp = get_int64(p, "timestamp", where);
  at_location(where, [&] { validate_peak(out); });
  return out;
}

}  // namespace

std::string json_text(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

Json encode_document(const CacheDocument& doc) {
  Json tuned = Json::array();
  for (const TuneRecord& r : doc.tuned) tuned.push_back(encode_tuned(r));
  Json peaks = Json::array();
  for (const PeakRecord& p : doc.peaks) peaks.push_back(encode_peak(p));
  return Json{{"format", kJsonFormatName},
              {"format_version", kJsonFormatVersion},
              {"tuned", std::move(tuned)},
              {"peaks", std::move(peaks)}};
}

Json parse_json(std::istream& in) {
  // object_start and array_start report the depth of the value they open (0 for the root).
  const Json::parser_callback_t limit_depth = [](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth)
      throw InvalidArgument("arrays and objects nested more than " + std::to_string(kMaxJsonDepth) +
                            " deep; an export nests 5");
    return true;
  };
  return Json::parse(in, limit_depth);
}

CacheDocument decode_document(const Json& j) {
  const std::string root = "(document)";
  const std::string format = get_string(j, "format", root);
  if (format != kJsonFormatName)
    fail(root + ".format", "expected \"" + std::string(kJsonFormatName) + "\", got " + shown(Json(format)));
  const int version = get_int(j, "format_version", root);
  if (version > kJsonFormatVersion)
    fail(root + ".format_version", "version " + std::to_string(version) +
                                       " is newer than this build supports (" +
                                       std::to_string(kJsonFormatVersion) + ")");
  if (version < 1) fail(root + ".format_version", "invalid version " + std::to_string(version));

  CacheDocument doc;
  const Json& tuned = get_array(j, "tuned", root);
  for (std::size_t i = 0; i < tuned.size(); ++i)
    doc.tuned.push_back(decode_tuned(tuned[i], "tuned[" + std::to_string(i) + "]"));
  const Json& peaks = get_array(j, "peaks", root);
  for (std::size_t i = 0; i < peaks.size(); ++i)
    doc.peaks.push_back(decode_peak(peaks[i], "peaks[" + std::to_string(i) + "]"));
  return doc;
}

}  // namespace gemvtune::cache
