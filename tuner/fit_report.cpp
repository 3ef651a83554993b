// fit_report and fit_rows (see fit_report.hpp).
#include "tuner/fit_report.hpp"

#include <map>
#include <set>
#include <tuple>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune {
namespace {

bool informs_any(const FitRow& r) { return r.us > 0; }

FitConstant constant(const char* name, double shipped, double fitted, std::size_t rows,
                     const std::vector<FitRow>& all, const GpuModelParams& before, const GpuModelParams& after,
                     FitRowFilter informs) {
  FitConstant c{name, shipped, fitted, rows, 0, 0};
  if (rows > 0) {
    c.error_shipped = rms_log_error(all, before, informs);
    c.error_fitted = rms_log_error(all, after, informs);
  }
  return c;
}

// The fastest row of each problem without PDL and the fastest with it: what the shipped launch
// terms were fitted to (docs/tuning.md). Over every candidate the median residual would be a
// slow config's, not the launch's.
std::vector<FitRow> best_with_and_without_pdl(const std::vector<FitRow>& rows) {
  std::map<std::tuple<std::int64_t, std::int64_t, int, DType, WeightFormat, bool>, FitRow> best;
  for (const FitRow& r : rows) {
    if (!(r.us > 0)) continue;
    auto [it, added] = best.try_emplace({r.shape.n, r.shape.k, r.m, r.dtype, r.weights, r.config.pdl}, r);
    if (!added && r.us < it->second.us) it->second = r;
  }
  std::vector<FitRow> out;
  for (const auto& [key, r] : best) out.push_back(r);
  return out;
}

}  // namespace

std::vector<FitRow> fit_rows(const TuningCache& cache, const GpuIdentity& gpu) {
  const std::optional<PeakRecord> peak = cache.peak(gpu);
  std::vector<FitRow> rows;
  for (const TuneRecord& listed : cache.list()) {
    if (!(listed.key.gpu == gpu) || listed.key.template_version != template_version()) continue;
    const std::optional<TuneRecord> r = cache.find(listed.key, true);
    if (!r) continue;
    for (const CandidateResult& c : r->candidates) {
      if (c.outcome != Outcome::passed || !(c.time_us > 0)) continue;
      FitRow row;
      try {
        row.config = parse_config(c.config);
      } catch (const InvalidArgument&) {
        continue;
      }
      row.dtype = r->key.dtype;
      row.shape = r->key.shape;
      row.m = r->key.batch;
      row.us = c.time_us;
      row.ceiling_gbps = peak ? peak->gbps : 0;
      row.weights = r->key.weights;
      rows.push_back(row);
    }
  }
  return rows;
}

FitReport fit_report(const std::vector<FitRow>& rows, const GpuModelParams& shipped) {
  FitReport out;
  // The launch terms first: the dense M = 1 rows they are fitted to depend on no issue share,
  // while every row's time includes a launch, so the shares are fitted on top of them.
  GpuModelParams fitted = shipped;
  const std::vector<FitRow> best = best_with_and_without_pdl(rows);
  const LaunchFit l = fit_launch(best, shipped);
  if (l.rows > 0) fitted.launch_us = l.launch_us;
  if (l.pdl_rows > 0) fitted.pdl_launch_us = l.pdl_launch_us;
  const IssueShareFit cc = fit_cuda_core_issue_share(rows, fitted);
  if (cc.rows > 0) fitted.cuda_core_issue_share = cc.share;
  const QuantizedIssueFit q = fit_quantized_issue(rows, fitted);
  if (q.rows > 0) fitted.quantized_issue_share = q.share, fitted.quantized_issue_warps = q.warps;
  out.fitted = fitted;

  out.constants.push_back(constant("cuda_core_issue_share", shipped.cuda_core_issue_share, fitted.cuda_core_issue_share,
                                   cc.rows, rows, shipped, fitted, informs_cuda_core_issue_share));
  out.constants.push_back(constant("quantized_issue_share", shipped.quantized_issue_share, fitted.quantized_issue_share,
                                   q.rows, rows, shipped, fitted, informs_quantized_issue_share));
  out.constants.push_back(constant("quantized_issue_warps", shipped.quantized_issue_warps, fitted.quantized_issue_warps,
                                   q.rows, rows, shipped, fitted, informs_quantized_issue_share));
  out.constants.push_back(constant("launch_us", shipped.launch_us, fitted.launch_us, l.rows, best, shipped, fitted,
                                   informs_launch));
  out.constants.push_back(constant("pdl_launch_us", shipped.pdl_launch_us, fitted.pdl_launch_us, l.pdl_rows, best,
                                   shipped, fitted, informs_launch));

  out.error_shipped = rms_log_error(rows, shipped, informs_any, &out.rows);
  out.error_fitted = rms_log_error(rows, fitted, informs_any);
  out.picks_shipped = picks_over_best(rows, shipped, informs_any, &out.problems);
  out.picks_fitted = picks_over_best(rows, fitted, informs_any);
  return out;
}

CacheFit fit_cache(const std::string& path, const std::optional<GpuIdentity>& gpu) {
  const std::optional<TuningCache> cache = TuningCache::open_if_present(path);
  if (!cache) throw InvalidArgument("no cache at " + path + ": tune first, then fit");
  CacheFit out{path, {}, {}};
  if (gpu) {
    out.gpu = *gpu;
  } else {
    std::set<std::string> keys;
    for (const TuneRecord& r : cache->list())
      if (r.key.template_version == template_version() && keys.insert(r.key.gpu.key()).second) out.gpu = r.key.gpu;
    if (keys.empty())
      throw InvalidArgument("nothing tuned in " + path + " with this build's templates (" + template_version() +
                            "): tune first, then fit");
    if (keys.size() > 1) {
      std::string list;
      for (const std::string& k : keys) list += (list.empty() ? "'" : ", '") + k + "'";
      throw InvalidArgument("the cache holds several GPU models (" + list + "): choose one with --gpu");
    }
  }
  const std::vector<FitRow> rows = fit_rows(*cache, out.gpu);
  if (rows.empty())
    throw InvalidArgument("no measured candidates of " + out.gpu.key() + " at this build's templates in " + path);
  GpuModelParams shipped;
  shipped.sm_count = out.gpu.sm_count;
  if (const auto peak = cache->peak(out.gpu)) shipped.read_ceiling_gbps = peak->gbps;
  out.report = fit_report(rows, shipped);
  return out;
}

}  // namespace gemvtune
