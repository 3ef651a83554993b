// Input checks for cache records (see validate.hpp): GPU identities a device can have, shapes
// within the kernels' 32-bit range, configs the generator accepts (parse_config and
// why_invalid, so new config forms are checked by the code that defines them), finite
// measurements, and text a JSON export can write.
#include "cache/validate.hpp"

#include <cmath>
#include <string>

#include "cache/text.hpp"
#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

[[noreturn]] void fail(const std::string& what) { throw InvalidArgument("invalid cache record: " + what); }

// Every string is stored as SQLite TEXT and exported as a JSON string; both need UTF-8.
void check_text(const std::string& value, const std::string& name) {
  if (!is_valid_utf8(value))
    fail(name + " is not valid UTF-8: \"" + abbreviated(value) + "\"");
}

// Measurements of failed candidates are 0, so 0 is allowed; NaN, infinity and negatives
// would poison sorting and the JSON export.
void check_measure(double value, const std::string& name) {
  if (!std::isfinite(value) || value < 0)
    fail(name + " must be finite and >= 0, got " + std::to_string(value));
}

// A config that does not parse (garbage, a megabyte of text) or breaks the rules would be
// kept as a winner and then never run; `usable` also demands why_invalid says nothing.
void check_config(const std::string& text, const std::string& name, bool usable) {
  if (text.empty()) fail(name + " is empty");
  check_text(text, name);
  KernelConfig c;
  try {
    c = parse_config(text);
  } catch (const InvalidArgument& e) {
    // parse_config quotes the text, maybe more than once: keep the message short.
    fail(name + " \"" + abbreviated(text) + "\" is not a kernel config: " + abbreviated(e.what(), 300));
  }
  if (!usable) return;
  if (const auto why = why_invalid(c)) fail(name + " " + text + " breaks the config rules: " + *why);
}

void check_gpu(const GpuIdentity& gpu, const std::string& where) {
  if (gpu.name.empty()) fail(where + "gpu name is empty");
  check_text(gpu.name, where + "gpu name");
  if (gpu.sm_count <= 0)
    fail(where + "gpu sm_count must be positive, got " + std::to_string(gpu.sm_count));
  // Compute capabilities are written major.minor with one minor digit (sm_90, sm_120).
  if (gpu.cc_major <= 0 || gpu.cc_minor < 0 || gpu.cc_minor > 9)
    fail(where + "gpu compute capability " + std::to_string(gpu.cc_major) + "." +
         std::to_string(gpu.cc_minor) + " is not valid");
}

void check_candidate(const CandidateResult& c, const std::string& where) {
  check_config(c.config, where + "config", c.outcome == Outcome::passed);
  check_text(c.reason, where + "reason");
  check_measure(c.time_us, where + "time_us");
  check_measure(c.gbps, where + "gbps");
  check_measure(c.pct_of_ceiling, where + "pct_of_ceiling");
  if (c.outcome == Outcome::passed && c.time_us == 0)
    fail(where + "time_us of a passed candidate must be > 0");
}

}  // namespace

void validate_gpu(const GpuIdentity& gpu) { check_gpu(gpu, ""); }

void validate_key(const CacheKey& k) {
  check_gpu(k.gpu, "");
  const auto in_range = [](std::int64_t v) { return v >= 1 && v <= kMaxDim; };
  if (!in_range(k.shape.n) || !in_range(k.shape.k))
    fail("shape " + std::to_string(k.shape.n) + "x" + std::to_string(k.shape.k) +
         " is out of range (1.." + std::to_string(kMaxDim) + ")");
  switch (k.dtype) {
    case DType::f32:
    case DType::f16:
    case DType::bf16:
      break;
    default:
      fail("unknown dtype value " + std::to_string(static_cast<int>(k.dtype)));
  }
  if (k.batch < 1 || k.batch > kMaxBatch)
    fail("batch " + std::to_string(k.batch) + " is outside 1.." + std::to_string(kMaxBatch));
  bool known_weights = false;
  for (WeightFormat f : kAllWeightFormats) known_weights |= f == k.weights;
  if (!known_weights) fail("unknown weight format value " + std::to_string(static_cast<int>(k.weights)));
  check_text(k.template_version, "template_version");
}

void validate_candidate(const CandidateResult& c) { check_candidate(c, ""); }

void validate_record(const TuneRecord& r) {
  validate_key(r.key);
  check_config(r.config, "winner config", true);
  check_measure(r.time_us, "time_us");
  if (r.time_us == 0) fail("time_us of the winner must be > 0");
  check_measure(r.gbps, "gbps");
  check_measure(r.pct_of_ceiling, "pct_of_ceiling");
  check_text(r.strategy, "strategy");
  check_text(r.nvrtc_version, "nvrtc_version");
  for (std::size_t i = 0; i < r.candidates.size(); ++i)
    check_candidate(r.candidates[i], "candidate " + std::to_string(i) + ": ");
}

void validate_peak(const PeakRecord& p) {
  check_gpu(p.gpu, "peak: ");
  if (!std::isfinite(p.gbps) || p.gbps <= 0)
    fail("peak gbps must be finite and > 0, got " + std::to_string(p.gbps));
  if (p.bytes <= 0) fail("peak bytes must be > 0, got " + std::to_string(p.bytes));
}

}  // namespace gemvtune::cache
