// Which config to run a problem with: the exact tuned entry, else the same shape tuned at a
// batch that covers M, else the nearest usable tuned shape, else the analytic model's default;
// never an entry of another GPU, weight format or template version.
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/resolve.hpp"
#include "gemvtune/tuner.hpp"  // key_of: the one place a cache key is assembled

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
std::optional<KernelConfig> usable_config(const std::string& text, DType dtype, const Shape& shape, int batch,
                                          WeightFormat weights) {
  try {
    KernelConfig c = parse_config(text);
    if (why_invalid_for(c, dtype, shape, batch, weights)) return std::nullopt;
    return c;
  } catch (const InvalidArgument&) {
    return std::nullopt;  // written by a newer gemvtune with another text form
  }
}
}  // namespace

Resolved resolve_config(const TuningCache* cache, const GpuIdentity& gpu, const Shape& shape, DType dtype,
                        int batch, WeightFormat weights, ResolveScope scope) {
  check_shape(shape);
  check_batch(batch);
  Resolved out;
  GpuModelParams model;
  if (gpu.sm_count > 0) model.sm_count = gpu.sm_count;
  if (cache) {
    CacheKey key = key_of(gpu, TuneJob{shape, dtype, batch, weights});
    const auto usable = [&](const std::string& config) {
      return usable_config(config, dtype, shape, batch, weights).has_value();
    };
    // Another shape's aligned-body (al) config suits only rows that need it: on 16-byte aligned
    // rows it pays for heads, tails and shifted x windows it has no use for (H200, bf16
    // 4608x3584 given 4096x4093's al winner: 12.35 us, 0.88x cuBLAS; its own winner 8.94 us).
    // The shape's own entries were tried with `usable` before nearest() is asked.
    // Nor one whose L2 prefetch overflows L2 on this shape (prefetch_fits_l2: a pf config tuned
    // on a short K, lent to a long one).
    const bool aligned_rows = shape.k * static_cast<std::int64_t>(dtype_size(dtype)) % 16 == 0;
    const auto suits = [&](const std::string& config) {
      const std::optional<KernelConfig> c = usable_config(config, dtype, shape, batch, weights);
      return c.has_value() && !(aligned_rows && c->aligned_body) && prefetch_fits_l2(*c, dtype, shape, model);
    };
    const auto take = [&](std::optional<TuneRecord> found) {
      out.config = *usable_config(found->config, dtype, shape, batch, weights);
      const std::string at_batch = found->key.batch != batch ? " at M=" + std::to_string(found->key.batch) : "";
      if (found->key.shape == shape) {
        out.source = found->key.batch == batch ? ConfigSource::exact : ConfigSource::nearest;
        out.source_text = found->key.batch == batch ? "exact" : "same shape" + at_batch;
      } else {
        out.source = ConfigSource::nearest;
        out.source_text = "nearest " + to_string(found->key.shape) + at_batch;
      }
      out.record = std::move(found);
      return out;
    };
    // The exact problem, then the same shape at the smallest batch above M whose kernel covers
    // M (its m tile), then the nearest shape at M, then at the covering batches. nearest()
    // counts the exact shape as distance 0 and its key carries gpu, weight format and template
    // version, so other GPUs, formats and templates are never candidates.
    const bool own_shape = scope == ResolveScope::all_entries;
    key.batch = batch;
    if (own_shape)
      if (auto found = cache->find(key); found && usable(found->config)) return take(std::move(found));
    for (int b = batch + 1; own_shape && b <= kMaxBatch; ++b) {
      key.batch = b;
      if (auto found = cache->find(key); found && usable(found->config)) return take(std::move(found));
    }
    for (int b = batch; b <= kMaxBatch; ++b) {
      key.batch = b;
      if (auto found = cache->nearest(key, suits, !own_shape)) return take(std::move(found));
    }
    if (auto peak = cache->peak(gpu)) model.read_ceiling_gbps = peak->gbps;
  }
  out.config = default_config(dtype, shape, model, batch, weights);
  out.source = ConfigSource::model_default;
  out.source_text = "default (analytic model)";
  return out;
}

}  // namespace gemvtune
