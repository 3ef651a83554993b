// gemvtune import: merges a JSON document written by `gemvtune export` into a cache (the
// faster entry stays). The document is read and checked completely before the cache is
// opened, so a refused import creates, initialises or converts no file.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cache/text.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cli {
namespace {

// The document in `path` ("-": stdin). Errors name the file and exit 2 (InvalidArgument).
CacheDocument read_document(const std::string& path) {
  if (path == "-") return read_cache_json(std::cin, "stdin");
  const std::string shown = cache::abbreviated(path, 1000);  // a 100 KB argument stays short
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InvalidArgument("'" + shown + "' is a directory, not a JSON file written by `gemvtune export`");
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InvalidArgument("cannot open '" + shown + "': " + std::strerror(errno));
  return read_cache_json(file, shown);
}

}  // namespace

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
                    "ceiling, the higher one. Nothing is written unless the whole file is valid."))
    return kOk;
  if (in_path.empty()) throw UsageError("FILE is empty: give a JSON file, or - for stdin");
  const CacheDocument doc = read_document(in_path);
  TuningCache cache(db_path(db), CacheMode::read_write);
  const TuningCache::ImportStats stats = cache.import_document(doc);
  std::cout << "imported " << (in_path == "-" ? "stdin" : in_path) << " into " << cache.path() << ": " << stats.added
            << " added, " << stats.replaced << " replaced, " << stats.kept << " kept; read ceilings: "
            << stats.peaks_added << " added, " << stats.peaks_raised << " raised, " << stats.peaks_kept << " kept\n";
  return kOk;
}

}  // namespace gemvtune::cli
