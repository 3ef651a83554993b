// Which config to run a problem with, for a server: the exact tuned entry, a tuned batch that
// covers M, the nearest tuned shape, or the analytic model's default. Needs no GPU; this is all
// the runtime (runtime.hpp) needs of the tuner's side.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "gemvtune/cache.hpp"
#include "gemvtune/config.hpp"

namespace gemvtune {

enum class ConfigSource { exact, nearest, model_default };
std::string_view to_string(ConfigSource s);  // "exact", "nearest", "default"

struct Resolved {
  KernelConfig config;
  ConfigSource source = ConfigSource::model_default;
  std::string source_text;           // "exact", "nearest 4096x4096", "default (analytic model)"
  std::optional<TuneRecord> record;  // the cache entry used (exact or nearest), no candidates
  // The nearest shape's entry that the model's default replaced (source model_default;
  // source_text says why), else empty.
  std::optional<TuneRecord> declined;
};

// The config to run (dtype, shape) at batch M with weights in format `weights` on `gpu` with
// the current templates: the exact cache entry; else the same shape tuned at the smallest
// batch above M whose config covers M (its m tile); else the nearest tuned shape at batch M
// (then at a covering batch) of the same GPU, dtype, weight format and template version whose
// config can run this problem; for dense and 8-bit weights with split-K re-picked by the model
// where the lent grid's waves changed, unless no split keeps within one wave a grid that was or
// the model predicts it more than 20% slower than its default of the same kernel family, which
// then runs (source model_default, source_text saying why, `declined` the lent entry); else the
// analytic model's default (the cache's peak, if any,
// feeds the model). Entries of another GPU, weight format or template version are never used.
// The default is the model's best config of the format's search space (default_config with
// the weight format); source_text says it is the default. cache may be null (no cache file):
// then the default. Needs no GPU.
// `scope` other_shapes answers as if this shape had no entry at any batch: the nearest other
// tuned shape, else the default. What a server gets for a shape nobody tuned; bench times it.
enum class ResolveScope { all_entries, other_shapes };
Resolved resolve_config(const TuningCache* cache, const GpuIdentity& gpu, const Shape& shape, DType dtype,
                        int batch = 1, WeightFormat weights = WeightFormat::dense,
                        ResolveScope scope = ResolveScope::all_entries);

}  // namespace gemvtune
