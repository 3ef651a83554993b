// Input checks for cache records (see validate.hpp): non-empty names and configs, shapes
// within the kernels' 32-bit range, finite non-negative measurements.
#include "cache/validate.hpp"

#include <cmath>
#include <string>

#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

[[noreturn]] void fail(const std::string& what) { throw InvalidArgument("invalid cache record: " + what); }

void check_gpu(const GpuIdentity& gpu, const std::string& where) {
  if (gpu.name.empty()) fail(where + "gpu name is empty");
  if (gpu.sm_count <= 0) fail(where + "gpu sm_count must be positive, got " + std::to_string(gpu.sm_count));
  if (gpu.cc_major <= 0 || gpu.cc_minor < 0)
    fail(where + "gpu compute capability " + std::to_string(gpu.cc_major) + "." +
         std::to_string(gpu.cc_minor) + " is not valid");
}

// Measurements of failed candidates are 0, so 0 is allowed; NaN, infinity and negatives
// would poison sorting and the JSON export.
void check_measure(double value, const std::string& name) {
  if (!std::isfinite(value) || value < 0)
    fail(name + " must be finite and >= 0, got " + std::to_string(value));
}

}  // namespace

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
  if (k.batch < 1) fail("batch must be >= 1, got " + std::to_string(k.batch));
}

void validate_record(const TuneRecord& r) {
  validate_key(r.key);
  if (r.config.empty()) fail("winner config is empty");
  check_measure(r.time_us, "time_us");
  if (r.time_us == 0) fail("time_us of the winner must be > 0");
  check_measure(r.gbps, "gbps");
  check_measure(r.pct_of_ceiling, "pct_of_ceiling");
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateResult& c = r.candidates[i];
    const std::string where = "candidate " + std::to_string(i) + ": ";
    if (c.config.empty()) fail(where + "config is empty");
    check_measure(c.time_us, where + "time_us");
    check_measure(c.gbps, where + "gbps");
    check_measure(c.pct_of_ceiling, where + "pct_of_ceiling");
  }
}

void validate_peak(const PeakRecord& p) {
  check_gpu(p.gpu, "peak: ");
  if (!std::isfinite(p.gbps) || p.gbps <= 0)
    fail("peak gbps must be finite and > 0, got " + std::to_string(p.gbps));
  if (p.bytes <= 0) fail("peak bytes must be > 0, got " + std::to_string(p.bytes));
}

}  // namespace gemvtune::cache
