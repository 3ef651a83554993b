// gemvtune fit: the analytic model's constants refitted to what one GPU measured (every passed
// candidate of its tuned problems in the cache, at this build's templates), beside the shipped
// ones (tuner/fit_report.hpp). Needs no GPU. The constants are compiled in (GpuModelParams,
// include/gemvtune/model.hpp): this says what a GPU other than the one they were fitted on
// would want, and how much it would change the model's picks; it changes nothing.
#include <iostream>
#include <set>

#include "cache/json_records.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/generator.hpp"
#include "tuner/fit_report.hpp"

namespace gemvtune::cli {
namespace {

// The GPU whose rows to fit: --gpu, else the cache's only GPU model with entries of this
// build's templates.
GpuIdentity chosen_gpu(const TuningCache& cache, const std::string& gpu_text, bool given) {
  if (given) return parse_gpu_key(gpu_text);
  std::set<std::string> keys;
  GpuIdentity only;
  for (const TuneRecord& r : cache.list())
    if (r.key.template_version == template_version() && keys.insert(r.key.gpu.key()).second) only = r.key.gpu;
  if (keys.empty())
    throw UsageError("nothing tuned in " + cache.path() + " with this build's templates (" + template_version() +
                     "): tune first, then fit");
  if (keys.size() > 1) {
    std::string list;
    for (const std::string& k : keys) list += (list.empty() ? "" : ", ") + ("'" + k + "'");
    throw UsageError("the cache holds several GPU models (" + list + "): choose one with --gpu");
  }
  return only;
}

std::string number(double v) { return fixed(v < 10 ? "%.3f" : "%.1f", v); }

}  // namespace

int cmd_fit(const std::vector<std::string>& args) {
  po::options_description desc("fit options");
  std::string db, gpu_text;
  desc.add_options()
      ("db", po::value(&db), kDbHelp)
      ("gpu", po::value(&gpu_text),
       "the GPU model whose measurements to fit, as `list` shows it, e.g. 'NVIDIA H200/132sm/cc9.0' (needed when "
       "the cache holds several)")
      ("json", "print the report as JSON");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune fit [--db PATH] [--gpu NAME/132sm/cc9.0] [--json]\n"
                    "The model's constants refitted to the cache's measured candidates of one GPU, beside the\n"
                    "shipped ones; needs no GPU and changes nothing (the constants are compiled in)."))
    return kOk;
  const std::string path = db_path(db);
  const std::optional<TuningCache> cache = TuningCache::open_if_present(path);
  if (!cache) throw UsageError("no cache at " + path + ": tune first, then fit");
  const GpuIdentity gpu = chosen_gpu(*cache, gpu_text, vm.count("gpu") > 0);
  const std::vector<FitRow> rows = fit_rows(*cache, gpu);
  if (rows.empty())
    throw UsageError("no measured candidates of " + gpu.key() + " at this build's templates in " + path);
  GpuModelParams shipped;
  shipped.sm_count = gpu.sm_count;
  if (const auto peak = cache->peak(gpu)) shipped.read_ceiling_gbps = peak->gbps;
  const FitReport report = fit_report(rows, shipped);

  if (vm.count("json")) {
    Json constants = Json::array();
    for (const FitConstant& c : report.constants)
      constants.push_back({{"name", c.name}, {"shipped", c.shipped}, {"fitted", c.fitted}, {"rows", c.rows},
                           {"rms_log_error_shipped", c.error_shipped}, {"rms_log_error_fitted", c.error_fitted}});
    const Json out{{"db", path},
                   {"gpu", gpu.key()},
                   {"template_version", template_version()},
                   {"rows", report.rows},
                   {"problems", report.problems},
                   {"constants", constants},
                   {"rms_log_error_shipped", report.error_shipped},
                   {"rms_log_error_fitted", report.error_fitted},
                   {"picks_over_best_shipped", report.picks_shipped},
                   {"picks_over_best_fitted", report.picks_fitted}};
    std::cout << cache::json_text(out, 2) << "\n";
    return kOk;
  }
  std::cout << "model fit for " << gpu.key() << ": " << report.rows << " measured candidates of " << report.problems
            << " problems in " << path << " (templates " << template_version() << ")\n";
  TextTable t({"constant", "shipped", "fitted", "rows", "RMS log error shipped", "fitted"},
              {false, true, true, true, true, true});
  for (const FitConstant& c : report.constants)
    t.add({c.name, number(c.shipped), c.rows ? number(c.fitted) : "-", std::to_string(c.rows),
           c.rows ? fixed("%.3f", c.error_shipped) : "-", c.rows ? fixed("%.3f", c.error_fitted) : "-"});
  t.add({"whole model", "", "", std::to_string(report.rows), fixed("%.3f", report.error_shipped),
         fixed("%.3f", report.error_fitted)});
  t.print(std::cout);
  std::cout << "model's picks over the best measured (geometric mean over the problems): shipped "
            << fixed("%.3f", report.picks_shipped) << "x, fitted " << fixed("%.3f", report.picks_fitted) << "x\n"
            << "(the constants are compiled in: GpuModelParams in include/gemvtune/model.hpp; docs/tuning.md, "
               "\"Fitting the model's constants\")\n";
  return kOk;
}

}  // namespace gemvtune::cli
