// gemvtune::TuningCache: the public API over one cache connection. Opening and schema work
// live in open.cpp/schema.cpp, SQL in tuned_rows.cpp/peak_rows.cpp; this file only adds
// validation, transactions and the nearest-shape search.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "cache/cache_impl.hpp"
#include "cache/open.hpp"
#include "cache/peak_rows.hpp"
#include "cache/tuned_rows.hpp"
#include "cache/validate.hpp"

namespace gemvtune {

TuningCache::TuningCache(const std::string& path, CacheMode mode)
    : impl_(std::make_unique<Impl>(Impl{cache::open_cache(path, mode), mode})) {}

std::optional<TuningCache> TuningCache::open_if_present(const std::string& path) {
  std::error_code unreadable;
  if (!std::filesystem::exists(path, unreadable) && !unreadable) return std::nullopt;
  return TuningCache(path, CacheMode::read_only);
}

TuningCache::~TuningCache() = default;
TuningCache::TuningCache(TuningCache&&) noexcept = default;
TuningCache& TuningCache::operator=(TuningCache&&) noexcept = default;

const std::string& TuningCache::path() const { return impl_->conn.path(); }

CacheMode TuningCache::mode() const { return impl_->mode; }

void TuningCache::store(const TuneRecord& r) {
  cache::validate_record(r);
  impl_->require_read_write("store");
  cache::WriteTransaction tx(impl_->conn);
  cache::replace_tuned(impl_->conn, r);
  tx.commit();
}

std::optional<TuneRecord> TuningCache::find(const CacheKey& k, bool with_candidates) const {
  return cache::load_tuned(impl_->conn, k, with_candidates);
}

bool TuningCache::contains(const CacheKey& k) const {
  return cache::load_tuned_time(impl_->conn, k).has_value();
}

std::vector<TuneRecord> TuningCache::list() const {
  return cache::load_all_tuned(impl_->conn, false);
}

std::optional<TuneRecord> TuningCache::nearest(const CacheKey& k,
                                               const std::function<bool(const std::string& config)>& usable,
                                               bool other_shapes_only) const {
  // A log distance makes 4096 -> 8192 as far as 8192 -> 16384: what matters for a GEMV's
  // behaviour is the ratio of sizes, not their difference.
  if (k.shape.n <= 0 || k.shape.k <= 0) return std::nullopt;
  const auto distance = [&k](const Shape& s) {
    return std::abs(std::log(static_cast<double>(k.shape.n) / static_cast<double>(s.n))) +
           std::abs(std::log(static_cast<double>(k.shape.k) / static_cast<double>(s.k)));
  };
  std::vector<TuneRecord> family = cache::load_same_family(impl_->conn, k);
  std::vector<std::pair<double, std::size_t>> order;  // (distance, index), ties by (n, k)
  order.reserve(family.size());
  for (std::size_t i = 0; i < family.size(); ++i) {
    if (family[i].key.shape.n <= 0 || family[i].key.shape.k <= 0) continue;
    if (other_shapes_only && family[i].key.shape == k.shape) continue;
    order.emplace_back(distance(family[i].key.shape), i);
  }
  // family is ordered by (n, k), so a stable sort by distance breaks ties by (n, k).
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [d, i] : order) {
    if (!usable || usable(family[i].config)) return std::move(family[i]);
  }
  return std::nullopt;
}

void TuningCache::store_peak(const PeakRecord& p) {
  cache::validate_peak(p);
  impl_->require_read_write("store a peak");
  cache::WriteTransaction tx(impl_->conn);
  cache::replace_peak(impl_->conn, p);
  tx.commit();
}

std::optional<PeakRecord> TuningCache::peak(const GpuIdentity& gpu) const {
  return cache::load_peak(impl_->conn, gpu);
}

}  // namespace gemvtune
