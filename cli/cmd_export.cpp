// gemvtune export: the cache as a JSON document (every winner with its candidates, and the
// read ceilings), which `gemvtune import` merges back. Rows this build cannot use are left
// out and listed on stderr, so one bad row never makes a backup that cannot be restored.
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cache/output_file.hpp"
#include "cache/text.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cli {

int cmd_export(const std::vector<std::string>& args) {
  po::options_description desc("export options");
  std::string db, out_path;
  desc.add_options()
      ("db", po::value(&db), kDbHelp)
      ("out", po::value(&out_path)->default_value("-"),
       "file to write (a regular file is replaced atomically; a FIFO, device or symlink is written through), "
       "or - for stdout");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm, "gemvtune export [--db PATH] [--out FILE|-]")) return kOk;
  if (out_path.empty()) throw UsageError("--out is empty: give a file, or - for stdout");
  const TuningCache cache(db_path(db), CacheMode::read_only);
  if (out_path != "-") cache::refuse_cache_files_as_output("--out", out_path, cache.path());

  std::ostringstream text;
  const TuningCache::ExportStats stats = cache.export_json(text);
  if (out_path == "-") {
    std::cout << text.str() << std::flush;
    if (!std::cout) throw Error("cannot write to stdout");
  } else {
    cache::write_output_file(out_path, text.str());
  }
  warn_skipped(cache.path(), stats.skipped, "left out of the export");
  if (out_path != "-")
    std::cerr << "exported " << stats.tuned << " tuned entries and " << stats.peaks << " read ceilings from "
              << cache.path() << " to " << out_path << "\n";
  return kOk;
}

}  // namespace gemvtune::cli
