// Replays the model strategy on a tune's recorded candidates (a cache written by `gemvtune tune`)
// and prints, job by job in the order they were stored, the strategy's batches and how many of
// each batch's kernels no earlier batch had needed, then the candidates measured after the
// strategy (twins) and their new kernels. Recorded finalists carry the median of three timings,
// so a replay can take another walk there ("missing": configs the replay asked for that the
// tune did not measure). bf16 dense weights, the H200's 132 SMs; the ceiling from the cache.
//
// Built against a build of the library (no GPU needed):
//   g++ -O2 -std=c++17 -I. -Iinclude bench/results/probes/strategy_replay.cpp build/libgemvtune.a
//     -L/usr/local/cuda/lib64 -L/usr/local/cuda/lib64/stubs -lnvrtc -lcuda -lsqlite3 -lpthread -ldl
//     -o strategy_replay && ./strategy_replay batch.sqlite   (one command)
// On s159's cache (raw/5a11e20_h200_s159_tune_phases_tuner_gpu.tgz, r/batch.sqlite) at 1eca7b8: 740
// distinct kernels, 20 of them in 12 walk steps, 14 in twins, the rest in first rounds
// (docs/tuning.md, "Tune time").
#include "gemvtune/model.hpp"
#include "tuner/device_problem.hpp"
#include "tuner/strategy.hpp"
#include <sqlite3.h>
#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>
using namespace gemvtune;
std::string kkey(const KernelConfig& c) { KernelConfig k = c; k.split_k = 1; return to_string(k); }
int main(int argc, char** argv) {
  sqlite3* db; sqlite3_open(argv[1], &db);
  sqlite3_stmt* st; sqlite3_prepare_v2(db, "select id,n,k,batch from tuned order by id", -1, &st, nullptr);
  std::vector<std::tuple<int,long,long,int>> jobs;
  while (sqlite3_step(st) == SQLITE_ROW) jobs.emplace_back(sqlite3_column_int(st,0), sqlite3_column_int64(st,1), sqlite3_column_int64(st,2), sqlite3_column_int(st,3));
  sqlite3_finalize(st);
  std::set<std::string> compiled;
  int total_wait_steps = 0, total_new_walk = 0, total_twins_new = 0;
  for (auto [id, n, k, m] : jobs) {
    std::map<std::string, double> times; std::vector<std::string> order;
    sqlite3_prepare_v2(db, "select config,outcome,time_us from candidates where tuned_id=? order by seq", -1, &st, nullptr);
    sqlite3_bind_int(st, 1, id);
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::string c = (const char*)sqlite3_column_text(st,0), o = (const char*)sqlite3_column_text(st,1);
      times[c] = o == "passed" ? sqlite3_column_double(st,2) : -1; order.push_back(c);
    }
    sqlite3_finalize(st);
    Shape s{n, k}; DType t = DType::bf16;
    GpuModelParams g; g.sm_count = 132; g.read_ceiling_gbps = 4545.7469406769;
    double bytes = problem_bytes(t, s, m, WeightFormat::dense);
    auto ranked = rank_by_model(worth_compiling(runnable_space(t, s, m, WeightFormat::dense), t, s, bytes, g), t, s, g, WeightFormat::dense);
    auto opts = strategy_options_for(ranked.size(), bytes, false);
    std::vector<std::vector<KernelConfig>> batches; int missing = 0;
    MeasureBatch measure = [&](const std::vector<KernelConfig>& b) {
      batches.push_back(b); std::vector<Measured> out;
      for (auto& c : b) { auto it = times.find(to_string(c)); Measured x; x.config = c;
        if (it == times.end()) { ++missing; x.passed = false; } else { x.passed = it->second > 0; x.time_us = it->second; }
        out.push_back(x); }
      return out; };
    auto res = run_model_guided(ranked, measure, opts);
    // first batch was compiled ahead (queued during the previous job)
    std::printf("%ldx%ld M=%d: %zu batches sizes", n, k, m, batches.size());
    int wait_steps = 0, new_walk = 0;
    for (size_t i = 0; i < batches.size(); ++i) {
      int nw = 0; for (auto& c : batches[i]) if (compiled.insert(kkey(c)).second) ++nw;
      std::printf(" %zu(%d new)", batches[i].size(), nw);
      if (i > 0 && nw > 0) { ++wait_steps; new_walk += nw; }
    }
    // The recorded candidates past the strategy's count: what the tune measured after it.
    const size_t measured = std::min(res.measured.size(), order.size());
    int twins_new = 0; for (size_t i = measured; i < order.size(); ++i) if (compiled.insert(kkey(parse_config(order[i]))).second) ++twins_new;
    std::printf(" | missing %d, after the strategy %zu (%d new kernels)\n", missing, order.size() - measured, twins_new);
    total_wait_steps += wait_steps; total_new_walk += new_walk; total_twins_new += twins_new;
  }
  std::printf("walk steps with new kernels: %d (%d kernels); new kernels after the strategy %d; distinct kernels %zu\n",
              total_wait_steps, total_new_walk, total_twins_new, compiled.size());
}
