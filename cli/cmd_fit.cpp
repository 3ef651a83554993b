// gemvtune fit: the analytic model's constants refitted to what one GPU measured (every passed
// candidate of its tuned problems in the cache, at this build's templates), beside the shipped
// ones (tuner/fit_report.hpp). Needs no GPU. The constants are compiled in (GpuModelParams,
// include/gemvtune/model.hpp): this says what a GPU other than the one they were fitted on
// would want, and how much it would change the model's picks; it changes nothing.
#include <iostream>
#include <optional>

#include "cache/json_records.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/generator.hpp"
#include "tuner/fit_report.hpp"
#include "tuner/report_json.hpp"

namespace gemvtune::cli {
namespace {

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
  const CacheFit fit = fit_cache(db_path(db), vm.count("gpu") ? std::optional(parse_gpu_key(gpu_text)) : std::nullopt);
  const FitReport& report = fit.report;
  if (vm.count("json")) {
    std::cout << cache::json_text(report::fit_json(fit), 2) << "\n";
    return kOk;
  }
  std::cout << "model fit for " << fit.gpu.key() << ": " << report.rows << " measured candidates of " << report.problems
            << " problems in " << fit.path << " (templates " << template_version() << ")\n";
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
