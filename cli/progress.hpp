// Progress of a tune run for a person watching: one line rewritten in place on a terminal,
// plain lines otherwise (for logs): which shape of how many, candidates measured of planned,
// best so far, elapsed and estimated time left. Thread-safe.
#pragma once
#include <chrono>
#include <map>
#include <mutex>
#include <ostream>
#include <string>

#include "gemvtune/tuner.hpp"

namespace gemvtune {

class ProgressPrinter {
 public:
  // width: terminal columns; a longer line is cut so it never wraps (0: no limit).
  ProgressPrinter(std::ostream& out, bool tty, int width = 0);
  ~ProgressPrinter();  // clears a pending terminal line

  void start(std::size_t jobs, std::size_t planned);  // after the skip check
  void update(const TuneProgress& p);                 // after each candidate
  void job_finished(int device);                      // its planned work counts as done
  // Prints a whole line to `to` (default: the progress stream), clearing the progress line
  // first on a terminal and drawing it again after.
  void message(const std::string& line, std::ostream* to = nullptr);
  // Clears the progress line for good (before a final table, say).
  void finish();

  // "1 min 05 s", "42 s": durations the way the progress line shows them.
  static std::string format_seconds(double seconds);

 private:
  void draw(const std::string& line, bool force);  // with mutex_ held
  std::string status_line(const TuneProgress& p) const;

  std::ostream& out_;
  const bool tty_;
  const std::size_t width_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
  std::size_t jobs_ = 0, planned_ = 0, jobs_started_ = 0, done_ = 0;
  std::map<int, TuneProgress> running_;  // by device: the job it is measuring
  std::map<int, std::size_t> job_number_;  // by device: 1-based number of that job
  std::string shown_;  // the line on screen (terminal) to redraw after a message
};

}  // namespace gemvtune
