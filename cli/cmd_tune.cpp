// gemvtune tune: tune a list of shapes (given, from a file or a model preset) for one or more
// dtypes on one or more GPUs, storing each shape's result in the cache as soon as it is done.
#include <unistd.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "cli/cache_commands.hpp"
#include "cli/cli_common.hpp"
#include "cli/text_table.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/presets.hpp"
#include "cli/batch_option.hpp"
#include "cli/weights_option.hpp"
#include "tuner/report_json.hpp"
#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"
#include "cli/progress.hpp"

namespace gemvtune::cli {

namespace {
constexpr const char* kDefaultPreset = "llama-3.1-8b";

std::vector<std::string> split_commas(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = v.find(',', start);
      out.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

std::vector<DType> parse_dtypes(const std::vector<std::string>& values) {
  std::vector<DType> out;
  for (const std::string& v : split_commas(values)) {
    const DType t = parse_dtype(v);  // InvalidArgument: exit 2
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

// "0,1", "2" or "all" (every GPU of the machine; needs the driver).
std::vector<int> parse_devices(const std::string& text) {
  if (text == "all") {
    std::vector<int> all(static_cast<std::size_t>(jit::device_count()));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }
  std::vector<int> out;
  for (const std::string& item : split_commas({text})) {
    std::size_t used = 0;
    int d = -1;
    try {
      d = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || d < 0 || !std::isdigit(static_cast<unsigned char>(item[0])))
      throw UsageError("bad --devices '" + text + "': expected GPU ordinals like 0,1 or 'all'");
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw UsageError("bad --devices '" + text + "': device " + item + " is listed twice");
    out.push_back(d);
  }
  return out;
}

void print_presets(std::ostream& out) {
  for (const Preset& p : presets()) {
    out << p.name << (p.name == kDefaultPreset ? " (default)" : "") << ": " << p.description << "\n";
    for (const PresetShape& s : p.shapes)
      out << "  " << to_string(s.shape) << "  " << s.layers << (s.after ? "  (after " + to_string(*s.after) + ")" : "")
          << "\n";
  }
}

std::string job_name(const TuneJob& j) { return to_string(j); }

// "; after 4096x14336 (tuned tc_...): 6.45 us there; the fastest alone, tc_..., 8.66 us": how the
// finalists ranked right after the call before them (the winner's time there, and the
// back-to-back winner's where it lost there), or why they were not ranked.
std::string after_text(const AfterRanking& a, const std::string& winner) {
  const std::string where = "; after " + to_string(a.after);
  if (!a.error.empty()) return where + ": not ranked (" + a.error + "), the fastest alone kept";
  const auto after_us = [&](const std::string& config) {
    for (const auto& f : a.finalists)
      if (f.config == config) return f.after_us;
    return 0.0;
  };
  double fastest = after_us(winner);
  for (const auto& f : a.finalists) fastest = std::min(fastest, f.after_us);
  const std::string neighbour = " (" + std::string(a.after_tuned ? "tuned " : "default ") + a.after_config + ")";
  const std::string here = where + neighbour + ": " + fixed("%.2f", after_us(winner)) + " us";
  if (winner != a.alone_winner)
    return here + " there; the fastest alone, " + a.alone_winner + ", " + fixed("%.2f", after_us(a.alone_winner)) + " us";
  return here + (after_us(winner) > fastest ? ", within 1% of the fastest there, kept" : ", the fastest there too");
}

// What happened to one job, as one line for the person watching.
std::string outcome_line(const JobOutcome& o) {
  switch (o.status) {
    case JobStatus::skipped:
      return job_name(o.job) + ": already tuned (" + o.existing->config + ", " +
             fixed("%.1f", o.existing->time_us) + " us), skipped";
    case JobStatus::failed:
      return job_name(o.job) + ": FAILED: " + o.error;
    case JobStatus::tuned: {
      const ShapeResult& r = *o.result;
      return job_name(o.job) + ": " + r.record.config + " " + fixed("%.2f", r.record.time_us) + " us, " +
             fixed("%.0f", r.record.gbps) + " GB/s (" + fixed("%.1f", r.record.pct_of_ceiling) +
             "% of ceiling); " + std::to_string(r.measured) + "/" + std::to_string(r.space_size) +
             " measured in " + ProgressPrinter::format_seconds(r.seconds) + " on GPU " + std::to_string(o.device) +
             (r.after ? after_text(*r.after, r.record.config) : "");
    }
  }
  return {};
}

// Where the tuned jobs' time went (their phases summed; --json has them shape by shape).
std::string phases_line(const TunePhases& p) {
  return "time in the jobs: timing " + fixed("%.1f", p.timing) + " s, waiting for NVRTC " +
         fixed("%.1f", p.compile_wait) + " s, setup (data and float64 reference) " + fixed("%.1f", p.setup) +
         " s, read ceiling " + fixed("%.1f", p.ceiling) +
         " s, output checks " + fixed("%.1f", p.verify) + " s, finalists " + fixed("%.1f", p.finalists) +
         " s, kernel loads " + fixed("%.1f", p.load) + " s";
}

void print_table(const std::vector<JobOutcome>& outcomes, std::ostream& out) {
  std::set<std::string> gpus;
  bool quantized = false;
  for (const auto& o : outcomes) {
    gpus.insert(o.gpu.key());
    quantized = quantized || is_quantized(o.job.weights);
  }
  const bool show_gpu = gpus.size() > 1;
  std::vector<std::string> header = {"shape", "M", "dtype", "config", "us", "GB/s", "% ceiling", "measured/space", "strategy"};
  std::vector<bool> right = {false, true, false, false, true, true, true, true, false};
  if (quantized) {  // a weights column only when some W is quantized: dense tables stay as they were
    header.insert(header.begin() + 3, "weights");
    right.insert(right.begin() + 3, false);
  }
  if (show_gpu) {
    header.insert(header.begin(), "gpu");
    right.insert(right.begin(), false);
  }
  TextTable table(header, right);
  for (const auto& o : outcomes) {
    std::vector<std::string> row;
    if (o.status == JobStatus::tuned) {
      const TuneRecord& r = o.result->record;
      row = {to_string(o.job.shape), std::to_string(o.job.batch), std::string(to_string(o.job.dtype)), r.config,
             fixed("%.2f", r.time_us), fixed("%.0f", r.gbps), fixed("%.1f", r.pct_of_ceiling),
             std::to_string(o.result->measured) + "/" + std::to_string(o.result->space_size), r.strategy};
    } else if (o.status == JobStatus::skipped) {
      const TuneRecord& r = *o.existing;
      row = {to_string(o.job.shape), std::to_string(o.job.batch), std::string(to_string(o.job.dtype)), r.config,
             fixed("%.2f", r.time_us), fixed("%.0f", r.gbps), fixed("%.1f", r.pct_of_ceiling), "cached", r.strategy};
    } else {
      row = {to_string(o.job.shape), std::to_string(o.job.batch), std::string(to_string(o.job.dtype)), "FAILED",
             "-", "-", "-", "-", "-"};
    }
    if (quantized) row.insert(row.begin() + 3, std::string(to_string(o.job.weights)));
    if (show_gpu) row.insert(row.begin(), o.gpu.key());
    table.add(row);
  }
  table.print(out);
}
}  // namespace

int cmd_tune(const std::vector<std::string>& args) {
  po::options_description desc("tune options");
  std::vector<std::string> shape_texts, preset_names, dtype_texts, batch_texts, weights_texts;
  std::string shapes_file, strategy_text, db, devices_text;
  desc.add_options()
      ("shape", po::value(&shape_texts), "shape NxK to tune, e.g. 4096x14336 (repeatable)")
      ("shapes", po::value(&shapes_file), "file of shapes: one NxK per line, '#' comments and blank lines allowed")
      ("preset", po::value(&preset_names), "the shapes of a model, e.g. llama-3.1-8b (repeatable; see --list-presets)")
      ("list-presets", "list the model presets and their shapes, then exit")
      ("dtype", po::value(&dtype_texts), "fp32, fp16 or bf16; repeatable or comma-separated (default bf16)")
      ("batch", po::value(&batch_texts), kBatchHelp)
      ("weights", po::value(&weights_texts), (std::string(kWeightsHelp) + "; repeatable or comma-separated").c_str())
      ("strategy", po::value(&strategy_text)->default_value("model"),
       "model: measure the analytic model's best 8% and walk to better neighbours, at most 15% of the "
       "space; exhaustive: measure every config")
      ("db", po::value(&db), kDbHelp)
      ("force", "re-tune shapes already in the cache (otherwise they are skipped)")
      ("alone", "rank a preset's finalists by their back-to-back time only; by default each is also timed right "
                "after the call before it in the model's decode chain (--list-presets shows which), and the "
                "fastest there wins")
      ("devices", po::value(&devices_text)->default_value("0"), "GPUs to spread the shapes over: 0,1 or all")
      ("json", "print the result as JSON on stdout (progress and messages go to stderr)");
  po::variables_map vm;
  if (parse_or_help(args, desc, {}, vm,
                    "gemvtune tune [--shape NxK]... [--shapes FILE] [--preset NAME]... [--batch 1,2,4] [--dtype bf16] "
                    "[--weights int4g128] [--strategy model|exhaustive] [--db PATH] [--force] [--alone] [--devices 0,1|all] [--json]\n"
                    "With no --shape, --shapes or --preset: --preset " + std::string(kDefaultPreset) + "."))
    return kOk;
  if (vm.count("list-presets")) {
    print_presets(std::cout);
    return kOk;
  }

  // Everything the user typed is checked before any GPU or file is touched.
  std::vector<Shape> shapes;
  std::map<Shape, Shape> after;  // a preset shape's call before it (the first preset naming the shape)
  auto add_shape = [&](const Shape& s) {
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  };
  auto add_preset = [&](const Preset& p) {
    for (const PresetShape& s : p.shapes) {
      add_shape(s.shape);
      if (s.after && !vm.count("alone")) after.emplace(s.shape, *s.after);
    }
  };
  for (const std::string& s : shape_texts) add_shape(parse_shape(s));
  if (vm.count("shapes"))
    for (const Shape& s : read_shape_file(shapes_file)) add_shape(s);
  for (const std::string& name : preset_names) add_preset(find_preset(name));
  if (shape_texts.empty() && !vm.count("shapes") && preset_names.empty()) add_preset(find_preset(kDefaultPreset));
  if (shapes.empty()) throw UsageError("no shapes to tune (the shape file '" + shapes_file + "' lists none)");
  const std::vector<DType> dtypes = parse_dtypes(dtype_texts.empty() ? std::vector<std::string>{"bf16"} : dtype_texts);
  TuneOptions options;
  options.strategy = parse_strategy(strategy_text);
  if (devices_text != "all") parse_devices(devices_text);  // syntax errors are usage errors
  const bool json = vm.count("json") > 0;
  const std::string path = db_path(db);

  const std::vector<int> batches = parse_batches(batch_texts);
  const std::vector<std::string> weights = split_commas(weights_texts.empty() ? std::vector<std::string>{kWeightsDefault}
                                                                            : weights_texts);
  std::vector<TuneJob> jobs;
  for (const Shape& s : shapes)
    for (int m : batches)
      for (DType t : dtypes)
        for (const std::string& w : weights) {
          TuneJob job{s, t, m, parse_weights(w, t)};
          if (const auto a = after.find(s); a != after.end()) job.after = a->second;
          check_weights_fit("tune", to_string(job), job.weights, t, s);
          jobs.push_back(job);
        }

  const std::vector<int> devices = parse_devices(devices_text);
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  winsize ws{};
  const int width = tty && ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
  ProgressPrinter progress(std::cerr, tty, width);
  std::ostream& messages = json ? std::cerr : std::cout;

  TuneCallbacks callbacks;
  callbacks.on_start = [&](std::size_t count, std::size_t planned) {
    progress.start(count, planned);
    if (count > 0)
      progress.message("tuning " + std::to_string(count) + " shape(s) with the " + std::string(to_string(options.strategy)) +
                       " strategy on " + std::to_string(devices.size()) + " GPU(s), at most " +
                       std::to_string(planned) + " candidates; results go to " + path);
  };
  callbacks.on_progress = [&](const TuneProgress& p) { progress.update(p); };
  callbacks.on_outcome = [&](const JobOutcome& o) {
    if (o.status != JobStatus::skipped) progress.job_finished(o.device);
    progress.message(outcome_line(o), o.status == JobStatus::failed ? &std::cerr : &messages);
  };
  const auto started = std::chrono::steady_clock::now();
  const std::vector<JobOutcome> outcomes = tune_on_devices(jobs, devices, path, options, vm.count("force") > 0, callbacks);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  progress.finish();

  std::size_t tuned = 0, skipped = 0, failed = 0;
  for (const auto& o : outcomes)
    ++(o.status == JobStatus::tuned ? tuned : o.status == JobStatus::skipped ? skipped : failed);

  if (json) {
    std::cout << cache::json_text(report::tune_run_json(outcomes, path, options.strategy, seconds), 2) << "\n";
  } else if (tuned == 0 && failed == 0) {
    std::cout << "nothing to do: all " << outcomes.size() << " shapes already tuned in " << path << "\n";
  } else {
    std::cout << "\n";
    print_table(outcomes, std::cout);
    std::cout << tuned << " tuned, " << skipped << " already tuned, " << failed << " failed in "
              << ProgressPrinter::format_seconds(seconds) << "; stored in " << path << "\n";
    if (tuned > 0) std::cout << phases_line(report::total_phases(outcomes)) << "\n";
  }
  return failed > 0 ? kRuntimeError : kOk;
}

}  // namespace gemvtune::cli
