// The analytic model (see include/gemvtune/model.hpp for the reasoning).
#include "gemvtune/model.hpp"

#include <algorithm>
#include <cmath>

#include "gemvtune/search_space.hpp"

namespace gemvtune {

ModelEstimate estimate(const KernelConfig& c, DType t, const Shape& s, const GpuModelParams& gpu) {
  const double esize = static_cast<double>(dtype_size(t));
  const double bytes = esize * static_cast<double>(s.n) * static_cast<double>(s.k);
  const double row_blocks = std::ceil(static_cast<double>(s.n) / c.block_rows());
  const double blocks = row_blocks * c.split_k;

  // Resident blocks per SM: thread slots, block slots, and a register estimate (weights in
  // flight plus x plus bookkeeping, 4 bytes per register).
  const double regs = 40 + (c.rows_per_warp + 1) * c.unroll * c.vec_bytes / 4.0;
  const double by_regs = std::floor(65536.0 / (std::ceil(regs / 8) * 8 * c.threads));
  const double per_sm = std::max(1.0, std::min({std::floor(double(gpu.max_threads_per_sm) / c.threads),
                                                double(gpu.max_blocks_per_sm), by_regs}));
  const double slots = per_sm * gpu.sm_count;
  const double resident = std::min(blocks, slots);
  const double waves = blocks / slots;

  // Loads a warp keeps in flight: limited by the chunks its K range holds.
  const double elems_per_vec = c.vec_bytes / esize;
  const double k_per_warp = static_cast<double>(s.k) / c.split_k / c.k_warps;
  const double chunks = std::max(1.0, k_per_warp / (32 * elems_per_vec));
  const double loads = std::min<double>(c.unroll, chunks);
  const double warp_bytes = 32.0 * c.vec_bytes * c.rows_per_warp * loads;
  const double in_flight = resident * c.warps() * warp_bytes;

  const double bw = std::min(gpu.read_ceiling_gbps * 1e9, in_flight / (gpu.latency_ns * 1e-9));
  double stream_us = bytes / bw * 1e6;
  // Partial last wave: blocks of the last wave run with fewer neighbours, so the tail runs at
  // the share of the machine it fills. Counted only when there is more than one wave.
  if (waves > 1) {
    const double frac = waves - std::floor(waves);
    if (frac > 0) stream_us *= (std::floor(waves) + 1.0) / waves * 0.25 + 0.75;
  }
  // Split-K: partials written and re-read, plus the fix-up block's serial tail.
  double split_us = 0;
  if (c.split_k > 1) split_us = 0.35 + 2.0 * c.split_k * s.n * 4.0 / (gpu.read_ceiling_gbps * 1e9) * 1e6;
  // Each warp ends with a shuffle reduction and, for k_warps > 1, a barrier.
  const double reduce_us = 0.05 * (c.k_warps > 1 ? 1 : 0);

  ModelEstimate e;
  e.time_us = (c.pdl ? gpu.pdl_launch_us : gpu.launch_us) + stream_us + split_us + reduce_us;
  e.bytes_in_flight = in_flight;
  e.waves = waves;
  return e;
}

std::vector<KernelConfig> rank_by_model(std::vector<KernelConfig> configs, DType t, const Shape& s,
                                        const GpuModelParams& gpu) {
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < configs.size(); ++i) order.emplace_back(estimate(configs[i], t, s, gpu).time_us, i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KernelConfig> out;
  out.reserve(configs.size());
  for (const auto& [time, i] : order) out.push_back(configs[i]);
  return out;
}

KernelConfig default_config(DType t, const Shape& s, const GpuModelParams& gpu) {
  auto ranked = rank_by_model(search_space_for(t, s), t, s, gpu);
  if (!ranked.empty()) return ranked.front();
  KernelConfig c;  // tiny K: no config of the space is valid; fall back to a plain kernel
  c.vec_bytes = static_cast<int>(dtype_size(t));
  return c;
}

}  // namespace gemvtune
