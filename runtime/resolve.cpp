// Which config to run a problem with: the exact tuned entry, else the same shape tuned at a
// batch that covers M, else the nearest usable tuned shape, else the analytic model's default;
// never an entry of another GPU, weight format or template version.
#include <cmath>
#include <cstdio>

#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/resolve.hpp"
#include "gemvtune/search_space.hpp"
#include "gemvtune/weights.hpp"
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

// Another shape's config (from shape `from`), lent to this one (out.config, source nearest);
// dense and 8-bit weights.
//
// Split-K is a launch parameter whose best value follows the grid: 4096x4096's winner at M = 2
// (tc_t256_r1_kw4_u4, split 2) leaves the SMs mostly idle on 1024x4096, where split 4 ran 4.43 us
// against 5.8 (H200). So where the lent grid no longer has the waves it had (more than 10%
// apart), the model re-picks the split, among the splits that keep the grid within one wave when
// it was within one: the model sees little of a partial second wave (4096x4096's
// tc_t128_r1_kw4_u2 split 2 at M = 16 makes 1.45 waves on 6144x4096 and ran 19.6 us, the tuned
// config 15.6, where the model predicts the split 1% faster).
//
// Then the default of the same kernel family (ring, lanes per row and aligned body alike) runs
// instead (out.config replaced, source model_default; returns false) when no split keeps within
// one wave a grid that was, its last wave less than three quarters full (int8 at M = 16:
// 4096x4096's tc_t256_r1_kw4_u4, one 256-thread block per SM by registers, makes 1.45 waves on
// 6144x4096 and ran 17.02 us, the default 10.64), or when the model predicts the lent config
// more than kBorrowSlack slower. Across families the lent config stays: the model's estimates
// are least reliable there (int8 at M = 1 on 4096x14336: a lent CUDA-core config 18.63 us, the
// tensor-core default the model preferred 28.31). Checked on the recorded sweeps
// (tests/tuner/defaults_test.cpp, Defaults.BorrowedConfigsOnTheRecordedSweeps) and bench's
// "untuned" rows (bench/results/h200.md).
constexpr double kBorrowSlack = 1.2;
// What a block costs beyond its bytes (launch, prologue, x loads, epilogue), in us per block an
// SM runs, which the model's estimate leaves out: set against the model, the families' measured
// candidates ran 20-30% slower than predicted where a block streams under 4 KB and 4-13% under
// 8 KB, relative to each shape's median, and a term of 0.02-0.05 us per block an SM fitted them
// best (H100 and H200 caches of 2026-12-05). Borrowing alone counts it, where a lent config's
// block may carry a fraction of the bytes it did: 9216x3072's t64_r1_kw2_v16_u2_pf (9216 blocks
// of 6 KB) lent to 8192x1024 made 8192 blocks of 2 KB and ran 10.9 us on an H100, 0.75x cuBLAS,
// where the model's default took 6.9 (bench/results/h200.md, 2026-12-05 15:59 UTC).
constexpr double kBlockUs = 0.03;
// Only blocks that stream less than this are charged: above it the same candidates ran within a
// few percent of the model, and on an H100 14336x3584 declined 11008x4096's
// t128_r1_kw4_v16_u2_pf (14336 blocks of 7 KB, 1.13x cuBLAS untuned at cef822e) for a default
// of 0.96x once the default's grid had a quarter of the blocks (7a0f226).
constexpr double kChargedBlockBytes = 4096;
constexpr std::int64_t kMinWarpK = 256;

bool adapt_borrowed(Resolved& out, const Shape& from, DType dtype, const Shape& shape, int batch, WeightFormat weights,
                    const GpuModelParams& model) {
  // Not for int4 at M = 1, where the model ranks its kernels worst (its defaults 1.36x the best
  // on the recorded sweeps, sweeps/h200_int4g128_m1_6223e09_pdl.csv). At M > 1 the batch terms
  // fitted on 2026-12-01 (include/gemvtune/model.hpp) brought the lent configs from 1.15-1.23x
  // the best as stored to 1.07-1.15x (Defaults.BorrowedInt4ConfigsOnTheRecordedSweeps); before
  // them a split re-picked on 6144x4096 at M = 16 ran 0.68x cuBLAS, the lent split 0.89x.
  if (is_int4(weights) && batch == 1) return true;
  const KernelConfig lent = out.config;
  const double waves_there = estimate(lent, dtype, from, model, weights).waves;
  const ModelEstimate here = estimate(lent, dtype, shape, model, weights);
  ModelEstimate chosen = here;  // out.config's estimate here
  bool wave_broken = false;  // it ran within one wave there; here every split leaves a partial one
  if (std::abs(here.waves / waves_there - 1.0) > 0.1) {
    bool first = true;
    for (int split : split_k_choices(batch, weights)) {
      KernelConfig c = lent;
      c.split_k = split;
      if (why_invalid(c) || why_invalid_for(c, dtype, shape, batch, weights)) continue;
      // No split that leaves a warp fewer than kMinWarpK elements of K, unless the lent one did:
      // the model counts no per-warp cost, and on the H200 sweep of the wide tensor-core blocks
      // a warp's K range of 128 ran 1.07-1.7x the best of its pair, 64 1.6-2.4x, never the best
      // (sweeps/h200_batch_4316d86_kw_pdl.csv; 4096x4096's kw8 lent to 1024x4096 with split 4: 1.58x).
      if (split != lent.split_k && shape.k / (static_cast<std::int64_t>(c.k_warps) * split) < kMinWarpK) continue;
      const ModelEstimate e = estimate(c, dtype, shape, model, weights);
      if (waves_there <= 1 && e.waves > 1) continue;
      if (first || e.time_us < chosen.time_us) chosen = e, out.config = c, first = false;
    }
    // No split keeps one wave: broken where the last wave is mostly empty (1.45 waves above);
    // a grid of nearly two whole waves (a shape of twice the rows) streams as well as one, and
    // a grid of less than one wave (a config that takes no split, on fewer rows) has no partial
    // wave behind a full one.
    if (first) wave_broken = waves_there <= 1 && here.waves > 1 && here.waves - std::floor(here.waves) < 0.75;
  }
  if (out.config.split_k != lent.split_k)
    out.source_text += " with split-K " + std::to_string(out.config.split_k) + " (was " + std::to_string(lent.split_k) + ")";
  const KernelConfig own = default_config(dtype, shape, model, batch, weights);
  // The lent config is charged for the blocks it runs beyond the default's only: added to both,
  // the term would draw near-equal grids closer to a tie and flip calls it has no evidence on.
  const ModelEstimate own_estimate = estimate(own, dtype, shape, model, weights);
  const double own_us = own_estimate.time_us;
  const double extra_blocks = chosen.blocks - own_estimate.blocks;
  const double block_bytes = static_cast<double>(weight_bytes(weights, dtype, shape.n, shape.k).total()) /
                             chosen.blocks;
  const bool charged = extra_blocks > 0 && block_bytes < kChargedBlockBytes;
  const double best = chosen.time_us + (charged ? kBlockUs * extra_blocks / model.sm_count : 0.0);
  const bool same_kind = own.family == lent.family && own.ring == lent.ring && own.lanes_per_row == lent.lanes_per_row &&
                         own.aligned_body == lent.aligned_body;
  if (!same_kind || (!wave_broken && best <= kBorrowSlack * own_us)) return true;
  char slower[32];
  std::snprintf(slower, sizeof slower, "predicted %.0f%% slower", 100.0 * (best / own_us - 1.0));
  out.source_text = "default (analytic model; the config of " + out.source_text + " " +
                    (wave_broken ? "makes more than one wave at every split" : slower) + ")";
  out.config = own;
  out.source = ConfigSource::model_default;
  return false;
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
    // Conversely, rows that are not 16-byte aligned (dense weights, ld = K) borrow only al
    // configs: a plain config runs there as its al variant (misaligned_variant), a kernel nobody
    // measured (H200: 11008x4096's t128_r1_kw2_v16_u4_sk1_cs_pdl_pf_rc56 on 11008x4095 ran as
    // ..._pf_al in 33.2 us, where 4097x4099's al winner and the model's default, run as al,
    // took 25.1-25.2); without an al entry the model's default runs.
    // The shape's own entries were tried with `usable` before nearest() is asked.
    // Nor one whose L2 prefetch overflows L2 on this shape (prefetch_fits_l2: a pf config tuned
    // on a short K, lent to a long one). Nor a CUDA-core config whose warps' share of a row
    // here is shorter than one trip of its unroll (ModelEstimate::short_trip): that trip repeats
    // its loads past the end, and on the H200 32000x4096's t128_r1_kw2_v16_u8 pick (one full
    // trip a warp there, 7 of 8 loads here) ran 256000x3584 at 0.91x cuBLAS, kw1 u2 at 1.02x
    // (sweeps/h200_bf16_trips_pdl.csv).
    const bool aligned_rows = shape.k * static_cast<std::int64_t>(dtype_size(dtype)) % 16 == 0;
    const auto suits = [&](const std::string& config) {
      const std::optional<KernelConfig> c = usable_config(config, dtype, shape, batch, weights);
      if (!c) return false;
      const bool body_suits = aligned_rows ? !c->aligned_body : is_quantized(weights) || c->aligned_body;
      return body_suits && prefetch_fits_l2(*c, dtype, shape, model) &&
             !estimate(*c, dtype, shape, model, weights).short_trip;
    };
    if (auto peak = cache->peak(gpu)) model.read_ceiling_gbps = peak->gbps;
    const auto take = [&](std::optional<TuneRecord> found) {
      out.config = *usable_config(found->config, dtype, shape, batch, weights);
      const std::string at_batch = found->key.batch != batch ? " at M=" + std::to_string(found->key.batch) : "";
      if (found->key.shape == shape) {
        out.source = found->key.batch == batch ? ConfigSource::exact : ConfigSource::nearest;
        out.source_text = found->key.batch == batch ? "exact" : "same shape" + at_batch;
      } else {
        out.source = ConfigSource::nearest;
        out.source_text = "nearest " + to_string(found->key.shape) + at_batch;
        if (!adapt_borrowed(out, found->key.shape, dtype, shape, batch, weights, model)) {
          out.record.reset();
          out.declined = std::move(found);
          return out;  // the model's default, with source_text saying why
        }
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
  }
  out.config = default_config(dtype, shape, model, batch, weights);
  out.source = ConfigSource::model_default;
  out.source_text = "default (analytic model)";
  return out;
}

}  // namespace gemvtune
