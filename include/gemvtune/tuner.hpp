// The tuner: finds the fastest correct kernel config of GEMV shapes on a GPU by verifying and
// timing candidates of the search space, stores each shape's winner with every candidate in
// the tuning cache, measures the GPU's read ceiling, and answers "which config for this shape".
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gemvtune/cache.hpp"
#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/peak.hpp"
#include "gemvtune/resolve.hpp"

namespace gemvtune {

namespace jit {
class Context;
}
class CompilePool;  // tuner/compile_pool.hpp: the library's own

// ---- strategies ---------------------------------------------------------------------------

// model: measure the analytic model's best ~8% of the space, then walk to better one-parameter
// neighbours of the leader, measuring at most 15% of the space. exhaustive: measure everything.
enum class Strategy { model, exhaustive };
std::string_view to_string(Strategy s);  // "model", "exhaustive"
// Exact names of to_string; throws InvalidArgument naming the text otherwise.
Strategy parse_strategy(std::string_view text);

// Spearman rank correlation of two equally long lists (average ranks for ties): 1 when they
// order things alike, -1 when reversed. NaN when shorter than 2 or one list is constant.
// Throws InvalidArgument when the lengths differ.
double spearman_rank_correlation(const std::vector<double>& a, const std::vector<double>& b);

// ---- tuning one GPU -------------------------------------------------------------------------

// One problem to tune: batch rows M (1..kMaxBatch), shape, activation dtype, weight format.
// after: the GEMV that runs just before this one in a decode step (a preset's decode chain,
// PresetShape::after). When set, the finalists are also timed right after a call of that shape
// (same dtype, M and weights) and the fastest there wins: under PDL a kernel overlaps the one
// before it, and configs that tie back to back can differ by 20% there (docs/tuning.md, "The
// call before"). Not part of the cache key; the stored times stay back-to-back times.
struct TuneJob {
  TuneJob() = default;
  TuneJob(const Shape& s, DType t = DType::bf16, int m = 1, WeightFormat w = WeightFormat::dense,
          std::optional<Shape> before = std::nullopt)
      : shape(s), dtype(t), batch(m), weights(w), after(before) {}

  Shape shape;
  DType dtype = DType::bf16;
  int batch = 1;
  WeightFormat weights = WeightFormat::dense;
  std::optional<Shape> after;
};
// "16x4096x4096 bf16" at M > 1, "4096x4096 bf16" at M = 1, then the weight format unless
// dense ("4096x4096 bf16 int4g128"): the one text form in logs and the CLI.
std::string to_string(const TuneJob& job);
// The cache key of a job on a GPU with the current templates: the one place it is assembled.
CacheKey key_of(const GpuIdentity& gpu, const TuneJob& job);

// The most candidates a strategy measures for this job (the space size for exhaustive).
std::size_t planned_measurements(Strategy s, const TuneJob& job);

// Reported after every candidate measured.
struct TuneProgress {
  int device = 0;
  TuneJob job;
  std::size_t measured = 0;  // candidates measured so far for this job
  std::size_t planned = 0;   // measured plus those queued in the current round
  std::size_t budget = 0;    // planned_measurements(strategy, job)
  std::string best_config;   // empty until one passed
  double best_us = 0;
};

struct TuneOptions {
  Strategy strategy = Strategy::model;
  std::size_t finalists = 3;  // the fastest few are timed twice more; the best median wins (TuneJob::after: ranked after that call)
  std::uint64_t seed = 12345; // random weights and x
  int compile_threads = 0;    // CPU threads compiling a batch; 0: one per core (split by devices)
};

// Where one shape's tune time went, in seconds of the tuning thread (docs/tuning.md, "Tune
// time"). Compiles run on the pool meanwhile; compile_wait is what the thread waited for them.
struct TunePhases {
  double setup = 0;         // random data, weight copies on the device, the float64 reference
  double ceiling = 0;       // measuring the read ceiling, where the cache had none (first tune)
  double compile_wait = 0;  // waiting for kernels the pool had not compiled (or read) yet
  double load = 0;          // loading compiled kernels into the context
  double verify = 0;        // the check against float64
  double timing = 0;        // graph capture and the timed replays of every candidate
  double finalists = 0;     // the finalists timed twice more
};

// How the finalists of a job with TuneJob::after ranked right after a call of that shape: each
// timed in a graph of [neighbour, finalist] pairs, less the neighbour's own back-to-back time.
struct AfterRanking {
  Shape after;
  std::string after_config;  // the neighbour's config: its cache entry (same GPU, dtype, M, weights) ...
  bool after_tuned = false;  // ... when it has one, else the model's default
  double after_us = 0;       // the neighbour's own back-to-back time
  struct Finalist {
    std::string config;
    double alone_us = 0;  // median of three back-to-back timings (as stored)
    double after_us = 0;  // right after the neighbour
  };
  std::vector<Finalist> finalists;  // fastest alone first
  std::string alone_winner;         // what back-to-back timing alone would have picked
  std::string error;                // non-empty: the ranking failed (the alone winner was kept)
};

struct ShapeResult {
  TuneRecord record;                // as stored: winner and every candidate measured
  std::optional<AfterRanking> after;  // jobs with TuneJob::after
  int device = 0;                   // ordinal it ran on
  std::size_t space_size = 0;       // configs that can run this shape
  std::size_t measured = 0;         // distinct configs measured
  double model_spearman = std::numeric_limits<double>::quiet_NaN();  // model vs measured times
  double seconds = 0;               // wall time, including compiles it waited for
  TunePhases phases;                // how `seconds` divides
};

// A kernel fault (illegal address, trap, ...) or any other sticky error left the CUDA context
// unusable: nothing more can run on that device in this process. The message names what failed
// (a config, the ranking after the call before, the job's set-up) and the error.
class ContextLost : public Error {
 public:
  using Error::Error;
};

// Tunes shapes on one GPU. Construct and use it on a thread where ctx is current. One
// DeviceProblem per shape serves all its candidates; kernels compile on a pool of CPU threads
// while the GPU measures those already compiled.
class Tuner {
 public:
  Tuner(const jit::Context& ctx, TuningCache& cache, int compile_threads = 0);
  // With a pool whose compiles may have started: tune_on_devices queues the first job's first
  // round before the context exists (tuner/first_round.hpp). Null: a pool of its own, as above.
  Tuner(const jit::Context& ctx, TuningCache& cache, std::shared_ptr<CompilePool> pool);
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // The GPU's measured read ceiling (GB/s) from the cache; measured and stored first when the
  // cache has none for this GPU.
  double ceiling_gbps();

  // Verifies and times candidates of the job's space by options.strategy, re-times the
  // finalists, stores the record in one cache transaction and returns it. Candidates that
  // fail (compile, launch, wrong result) are recorded with the reason and never chosen.
  // Throws Error when none passes (nothing stored) and ContextLost after a CUDA error, at any
  // step, that left the context unusable.
  // The problem's random weights (host and device copies) stay with the Tuner until its next
  // tune or its end: a next job of the same dtype, shape and weight format at another batch M
  // re-uses them rather than drawing and uploading them again.
  ShapeResult tune(const TuneJob& job, const TuneOptions& options,
                   const std::function<void(const TuneProgress&)>& on_progress = {});

  // The compiles of the job's first round (the strategy's first batch; none for exhaustive),
  // for CPU threads with nothing else to do once the next tune() has queued its own first
  // batch: they compile while the GPU times that tune's kernels. Several calls queue several
  // jobs' rounds, in the order of the calls. Errors are left to the job's own tune(), which
  // asks for the same kernels.
  void compile_ahead(const TuneJob& job, const TuneOptions& options);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- tuning many shapes on several GPUs ------------------------------------------------------

enum class JobStatus { tuned, skipped, failed };

struct JobOutcome {
  TuneJob job;
  int device = -1;   // ordinal that tuned it (skipped: the first device of its GPU model)
  GpuIdentity gpu;
  JobStatus status = JobStatus::failed;
  std::optional<ShapeResult> result;  // tuned
  std::optional<TuneRecord> existing; // skipped: what the cache already holds
  std::string error;                  // failed: why
};

// Calls are serialized (never two at once), from whichever thread got there.
struct TuneCallbacks {
  std::function<void(const JobOutcome&)> on_outcome;  // each skipped, tuned or failed job
  // After the skip check: jobs to tune and the sum of their planned_measurements.
  std::function<void(std::size_t jobs, std::size_t planned)> on_start;
  std::function<void(const TuneProgress&)> on_progress;
};

// The order tune_on_devices takes the jobs of `queue` (indices into jobs) in: the largest
// weights first, so that a big shape (an lm_head) taken last does not leave the other GPUs idle
// while one finishes it; but a job with `after` waits for the queued jobs of that shape (same
// dtype and weights, any M: a shape's M stay together and share one problem's weights), so
// that it ranks after the neighbour's tuned config. When every queued job waits for another (a
// decode step is a cycle: qkv after down after gate_up after o after qkv), the largest job of
// the cycle reached from the largest queued job goes first, ranked after its neighbour's model
// default.
std::vector<std::size_t> tune_order(const std::vector<TuneJob>& jobs, std::vector<std::size_t> queue);

// The jobs whose first rounds a worker hands its compile threads to do while idle
// (Tuner::compile_ahead), when it takes a job from its GPU model's queue; `left` is that queue
// after the take. The model's only device: every job left, with its first take, none after
// (the pool would otherwise idle through long jobs, and later jobs wait for their first
// rounds). Devices that share a queue: the next job, at each take (with all, every pool would
// ask for the same kernels in the same order, one pool's threads waiting on another's).
std::vector<std::size_t> jobs_to_compile_ahead(const std::vector<std::size_t>& left, std::size_t devices,
                                               bool first_take);

// Tunes every job on the given GPU ordinals: one worker thread per GPU, each with its own
// context, Tuner and connection to the cache file at cache_path. GPUs of one model share the
// jobs; GPUs of different models each tune every job (results are per GPU model). Without
// force, jobs already in the cache are skipped. A job that fails does not stop the others;
// a worker whose context was lost stops, leaving its model's remaining jobs to the others.
// Outcomes are returned in job order (per GPU model).
std::vector<JobOutcome> tune_on_devices(const std::vector<TuneJob>& jobs, const std::vector<int>& devices,
                                        const std::string& cache_path, const TuneOptions& options,
                                        bool force, const TuneCallbacks& callbacks = {});


}  // namespace gemvtune
