// Which config to run a shape with: the exact tuned entry, else the nearest usable tuned
// shape, else the analytic model's default; never an entry of another GPU or template version.
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"

namespace gemvtune {

std::string_view to_string(ConfigSource s) {
  switch (s) {
    case ConfigSource::exact: return "exact";
    case ConfigSource::nearest: return "nearest";
    case ConfigSource::model_default: return "default";
  }
  return "?";
}

namespace {
// A stored config is usable for a shape when it parses and passes every rule for the shape
// (a config tuned for a long K may split K more ways than a short K allows).
std::optional<KernelConfig> usable_config(const std::string& text, DType dtype, const Shape& shape) {
  try {
    KernelConfig c = parse_config(text);
    if (why_invalid_for(c, dtype, shape)) return std::nullopt;
    return c;
  } catch (const InvalidArgument&) {
    return std::nullopt;  // written by a newer gemvtune with another text form
  }
}
}  // namespace

Resolved resolve_config(const TuningCache* cache, const GpuIdentity& gpu, const Shape& shape, DType dtype) {
  check_shape(shape);
  Resolved out;
  GpuModelParams model;
  if (gpu.sm_count > 0) model.sm_count = gpu.sm_count;
  if (cache) {
    CacheKey key;
    key.gpu = gpu;
    key.shape = shape;
    key.dtype = dtype;
    key.batch = 1;
    key.template_version = template_version();
    // nearest() counts the exact shape as distance 0, so one call covers both cases, and its
    // key carries gpu and template version, so other GPUs and templates are never candidates.
    auto found = cache->nearest(key, [&](const std::string& config) {
      return usable_config(config, dtype, shape).has_value();
    });
    if (found) {
      out.config = *usable_config(found->config, dtype, shape);
      if (found->key.shape == shape) {
        out.source = ConfigSource::exact;
        out.source_text = "exact";
      } else {
        out.source = ConfigSource::nearest;
        out.source_text = "nearest " + to_string(found->key.shape);
      }
      out.record = std::move(found);
      return out;
    }
    if (auto peak = cache->peak(gpu)) model.read_ceiling_gbps = peak->gbps;
  }
  out.config = default_config(dtype, shape, model);
  out.source = ConfigSource::model_default;
  out.source_text = "default (analytic model)";
  return out;
}

}  // namespace gemvtune
