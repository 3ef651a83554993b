// Tuner: measures one shape's candidates on one GPU (verify, then time in a CUDA graph with
// weights rotated past L2), runs the strategy over them and stores the result.
#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/search_space.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/compile_pool.hpp"
#include "tuner/device_problem.hpp"
#include "tuner/first_round.hpp"
#include "tuner/strategy.hpp"

namespace gemvtune {

namespace {
// The first few lines of a compile log: enough to say why, short enough for a table row.
std::string first_lines(const std::string& text, int lines) {
  std::istringstream in(text);
  std::string line, out;
  for (int i = 0; i < lines && std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out += (out.empty() ? "" : "\n") + line;
    ++i;
  }
  return out.empty() ? text : out;
}

int default_compile_threads() { return static_cast<int>(std::max(2u, std::thread::hardware_concurrency())); }

// A kernel fault leaves a sticky error on the context; every later call returns it. After a
// CUDA error, a synchronize tells a dead context from an error that only refused one launch.
// `what` names what failed ("config t128_...", "the ranking after 4096x4096").
void throw_if_context_lost(const std::string& what, const CudaError& e, int device) {
  const CUresult r = jit::driver().cuCtxSynchronize();
  if (r == CUDA_SUCCESS) return;
  throw ContextLost(what + " failed with " + e.what() + "; the CUDA context of device " + std::to_string(device) +
                    " is unusable (" + jit::cu_error_text(r) + "), so tuning on it stopped");
}

// Adds the time from construction to destruction to `total` (a TunePhases field).
class PhaseTimer {
 public:
  explicit PhaseTimer(double& total) : total_(total), started_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  double& total_;
  std::chrono::steady_clock::time_point started_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

struct Tuner::Impl {
  const jit::Context& ctx;
  TuningCache& cache;
  std::shared_ptr<CompilePool> pool;  // shared with tune_on_devices, which starts it early
  jit::LoadedKernels kernels;
  jit::Stream stream;
  std::optional<double> ceiling;
  // The last tune's problem, kept for the next one: a preset tunes each shape at M = 1, 2, 4,
  // 8, 16 in a row, and those share their weights (DeviceProblem::rebatch).
  std::optional<DeviceProblem> last_problem;
  // The neighbours of the last rankings (TuneJob::after), the most recent last, kept likewise:
  // a preset's decode step has four (o, gate_up, down, qkv) and each M runs after them again.
  // Drawing one anew took up to 0.4 s of a job (the H200 machine, 28672x4096 bf16).
  std::vector<DeviceProblem> neighbour_problems;
  static constexpr std::size_t kKeptNeighbours = 4;
  // compile_ahead's kernels, handed to the pool's idle queue once the next tune has queued its
  // own first batch (queued before it, they would hold threads that batch then waits for).
  struct Ahead {
    KernelConfig config;
    DType dtype;
    WeightFormat weights;
  };
  std::vector<Ahead> ahead;
  void queue_ahead() {
    for (const Ahead& a : ahead) pool->request_when_idle(a.config, a.dtype, ctx.info().arch, a.weights);
    ahead.clear();
  }

  Impl(const jit::Context& c, TuningCache& tc, std::shared_ptr<CompilePool> p)
      : ctx(c), cache(tc), pool(std::move(p)), kernels(c) {}

  // One shape being tuned: the problem on the device and every candidate result so far.
  struct Session {
    TuneJob job;
    DeviceProblem problem;
    double ceiling_gbps;
    std::vector<CandidateResult> results;  // in measuring order
    std::map<std::string, std::size_t> index;  // config text -> results position
    TunePhases phases;
  };

  LaunchFn launcher(Session& s, const std::shared_ptr<const jit::LoadedGemv>& kernel, const KernelConfig& c) {
    return [&s, kernel, c](int copy, CUstream st) {
      jit::launch_gemv(*kernel, c, s.problem.operands(copy), s.problem.workspace(), st);
    };
  }

  // Compile, verify against the float64 reference, then time. Failures come back as outcomes;
  // only a lost context throws.
  CandidateResult measure_one(Session& s, const KernelConfig& c) {
    CandidateResult r;
    r.config = to_string(c);
    auto failed = [&](Outcome o, std::string why) {
      r.outcome = o;
      r.reason = std::move(why);
      return r;
    };
    try {
      PhaseTimer timer(s.phases.compile_wait);
      pool->request(c, s.job.dtype, ctx.info().arch, s.job.weights).get();
    } catch (const CompileError& e) {
      return failed(Outcome::compile_failed, first_lines(e.log().empty() ? e.what() : e.log(), 4));
    } catch (const std::exception& e) {
      return failed(Outcome::compile_failed, first_lines(e.what(), 4));
    }
    try {
      std::shared_ptr<const jit::LoadedGemv> kernel;
      {
        PhaseTimer timer(s.phases.load);
        kernel = kernels.get(c, s.job.dtype, s.job.weights);  // compiled above: this only loads it
        s.problem.workspace().reserve(c, s.job.shape);
      }
      const LaunchFn launch = launcher(s, kernel, c);
      Comparison check;
      {
        PhaseTimer timer(s.phases.verify);
        check = verify_calls(launch, s.problem, stream);
      }
      if (!check.ok) return failed(Outcome::incorrect, check.describe());
      PhaseTimer timer(s.phases.timing);
      const CallTiming t = time_calls(launch, s.problem, stream, LaunchMode::graph,
                                      search_replays(s.problem.timing(), s.problem.bytes_per_call()));
      r.time_us = t.us_per_call;
      r.gbps = t.gbps;
      r.pct_of_ceiling = 100.0 * t.gbps / s.ceiling_gbps;
      return r;
    } catch (const CudaError& e) {
      throw_if_context_lost("config " + r.config, e, ctx.ordinal());
      return failed(Outcome::launch_failed, e.what());
    } catch (const InvalidArgument& e) {
      return failed(Outcome::not_supported, e.what());
    }
  }

  std::optional<double> known_ceiling();
  // The model of this GPU: its SMs, and its read ceiling where known (known_ceiling).
  GpuModelParams model_params() { return tuning_model(ctx.info().id, known_ceiling()); }
  StrategyResult search(Session& s, const std::vector<KernelConfig>& ranked, const TuneOptions& options,
                        const std::function<void(const TuneProgress&)>& on_progress);
  const CandidateResult& pick_winner(Session& s, const StrategyResult& found, const TuneOptions& options,
                                     const GpuModelParams& model, std::optional<AfterRanking>& after);
  AfterRanking rank_after(Session& s, const std::vector<KernelConfig>& finalists, std::uint64_t seed,
                          const GpuModelParams& model);
  DeviceProblem& neighbour(const TuneJob& job, std::uint64_t seed);

  // Of the configs not measured yet, compiled, those whose kernel `keep` accepts; one that fails
  // to compile stays, and measure_one reports it. Twins are outside the space: what decides
  // whether one is worth timing is what ptxas made of it.
  std::vector<KernelConfig> compiled_where(Session& s, const std::vector<KernelConfig>& configs,
                                           const std::function<bool(const jit::CompiledKernel&)>& keep) {
    const TuneJob& j = s.job;
    std::vector<std::pair<KernelConfig, CompilePool::Future>> compiling;
    for (const KernelConfig& c : configs) {
      const bool seen = std::any_of(compiling.begin(), compiling.end(), [&](const auto& p) { return p.first == c; });
      if (!seen && !s.index.count(to_string(c))) compiling.emplace_back(c, pool->request(c, j.dtype, ctx.info().arch, j.weights));
    }
    std::vector<KernelConfig> out;
    PhaseTimer timer(s.phases.compile_wait);
    for (auto& [c, future] : compiling) {
      bool kept = true;
      try {
        kept = keep(*future.get());
      } catch (const std::exception&) {
      }
      if (kept) out.push_back(c);
    }
    return out;
  }

  // The leader's balanced twins; for quantized weights, where the leader has none (a ring or
  // CUDA-core config), the fastest plain tensor-core config's. At 28672x4096 int4g128 a ring
  // config can lead a tune by a hair while a twin of a plain tile is faster than both (H200:
  // ring 19.76 us in s146's tune; a twin won at 17.85 in s129's). Dense weights keep the
  // leader's only: each twin's compile is waited for, and tune time is a bar there.
  std::vector<KernelConfig> leading_twins(const Session& s, const std::vector<Measured>& measured) const {
    const TuneJob& j = s.job;
    for (std::size_t i : top_passing(measured, measured.size())) {
      std::vector<KernelConfig> twins =
          balanced_twins(measured[i].config, j.dtype, j.shape, j.batch, j.weights, ctx.info().id.sm_count);
      if (!twins.empty() || !is_quantized(j.weights)) return twins;
    }
    return {};
  }

  // leading_twins, compiled; those ptxas says spill are left out (13 to 16 warps leave 128
  // registers a thread, where the candidate may have had 255).
  std::vector<KernelConfig> twins_to_measure(Session& s, const std::vector<Measured>& measured) {
    return compiled_where(s, leading_twins(s, measured), [](const jit::CompiledKernel& k) { return !k.spills(); });
  }

  // The register-capped twins (register_capped_twin) of the passing candidates whose kernels
  // hold more than kRegCap registers: those whose capped kernel spills more than
  // kMaxCappedStackBytes are left out, as is a candidate whose compile result cannot be read
  // (measure_one has reported it). Also the CUDA-core twins (cuda_core_capped_twin) of the
  // candidates near the fastest.
  std::vector<KernelConfig> capped_twins_to_measure(Session& s, const std::vector<Measured>& measured) {
    const TuneJob& j = s.job;
    std::vector<KernelConfig> twins;
    for (const Measured& m : measured) {
      if (!m.passed) continue;
      const std::optional<KernelConfig> twin = register_capped_twin(m.config, j.dtype, j.shape, j.batch, j.weights);
      if (!twin) continue;
      try {
        if (pool->request(m.config, j.dtype, ctx.info().arch, j.weights).get()->registers <= kRegCap) continue;
      } catch (const std::exception&) {
        continue;
      }
      twins.push_back(*twin);
    }
    std::vector<KernelConfig> out =
        compiled_where(s, twins, [](const jit::CompiledKernel& k) { return k.stack_frame_bytes <= kMaxCappedStackBytes; });
    // Register-capped CUDA-core twins of the candidates near the fastest, where ptxas does not
    // spill them.
    for (const KernelConfig& c : compiled_where(s, cuda_core_twins(s, measured), [](const jit::CompiledKernel& k) { return !k.spills(); }))
      out.push_back(c);
    return out;
  }

  // cuda_core_twins_to_measure for this job's candidates, their registers from the pool (a
  // measured candidate's compile is done, so this waits for nothing).
  std::vector<KernelConfig> cuda_core_twins(const Session& s, const std::vector<Measured>& measured) {
    const TuneJob& j = s.job;
    return cuda_core_twins_to_measure(
        measured, [&](const KernelConfig& c) { return pool->request(c, j.dtype, ctx.info().arch, j.weights).get()->registers; },
        j.dtype, j.shape, j.batch, model_params(), j.weights);
  }

  // Times a passing candidate again; CUDA errors are handled as in measure_one.
  double retime(Session& s, const KernelConfig& c) {
    try {
      auto kernel = kernels.get(c, s.job.dtype, s.job.weights);
      return time_calls(launcher(s, kernel, c), s.problem, stream, LaunchMode::graph).us_per_call;
    } catch (const CudaError& e) {
      throw_if_context_lost("config " + to_string(c), e, ctx.ordinal());
      throw;
    }
  }
};

Tuner::Tuner(const jit::Context& ctx, TuningCache& cache, int compile_threads)
    : Tuner(ctx, cache, compile_threads > 0 ? std::make_shared<CompilePool>(compile_threads) : nullptr) {}

Tuner::Tuner(const jit::Context& ctx, TuningCache& cache, std::shared_ptr<CompilePool> pool)
    : impl_(std::make_unique<Impl>(ctx, cache, pool ? std::move(pool) : std::make_shared<CompilePool>(default_compile_threads()))) {}

Tuner::~Tuner() = default;

// The ceiling known without measuring: this tuner's, else the one stored in the cache.
std::optional<double> Tuner::Impl::known_ceiling() {
  if (!ceiling)
    if (auto stored = cache.peak(ctx.info().id)) ceiling = stored->gbps;
  return ceiling;
}

double Tuner::ceiling_gbps() {
  Impl& m = *impl_;
  if (!m.known_ceiling()) {
    const PeakRecord measured = measure_peak(m.ctx);
    m.cache.store_peak(measured);
    m.ceiling = measured.gbps;
  }
  return *m.ceiling;
}

CacheKey key_of(const GpuIdentity& gpu, const TuneJob& job) {
  CacheKey k;
  k.gpu = gpu;
  k.shape = job.shape;
  k.dtype = job.dtype;
  k.batch = job.batch;
  k.weights = job.weights;
  k.template_version = template_version();
  return k;
}

std::string to_string(const TuneJob& job) {
  std::string text = to_string(job.shape, job.batch) + " " + std::string(to_string(job.dtype));
  if (job.weights != WeightFormat::dense) text += " " + std::string(to_string(job.weights));
  return text;
}

namespace {
// "no config passed for ... (N measured: 3 incorrect, ...); first failure: ...".
Error nothing_passed(const TuneJob& job, const std::vector<CandidateResult>& results) {
  std::map<Outcome, int> counts;
  for (const auto& r : results) ++counts[r.outcome];
  std::string summary;
  for (const auto& [outcome, count] : counts)
    summary += (summary.empty() ? "" : ", ") + std::to_string(count) + " " + std::string(to_string(outcome));
  return Error("no config passed for " + to_string(job) + " (" + std::to_string(results.size()) +
               " measured: " + summary + "); first failure: " +
               (results.empty() ? "none" : results.front().config + ": " + results.front().reason));
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The model strategy's first round of a ranked space: what the compile pool is asked for before
// the search needs it (compile_ahead for the next job, tune while the ceiling is measured).
std::vector<KernelConfig> first_round(const std::vector<KernelConfig>& ranked, double bytes, WeightFormat w) {
  return model_first_round(ranked, strategy_options_for(ranked.size(), bytes, is_quantized(w)));
}
}  // namespace

// Measures what the strategy asks for, in its batches, reporting progress after each
// candidate; returns the strategy's result with every candidate recorded in the session.
StrategyResult Tuner::Impl::search(Session& s, const std::vector<KernelConfig>& ranked, const TuneOptions& options,
                                   const std::function<void(const TuneProgress&)>& on_progress) {
  const StrategyOptions strategy_options = strategy_options_for(ranked.size(), s.problem.bytes_per_call(), is_quantized(s.job.weights));
  const std::size_t budget =
      options.strategy == Strategy::exhaustive ? ranked.size() : model_budget(ranked.size(), strategy_options);
  const std::string& arch = ctx.info().arch;
  TuneProgress progress;
  progress.device = ctx.ordinal();
  progress.job = s.job;
  progress.budget = budget;
  std::vector<Measured> so_far;           // this search's candidates, as the strategy sees them
  std::vector<KernelConfig> prefetched;  // the twins queued for idle threads
  const MeasureBatch measure = [&](const std::vector<KernelConfig>& batch) {
    // The whole batch is queued before the first is measured, so the pool compiles it while
    // the GPU times the kernels already compiled. Nothing of the space is compiled ahead of
    // the batches (but the first round while a new cache's read ceiling is measured, in tune();
    // the leading candidates' twins, outside the space, are queued below):
    // on the recorded H200 sweeps, compiling the model's top 15% ahead (the budget) picked the
    // same winners with 35-45% more NVRTC compiles, and on a 1 MB shape those were most of the
    // tune time (docs/tuning.md, "Tune time").
    for (const KernelConfig& c : batch) pool->request(c, s.job.dtype, arch, s.job.weights);
    queue_ahead();  // the first rounds of the jobs behind, for threads this batch leaves idle
    progress.planned = progress.measured + batch.size();
    std::vector<Measured> out;
    for (const KernelConfig& c : batch) {
      CandidateResult r = measure_one(s, c);
      out.push_back(Measured{c, r.outcome == Outcome::passed, r.time_us});
      if (r.outcome == Outcome::passed && (progress.best_config.empty() || r.time_us < progress.best_us)) {
        progress.best_config = r.config;
        progress.best_us = r.time_us;
      }
      s.index[r.config] = s.results.size();
      s.results.push_back(std::move(r));
      ++progress.measured;
      if (on_progress) on_progress(progress);
    }
    // The twins are measured after the strategy (twins_to_measure), each a kernel of its own,
    // so their compile was waited for at the end of every job: 0.3-0.9 s of most jobs of the
    // preset's batch tune (H200, s159). Those of the leading candidates so far, queued now ahead
    // of the jobs behind, compile while the GPU times the rest of this job.
    so_far.insert(so_far.end(), out.begin(), out.end());
    std::vector<KernelConfig> twins = leading_twins(s, so_far);
    if (strategy_options.capped_twins)
      for (const KernelConfig& t : cuda_core_twins(s, so_far)) twins.push_back(t);  // likewise
    if (twins != prefetched) {
      for (const KernelConfig& t : twins) pool->request_when_idle(t, s.job.dtype, arch, s.job.weights, CompilePool::IdleOrder::first);
      prefetched = std::move(twins);
    }
    return out;
  };
  StrategyResult found = options.strategy == Strategy::exhaustive ? run_exhaustive(ranked, measure, strategy_options)
                                                                  : run_model_guided(ranked, measure, strategy_options);
  // Candidates outside the space, measured after the strategy: each batch counts into the
  // progress budget and may take the lead.
  const auto measure_more = [&](const std::vector<KernelConfig>& more) {
    if (more.empty()) return;
    progress.budget += more.size();
    const std::vector<Measured> got = measure(more);
    found.measured.insert(found.measured.end(), got.begin(), got.end());
    found.best = fastest_passing(found.measured);
  };
  // Twins with grids fitted to the SMs (balanced_twins): their block sizes depend on the shape
  // and the GPU; two to four more candidates a shape.
  measure_more(twins_to_measure(s, found.measured));
  // The register-capped twins of the candidates that hold more than kRegCap registers
  // (quantized weights on tensor cores at m tile > 1): whether a cap pays depends on what ptxas
  // makes of each kernel; at 16x28672x4096 fp8 the capped twin of a candidate that ran 46.0 us
  // won at 34.0, where the uncapped best ran 37.0 (H200).
  if (found.best && strategy_options.capped_twins) measure_more(capped_twins_to_measure(s, found.measured));
  return found;
}

// Timing noise of a few percent can reorder close finalists: each is timed twice more and its
// median of three decides. Updates the finalists' results; returns the winner's. With
// TuneJob::after the finalists are then ranked right after that call (rank_after) and the
// fastest there wins, unless the back-to-back winner is within 1% of it there too (noise).
const CandidateResult& Tuner::Impl::pick_winner(Session& s, const StrategyResult& found, const TuneOptions& options,
                                                const GpuModelParams& model, std::optional<AfterRanking>& after) {
  PhaseTimer timer(s.phases.finalists);
  std::vector<std::pair<double, KernelConfig>> ranked;  // (median, config)
  for (std::size_t i : top_passing(found.measured, std::max<std::size_t>(1, options.finalists))) {
    const KernelConfig& c = found.measured[i].config;
    const double us = median({found.measured[i].time_us, retime(s, c), retime(s, c)});
    CandidateResult& r = s.results[s.index.at(to_string(c))];
    r.time_us = us;
    r.gbps = s.problem.bytes_per_call() / (us * 1e-6) / 1e9;
    r.pct_of_ceiling = 100.0 * r.gbps / s.ceiling_gbps;
    ranked.emplace_back(us, c);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string winner = to_string(ranked.front().second);
  if (s.job.after) {
    std::vector<KernelConfig> finalists;
    for (const auto& [us, c] : ranked) finalists.push_back(c);
    after = rank_after(s, finalists, options.seed + 1, model);
    if (after->error.empty()) {
      const auto& f = after->finalists;
      const auto best = std::min_element(f.begin(), f.end(), [](const auto& a, const auto& b) { return a.after_us < b.after_us; });
      if (f.front().after_us > best->after_us * 1.01) winner = best->config;
    }
  }
  return s.results[s.index.at(winner)];
}

// The neighbour problem of a job with `after`: the job's dtype, M and weights at that shape,
// random data from `seed` (one of the last rankings' where it holds the same weights).
DeviceProblem& Tuner::Impl::neighbour(const TuneJob& job, std::uint64_t seed) {
  const Shape& a = *job.after;
  const std::int64_t rotate = rotation_bytes(ctx.info());
  auto& kept = neighbour_problems;
  auto found = std::find_if(kept.begin(), kept.end(), [&](const DeviceProblem& p) {
    return p.same_weights(job.dtype, a, a.k, seed, rotate, job.weights);
  });
  if (found != kept.end()) {
    std::rotate(found, found + 1, kept.end());  // now the most recent
  } else {
    if (kept.size() >= kKeptNeighbours) kept.erase(kept.begin());  // freed before the new one is allocated
    kept.emplace_back(job.dtype, a, a.k, seed, rotate, job.batch, 0, 0, job.weights);
  }
  if (kept.back().batch() != job.batch) kept.back().rebatch(job.batch);
  return kept.back();
}

// Each finalist timed as a decode step runs it: a graph of [neighbour, finalist] pairs (weights
// of both rotating past L2, as in time_calls), less the neighbour's own back-to-back time. The
// neighbour runs the cache's config for its shape where there is one, else the model's default.
// Its results are not checked: only its timing matters here, and its config is either a tuned
// (checked) one or the default, which the GPU suites check. Errors other than a lost context
// come back in `error`, and the tune keeps its back-to-back winner.
AfterRanking Tuner::Impl::rank_after(Session& s, const std::vector<KernelConfig>& finalists, std::uint64_t seed,
                                     const GpuModelParams& model) {
  const TuneJob& job = s.job;
  AfterRanking a;
  a.after = *job.after;
  a.alone_winner = to_string(finalists.front());
  try {
    check_shape(a.after);
    TuneJob before = job;
    before.shape = a.after;
    before.after.reset();
    std::optional<KernelConfig> nc;
    if (const auto stored = cache.find(key_of(ctx.info().id, before))) {
      nc = parse_config(stored->config);
      a.after_tuned = true;
    } else {
      nc = default_config(job.dtype, a.after, model, job.batch, job.weights);
    }
    a.after_config = to_string(*nc);
    DeviceProblem& np = neighbour(job, seed);
    pool->request(*nc, job.dtype, ctx.info().arch, job.weights).get();
    const auto nk = kernels.get(*nc, job.dtype, job.weights);
    np.workspace().reserve(*nc, a.after);
    const LaunchFn before_call = [&np, nk, c = *nc](int copy, CUstream st) {
      jit::launch_gemv(*nk, c, np.operands(copy % np.copies()), np.workspace(), st);
    };
    a.after_us = time_calls(before_call, np, stream, LaunchMode::graph).us_per_call;
    for (const KernelConfig& c : finalists) {
      const LaunchFn own = launcher(s, kernels.get(c, job.dtype, job.weights), c);
      AfterRanking::Finalist f;
      f.config = to_string(c);
      f.alone_us = s.results[s.index.at(f.config)].time_us;
      f.after_us = time_calls_after(before_call, a.after_us, own, s.problem, stream).us_per_call;
      a.finalists.push_back(std::move(f));
    }
  } catch (const CudaError& e) {
    throw_if_context_lost("the ranking after " + to_string(a.after), e, ctx.ordinal());
    a.error = e.what();
  } catch (const std::exception& e) {
    a.error = e.what();
  }
  if (!a.error.empty()) a.finalists.clear();
  return a;
}

GpuModelParams tuning_model(const GpuIdentity& gpu, std::optional<double> read_ceiling_gbps) {
  GpuModelParams model;
  model.sm_count = gpu.sm_count;
  if (read_ceiling_gbps) model.read_ceiling_gbps = *read_ceiling_gbps;
  return model;
}

// For operands as the tuner makes them (runnable_space of fresh allocations).
std::vector<KernelConfig> first_round_of(const TuneJob& job, const GpuModelParams& model) {
  try {
    const double bytes = problem_bytes(job.dtype, job.shape, job.batch, job.weights);
    const std::vector<KernelConfig> ranked = rank_by_model(
        worth_compiling(runnable_space(job.dtype, job.shape, job.batch, job.weights), job.dtype, job.shape, bytes, model),
        job.dtype, job.shape, model, job.weights);
    return first_round(ranked, bytes, job.weights);
  } catch (const std::exception&) {
    return {};
  }
}

void Tuner::compile_ahead(const TuneJob& job, const TuneOptions& options) {
  if (options.strategy != Strategy::model) return;
  Impl& m = *impl_;
  for (const KernelConfig& c : first_round_of(job, m.model_params())) m.ahead.push_back({c, job.dtype, job.weights});
}

// A function-try-block: a CUDA error met outside a candidate (the job's set-up, the read
// ceiling) is checked for a dead context like a candidate's, so tune_on_devices stops the
// device's worker on ContextLost whichever step met it.
ShapeResult Tuner::tune(const TuneJob& job, const TuneOptions& options,
                        const std::function<void(const TuneProgress&)>& on_progress) try {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  check_shape(job.shape);
  check_batch(job.batch);
  Impl& m = *impl_;
  m.ctx.make_current();
  const GpuInfo& info = m.ctx.info();

  GpuModelParams model = m.model_params();
  // The read ceiling is stored in the cache or measured by the first tune into it (a few
  // tenths of a second: an NVRTC compile and 80 reads of 4 GiB). The pool compiles the first
  // round (ranked with the model's default ceiling where none is known yet) while the problem is
  // set up and the ceiling measured; the search then ranks with the measured one, and the pool
  // compiles each kernel once, so only configs the two rankings do not share cost an extra
  // compile. A small shape's tune is compile-bound (docs/tuning.md, "Tune time"), so this hides
  // the set-up.
  const bool ceiling_known = m.known_ceiling().has_value();
  if (options.strategy == Strategy::model)
    for (const KernelConfig& c : first_round_of(job, model)) m.pool->request(c, job.dtype, info.arch, job.weights);
  const auto setup_started = Clock::now();
  const auto problem = [&] {
    if (m.last_problem && m.last_problem->same_weights(job.dtype, job.shape, job.shape.k, options.seed,
                                                       rotation_bytes(info), job.weights)) {
      DeviceProblem p = std::move(*m.last_problem);
      m.last_problem.reset();
      p.rebatch(job.batch);
      return p;
    }
    m.last_problem.reset();  // its device memory goes before the new problem's is allocated
    return DeviceProblem(job.dtype, job.shape, job.shape.k, options.seed, rotation_bytes(info), job.batch, 0, 0,
                         job.weights);
  };
  Impl::Session s{job, problem(), model.read_ceiling_gbps, {}, {}, {}};
  s.problem.reference();  // computed here rather than inside the first candidate's check
  s.phases.setup = std::chrono::duration<double>(Clock::now() - setup_started).count();

  const std::vector<KernelConfig> space = worth_compiling(runnable_space(s.problem), job.dtype, job.shape, s.problem.bytes_per_call(), model);
  if (!ceiling_known) {
    PhaseTimer timer(s.phases.ceiling);
    model.read_ceiling_gbps = s.ceiling_gbps = ceiling_gbps();
  }
  const std::vector<KernelConfig> ranked = rank_by_model(space, job.dtype, job.shape, model, job.weights);
  const StrategyResult found = m.search(s, ranked, options, on_progress);
  if (!found.best) throw nothing_passed(job, s.results);
  ShapeResult out;
  const CandidateResult& best = m.pick_winner(s, found, options, model, out.after);

  TuneRecord& rec = out.record;
  rec.key = key_of(info.id, job);
  rec.config = best.config;
  rec.time_us = best.time_us;
  rec.gbps = best.gbps;
  rec.pct_of_ceiling = best.pct_of_ceiling;
  rec.strategy = std::string(to_string(options.strategy));
  rec.driver_version = info.driver_version;
  rec.nvrtc_version = jit::nvrtc_version();
  rec.timestamp = unix_now();
  rec.candidates = s.results;
  m.cache.store(rec);  // one transaction: a crash after this keeps the whole shape

  // How well the model ranked what was measured (docs/tuning.md).
  std::vector<double> estimated, measured;
  for (const Measured& x : found.measured)
    if (x.passed) {
      estimated.push_back(estimate(x.config, job.dtype, job.shape, model, job.weights).time_us);
      measured.push_back(s.results[s.index.at(to_string(x.config))].time_us);
    }
  out.model_spearman = spearman_rank_correlation(estimated, measured);
  out.device = m.ctx.ordinal();
  out.space_size = ranked.size();
  out.measured = found.measured.size();
  out.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  out.phases = s.phases;
  m.last_problem.emplace(std::move(s.problem));
  return out;
} catch (const CudaError& e) {
  throw_if_context_lost("the tune of " + to_string(job), e, impl_->ctx.ordinal());
  throw;
}

}  // namespace gemvtune
