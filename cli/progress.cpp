// ProgressPrinter (see progress.hpp). The estimate of time left assumes the remaining planned
// candidates cost what the measured ones did on average.
#include "cli/progress.hpp"

#include <cstdio>

namespace gemvtune {

namespace {
// Terminals redraw at most this often; logs get a line at most this often per shape.
constexpr auto kTtyInterval = std::chrono::milliseconds(100);
constexpr auto kLogInterval = std::chrono::seconds(5);
// The first candidates carry the compile and setup cost: no estimate before this many.
constexpr std::size_t kMeasuredBeforeEstimate = 20;
}  // namespace

ProgressPrinter::ProgressPrinter(std::ostream& out, bool tty, int width)
    : out_(out), tty_(tty), width_(width > 1 ? static_cast<std::size_t>(width) : 0) {}

ProgressPrinter::~ProgressPrinter() { finish(); }

std::string ProgressPrinter::format_seconds(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%ld s", s);
  else std::snprintf(buf, sizeof buf, "%ld min %02ld s", s / 60, s % 60);
  return buf;
}

void ProgressPrinter::start(std::size_t jobs, std::size_t planned) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_ = jobs;
  planned_ = planned;
  started_ = std::chrono::steady_clock::now();
}

std::string ProgressPrinter::status_line(const TuneProgress& p) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  std::size_t done = done_;
  for (const auto& [device, r] : running_) done += r.measured;
  std::string left = "estimating time left";
  if (done >= kMeasuredBeforeEstimate && planned_ > done)
    left = "~" + format_seconds(elapsed * static_cast<double>(planned_ - done) / static_cast<double>(done)) + " left";
  char best[160] = "none passed yet";
  if (!p.best_config.empty()) std::snprintf(best, sizeof best, "%s %.2f us", p.best_config.c_str(), p.best_us);
  char line[512];
  std::snprintf(line, sizeof line, "[%zu/%zu] %s %s on GPU %d: %zu/%zu measured, best %s | %s elapsed, %s",
                job_number_.count(p.device) ? job_number_.at(p.device) : std::size_t{0}, jobs_,
                to_string(p.job.shape).c_str(), std::string(to_string(p.job.dtype)).c_str(), p.device,
                p.measured, p.planned, best, format_seconds(elapsed).c_str(), left.c_str());
  return line;
}

void ProgressPrinter::update(const TuneProgress& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = running_.find(p.device);
  const bool new_job = it == running_.end();
  if (new_job) job_number_[p.device] = ++jobs_started_;
  running_[p.device] = p;
  draw(status_line(p), new_job);
}

void ProgressPrinter::job_finished(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = running_.find(device);
  if (it == running_.end()) return;
  done_ += std::max(it->second.budget, it->second.measured);
  running_.erase(it);
}

void ProgressPrinter::message(const std::string& line, std::ostream* to) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ostream& dest = to ? *to : out_;
  if (tty_ && !shown_.empty()) out_ << "\r\033[K" << std::flush;
  dest << line << "\n" << std::flush;
  // Redraw only while a job runs: a finished job's line would stay stale on screen.
  if (tty_ && !shown_.empty()) {
    if (running_.empty()) shown_.clear();
    else out_ << shown_ << std::flush;
  }
}

void ProgressPrinter::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (tty_ && !shown_.empty()) out_ << "\r\033[K" << std::flush;
  shown_.clear();
}

void ProgressPrinter::draw(const std::string& line, bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < (tty_ ? std::chrono::steady_clock::duration(kTtyInterval)
                                         : std::chrono::steady_clock::duration(kLogInterval)))
    return;
  last_draw_ = now;
  if (tty_) {
    // A wrapped line could not be rewritten in place: cut it to the terminal's width.
    shown_ = width_ > 0 && line.size() >= width_ ? line.substr(0, width_ - 1) : line;
    out_ << "\r\033[K" << shown_ << std::flush;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

}  // namespace gemvtune
