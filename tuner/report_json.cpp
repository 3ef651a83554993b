// The JSON forms shared by the CLI and the C API (see report_json.hpp).
#include "tuner/report_json.hpp"

#include <cmath>
#include <cstdio>

#include "cache/text.hpp"
#include "cache/validate.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::report {

Json record_json(const TuneRecord& r, bool with_candidates) {
  CacheDocument doc;
  doc.tuned.push_back(r);
  Json j = cache::encode_document(doc)["tuned"][0];
  if (!with_candidates) j.erase("candidates");
  return j;
}

Json peak_json(const PeakRecord& p) {
  CacheDocument doc;
  doc.peaks.push_back(p);
  return cache::encode_document(doc)["peaks"][0];
}

namespace {
Json phases_json(const TunePhases& p) {
  return Json{{"setup", p.setup},   {"ceiling", p.ceiling}, {"compile_wait", p.compile_wait}, {"load", p.load},
              {"verify", p.verify}, {"timing", p.timing},   {"finalists", p.finalists}};
}
}  // namespace

TunePhases total_phases(const std::vector<JobOutcome>& outcomes) {
  TunePhases t;
  for (const JobOutcome& o : outcomes) {
    if (o.status != JobStatus::tuned || !o.result) continue;
    const TunePhases& p = o.result->phases;
    t.setup += p.setup;
    t.ceiling += p.ceiling;
    t.compile_wait += p.compile_wait;
    t.load += p.load;
    t.verify += p.verify;
    t.timing += p.timing;
    t.finalists += p.finalists;
  }
  return t;
}

Json tune_run_json(const std::vector<JobOutcome>& outcomes, const std::string& db, Strategy strategy, double seconds) {
  std::size_t tuned = 0, skipped = 0, failed = 0;
  Json shapes = Json::array();
  for (const JobOutcome& o : outcomes) {
    ++(o.status == JobStatus::tuned ? tuned : o.status == JobStatus::skipped ? skipped : failed);
    shapes.push_back(outcome_json(o));
  }
  return Json{{"db", db},
              {"strategy", std::string(to_string(strategy))},
              {"template_version", template_version()},
              {"tuned", tuned},
              {"skipped", skipped},
              {"failed", failed},
              {"seconds", seconds},
              {"phases", phases_json(total_phases(outcomes))},
              {"shapes", std::move(shapes)}};
}

Json outcome_json(const JobOutcome& o) {
  static const char* const kStatus[] = {"tuned", "skipped", "failed"};
  Json j{{"shape", to_string(o.job.shape)},
         {"n", o.job.shape.n},
         {"k", o.job.shape.k},
         {"batch", o.job.batch},
         {"dtype", std::string(to_string(o.job.dtype))},
         {"weights", std::string(to_string(o.job.weights))},
         {"gpu", o.gpu.key()},
         {"device", o.device},
         {"status", kStatus[static_cast<int>(o.status)]}};
  if (o.status == JobStatus::tuned) {
    const ShapeResult& r = *o.result;
    j["config"] = r.record.config;
    j["time_us"] = r.record.time_us;
    j["gbps"] = r.record.gbps;
    j["pct_of_ceiling"] = r.record.pct_of_ceiling;
    j["measured"] = r.measured;
    j["space"] = r.space_size;
    j["strategy"] = r.record.strategy;
    j["model_spearman"] = std::isnan(r.model_spearman) ? Json(nullptr) : Json(r.model_spearman);
    j["seconds"] = r.seconds;
    j["phases"] = phases_json(r.phases);
    if (r.after) {
      Json finalists = Json::array();
      for (const auto& f : r.after->finalists)
        finalists.push_back(Json{{"config", f.config}, {"alone_us", f.alone_us}, {"after_us", f.after_us}});
      j["after"] = Json{{"shape", to_string(r.after->after)},     {"config", r.after->after_config},
                        {"tuned", r.after->after_tuned},           {"us", r.after->after_us},
                        {"alone_winner", r.after->alone_winner},   {"finalists", std::move(finalists)},
                        {"error", r.after->error.empty() ? Json(nullptr) : Json(r.after->error)}};
    }
    j["record"] = record_json(r.record, true);
  } else if (o.status == JobStatus::skipped) {
    j["config"] = o.existing->config;
    j["time_us"] = o.existing->time_us;
    j["gbps"] = o.existing->gbps;
    j["pct_of_ceiling"] = o.existing->pct_of_ceiling;
    j["strategy"] = o.existing->strategy;
  } else {
    j["error"] = o.error;
  }
  return j;
}

Json preset_json(const Preset& p) {
  Json shapes = Json::array();
  for (const PresetShape& s : p.shapes)
    shapes.push_back(Json{{"n", s.shape.n},
                          {"k", s.shape.k},
                          {"layers", s.layers},
                          {"after", s.after ? Json(to_string(*s.after)) : Json(nullptr)}});
  return Json{{"name", p.name}, {"description", p.description}, {"shapes", std::move(shapes)}};
}

Json fit_json(const CacheFit& fit) {
  const FitReport& r = fit.report;
  Json constants = Json::array();
  for (const FitConstant& c : r.constants)
    constants.push_back(Json{{"name", c.name},
                             {"shipped", c.shipped},
                             {"fitted", c.fitted},
                             {"rows", c.rows},
                             {"rms_log_error_shipped", c.error_shipped},
                             {"rms_log_error_fitted", c.error_fitted}});
  return Json{{"db", fit.path},
              {"gpu", fit.gpu.key()},
              {"template_version", template_version()},
              {"rows", r.rows},
              {"problems", r.problems},
              {"constants", constants},
              {"rms_log_error_shipped", r.error_shipped},
              {"rms_log_error_fitted", r.error_fitted},
              {"picks_over_best_shipped", r.picks_shipped},
              {"picks_over_best_fitted", r.picks_fitted}};
}

Json query_json(const TuneJob& job, const GpuIdentity& gpu, const Resolved& r, const std::string& db) {
  return Json{{"shape", to_string(job.shape)},
              {"batch", job.batch},
              {"dtype", std::string(to_string(job.dtype))},
              {"weights", std::string(to_string(job.weights))},
              {"gpu", gpu.key()},
              {"template_version", template_version()},
              {"config", to_string(r.config)},
              {"source", std::string(to_string(r.source))},
              {"source_text", r.source_text},
              {"db", db},
              {"record", r.record ? record_json(*r.record, false) : Json(nullptr)},
              {"declined", r.declined ? record_json(*r.declined, false) : Json(nullptr)}};
}

GpuIdentity parse_gpu_key(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("bad GPU '" + cache::abbreviated(text) + "': " + why +
                      " (expected NAME/<SMs>sm/cc<major>.<minor>, e.g. 'NVIDIA H200/132sm/cc9.0')");
  };
  const auto cc = text.rfind('/');
  if (cc == std::string::npos || cc == 0) throw bad("not a GPU key");
  const auto sm = text.rfind('/', cc - 1);
  if (sm == std::string::npos || sm == 0) throw bad("not a GPU key");
  GpuIdentity id;
  id.name = text.substr(0, sm);
  const std::string sm_text = text.substr(sm + 1, cc - sm - 1), cc_text = text.substr(cc + 1);
  int major = 0, minor = 0, sms = 0;
  char tail = 0;
  if (std::sscanf(sm_text.c_str(), "%dsm%c", &sms, &tail) != 1 || sm_text != std::to_string(sms) + "sm")
    throw bad("'" + cache::abbreviated(sm_text) + "' is not <SMs>sm");
  if (std::sscanf(cc_text.c_str(), "cc%d.%d%c", &major, &minor, &tail) != 2 ||
      cc_text != "cc" + std::to_string(major) + "." + std::to_string(minor))
    throw bad("'" + cache::abbreviated(cc_text) + "' is not cc<major>.<minor>");
  id.sm_count = sms;
  id.cc_major = major;
  id.cc_minor = minor;
  if (id.key() != text) throw bad("not a GPU key");
  // The same rules as the cache's: an identity it would never hold cannot be asked about.
  try {
    cache::validate_gpu(id);
  } catch (const InvalidArgument& e) {
    const std::string why = e.what();
    throw bad(why.substr(why.find(": ") + 2));  // without "invalid cache record: "
  }
  return id;
}

}  // namespace gemvtune::report
