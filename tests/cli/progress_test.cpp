// ProgressPrinter: what a log (not a terminal) gets, and the duration format.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "cli/progress.hpp"

using namespace gemvtune;

namespace {
TuneProgress at(std::size_t measured, const std::string& best = "", double us = 0) {
  TuneProgress p;
  p.device = 0;
  p.job = TuneJob{{4096, 4096}, DType::bf16};
  p.measured = measured;
  p.planned = 139;
  p.budget = 259;
  p.best_config = best;
  p.best_us = us;
  return p;
}
}  // namespace

TEST(Progress, FormatSeconds) {
  EXPECT_EQ(ProgressPrinter::format_seconds(0.2), "0 s");
  EXPECT_EQ(ProgressPrinter::format_seconds(42.4), "42 s");
  EXPECT_EQ(ProgressPrinter::format_seconds(65), "1 min 05 s");
}

TEST(Progress, LogGetsPlainLinesNotEveryCandidate) {
  std::ostringstream out;
  {
    ProgressPrinter p(out, /*tty=*/false);
    p.start(7, 7 * 259);
    p.update(at(1));
    for (std::size_t i = 2; i < 50; ++i) p.update(at(i, "t128_r2_kw2_v16_u2_sk1_cs_pdl", 8.33));
    p.job_finished(0);
    p.message("4096x4096 bf16: done");
  }
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(text.find("\033["), std::string::npos);
  EXPECT_NE(text.find("[1/7] 4096x4096 bf16 on GPU 0: 1/139 measured, best none passed yet"), std::string::npos) << text;
  EXPECT_NE(text.find("4096x4096 bf16: done\n"), std::string::npos);
  EXPECT_LT(std::count(text.begin(), text.end(), '\n'), 5) << "a line per candidate floods a log:\n" << text;
}

TEST(Progress, TerminalRewritesOneLineAndClearsIt) {
  std::ostringstream out;
  {
    ProgressPrinter p(out, /*tty=*/true, /*width=*/60);
    p.start(1, 10);
    p.update(at(1, "t128_r2_kw2_v16_u2_sk1_cs_pdl", 8.33));
    p.message("hello");
  }
  const std::string text = out.str();
  EXPECT_NE(text.find("\r\033[K[1/1] 4096x4096 bf16"), std::string::npos) << text;
  EXPECT_NE(text.find("hello\n"), std::string::npos);
  // Cut to the width so it never wraps: no drawn line is longer than 59 characters.
  std::size_t longest = 0, run = 0;
  for (char ch : text) {
    run = (ch == '\r' || ch == '\n') ? 0 : run + 1;
    longest = std::max(longest, run);
  }
  EXPECT_LE(longest, 59u + 3u);  // + the 3 bytes of the clear-line sequence
  EXPECT_EQ(text.substr(text.size() - 4), "\r\033[K");
}
