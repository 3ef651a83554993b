// tune_on_devices: the skip check, then one worker thread per GPU pulling jobs from the queue
// of its GPU model, each with its own context, Tuner and cache connection.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "gemvtune/generator.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"
#include "tuner/compile_pool.hpp"
#include "tuner/first_round.hpp"
#include "tuner/peak.hpp"

namespace gemvtune {

namespace {
// GPUs of one model share results, so they share one queue of jobs.
struct ModelGroup {
  GpuIdentity gpu;
  std::vector<int> devices;
  std::deque<std::size_t> queue;  // indices into jobs still to tune
  std::size_t workers_alive = 0;
  std::string last_worker_error;  // why the last worker stopped early
};
}  // namespace

std::vector<std::size_t> tune_order(const std::vector<TuneJob>& jobs, std::vector<std::size_t> queue) {
  const auto bytes = [&](std::size_t j) {
    return jobs[j].shape.n * jobs[j].shape.k * static_cast<std::int64_t>(dtype_size(jobs[j].dtype));
  };
  std::stable_sort(queue.begin(), queue.end(), [&](std::size_t a, std::size_t b) { return bytes(a) > bytes(b); });
  // Whether job b tunes the call before job a: a's `after` shape in the same dtype and weights,
  // at any M. Waiting for every M of it keeps a shape's M = 1 .. 16 together, which re-use one
  // problem's weights (DeviceProblem::rebatch): ordered M by M instead, the preset's setup took
  // 19 s of a 72 s tune rather than 9 (the H200 machine, bf16, M = 1, 2, 4, 8, 16).
  const auto before = [&](std::size_t b, std::size_t a) {
    const TuneJob &x = jobs[a], &y = jobs[b];
    return x.after && *x.after == y.shape && x.dtype == y.dtype && x.weights == y.weights;
  };
  // The queued job that runs before job a, if any.
  const auto pending_before = [&](std::size_t a) {
    return std::find_if(queue.begin(), queue.end(), [&](std::size_t b) { return b != a && before(b, a); });
  };
  std::vector<std::size_t> order;
  while (!queue.empty()) {
    // The largest job whose call before is not still queued.
    auto next = std::find_if(queue.begin(), queue.end(), [&](std::size_t a) { return pending_before(a) == queue.end(); });
    if (next == queue.end()) {
      // Every job waits for another: following the calls before from the largest reaches a cycle
      // (a decode step's chain); its largest job goes first, after its neighbour's model default.
      std::vector<std::size_t> path;
      for (auto at = queue.begin(); std::find(path.begin(), path.end(), *at) == path.end(); at = pending_before(*at))
        path.push_back(*at);
      const std::size_t start = *pending_before(path.back());  // where the path closed
      const auto cycle = std::find(path.begin(), path.end(), start);
      const auto largest = std::min_element(cycle, path.end(), [&](std::size_t a, std::size_t b) {
        return std::find(queue.begin(), queue.end(), a) < std::find(queue.begin(), queue.end(), b);
      });
      next = std::find(queue.begin(), queue.end(), *largest);
    }
    order.push_back(*next);
    queue.erase(next);
  }
  return order;
}

std::vector<std::size_t> jobs_to_compile_ahead(const std::vector<std::size_t>& left, std::size_t devices,
                                               bool first_take) {
  if (devices > 1) return left.empty() ? std::vector<std::size_t>{} : std::vector<std::size_t>{left.front()};
  return first_take ? left : std::vector<std::size_t>{};
}

std::vector<JobOutcome> tune_on_devices(const std::vector<TuneJob>& jobs, const std::vector<int>& devices,
                                        const std::string& cache_path, const TuneOptions& options,
                                        bool force, const TuneCallbacks& callbacks) {
  if (devices.empty()) throw InvalidArgument("no device to tune on");
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    throw InvalidArgument("a device is listed twice");

  std::vector<ModelGroup> groups;
  for (int d : devices) {
    const GpuInfo info = jit::read_gpu_info(d);  // throws NoGpu / InvalidArgument first
    auto g = std::find_if(groups.begin(), groups.end(), [&](const ModelGroup& m) { return m.gpu == info.id; });
    if (g == groups.end()) groups.push_back(ModelGroup{info.id, {d}, {}, 0, {}});
    else g->devices.push_back(d);
  }

  std::mutex mutex;  // guards groups, outcomes and serializes the callbacks
  std::vector<std::pair<std::size_t, JobOutcome>> outcomes;  // (group * jobs + job, outcome)
  auto report = [&](std::size_t group, std::size_t job, JobOutcome o) {  // with mutex held
    if (callbacks.on_outcome) callbacks.on_outcome(o);
    outcomes.emplace_back(group * jobs.size() + job, std::move(o));
  };

  std::size_t to_tune = 0, planned = 0;
  {
    TuningCache cache(cache_path, CacheMode::read_write);
    for (std::size_t g = 0; g < groups.size(); ++g)
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        std::optional<TuneRecord> existing;
        if (!force) existing = cache.find(key_of(groups[g].gpu, jobs[j]));
        if (existing) {
          JobOutcome o{jobs[j], groups[g].devices.front(), groups[g].gpu, JobStatus::skipped, {}, std::move(existing), {}};
          std::lock_guard<std::mutex> lock(mutex);
          report(g, j, std::move(o));
        } else {
          groups[g].queue.push_back(j);
          ++to_tune;
          planned += planned_measurements(options.strategy, jobs[j]);
        }
      }
  }
  // Outcomes are reported in the caller's order whatever order the jobs run in.
  for (ModelGroup& g : groups) {
    const std::vector<std::size_t> order = tune_order(jobs, {g.queue.begin(), g.queue.end()});
    g.queue.assign(order.begin(), order.end());
  }
  if (callbacks.on_start) callbacks.on_start(to_tune, planned);

  const int compile_threads =
      options.compile_threads > 0
          ? options.compile_threads
          : std::max(2, static_cast<int>(std::thread::hardware_concurrency()) / static_cast<int>(devices.size()));

  auto worker = [&](std::size_t g, int device) {
    // The next job, and in `behind` the jobs whose first rounds to queue for idle compile
    // threads meanwhile. One job ahead made later jobs wait 0.3-1.5 s for their first rounds in
    // 11 jobs of s159's batched preset (the `--json` phases in
    // bench/results/raw/5a11e20_h200_s159_*): every first round is measured whatever happens,
    // so a sole device queues them all.
    bool first_take = true;
    auto next_job = [&](std::vector<std::size_t>& behind) -> std::optional<std::size_t> {
      std::lock_guard<std::mutex> lock(mutex);
      behind.clear();
      std::deque<std::size_t>& queue = groups[g].queue;
      if (queue.empty()) return std::nullopt;
      const std::size_t j = queue.front();
      queue.pop_front();
      behind = jobs_to_compile_ahead({queue.begin(), queue.end()}, groups[g].devices.size(), first_take);
      first_take = false;
      return j;
    };
    std::string stopped_because;
    try {
      TuningCache cache(cache_path, CacheMode::read_write);
      // The first job's first round compiles while the context is created: NVRTC needs no
      // context, and a small shape's tune is compile-bound (docs/tuning.md, "Tune time"). Only
      // a GPU model's sole device knows which job it takes first.
      auto pool = std::make_shared<CompilePool>(compile_threads);
      if (options.strategy == Strategy::model && groups[g].devices.size() == 1) {
        const GpuInfo info = jit::read_gpu_info(device);
        const auto stored = cache.peak(info.id);
        const std::optional<std::size_t> first = [&]() -> std::optional<std::size_t> {
          std::lock_guard<std::mutex> lock(mutex);
          if (groups[g].queue.empty()) return std::nullopt;
          return groups[g].queue.front();
        }();
        if (!stored) start_peak_program(info.arch);  // the first tune measures the ceiling
        if (first) {
          const TuneJob& job = jobs[*first];
          const GpuModelParams model = tuning_model(info.id, stored ? std::optional<double>(stored->gbps) : std::nullopt);
          for (const KernelConfig& c : first_round_of(job, model)) pool->request(c, job.dtype, info.arch, job.weights);
        }
      }
      jit::Context ctx(device);  // the primary context, current in this thread from here on
      Tuner tuner(ctx, cache, pool);
      auto progress = [&](const TuneProgress& p) {
        std::lock_guard<std::mutex> lock(mutex);
        if (callbacks.on_progress) callbacks.on_progress(p);
      };
      std::vector<std::size_t> behind;
      while (auto j = next_job(behind)) {
        JobOutcome o{jobs[*j], device, groups[g].gpu, JobStatus::failed, {}, {}, {}};
        bool lost = false;
        try {
          // Queued for idle compile threads: on the H200 machine a preset's tune waited 35 of
          // its 70 s for NVRTC, while the threads idled through each job's setup and timing.
          for (std::size_t b : behind) tuner.compile_ahead(jobs[b], options);
          o.result = tuner.tune(jobs[*j], options, progress);
          o.status = JobStatus::tuned;
        } catch (const ContextLost& e) {
          o.error = e.what();
          lost = true;
        } catch (const std::exception& e) {
          o.error = e.what();
        }
        std::lock_guard<std::mutex> lock(mutex);
        report(g, *j, std::move(o));
        if (lost) {
          stopped_because = "device " + std::to_string(device) + " stopped: its CUDA context was lost";
          break;
        }
      }
    } catch (const std::exception& e) {  // the context, cache or Tuner could not be set up
      stopped_because = "device " + std::to_string(device) + ": " + e.what();
    }
    std::lock_guard<std::mutex> lock(mutex);
    --groups[g].workers_alive;
    if (!stopped_because.empty()) groups[g].last_worker_error = stopped_because;
  };

  std::vector<std::thread> threads;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].queue.empty()) continue;
    groups[g].workers_alive = groups[g].devices.size();
    for (int d : groups[g].devices) threads.emplace_back(worker, g, d);
  }
  for (auto& t : threads) t.join();

  // Jobs nobody could take: every worker of their GPU model stopped.
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t j : groups[g].queue) {
      JobOutcome o{jobs[j], -1, groups[g].gpu, JobStatus::failed, {}, {}, "not tuned: " + groups[g].last_worker_error};
      report(g, j, std::move(o));
    }

  std::stable_sort(outcomes.begin(), outcomes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<JobOutcome> out;
  for (auto& [order, o] : outcomes) out.push_back(std::move(o));
  return out;
}

}  // namespace gemvtune
