// gemvtune export / import: the cache as a JSON document (every winner with its candidates,
// and the read ceilings), and merging such a document into a cache (the faster entry stays).
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cli {

int cmd_export(const std::vector<std::string>& args) {
  po::options_description desc("export options");
  std::string db, out_path;
  desc.add_options()
      ("db", po::value(&db), kDbHelp)
      ("out", po::value(&out_path)->default_value("-"), "file to write, or - for stdout");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm, "gemvtune export [--db PATH] [--out FILE|-]")) return kOk;
  const TuningCache cache(db_path(db), CacheMode::read_only);
  if (out_path == "-") {
    cache.export_json(std::cout);
    return kOk;
  }
  // Written beside the target and renamed into place, so a failed export never leaves a
  // truncated file where a good one was.
  const std::string partial = out_path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write '" + partial + "'");
    try {
      cache.export_json(out);
      out.close();
      if (!out) throw Error("writing '" + partial + "' failed");
    } catch (...) {
      std::remove(partial.c_str());
      throw;
    }
  }
  if (std::rename(partial.c_str(), out_path.c_str()) != 0) {
    std::remove(partial.c_str());
    throw Error("cannot rename '" + partial + "' to '" + out_path + "'");
  }
  std::cerr << "exported " << cache.list().size() << " tuned entries from " << cache.path() << " to " << out_path << "\n";
  return kOk;
}

int cmd_import(const std::vector<std::string>& args) {
  po::options_description desc("import options");
  std::string db, in_path;
  desc.add_options()
      ("file", po::value(&in_path)->required(), "JSON written by `gemvtune export`, or - for stdin")
      ("db", po::value(&db), kDbHelp);
  po::positional_options_description positional;
  positional.add("file", 1);
  po::variables_map vm;
  if (parse_or_help(args, desc, positional, vm,
                    "gemvtune import FILE [--db PATH]\n"
                    "For a shape in both, the faster entry stays (the existing one on a tie); for a GPU's read\n"
                    "ceiling, the higher one."))
    return kOk;
  std::ifstream file;
  if (in_path != "-") {
    file.open(in_path, std::ios::binary);
    if (!file) throw InvalidArgument("cannot open '" + in_path + "'");
  }
  TuningCache cache(db_path(db), CacheMode::read_write);
  const TuningCache::ImportStats stats = cache.import_json(in_path == "-" ? std::cin : file);
  std::cout << "imported " << (in_path == "-" ? "stdin" : in_path) << " into " << cache.path() << ": " << stats.added
            << " added, " << stats.replaced << " replaced, " << stats.kept << " kept\n";
  return kOk;
}

}  // namespace gemvtune::cli
