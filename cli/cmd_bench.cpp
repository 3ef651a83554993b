// gemvtune bench: for each shape and batch M, the tuned kernel (from the cache, tuned on the spot if
// missing), the same kernel with PDL off, the untuned analytic default, what a server would run
// with no entry for this shape (the nearest other tuned shape's config: "untuned", when it is
// not the default; the JSON's untuned_source names it) and cuBLAS, all on the
// same rotated weights, each checked against float64 first, then timed in a CUDA graph of
// back-to-back calls and eagerly, cuBLAS at the same M. Prints per-shape rows and geometric
// means per M; --json too. With --weights (quantized W), cuBLAS multiplies the same shape with
// dense weights in the activation dtype: the ratio is what quantizing buys over the dense GEMV.
// GB/s counts the bytes each variant must read (packed weights, scales and zeros).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "cache/json_records.hpp"
#include "bench/cublas_gemv.hpp"
#include "cli/batch_option.hpp"
#include "cli/weights_option.hpp"
#include "cli/cli_common.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/presets.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/loaded_kernels.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "tuner/device_problem.hpp"

namespace gemvtune::cli {

namespace {
struct VariantTiming {
  std::string name, config;
  CallTiming graph, eager;
};

VariantTiming time_variant(const std::string& name, const std::string& config, const LaunchFn& launch,
                           DeviceProblem& problem, const jit::Stream& stream) {
  const Comparison check = verify_calls(launch, problem, stream);
  if (!check.ok)
    throw Error(name + " " + config + " on " + to_string(problem.shape(), problem.batch()) + ": " + check.describe());
  return {name, config, time_calls(launch, problem, stream, LaunchMode::graph),
          time_calls(launch, problem, stream, LaunchMode::eager)};
}

double geomean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += std::log(x);
  return v.empty() ? 0 : std::exp(s / v.size());
}
}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  po::options_description desc("bench options");
  std::vector<std::string> shape_texts, batch_texts;
  std::string preset, dtype_text, db, strategy_text, weights_text;
  int device = 0;
  bool json = false;
  desc.add_options()
      ("shape", po::value(&shape_texts), "NxK (repeatable)")
      ("preset", po::value(&preset), "a shape preset (default llama-3.1-8b when no --shape)")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "fp32, fp16 or bf16")
      ("batch", po::value(&batch_texts), kBatchHelp)
      ("weights", po::value(&weights_text)->default_value(kWeightsDefault), kWeightsHelp)
      ("db", po::value(&db), "tuning cache (default: the user's cache directory)")
      ("strategy", po::value(&strategy_text)->default_value("model"), "for shapes tuned on the spot: model or exhaustive")
      ("device", po::value(&device)->default_value(0), "GPU ordinal")
      ("json", po::bool_switch(&json), "print the results as JSON on stdout (the table goes to stderr)");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune bench [--preset llama-3.1-8b | --shape NxK ...] [--batch 1,2,4,8,16] [--dtype bf16] [--weights int4g128] [--db PATH] [--json]"))
    return kOk;
  std::vector<Shape> shapes;
  for (const auto& t : shape_texts) shapes.push_back(parse_shape(t));
  if (!preset.empty() || shapes.empty())
    for (const auto& p : find_preset(preset.empty() ? "llama-3.1-8b" : preset).shapes) shapes.push_back(p.shape);
  const DType dtype = parse_dtype(dtype_text);
  const WeightFormat weights = parse_weights(weights_text, dtype);
  const bool quantized = is_quantized(weights);
  const std::vector<int> batches = parse_batches(batch_texts);
  for (const Shape& s : shapes) check_weights_fit("bench", to_string(TuneJob{s, dtype, 1, weights}), weights, dtype, s);
  TuneOptions tune_options;
  tune_options.strategy = parse_strategy(strategy_text);
  if (db.empty()) db = TuningCache::default_path();

  std::FILE* table = json ? stderr : stdout;
  jit::Context ctx(device);
  const GpuInfo& gpu = ctx.info();
  TuningCache cache(db, CacheMode::read_write);
  Tuner tuner(ctx, cache);
  const double ceiling = tuner.ceiling_gbps();
  GpuModelParams model;
  model.sm_count = gpu.id.sm_count;
  model.read_ceiling_gbps = ceiling;
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  bench::CublasGemv cublas;

  std::fprintf(table, "gemvtune bench: %s, driver API %d, NVRTC %s, %s%s, read ceiling %.0f GB/s, templates %s\n",
               gpu.id.name.c_str(), gpu.driver_version, jit::nvrtc_version().c_str(),
               std::string(to_string(dtype)).c_str(),
               quantized ? (" activations, " + std::string(to_string(weights)) + " weights (cuBLAS: dense " +
                            std::string(to_string(dtype)) + " weights)").c_str()
                         : "",
               ceiling, template_version().c_str());
  std::fprintf(table, "%-12s %3s %-16s %-40s %9s %7s %6s %7s %9s %7s\n", "shape", "M", "variant", "config",
               "graph us", "GB/s", "%ceil", "xcuBLAS", "eager us", "xcuBLAS");
  nlohmann::json out = {{"gpu", gpu.id.name}, {"driver_version", gpu.driver_version},
                        {"nvrtc", jit::nvrtc_version()}, {"dtype", to_string(dtype)},
                        {"weights", to_string(weights)},
                        {"ceiling_gbps", ceiling}, {"template_version", template_version()},
                        {"shapes", nlohmann::json::array()}};
  struct Ratios {
    std::vector<double> graph, eager, default_graph;
  };
  std::vector<Ratios> ratios(batches.size());
  // Every problem the cache lacks is tuned before anything is timed, so that each problem's
  // "untuned" variant (the nearest other tuned shape) sees the same cache whatever the order
  // of the shapes.
  std::set<std::string> tuned_now;
  for (const Shape& shape : shapes)
    for (const int m : batches) {
      const TuneJob job{shape, dtype, m, weights};
      if (resolve_config(&cache, gpu.id, shape, dtype, m, weights).source == ConfigSource::exact) continue;
      std::fprintf(stderr, "%s: not tuned yet, tuning now (%s strategy)\n", to_string(job).c_str(),
                   strategy_text.c_str());
      tuner.tune(job, tune_options);
      tuned_now.insert(to_string(job));
    }
  for (const Shape& shape : shapes)
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    const int m = batches[bi];
    const TuneJob job{shape, dtype, m, weights};
    const Resolved r = resolve_config(&cache, gpu.id, shape, dtype, m, weights);
    const std::string source = tuned_now.count(to_string(job)) ? "tuned now" : r.source_text;
    DeviceProblem problem(dtype, shape, shape.k, kMeasureSeed, rotation_bytes(gpu), m, 0, 0, weights);
    std::optional<DeviceProblem> dense;  // cuBLAS's, when W is quantized
    if (quantized) dense.emplace(dtype, shape, shape.k, kMeasureSeed, rotation_bytes(gpu), m);
    DeviceProblem& cublas_problem = quantized ? *dense : problem;
    auto gemvtune_variant = [&](const std::string& name, KernelConfig c) {
      const auto op = problem.operands(0);
      if (!quantized) c = misaligned_variant(c, widest_aligned_vec_bytes(c, dtype, op.w, op.ld, op.x, op.ldx));
      auto k = kernels.get(c, dtype, weights);
      problem.workspace().reserve(c, shape);
      const LaunchFn launch = [&, k, c](int copy, CUstream s) {
        jit::launch_gemv(*k, c, problem.operands(copy), problem.workspace(), s);
      };
      return time_variant(name, to_string(c), launch, problem, stream);
    };
    std::vector<VariantTiming> rows;
    const LaunchFn cublas_launch = [&](int copy, CUstream s) { cublas.launch(dtype, cublas_problem.operands(copy), s); };
    const VariantTiming base = time_variant("cuBLAS", "cublasGemmEx", cublas_launch, cublas_problem, stream);
    rows.push_back(gemvtune_variant("tuned", r.config));
    KernelConfig no_pdl = r.config;
    no_pdl.pdl = false;
    no_pdl.prefetch_l2 = false;
    if (r.config.pdl) rows.push_back(gemvtune_variant("tuned, no PDL", no_pdl));
    const KernelConfig analytic = default_config(dtype, shape, model, m, weights);
    const std::size_t default_row = rows.size();
    rows.push_back(gemvtune_variant("default", analytic));
    // What a server gets for this shape with no entry of its own: the nearest other tuned shape's
    // config, when that is not the model's default (timed above).
    const Resolved untuned = resolve_config(&cache, gpu.id, shape, dtype, m, weights, ResolveScope::other_shapes);
    if (untuned.source != ConfigSource::model_default && !(untuned.config == analytic))
      rows.push_back(gemvtune_variant("untuned", untuned.config));
    rows.push_back(base);
    ratios[bi].graph.push_back(base.graph.us_per_call / rows[0].graph.us_per_call);
    ratios[bi].eager.push_back(base.eager.us_per_call / rows[0].eager.us_per_call);
    ratios[bi].default_graph.push_back(base.graph.us_per_call / rows[default_row].graph.us_per_call);
    nlohmann::json js = {{"shape", to_string(shape)}, {"batch", m}, {"source", source},
                         {"untuned_source", untuned.source_text}, {"variants", nlohmann::json::array()}};
    for (const auto& v : rows) {
      const double gx = base.graph.us_per_call / v.graph.us_per_call, ex = base.eager.us_per_call / v.eager.us_per_call;
      std::fprintf(table, "%-12s %3d %-16s %-40s %9.2f %7.0f %6.1f %7.2f %9.2f %7.2f\n", to_string(shape).c_str(), m,
                   v.name.c_str(), v.config.c_str(), v.graph.us_per_call, v.graph.gbps, 100 * v.graph.gbps / ceiling,
                   gx, v.eager.us_per_call, ex);
      js["variants"].push_back({{"variant", v.name}, {"config", v.config}, {"graph_us", v.graph.us_per_call},
                                {"graph_gbps", v.graph.gbps}, {"pct_of_ceiling", 100 * v.graph.gbps / ceiling},
                                {"graph_vs_cublas", gx}, {"eager_us", v.eager.us_per_call},
                                {"eager_gbps", v.eager.gbps}, {"eager_vs_cublas", ex}});
    }
    out["shapes"].push_back(js);
    std::fflush(table);
  }
  out["geomeans"] = nlohmann::json::array();
  for (std::size_t bi = 0; bi < batches.size(); ++bi) {
    const Ratios& q = ratios[bi];
    std::fprintf(table,
                 "geometric mean vs cuBLAS at M=%d: tuned %.2fx in graph mode, %.2fx eager; untuned default %.2fx in "
                 "graph mode\n",
                 batches[bi], geomean(q.graph), geomean(q.eager), geomean(q.default_graph));
    out["geomeans"].push_back({{"batch", batches[bi]}, {"graph_vs_cublas", geomean(q.graph)},
                               {"eager_vs_cublas", geomean(q.eager)},
                               {"default_graph_vs_cublas", geomean(q.default_graph)}});
  }
  // At a single M, the round-1 keys too, so existing scripts keep reading them.
  if (batches.size() == 1) {
    out["geomean_graph_vs_cublas"] = geomean(ratios[0].graph);
    out["geomean_eager_vs_cublas"] = geomean(ratios[0].eager);
    out["geomean_default_graph_vs_cublas"] = geomean(ratios[0].default_graph);
  }
  if (json) std::cout << cache::json_text(out, 2) << "\n";
  return kOk;
}

}  // namespace gemvtune::cli
