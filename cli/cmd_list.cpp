// gemvtune list: every tuned entry of the cache as a table (or JSON), with each GPU's ceiling.
// Each entry is one problem: GPU, shape, dtype, weight format, batch M and template version.
#include <filesystem>
#include <iostream>
#include <set>

#include "cache/json_records.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::cli {

int cmd_list(const std::vector<std::string>& args) {
  po::options_description desc("list options");
  std::string db;
  desc.add_options()
      ("db", po::value(&db), kDbHelp)
      ("json", "print the entries as JSON, each with its \"weights\" format (without candidates; `export` has "
               "them)");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm, "gemvtune list [--db PATH] [--json]")) return kOk;
  const std::string path = db_path(db);
  const bool json = vm.count("json") > 0;

  std::vector<TuneRecord> records;
  std::vector<PeakRecord> peaks;
  std::vector<std::string> problems;
  // No file yet: nothing tuned, not an error.
  if (const std::optional<TuningCache> cache = TuningCache::open_if_present(path)) {
    records = cache->list();
    problems = cache->problems();
    std::set<std::string> seen;
    for (const TuneRecord& r : records)
      if (seen.insert(r.key.gpu.key()).second)
        if (auto p = cache->peak(r.key.gpu)) peaks.push_back(*p);
  }

  warn_skipped(path, problems, "not listed");
  if (json) {
    Json tuned = Json::array(), ceilings = Json::array();
    for (const TuneRecord& r : records) tuned.push_back(record_json(r, false));
    for (const PeakRecord& p : peaks) ceilings.push_back(peak_json(p));
    std::cout << cache::json_text(Json{{"db", path}, {"template_version", template_version()}, {"tuned", tuned}, {"peaks", ceilings}}, 2)
              << "\n";
    return kOk;
  }
  if (records.empty()) {
    std::cout << "nothing tuned in " << path << "\n";
    return kOk;
  }
  TextTable table({"gpu", "shape", "dtype", "weights", "batch", "config", "us", "GB/s", "% ceiling", "strategy", "templates",
                   "tuned"},
                  {false, false, false, false, true, false, true, true, true, false, false, false});
  bool stale = false;
  for (const TuneRecord& r : records) {
    const bool current = r.key.template_version == template_version();
    stale |= !current;
    table.add({r.key.gpu.key(), to_string(r.key.shape), std::string(to_string(r.key.dtype)),
               std::string(to_string(r.key.weights)), std::to_string(r.key.batch),
               r.config, fixed("%.2f", r.time_us), fixed("%.0f", r.gbps), fixed("%.1f", r.pct_of_ceiling), r.strategy,
               current ? "current" : r.key.template_version + " (old)", utc_date(r.timestamp)});
  }
  std::cout << records.size() << " tuned entries in " << path << "\n";
  table.print(std::cout);
  for (const PeakRecord& p : peaks)
    std::cout << "read ceiling of " << p.gpu.key() << ": " << fixed("%.0f", p.gbps) << " GB/s (" << utc_date(p.timestamp)
              << ")\n";
  if (stale)
    std::cout << "entries of old templates are kept but never used; re-tune them with the current build\n";
  return kOk;
}

}  // namespace gemvtune::cli
