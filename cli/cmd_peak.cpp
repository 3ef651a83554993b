// gemvtune peak: measure a GPU's read ceiling (a streaming read of 4 GiB) and store it in the
// cache; every "% of ceiling" the tuner reports is of this figure.
#include <iostream>

#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"

namespace gemvtune::cli {

int cmd_peak(const std::vector<std::string>& args) {
  po::options_description desc("peak options");
  std::string db;
  int device = 0;
  desc.add_options()
      ("db", po::value(&db), kDbHelp)
      ("device", po::value(&device)->default_value(0), "GPU ordinal");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm, "gemvtune peak [--db PATH] [--device 0]")) return kOk;
  const std::string path = db_path(db);
  jit::Context ctx(device);
  const PeakRecord p = measure_peak(ctx);
  TuningCache cache(path, CacheMode::read_write);
  const std::optional<PeakRecord> before = cache.peak(p.gpu);
  cache.store_peak(p);
  std::cout << p.gpu.key() << ": read ceiling " << fixed("%.0f", p.gbps) << " GB/s (" << fixed("%.1f", p.bytes / 1073741824.0)
            << " GiB streamed, median of " << PeakOptions{}.runs << " runs)";
  if (before) std::cout << ", was " << fixed("%.0f", before->gbps) << " GB/s";
  std::cout << "; stored in " << path << "\n";
  return kOk;
}

}  // namespace gemvtune::cli
