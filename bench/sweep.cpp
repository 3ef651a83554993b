// gemvtune-sweep: a developer's tool. Measures every config of the search space on each shape
// (graph mode, each checked first), prints the fastest few beside cuBLAS, and writes every
// measurement as CSV (shape,dtype,config,us,gbps,model_us) for studying the model offline.
// Usage: [GEMVTUNE_SWEEP_FILTER=text[+text...]] gemvtune-sweep OUT.csv DTYPE[:WEIGHTS] SHAPE...
// GEMVTUNE_SWEEP_CONFIGS=CONFIG[,CONFIG...] times exactly these configs on every shape instead of
// the search space (an experiment: a config outside the shape's space, such as an aligned body
// on aligned rows); one that cannot run a shape is reported and skipped.
// GEMVTUNE_SWEEP_NEIGHBOR=NxK[:CONFIG] times each config between calls of another shape, as a
// decode step runs it: a graph of [neighbour, config] pairs, the neighbour (same dtype, weights
// and M; CONFIG, or the model's default) on weights rotating over copies of its own. The CSV's
// us is then the pair's time less the neighbour's own back-to-back time: picks that tie alone
// can differ there under PDL (docs/tuning.md, "Timing that measures HBM").
// GEMVTUNE_SWEEP_SPREAD=1 times each config twice, one after the other: as the scheduler places
// its blocks, then with jit::Placement::spread (a grid of less than a wave capped at
// ceil(blocks / SMs) blocks an SM); the second's CSV row names the config with "+spread" after it.
// Where the grid is more than a wave the two launches are the same, so their difference is noise.
// (WEIGHTS: a quantized format such as int4g128; cuBLAS then runs the dense DTYPE problem.
// SHAPE: NxK at M = 1, or MxNxK for batch M, as bench prints it; the CSV's shape column keeps
// the argument's text.)
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>

#include "bench/cublas_gemv.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/search_space.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"

using namespace gemvtune;

namespace {
// "NxK" (M = 1) or "MxNxK".
std::pair<int, Shape> parse_batched_shape(const std::string& text) {
  const auto first = text.find('x');
  if (first != std::string::npos && text.find('x', first + 1) != std::string::npos) {
    const std::string mt = text.substr(0, first);
    const bool digits = !mt.empty() && mt.size() <= 2 && std::all_of(mt.begin(), mt.end(), ::isdigit);
    const int m = digits ? std::stoi(mt) : 0;
    if (m < 1 || m > kMaxBatch)
      throw InvalidArgument("batch M of '" + text + "' must be 1.." + std::to_string(kMaxBatch) + " (MxNxK)");
    return {m, parse_shape(text.substr(first + 1))};
  }
  return {1, parse_shape(text)};
}
}  // namespace

int main(int argc, char** argv) try {
  const bool help = argc > 1 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help");
  if (argc < 4 || help) {
    (help ? std::cout : std::cerr) << "usage: gemvtune-sweep OUT.csv DTYPE[:WEIGHTS] SHAPE...\n"
                 "  SHAPE: NxK (M = 1) or MxNxK; WEIGHTS: a quantized format such as int4g128\n"
                 "  GEMVTUNE_SWEEP_FILTER=text[+text...]  only the configs whose name has every text\n"
                 "  GEMVTUNE_SWEEP_CONFIGS=C1,C2,...      exactly these configs instead of the search space\n"
                 "  GEMVTUNE_SWEEP_NEIGHBOR=NxK[:CONFIG]  time each config after a call of this shape (us: the\n"
                 "                                        pair's time less the neighbour's own)\n"
                 "  GEMVTUNE_SWEEP_SPREAD=1               also time each config with its one-wave grid spread over\n"
                 "                                        every SM (rows CONFIG+spread)\n";
    return help ? 0 : 2;
  }
  const std::string type_arg = argv[2];
  const auto colon = type_arg.find(':');
  const DType t = parse_dtype(type_arg.substr(0, colon));
  const WeightFormat w = colon == std::string::npos ? WeightFormat::dense : parse_weight_format(type_arg.substr(colon + 1));
  std::vector<std::pair<int, Shape>> problems;  // (M, shape) of each SHAPE argument, checked before the GPU opens
  std::vector<int> batches;
  for (int a = 3; a < argc; ++a) {
    problems.push_back(parse_batched_shape(argv[a]));
    batches.push_back(problems.back().first);
  }
  std::sort(batches.begin(), batches.end());
  batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
  std::optional<std::vector<KernelConfig>> listed;  // GEMVTUNE_SWEEP_CONFIGS, checked before the GPU opens
  if (const char* text = std::getenv("GEMVTUNE_SWEEP_CONFIGS")) {
    listed.emplace();
    std::string all = text;
    for (std::size_t b = 0; b <= all.size();) {
      const std::size_t e = std::min(all.find(',', b), all.size());
      if (e > b) try {
          listed->push_back(parse_config(all.substr(b, e - b)));
        } catch (const InvalidArgument& err) {
          throw InvalidArgument(std::string("GEMVTUNE_SWEEP_CONFIGS: ") + err.what());
        }
      b = e + 1;
    }
    if (listed->empty()) throw InvalidArgument("GEMVTUNE_SWEEP_CONFIGS names no config");
  }
  // GEMVTUNE_SWEEP_NEIGHBOR, checked before the GPU opens: the shape, and the config if given.
  std::optional<Shape> neighbor_shape;
  std::optional<KernelConfig> neighbor_config;
  if (const char* text = std::getenv("GEMVTUNE_SWEEP_NEIGHBOR")) {
    const std::string all = text;
    const auto colon_at = all.find(':');
    try {
      neighbor_shape = parse_shape(all.substr(0, colon_at));
      if (colon_at != std::string::npos) neighbor_config = parse_config(all.substr(colon_at + 1));
    } catch (const InvalidArgument& err) {
      throw InvalidArgument(std::string("GEMVTUNE_SWEEP_NEIGHBOR: ") + err.what());
    }
    if (neighbor_config)
      for (int m : batches)
        if (const auto why = why_invalid_for(*neighbor_config, t, *neighbor_shape, m, w))
          throw InvalidArgument("GEMVTUNE_SWEEP_NEIGHBOR: " + to_string(*neighbor_config) + " cannot run " +
                                to_string(*neighbor_shape) + " at M = " + std::to_string(m) + ": " + *why);
  }
  const char* spread_text = std::getenv("GEMVTUNE_SWEEP_SPREAD");
  const bool spread = spread_text && std::string(spread_text) != "0";
  if (spread && neighbor_shape) throw InvalidArgument("GEMVTUNE_SWEEP_SPREAD and GEMVTUNE_SWEEP_NEIGHBOR do not combine");
  // OUT.csv last of the arguments, so a mistyped rerun does not empty an earlier sweep's file.
  std::ofstream csv(argv[1]);
  if (!csv) throw InvalidArgument(std::string("cannot write '") + argv[1] + "'");
  csv << "shape,dtype,config,us,gbps,model_us\n";
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  std::vector<std::future<void>> jobs;
  const char* filter = std::getenv("GEMVTUNE_SWEEP_FILTER");  // only configs containing this text
  const auto wanted = [filter](const KernelConfig& c) { return !filter || config_text_matches(to_string(c), filter); };
  for (int m : batches)
    for (const KernelConfig& c : listed ? *listed : distinct_kernels(default_search_space(t, m, w)))
      if (wanted(c)) jobs.push_back(std::async(std::launch::async, [&kernels, c, t, w] { kernels.get(c, t, w); }));
  for (auto& j : jobs) j.get();
  jit::Stream stream;
  bench::CublasGemv cublas;
  GpuModelParams gpu;
  gpu.sm_count = ctx.info().id.sm_count;
  for (int a = 3; a < argc; ++a) {
    const auto [m, s] = problems[a - 3];
    DeviceProblem p(t, s, s.k, kMeasureSeed, rotation_bytes(ctx.info()), m, 0, 0, w);
    std::optional<DeviceProblem> dense;  // cuBLAS's problem when W is quantized
    if (is_quantized(w)) dense.emplace(t, s, s.k, kMeasureSeed, rotation_bytes(ctx.info()), m);
    DeviceProblem& pc = dense ? *dense : p;
    std::vector<std::pair<double, std::string>> results;
    const jit::GemvOperands op0 = p.operands(0);
    // The neighbour: its problem, kernel and launch, checked once, and its own back-to-back time.
    std::optional<DeviceProblem> np;
    std::shared_ptr<const jit::LoadedGemv> nk;
    KernelConfig nc;
    double neighbor_us = 0;
    LaunchFn neighbor;
    if (neighbor_shape) {
      np.emplace(t, *neighbor_shape, neighbor_shape->k, kMeasureSeed + 1, rotation_bytes(ctx.info()), m, 0, 0, w);
      nc = neighbor_config ? *neighbor_config : default_config(t, *neighbor_shape, gpu, m, w);
      nk = kernels.get(nc, t, w);
      np->workspace().reserve(nc, *neighbor_shape);
      neighbor = [&](int copy, CUstream st) { jit::launch_gemv(*nk, nc, np->operands(copy % np->copies()), np->workspace(), st); };
      if (!verify_calls(neighbor, *np, stream).ok) throw Error("the neighbour " + to_string(nc) + " is wrong");
      neighbor_us = time_calls(neighbor, *np, stream, LaunchMode::graph, 5).us_per_call;
      std::printf("== %s: neighbour %s %s alone %.2f us\n", argv[a], to_string(*neighbor_shape).c_str(),
                  to_string(nc).c_str(), neighbor_us);
    }
    for (const KernelConfig& c : listed ? *listed : runnable_space(p)) {  // misaligned rows: narrowed loads, as the tuner
      if (!wanted(c)) continue;
      std::optional<std::string> why = why_invalid_for(c, t, s, m, w);
      if (!why && !is_quantized(w)) why = why_misaligned(c, t, op0.w, op0.ld, op0.x, op0.ldx);
      if (why) {
        std::printf("SKIPPED %s %s: %s\n", argv[a], to_string(c).c_str(), why->c_str());
        continue;
      }
      auto k = kernels.get(c, t, w);
      p.workspace().reserve(c, s);
      const LaunchFn launch = [&](int copy, CUstream st) { jit::launch_gemv(*k, c, p.operands(copy), p.workspace(), st); };
      const Comparison cmp = verify_calls(launch, p, stream);
      if (!cmp.ok) {
        std::printf("WRONG %s %s: %s\n", argv[a], to_string(c).c_str(), cmp.describe().c_str());
        continue;
      }
      const CallTiming tm = neighbor ? time_calls_after(neighbor, neighbor_us, launch, p, stream, 5)
                                     : time_calls(launch, p, stream, LaunchMode::graph, 5);
      const double model_us = estimate(c, t, s, gpu, w).time_us;
      results.emplace_back(tm.us_per_call, to_string(c));
      csv << argv[a] << "," << argv[2] << "," << to_string(c) << "," << tm.us_per_call << "," << tm.gbps << ","
          << model_us << "\n";
      if (spread) {
        // A module of its own, so the spread launch's function attributes leave `k` as it was.
        const jit::LoadedGemv spread_kernel(std::make_shared<jit::CompiledKernel>(k->compiled()), c, t, w);
        const LaunchFn spread_launch = [&](int copy, CUstream st) {
          jit::launch_gemv(spread_kernel, c, p.operands(copy), p.workspace(), st,
                           jit::SplitKFinish::cluster_where_chosen, jit::Placement::spread);
        };
        const Comparison sc = verify_calls(spread_launch, p, stream);
        if (!sc.ok) {
          std::printf("WRONG %s %s+spread: %s\n", argv[a], to_string(c).c_str(), sc.describe().c_str());
          continue;
        }
        const CallTiming st = time_calls(spread_launch, p, stream, LaunchMode::graph, 5);
        results.emplace_back(st.us_per_call, to_string(c) + "+spread");
        csv << argv[a] << "," << argv[2] << "," << to_string(c) << "+spread," << st.us_per_call << "," << st.gbps
            << "," << model_us << "\n";
      }
    }
    csv.flush();  // a sweep stopped by a time limit keeps every shape it finished
    if (!csv) throw Error(std::string("writing '") + argv[1] + "' failed");
    std::sort(results.begin(), results.end());
    const LaunchFn cub = [&](int copy, CUstream st) { cublas.launch(t, pc.operands(copy), st); };
    const Comparison cc = verify_calls(cub, pc, stream);
    const CallTiming cg = time_calls(cub, pc, stream, LaunchMode::graph);
    const CallTiming ce = time_calls(cub, pc, stream, LaunchMode::eager);
    const KernelConfig def = default_config(t, s, gpu, m, w);
    std::printf("== %s %s: cuBLAS graph %.2f us (%.0f GB/s) eager %.2f us, check %s; default %s\n", argv[a], argv[2],
                cg.us_per_call, cg.gbps, ce.us_per_call, cc.ok ? "ok" : "WRONG", to_string(def).c_str());
    for (std::size_t i = 0; i < results.size() && i < 8; ++i)
      std::printf("  %-32s %8.2f us %6.0f GB/s  x%.2f\n", results[i].second.c_str(), results[i].first,
                  p.bytes_per_call() / results[i].first / 1e3, cg.us_per_call / results[i].first);
    for (auto& r : results)
      if (r.second == to_string(def)) std::printf("  default %-24s %8.2f us\n", r.second.c_str(), r.first);
    std::fflush(stdout);
  }
  return 0;
} catch (const InvalidArgument& e) {  // bad arguments: 2, as the CLI
  std::cerr << "gemvtune-sweep: " << e.what() << "\n";
  return 2;
} catch (const std::exception& e) {
  std::cerr << "gemvtune-sweep: " << e.what() << "\n";
  return 1;
}
