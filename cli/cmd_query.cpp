// gemvtune query: which config the runtime would use for a problem (shape, M, dtype, weight
// format) on this GPU, and where it comes from (exact tuned entry, a covering M, nearest tuned
// shape, or the analytic model's default).
#include <filesystem>
#include <iostream>

#include "cli/batch_option.hpp"
#include "cli/weights_option.hpp"
#include "tuner/report_json.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"

namespace gemvtune::cli {


int cmd_query(const std::vector<std::string>& args) {
  po::options_description desc("query options");
  std::string shape_text, dtype_text, weights_text, db, gpu_text;
  std::vector<std::string> batch_texts;
  int device = 0;
  desc.add_options()
      ("shape", po::value(&shape_text)->required(), "NxK, e.g. 4096x14336")
      ("batch", po::value(&batch_texts), "batch M, 1..16 (default 1); an untuned M is answered by a tuned M that covers it")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "fp32, fp16 or bf16 (of x and y)")
      ("weights", po::value(&weights_text)->default_value(kWeightsDefault),
       (std::string(kWeightsHelp) +
        "; only entries tuned for this format are used, and with none the answer is the model's default")
           .c_str())
      ("db", po::value(&db), kDbHelp)
      ("device", po::value(&device)->default_value(0), "GPU ordinal whose model is asked about")
      ("gpu", po::value(&gpu_text),
       "ask about this GPU model instead of a device, as `list` shows it, e.g. 'NVIDIA H200/132sm/cc9.0' "
       "(needs no GPU)")
      ("json", "print the answer as JSON");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune query --shape NxK [--batch M] [--dtype bf16] [--weights dense] [--db PATH] "
                    "[--device 0 | --gpu NAME/132sm/cc9.0] [--json]"))
    return kOk;
  const Shape shape = parse_shape(shape_text);
  const DType dtype = parse_dtype(dtype_text);
  const WeightFormat weights = parse_weights(weights_text, dtype);
  const std::vector<int> batches = parse_batches(batch_texts);
  if (batches.size() != 1) throw UsageError("query answers for one --batch at a time");
  const int batch = batches.front();
  check_weights_fit("query", to_string(TuneJob{shape, dtype, batch, weights}), weights, dtype, shape);
  if (vm.count("gpu") && !vm["device"].defaulted()) throw UsageError("give --device or --gpu, not both");
  const GpuIdentity gpu = vm.count("gpu") ? parse_gpu_key(gpu_text) : jit::read_gpu_info(device).id;
  const std::string path = db_path(db);

  // No cache file yet is a normal state (nothing tuned): the answer is the model's default.
  const std::optional<TuningCache> cache = TuningCache::open_if_present(path);
  const Resolved r = resolve_config(cache ? &*cache : nullptr, gpu, shape, dtype, batch, weights);
  const TuneJob job{shape, dtype, batch, weights};

  // What the runtime launches on this shape's own rows (ld = K, x rows at ldx = K, 16-byte
  // aligned bases): where those rows are not 16-byte aligned a 16-byte config runs as its
  // aligned-body twin (misaligned_variant; a tensor-core one's own at M > 1, on CUDA cores at 1).
  const int width = is_quantized(weights) ? r.config.vec_bytes
                                          : widest_aligned_vec_bytes(r.config, dtype, 0, shape.k, 0, batch > 1 ? shape.k : 0);
  const KernelConfig runs_as = misaligned_variant(r.config, width);
  const bool twin = !(runs_as == r.config);
  using report::Json;

  if (vm.count("json")) {
    Json out = report::query_json(job, gpu, r, path);
    out["runs_as"] = twin ? Json(to_string(runs_as)) : Json(nullptr);
    std::cout << cache::json_text(out, 2) << "\n";
    return kOk;
  }
  std::cout << to_string(job) << (batch > 1 ? " (M x N x K)" : "") << " on " << gpu.key() << " (templates "
            << template_version() << "):\n";
  std::cout << "  config  " << to_string(r.config) << "\n";
  if (twin)
    std::cout << "  runs as " << to_string(runs_as) << " on rows of ld = K, which are not " << r.config.vec_bytes
              << "-byte aligned" << (r.config.family == Family::tensor_core && runs_as.family == Family::cuda_core
                                     ? " (CUDA cores: tensor cores at m tile 1 need aligned rows)"
                                     : "")
              << "\n";
  std::cout << "  source  " << r.source_text << (cache ? "" : " (no cache at " + path + ")") << "\n";
  if (r.record) {
    std::cout << "  stored  " << fixed("%.2f", r.record->time_us) << " us, " << fixed("%.0f", r.record->gbps)
              << " GB/s, " << fixed("%.1f", r.record->pct_of_ceiling) << "% of ceiling"
              << (r.source == ConfigSource::nearest ? " on " + to_string(r.record->key.shape, r.record->key.batch) : "") << " ("
              << r.record->strategy << " strategy, " << utc_date(r.record->timestamp) << ")\n";
  } else {
    if (r.declined)
      std::cout << "  lent    " << r.declined->config << " of " << to_string(r.declined->key.shape, r.declined->key.batch)
                << " (" << fixed("%.2f", r.declined->time_us) << " us there), not used\n";
    GpuModelParams model;
    model.sm_count = gpu.sm_count;
    if (cache)
      if (auto peak = cache->peak(gpu)) model.read_ceiling_gbps = peak->gbps;
    std::cout << "  stored  nothing tuned for "
              << (weights == WeightFormat::dense ? std::string() : std::string(to_string(weights)) + " weights on ")
              << "this GPU model and templates; the model estimates "
              << fixed("%.2f", estimate(runs_as, dtype, shape, model, weights).time_us) << " us\n";
  }
  return kOk;
}

}  // namespace gemvtune::cli
