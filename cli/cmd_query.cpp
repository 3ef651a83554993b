// gemvtune query: which config the runtime would use for a shape on this GPU, and where it
// comes from (exact tuned entry, nearest tuned shape, or the analytic model's default).
#include <filesystem>
#include <iostream>

#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"

namespace gemvtune::cli {

namespace {
// "NVIDIA H200/132sm/cc9.0" (GpuIdentity::key()) back into its parts; the name may hold '/'.
GpuIdentity parse_gpu_key(const std::string& text) {
  auto bad = [&] {
    return UsageError("bad --gpu '" + text + "': expected NAME/<SMs>sm/cc<major>.<minor>, e.g. 'NVIDIA H200/132sm/cc9.0'");
  };
  const auto cc = text.rfind('/');
  if (cc == std::string::npos || cc == 0) throw bad();
  const auto sm = text.rfind('/', cc - 1);
  if (sm == std::string::npos || sm == 0) throw bad();
  GpuIdentity id;
  id.name = text.substr(0, sm);
  const std::string sm_text = text.substr(sm + 1, cc - sm - 1), cc_text = text.substr(cc + 1);
  int major = 0, minor = 0, sms = 0;
  char tail = 0;
  if (std::sscanf(sm_text.c_str(), "%dsm%c", &sms, &tail) != 1 || sm_text != std::to_string(sms) + "sm") throw bad();
  if (std::sscanf(cc_text.c_str(), "cc%d.%d%c", &major, &minor, &tail) != 2 ||
      cc_text != "cc" + std::to_string(major) + "." + std::to_string(minor))
    throw bad();
  id.sm_count = sms;
  id.cc_major = major;
  id.cc_minor = minor;
  if (id.key() != text || sms <= 0) throw bad();
  return id;
}
}  // namespace

int cmd_query(const std::vector<std::string>& args) {
  po::options_description desc("query options");
  std::string shape_text, dtype_text, db, gpu_text;
  int device = 0;
  desc.add_options()
      ("shape", po::value(&shape_text)->required(), "NxK, e.g. 4096x14336")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "fp32, fp16 or bf16")
      ("db", po::value(&db), kDbHelp)
      ("device", po::value(&device)->default_value(0), "GPU ordinal whose model is asked about")
      ("gpu", po::value(&gpu_text),
       "ask about this GPU model instead of a device, as `list` shows it, e.g. 'NVIDIA H200/132sm/cc9.0' "
       "(needs no GPU)")
      ("json", "print the answer as JSON");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune query --shape NxK [--dtype bf16] [--db PATH] [--device 0 | --gpu NAME/132sm/cc9.0] [--json]"))
    return kOk;
  const Shape shape = parse_shape(shape_text);
  const DType dtype = parse_dtype(dtype_text);
  if (vm.count("gpu") && !vm["device"].defaulted()) throw UsageError("give --device or --gpu, not both");
  const GpuIdentity gpu = vm.count("gpu") ? parse_gpu_key(gpu_text) : jit::read_gpu_info(device).id;
  const std::string path = db_path(db);

  // No cache file yet is a normal state (nothing tuned): the answer is the model's default.
  std::optional<TuningCache> cache;
  if (std::filesystem::exists(path)) cache.emplace(path, CacheMode::read_only);
  const Resolved r = resolve_config(cache ? &*cache : nullptr, gpu, shape, dtype);

  if (vm.count("json")) {
    Json j{{"shape", to_string(shape)},
           {"dtype", std::string(to_string(dtype))},
           {"gpu", gpu.key()},
           {"template_version", template_version()},
           {"config", to_string(r.config)},
           {"source", std::string(to_string(r.source))},
           {"source_text", r.source_text},
           {"db", path},
           {"record", r.record ? record_json(*r.record, false) : Json(nullptr)}};
    std::cout << j.dump(2) << "\n";
    return kOk;
  }
  std::cout << to_string(shape) << " " << to_string(dtype) << " on " << gpu.key() << " (templates "
            << template_version() << "):\n";
  std::cout << "  config  " << to_string(r.config) << "\n";
  std::cout << "  source  " << r.source_text << (cache ? "" : " (no cache at " + path + ")") << "\n";
  if (r.record) {
    std::cout << "  stored  " << fixed("%.2f", r.record->time_us) << " us, " << fixed("%.0f", r.record->gbps)
              << " GB/s, " << fixed("%.1f", r.record->pct_of_ceiling) << "% of ceiling"
              << (r.source == ConfigSource::nearest ? " on " + to_string(r.record->key.shape) : "") << " ("
              << r.record->strategy << " strategy, " << utc_date(r.record->timestamp) << ")\n";
  } else {
    GpuModelParams model;
    model.sm_count = gpu.sm_count;
    if (cache)
      if (auto peak = cache->peak(gpu)) model.read_ceiling_gbps = peak->gbps;
    std::cout << "  stored  nothing tuned for this GPU model and templates; the model estimates "
              << fixed("%.2f", estimate(r.config, dtype, shape, model).time_us) << " us\n";
  }
  return kOk;
}

}  // namespace gemvtune::cli
