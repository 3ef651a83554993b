// gemvtune explain: why a config runs as fast as it does on a shape (tuner/explain.hpp): grid,
// waves, residency, bytes in flight against Little's law, the cubin's registers, stack and
// spills, split-K's cost, the model's time and what limits it; on a GPU also one measurement,
// or a time measured elsewhere given with --measured-us (and --measured-no-pdl-us). A measured time
// decides the limiter; what PDL saves, measured, decides launch and ramp.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cache/json_records.hpp"
#include "cli/batch_option.hpp"
#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"  // fixed()
#include "cli/weights_option.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/resolve.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/driver_api.hpp"
#include "jit/gemv_launch.hpp"  // cluster_blocks_for
#include "jit/loaded_kernels.hpp"
#include "tuner/device_problem.hpp"
#include "tuner/explain.hpp"

namespace gemvtune::cli {

namespace {

struct Measured {
  bool done = false;
  std::string skipped;  // why not, when !done
  double us = 0, gbps = 0;
  std::string check;
  // A PDL config's twin without PDL (and without pf), timed the same way: what overlapping its
  // launch, ramp and drain with the neighbouring calls saves, measured (the seeds' launch and
  // ramp against the transfer). Empty without PDL, or where the twin failed its check.
  std::optional<KernelConfig> no_pdl;
  std::optional<double> no_pdl_us;
  std::string no_pdl_skipped;  // why the twin was not timed, when no_pdl is set and no_pdl_us is not
};

// One check and one graph-mode timing with the harness, as `run` does.
Measured measure(const KernelConfig& config, DType dtype, const Shape& shape, int m, WeightFormat weights,
                 const GpuIdentity& asked, bool gpu_given, int device) {
  Measured r;
  std::string why;
  if (!jit::driver_available(&why)) {
    r.skipped = "no GPU: measured time skipped (" + why + ")";
    return r;
  }
  jit::Context ctx(device);
  if (gpu_given && !(ctx.info().id == asked)) {
    r.skipped = "measured time skipped: device " + std::to_string(device) + " is " + ctx.info().id.key() +
                ", not " + asked.key();
    return r;
  }
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  DeviceProblem problem(dtype, shape, shape.k, kMeasureSeed, rotation_bytes(ctx.info()), m, shape.k, 0, weights);
  const auto op0 = problem.operands(0);
  if (!is_quantized(weights))
    if (auto bad = why_misaligned(config, dtype, op0.w, op0.ld, op0.x, m > 1 ? op0.ldx : 0)) {
      r.skipped = "measured time skipped: " + *bad;
      return r;
    }
  auto kernel = kernels.get(config, dtype, weights);
  problem.workspace().reserve(config, shape);
  const LaunchFn launch = [&](int copy, CUstream s) {
    jit::launch_gemv(*kernel, config, problem.operands(copy), problem.workspace(), s);
  };
  jit::check_operands(config, dtype, op0);
  const Comparison check = verify_calls(launch, problem, stream);
  r.check = check.describe();
  if (!check.ok) {
    r.skipped = "measured time skipped: the kernel failed its check against float64 (" + r.check + ")";
    return r;
  }
  const CallTiming t = time_calls(launch, problem, stream, LaunchMode::graph);
  r.done = true;
  r.us = t.us_per_call;
  r.gbps = t.gbps;
  if (config.pdl) {
    KernelConfig twin = config;
    twin.pdl = twin.prefetch_l2 = false;
    r.no_pdl = twin;
    if (auto why_not = why_invalid(twin); why_not || (why_not = why_invalid_for(twin, dtype, shape, m, weights))) {
      r.no_pdl_skipped = *why_not;  // e.g. a block that needs PDL's registers
      return r;
    }
    try {
      auto twin_kernel = kernels.get(twin, dtype, weights);
      const LaunchFn twin_launch = [&](int copy, CUstream s) {
        jit::launch_gemv(*twin_kernel, twin, problem.operands(copy), problem.workspace(), s);
      };
      const Comparison twin_check = verify_calls(twin_launch, problem, stream);
      if (twin_check.ok)
        r.no_pdl_us = time_calls(twin_launch, problem, stream, LaunchMode::graph).us_per_call;
      else
        r.no_pdl_skipped = "it failed its check against float64 (" + twin_check.describe() + ")";
    } catch (const CudaError&) {
      throw;  // the context is no longer usable: as for the config itself
    } catch (const std::exception& e) {
      r.no_pdl_skipped = e.what();  // an NVRTC error of the twin: the config's own figures stand
    }
  }
  return r;
}

std::string kb(double bytes) { return fixed("%.1f", bytes / 1024) + " KB"; }

}  // namespace

int cmd_explain(const std::vector<std::string>& args) {
  po::options_description desc("explain options");
  std::string shape_text, dtype_text, weights_text, config_text, db, gpu_text, measured_text, no_pdl_text;
  std::vector<std::string> batch_texts;
  int device = 0;
  desc.add_options()
      ("shape", po::value(&shape_text)->required(), "NxK, e.g. 4096x14336")
      ("batch", po::value(&batch_texts), "batch M, 1..16 (default 1)")
      ("dtype", po::value(&dtype_text)->default_value("bf16"), "fp32, fp16 or bf16 (of x and y)")
      ("weights", po::value(&weights_text)->default_value(kWeightsDefault), kWeightsHelp)
      ("config", po::value(&config_text), "config text (default: what `query` answers, from the cache)")
      ("db", po::value(&db), kDbHelp)
      ("device", po::value(&device)->default_value(0), "GPU ordinal (whose model is explained, and measured)")
      ("gpu", po::value(&gpu_text),
       "explain for this GPU model instead of a device, as `list` shows it, e.g. 'NVIDIA H200/132sm/cc9.0' "
       "(needs no GPU; measured only when the device is that model)")
      ("measured-us", po::value(&measured_text),
       "microseconds per call of this config, measured elsewhere (e.g. the graph-mode time `gemvtune bench` "
       "reports), a number > 0: shown as the measured time, with its source, instead of measuring on the "
       "device; like a measurement it decides the limiter (bandwidth when the call reaches >= 85% of the "
       "read ceiling, else the model's largest cost). Works with --gpu, no GPU needed")
      ("measured-no-pdl-us", po::value(&no_pdl_text),
       "with --measured-us and a PDL config: microseconds per call of the same config without PDL (and pf), "
       "measured the same way (bench's \"tuned, no PDL\" row). What PDL saves decides launch and ramp: named "
       "when PDL saves >= 10% of the no-PDL time, ruled out when it saves less. On a GPU explain times "
       "that twin itself")
      ("json", "print the explanation as JSON");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune explain --shape NxK [--batch M] [--dtype bf16] [--weights dense] [--config CONFIG] "
                    "[--db PATH] [--device 0 | --gpu NAME/132sm/cc9.0] [--measured-us T [--measured-no-pdl-us T]] "
                    "[--json]"))
    return kOk;
  const Shape shape = parse_shape(shape_text);
  const DType dtype = parse_dtype(dtype_text);
  const WeightFormat weights = parse_weights(weights_text, dtype);
  const std::vector<int> batches = parse_batches(batch_texts);
  if (batches.size() != 1) throw UsageError("explain takes one --batch at a time");
  const int batch = batches.front();
  check_weights_fit("explain", to_string(TuneJob{shape, dtype, batch, weights}), weights, dtype, shape);
  if (vm.count("gpu") && !vm["device"].defaulted()) throw UsageError("give --device or --gpu, not both");
  std::optional<double> given_us;
  if (vm.count("measured-us")) given_us = parse_measured_us(measured_text);
  std::optional<double> given_no_pdl_us;
  if (vm.count("measured-no-pdl-us")) {
    if (!given_us) throw UsageError("--measured-no-pdl-us goes with --measured-us (the PDL config's own time)");
    given_no_pdl_us = parse_measured_us(no_pdl_text, "--measured-no-pdl-us");
  }
  const bool gpu_given = vm.count("gpu") > 0;
  GpuIdentity gpu;
  if (gpu_given) {
    gpu = parse_gpu_key(gpu_text);
  } else {
    std::string why;
    if (!jit::driver_available(&why))
      throw UsageError("no GPU to read the model from (" + why + "); name one with --gpu, e.g. 'NVIDIA H200/132sm/cc9.0'");
    gpu = jit::read_gpu_info(device).id;
  }
  // Parse and check an explicit config before touching the cache: bad input exits 2 either way.
  std::optional<KernelConfig> given;
  if (vm.count("config")) {
    given = parse_config(config_text);
    check_config(*given, dtype, shape, batch, weights);
  }
  const std::string path = db_path(db);
  const std::optional<TuningCache> cache = TuningCache::open_if_present(path);
  std::string source = "--config";
  KernelConfig config;
  if (given) {
    config = *given;
  } else {
    const Resolved r = resolve_config(cache ? &*cache : nullptr, gpu, shape, dtype, batch, weights);
    config = r.config;
    source = r.source_text;
  }

  GpuModelParams model;
  model.sm_count = gpu.sm_count;
  std::string ceiling_source = "model default: no peak stored for this GPU";
  if (cache)
    if (auto peak = cache->peak(gpu)) {
      model.read_ceiling_gbps = peak->gbps;
      ceiling_source = "peak stored in " + path;
    }

  const std::string arch = "sm_" + std::to_string(gpu.cc_major) + std::to_string(gpu.cc_minor);
  std::optional<KernelResources> cubin;
  std::string compile_error;
  try {
    cubin = compile_resources(config, dtype, weights, arch);
  } catch (const CompileError& e) {
    compile_error = e.what();
  }
  // A time given with --measured-us, else one measurement on the device when it is the GPU
  // explained; either decides the limiter (tuner/explain.hpp, choose_limiter).
  check_config(config, dtype, shape, batch, weights);
  Measured meas;
  std::optional<MeasuredTime> measured;
  if (given_no_pdl_us && !config.pdl)
    throw UsageError("--measured-no-pdl-us: " + to_string(config) + " has no PDL to go without");
  if (given_us) {
    measured = MeasuredTime{*given_us, "given with --measured-us", given_no_pdl_us};
  } else {
    meas = measure(config, dtype, shape, batch, weights, gpu, gpu_given, device);
    if (meas.done)
      measured = MeasuredTime{meas.us, "measured on device " + std::to_string(device) + " in graph mode", meas.no_pdl_us};
  }
  const Explanation x = explain(config, dtype, shape, batch, weights, model, cubin, measured);
  const ModelEstimate& e = x.model;
  // How the runtime finishes split-K on this GPU: a thread block cluster of the splits, or
  // partials in a workspace and the last block (templates/prelude.cu, finish_block).
  const int cluster = jit::cluster_blocks_for(config, weights, shape, arch);
  const char* split_finish = config.split_k <= 1 ? "none" : cluster > 1 ? "cluster" : "workspace";

  if (vm.count("json")) {
    auto residency = [](const Residency& r) {
      return nlohmann::json{{"blocks_per_sm", r.blocks}, {"by_threads", r.by_threads}, {"by_blocks", r.by_blocks},
                            {"by_registers", r.by_registers}, {"by_shared", r.by_shared}, {"occupancy", r.occupancy},
                            {"limit", r.limit}};
    };
    nlohmann::json j{
        {"gpu", gpu.key()}, {"arch", arch}, {"shape", to_string(shape)}, {"batch", batch},
        {"dtype", to_string(dtype)}, {"weights", to_string(weights)}, {"config", to_string(config)},
        {"config_source", source},
        {"grid", {{"block_rows", x.block_rows}, {"row_blocks", x.row_blocks}, {"split_k", config.split_k},
                  {"blocks", x.blocks}, {"sm_count", gpu.sm_count}}},
        {"waves", {{"resident_blocks_per_sm", x.resident_per_sm}, {"slots", x.wave_slots}, {"waves", x.waves},
                   {"wave_count", x.wave_count}, {"last_wave_blocks", x.last_wave_blocks},
                   {"last_wave_fill", x.last_wave_fill}, {"model_waves", e.waves}}},
        {"model_residency", residency(x.model_residency)},
        {"model_registers", e.registers},
        {"model_shared_bytes", e.shared_bytes},
        {"little", {{"in_flight_per_sm_bytes", x.in_flight_per_sm}, {"needed_per_sm_bytes", x.needed_per_sm},
                    {"warp_bytes", e.warp_bytes}, {"in_flight_gpu_bytes", e.bytes_in_flight},
                    {"read_ceiling_gbps", model.read_ceiling_gbps}, {"ceiling_source", ceiling_source},
                    {"latency_ns", e.latency_ns}, {"sm_gbps", e.sm_gbps}}},
        {"split_k", {{"splits", config.split_k}, {"finish", split_finish}, {"cluster_blocks", cluster},
                     {"partial_bytes", x.split_partial_bytes}, {"us", x.split_us}}},
        {"model", {{"time_us", e.time_us}, {"gbps", x.predicted_gbps}, {"launch_us", e.launch_us},
                   {"transfer_us", e.transfer_us}, {"compute_us", e.compute_us}, {"stream_us", e.stream_us},
                   {"split_us", e.split_us}, {"reduce_us", e.reduce_us}, {"balance", e.balance}, {"turnover", e.turnover},
                   {"issued_loads", e.issued_loads}, {"moved_bytes", x.moved_bytes}}},
        {"limiter", to_string(x.limiter)}, {"verdict", x.verdict},
        {"limiter_basis", x.measured_share ? "measured" : "model"},
        {"model_largest_cost", to_string(x.largest)},
        {"model_stream_share", x.model_share},
        {"costs_us", {{"grid", x.costs.grid}, {"bytes_in_flight", x.costs.bytes_in_flight},
                      {"launch", x.costs.launch}, {"issue", x.costs.issue}, {"split_k", x.costs.split_k},
                      {"repeated_loads", x.costs.repeated_loads}}}};
    if (const auto& steps = x.warp_steps)
      j["warp_steps"] = {{"slowest", steps->slowest}, {"fastest", steps->fastest}, {"chunks", steps->chunks},
                         {"runs", steps->runs}, {"leftover_chunks", steps->leftover},
                         {"partial_chunks", steps->partial}, {"edge_chunks", steps->edges}};
    else
      j["warp_steps"] = nullptr;
    if (cubin) {
      j["cubin"] = {{"registers", cubin->registers}, {"stack_frame_bytes", cubin->stack_frame_bytes},
                    {"shared_bytes", cubin->shared_bytes},
                    {"spill_store_bytes", cubin->spill_store_bytes}, {"spill_load_bytes", cubin->spill_load_bytes}};
      if (x.cubin_residency) j["cubin"]["residency"] = residency(*x.cubin_residency);
      j["capped_twin"] = x.capped_twin ? nlohmann::json{{"config", to_string(*x.capped_twin)},
                                                        {"register_cap", x.capped_twin->reg_cap},
                                                        {"residency", residency(x.capped_residency)},
                                                        {"waves", x.capped_waves}}
                                       : nlohmann::json(nullptr);
      if (x.cubin_in_flight_per_sm) j["little"]["cubin_in_flight_per_sm_bytes"] = *x.cubin_in_flight_per_sm;
    } else {
      j["cubin"] = nullptr;
      j["capped_twin"] = nullptr;
      j["compile_error"] = compile_error;
    }
    if (x.measured) {
      j["measured"] = {{"us", x.measured->us}, {"gbps", x.measured_gbps}, {"share_of_ceiling", *x.measured_share},
                       {"source", x.measured->source}, {"given", given_us.has_value()}};
      if (x.pdl_saving) {
        j["measured"]["no_pdl_us"] = *x.measured->no_pdl_us;
        j["measured"]["pdl_saves_us"] = *x.measured->no_pdl_us - x.measured->us;
        j["measured"]["pdl_saving_share"] = *x.pdl_saving;
      }
      if (meas.done) {
        j["measured"]["check"] = meas.check;
        j["measured"]["mode"] = "graph";
        if (meas.no_pdl) {
          j["measured"]["no_pdl_config"] = to_string(*meas.no_pdl);
          if (!meas.no_pdl_us) {  // timed, its figures are the pdl_saving block's above
            j["measured"]["no_pdl_us"] = nullptr;
            j["measured"]["pdl_saves_us"] = nullptr;
            j["measured"]["no_pdl_skipped"] = meas.no_pdl_skipped;
          }
        }
      }
    } else {
      j["measured"] = nullptr;
      j["measured_skipped"] = meas.skipped;
    }
    std::cout << cache::json_text(j, 2) << "\n";
    return cubin ? kOk : kRuntimeError;
  }

  std::cout << to_string(TuneJob{shape, dtype, batch, weights}) << (batch > 1 ? " (M x N x K)" : "") << " on "
            << gpu.key() << ", config " << to_string(config) << " (" << source << ")\n";
  // Label, value, and an optional note on the next line, indented under the value.
  struct Rows {
    void add(const std::vector<std::string>& r) {
      std::cout << "  " << r[0] << std::string(r[0].size() < 12 ? 12 - r[0].size() : 2, ' ') << r[1] << "\n";
      if (r.size() > 2 && !r[2].empty()) std::cout << std::string(14, ' ') << r[2] << "\n";
    }
  } t;
  t.add({"grid", std::to_string(x.row_blocks) + " row blocks x " + std::to_string(config.split_k) + " split-K = " +
                     std::to_string(x.blocks) + " blocks",
         std::to_string(x.block_rows) + " rows per block" +
             // templates/gemv_tcal.cu: a row set takes rows 8 apart from its 128-row bands
             (config.family == Family::tensor_core && config.aligned_body ? " (rows 8 apart, al)" : "") + ", " +
             std::to_string(gpu.sm_count) + " SMs"});
  const Residency& used = x.cubin_residency ? *x.cubin_residency : x.model_residency;
  t.add({"residency", std::to_string(used.blocks) + " blocks per SM (" + used.limit + "), occupancy " +
                          fixed("%.0f", 100 * used.occupancy) + "%",
         std::string(x.cubin_residency ? "cubin's " + std::to_string(cubin->registers) + " registers"
                                       : "model's register estimate") +
             "; threads allow " + std::to_string(used.by_threads) + ", block slots " + std::to_string(used.by_blocks) +
             ", registers " + std::to_string(used.by_registers) +
             (used.by_shared > 0 ? ", shared memory " + std::to_string(used.by_shared) : "")});
  t.add({"waves", fixed("%.2f", x.waves) + " (" + std::to_string(x.wave_count) + (x.wave_count == 1 ? " wave, last " : " waves, last ") +
                      std::to_string(x.last_wave_blocks) + " of " + std::to_string(x.wave_slots) + " slots, " +
                      fixed("%.0f", 100 * x.last_wave_fill) + "% full)",
         "model: " + fixed("%.2f", e.waves) + " waves at " + std::to_string(x.model_residency.blocks) +
             " blocks per SM (~" + fixed("%.0f", e.registers) + " registers estimated)" +
             (e.turnover < 1 ? "; block turnover leaves " + fixed("%.0f", 100 * e.turnover) + "% of the stream rate"
                             : std::string())});
  if (x.capped_twin)
    t.add({"capped twin", to_string(*x.capped_twin) + ": " + std::to_string(x.capped_residency.blocks) +
                              " blocks per SM at " + std::to_string(x.capped_twin->reg_cap) + " registers, " +
                              fixed("%.2f", x.capped_waves) + " waves",
           "the launch bounds' cap one block an SM further on; the tuner measures such twins beside its "
           "CUDA-core candidates near the fastest, where ptxas does not spill them"});
  const bool dense_tc = is_dense_tensor_core(config, weights);
  t.add({"in flight", kb(x.in_flight_per_sm) + " per SM, Little's law needs " + kb(x.needed_per_sm),
         fixed("%.0f", model.read_ceiling_gbps) + " GB/s (" + ceiling_source + ") x " +
             fixed("%.0f", e.latency_ns) + " ns latency (" +
             (dense_tc ? (config.aligned_body ? "fitted to the tensor cores' al kernel" : "fitted to the tensor-core family")
                       : "assumed") + ") / " + std::to_string(gpu.sm_count) +
             " SMs; " + kb(e.warp_bytes) + " per warp" +
             (x.cubin_in_flight_per_sm ? "; " + kb(*x.cubin_in_flight_per_sm) + " at the cubin's residency" : "") +
             // ptxas unrolls the tensor-core run loop to about four chunks a trip whatever the unroll
             // knob (bench/results/h200.md, "what holds the tensor-core kernel back").
             (dense_tc ? "; four chunks a warp at any unroll, as ptxas issues them" : "")});
  if (const auto& steps = x.warp_steps)
    t.add({"warp steps", describe(*steps, config),
           steps->slowest > steps->fastest
               ? "each step waits a round trip to memory, and the block's finish waits for its slowest warp"
               : ""});
  if (cubin)
    t.add({"cubin", std::to_string(cubin->registers) + " registers, " + std::to_string(cubin->stack_frame_bytes) +
                        " bytes stack, " + std::to_string(cubin->shared_bytes) + " bytes shared memory a block, " +
                        std::to_string(cubin->spill_store_bytes) + "/" +
                        std::to_string(cubin->spill_load_bytes) + " bytes spilled (stores/loads)",
           "NVRTC for " + arch});
  else
    t.add({"cubin", "compile failed for " + arch, short_message(compile_error)});
  t.add({"split-K", config.split_k > 1 ? fixed("%.2f", x.split_us) + " us (model)" : "none",
         config.split_k <= 1 ? ""
         : cluster > 1
             ? "the " + std::to_string(cluster) + " splits of a row block run as one cluster and add " +
                   kb(x.split_partial_bytes) +
                   " of fp32 sums through distributed shared memory (the model's cost is the workspace path's, "
                   "which measured 0.4-1.6 us slower)"
             : kb(x.split_partial_bytes) + " of fp32 partials written and read back, fix-up by the last block"});
  t.add({"model", fixed("%.2f", e.time_us) + " us, " + fixed("%.0f", x.predicted_gbps) + " GB/s",
         "launch " + fixed("%.2f", e.launch_us) + " + transfer " + fixed("%.2f", e.transfer_us) +
             (e.compute_us > 0 ? " (issue " + fixed("%.2f", e.compute_us) + ")" : std::string()) + " + split-K " +
             fixed("%.2f", e.split_us) + " + reduction " + fixed("%.2f", e.reduce_us) + " us" +
             // The plain loop's last trip repeats loads past a warp's share of a row (ModelEstimate::issued_loads).
             (e.issued_loads > 1.0005 ? "; the transfer counts " + fixed("%.2f", e.issued_loads) +
                                            "x the row's loads, the last trip of each warp repeating some"
                                      : std::string())});
  if (x.measured)
    t.add({"measured", fixed("%.2f", x.measured->us) + " us, " + fixed("%.0f", x.measured_gbps) + " GB/s, " +
                           fixed("%.1f", 100 * *x.measured_share) + "% of the read ceiling",
           x.measured->source + (meas.done ? ", checked against float64 (" + meas.check + ")" : std::string())});
  else
    t.add({"measured", meas.skipped, ""});
  // The no-PDL time, timed here (meas.no_pdl) or given: both reach x as measured->no_pdl_us.
  if (x.pdl_saving || meas.no_pdl)
    t.add({"without PDL",
           x.pdl_saving ? fixed("%.2f", *x.measured->no_pdl_us) + " us: PDL hides " +
                              fixed("%.2f", *x.measured->no_pdl_us - x.measured->us) + " us (" +
                              fixed("%.1f", 100 * *x.pdl_saving) +
                              "%) of launch, ramp and drain behind the calls before and after"
                        : "not measured: " + meas.no_pdl_skipped,
           meas.no_pdl ? to_string(*meas.no_pdl) + ", timed the same way" : "given with --measured-no-pdl-us"});
  t.add({"limited by", x.verdict, ""});
  return cubin ? kOk : kRuntimeError;
}

}  // namespace gemvtune::cli
