// The C API's cache commands (gemvtune.h, "the offline side"): tune, query, list, export,
// import, peak and the presets, each answering with the JSON document of the matching CLI
// command with --json (cli/cmd_*.cpp) and failing with the message the CLI prints.
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cache/json_records.hpp"
#include "cache/output_file.hpp"
#include "tuner/report_json.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/gemvtune.h"
#include "gemvtune/generator.hpp"
#include "gemvtune/presets.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"
#include "runtime/c_api_internal.hpp"

namespace gemvtune::capi {
namespace {

using Json = cache::Json;

std::string db_path(const char* given) {
  return given && *given ? std::string(given) : TuningCache::default_path();
}


// Runs body (which fills json), guarding the out parameter the same way in every function.
template <typename F>
gemvtune_status answer(const char* function, char** json_out, F&& body) {
  try {
    if (!json_out) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, std::string(function) + ": json_out is NULL");
    *json_out = nullptr;
    const std::string text = body();
    *json_out = copy_out(text);
    return GEMVTUNE_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

}  // namespace
}  // namespace gemvtune::capi

using namespace gemvtune;
using capi::Json;

extern "C" {

gemvtune_status gemvtune_default_cache_path(char** out) {
  return capi::answer("gemvtune_default_cache_path", out, [] { return TuningCache::default_path(); });
}

gemvtune_status gemvtune_device_count(int* out) {
  try {
    if (!out) return capi::fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_device_count: out is NULL");
    *out = 0;
    *out = jit::device_count();
    return GEMVTUNE_OK;
  } catch (...) {
    return capi::status_of_current_exception();
  }
}

gemvtune_status gemvtune_cache_list(const char* db, char** json_out) {
  return capi::answer("gemvtune_cache_list", json_out, [&] {
    const std::string path = capi::db_path(db);
    Json tuned = Json::array(), ceilings = Json::array(), skipped = Json::array();
    if (const std::optional<TuningCache> cache = TuningCache::open_if_present(path)) {  // none: nothing tuned
      std::set<std::string> seen;
      for (const TuneRecord& r : cache->list()) {
        tuned.push_back(report::record_json(r, false));
        if (seen.insert(r.key.gpu.key()).second)
          if (auto p = cache->peak(r.key.gpu)) ceilings.push_back(report::peak_json(*p));
      }
      for (const std::string& problem : cache->problems()) skipped.push_back(problem);
    }
    // "skipped": the rows this build cannot use (the CLI warns of them on stderr).
    return cache::json_text(Json{{"db", path}, {"template_version", template_version()}, {"tuned", tuned},
                                 {"peaks", ceilings}, {"skipped", skipped}},
                            2);
  });
}

gemvtune_status gemvtune_cache_export(const char* db, const char* out_path, char** json_out) {
  return capi::answer("gemvtune_cache_export", json_out, [&] {
    const TuningCache cache(capi::db_path(db), CacheMode::read_only);
    std::ostringstream text;
    const TuningCache::ExportStats stats = cache.export_json(text);
    if (!out_path || !*out_path) return text.str();
    const std::string target = out_path;
    cache::refuse_cache_files_as_output("out", target, cache.path());
    // The CLI's writer: a regular file replaced atomically keeping its mode, a symlink, FIFO or
    // device written through, never renamed over.
    cache::write_output_file(target, text.str());
    Json skipped = Json::array();
    for (const std::string& row : stats.skipped) skipped.push_back(row);
    return cache::json_text(Json{{"db", cache.path()}, {"out", target}, {"tuned", stats.tuned},
                                 {"peaks", stats.peaks}, {"skipped", skipped}},
                            2);
  });
}

gemvtune_status gemvtune_cache_import(const char* db, const char* path, char** json_out) {
  return capi::answer("gemvtune_cache_import", json_out, [&] {
    if (!path || !*path) throw InvalidArgument("FILE is empty: give a JSON file written by `gemvtune export`");
    // The document is read and checked completely before the cache is opened, as
    // `gemvtune import` does, so a refused import touches no cache file.
    const std::string file_path = path;
    std::error_code ec;
    if (std::filesystem::is_directory(file_path, ec))
      throw InvalidArgument("'" + file_path + "' is a directory, not a JSON file written by `gemvtune export`");
    std::ifstream file(file_path, std::ios::binary);
    if (!file) throw InvalidArgument("cannot open '" + file_path + "': " + std::strerror(errno));
    const CacheDocument doc = read_cache_json(file, file_path);
    TuningCache cache(capi::db_path(db), CacheMode::read_write);
    const TuningCache::ImportStats stats = cache.import_document(doc);
    return cache::json_text(Json{{"db", cache.path()}, {"file", path}, {"added", stats.added},
                                 {"replaced", stats.replaced}, {"kept", stats.kept},
                                 {"peaks_added", stats.peaks_added}, {"peaks_raised", stats.peaks_raised},
                                 {"peaks_kept", stats.peaks_kept}},
                            2);
  });
}

gemvtune_status gemvtune_query(const char* db, const gemvtune_problem* problem, int device, const char* gpu_key,
                               char** json_out) {
  return capi::answer("gemvtune_query", json_out, [&] {
    const capi::CheckedProblem p = capi::check_problem(problem, "gemvtune_query");
    const GpuIdentity gpu = gpu_key && *gpu_key ? report::parse_gpu_key(gpu_key) : jit::read_gpu_info(device).id;
    const std::string path = capi::db_path(db);
    const std::optional<TuningCache> cache = TuningCache::open_if_present(path);  // none: the model's default
    const Resolved r = resolve_config(cache ? &*cache : nullptr, gpu, p.shape, p.dtype, static_cast<int>(p.m), p.weights);
    return cache::json_text(report::query_json(TuneJob{p.shape, p.dtype, static_cast<int>(p.m), p.weights}, gpu, r, path), 2);
  });
}

gemvtune_status gemvtune_peak(const char* db, int device, char** json_out) {
  return capi::answer("gemvtune_peak", json_out, [&] {
    const std::string path = capi::db_path(db);
    jit::Context ctx(device);
    const PeakRecord p = measure_peak(ctx);
    TuningCache cache(path, CacheMode::read_write);
    const std::optional<PeakRecord> before = cache.peak(p.gpu);
    cache.store_peak(p);
    return cache::json_text(Json{{"db", path},
                                 {"gpu", p.gpu.key()},
                                 {"gbps", p.gbps},
                                 {"bytes", p.bytes},
                                 {"runs", PeakOptions{}.runs},
                                 {"previous_gbps", before ? Json(before->gbps) : Json(nullptr)},
                                 {"peak", report::peak_json(p)}},
                            2);
  });
}

gemvtune_status gemvtune_fit(const char* db, const char* gpu_key, char** json_out) {
  return capi::answer("gemvtune_fit", json_out, [&] {
    const std::optional<GpuIdentity> gpu =
        gpu_key && *gpu_key ? std::optional(report::parse_gpu_key(gpu_key)) : std::nullopt;
    return cache::json_text(report::fit_json(fit_cache(capi::db_path(db), gpu)), 2);
  });
}

gemvtune_status gemvtune_presets(char** json_out) {
  return capi::answer("gemvtune_presets", json_out, [] {
    Json out = Json::array();
    for (const Preset& p : presets()) out.push_back(report::preset_json(p));
    return cache::json_text(out, 2);
  });
}

gemvtune_status gemvtune_find_preset(const char* name, char** json_out) {
  return capi::answer("gemvtune_find_preset", json_out, [&] {
    if (!name) throw InvalidArgument("gemvtune_find_preset: name is NULL");
    return cache::json_text(report::preset_json(find_preset(name)), 2);
  });
}

gemvtune_status gemvtune_parse_shape(const char* text, int64_t* n, int64_t* k) {
  try {
    if (!text || !n || !k) return capi::fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_parse_shape: NULL argument");
    const Shape s = parse_shape(text);
    *n = s.n;
    *k = s.k;
    return GEMVTUNE_OK;
  } catch (...) {
    return capi::status_of_current_exception();
  }
}

gemvtune_status gemvtune_read_shape_file(const char* path, char** json_out) {
  return capi::answer("gemvtune_read_shape_file", json_out, [&] {
    if (!path) throw InvalidArgument("gemvtune_read_shape_file: path is NULL");
    Json out = Json::array();
    for (const Shape& s : read_shape_file(path)) out.push_back(Json{{"n", s.n}, {"k", s.k}});
    return cache::json_text(out);
  });
}

gemvtune_status gemvtune_tune(const gemvtune_problem* problems, size_t count, const gemvtune_tune_options* options,
                              char** json_out) {
  return capi::answer("gemvtune_tune", json_out, [&] {
    const char* fn = "gemvtune_tune";
    // Everything is checked before any GPU or file is touched, as `gemvtune tune` does.
    gemvtune_tune_options given{};
    given.struct_size = sizeof given;
    if (options) given = capi::read_struct(options, sizeof(gemvtune_tune_options), fn, "gemvtune_tune_options");
    if (given.reserved != 0) throw InvalidArgument(std::string(fn) + ": gemvtune_tune_options.reserved must be 0");
    if (count > 0 && !problems) throw InvalidArgument(std::string(fn) + ": problems is NULL");
    std::vector<TuneJob> jobs;
    for (size_t i = 0; i < count; ++i) {
      const capi::CheckedProblem p = capi::check_problem(&problems[i], fn);
      const TuneJob job{p.shape, p.dtype, static_cast<int>(p.m), p.weights, p.after};
      bool seen = false;
      for (const TuneJob& j : jobs) seen = seen || (j.shape == job.shape && j.dtype == job.dtype && j.batch == job.batch && j.weights == job.weights);
      if (!seen) jobs.push_back(job);
    }
    if (jobs.empty()) throw InvalidArgument("no shapes to tune");
    TuneOptions tune_options;
    tune_options.strategy = parse_strategy(given.strategy && *given.strategy ? given.strategy : "model");
    std::vector<int> devices;
    if (given.device_count > 0 && !given.devices) throw InvalidArgument(std::string(fn) + ": devices is NULL");
    for (size_t i = 0; i < given.device_count; ++i) {
      const int d = given.devices[i];
      if (d < 0) throw InvalidArgument("bad device " + std::to_string(d) + ": GPU ordinals are 0 or more");
      for (int seen : devices)
        if (seen == d) throw InvalidArgument("device " + std::to_string(d) + " is listed twice");
      devices.push_back(d);
    }
    if (devices.empty()) devices.push_back(0);
    const std::string path = capi::db_path(given.db);

    // tune_on_devices serializes the callbacks; the mutex also orders them with the caller.
    std::mutex emit_mutex;
    auto emit = [&](const Json& event) {
      if (!given.on_event) return;
      const std::string text = cache::json_text(event);
      std::lock_guard<std::mutex> lock(emit_mutex);
      given.on_event(text.c_str(), given.user);
    };
    TuneCallbacks callbacks;
    callbacks.on_start = [&](std::size_t jobs_left, std::size_t planned) {
      emit(Json{{"event", "start"}, {"jobs", jobs_left}, {"planned", planned}, {"db", path},
                {"strategy", std::string(to_string(tune_options.strategy))}, {"devices", devices}});
    };
    callbacks.on_progress = [&](const TuneProgress& p) {
      emit(Json{{"event", "progress"},
                {"device", p.device},
                {"shape", to_string(p.job.shape)},
                {"batch", p.job.batch},
                {"dtype", std::string(to_string(p.job.dtype))},
                {"measured", p.measured},
                {"planned", p.planned},
                {"budget", p.budget},
                {"best_config", p.best_config},
                {"best_us", p.best_us}});
    };
    callbacks.on_outcome = [&](const JobOutcome& o) {
      Json event = report::outcome_json(o);
      event.erase("record");  // the full record comes with the result
      Json tagged{{"event", "outcome"}};
      for (auto& item : event.items()) tagged[item.key()] = item.value();
      emit(tagged);
    };
    const auto started = std::chrono::steady_clock::now();
    const std::vector<JobOutcome> outcomes = tune_on_devices(jobs, devices, path, tune_options, given.force != 0, callbacks);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return cache::json_text(report::tune_run_json(outcomes, path, tune_options.strategy, seconds), 2);
  });
}

}  // extern "C"
