// SQL for TuneRecords: key binding, row <-> struct conversion, and the replace that store()
// and import_json() share. A row read back is parsed strictly and checked as store() checks
// a record: one this build cannot use (written by another tool, a newer build or by hand:
// an unknown dtype or weight format, a negative time, a config that does not parse) is treated
// as absent, so it is never served and a good entry may replace it, and callers can have it
// described.
#include "cache/tuned_rows.hpp"

#include <string>

#include "cache/gpu_columns.hpp"
#include "cache/text.hpp"
#include "cache/validate.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

constexpr const char* kSelectTuned =
    "SELECT id, gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, weights,"
    " template_version, config, time_us, gbps, pct_of_ceiling, strategy, driver_version,"
    " nvrtc_version, timestamp FROM tuned";

// The ten key columns as ?1..?10, bound by bind_key.
const std::string kWhereKey = std::string(kWhereGpu) +
                              " AND n = ?5 AND k = ?6 AND dtype = ?7 AND batch = ?8"
                              " AND weights = ?9 AND template_version = ?10";

void bind_key(Statement& s, const CacheKey& key) {
  bind_gpu(s, key.gpu).bind(5, key.shape.n).bind(6, key.shape.k).bind(7, to_string(key.dtype))
      .bind(8, key.batch).bind(9, to_string(key.weights)).bind(10, key.template_version);
}

// Describes a row for a message about it: its id and key as stored.
std::string describe_row(const Statement& s) {
  return "tuned row " + std::to_string(s.column_int64(0)) + " (" + abbreviated(s.column_text(1)) + ", " +
         std::to_string(s.column_int64(5)) + "x" + std::to_string(s.column_int64(6)) + ", " +
         abbreviated(s.column_text(7)) + ", M=" + std::to_string(s.column_int64(8)) + ", weights " +
         abbreviated(s.column_text(9)) + ", templates " + abbreviated(s.column_text(10)) + ")";
}

// Reads a row of kSelectTuned into r (text parsed strictly) and checks it as store() would;
// throws InvalidArgument when this build cannot use it. Returns the row id.
std::int64_t read_tuned_row(const Statement& s, TuneRecord& r) {
  r.key.gpu = read_gpu(s, 1);
  r.key.shape.n = s.column_int64(5);
  r.key.shape.k = s.column_int64(6);
  r.key.dtype = parse_dtype(s.column_text(7));
  r.key.batch = s.column_int(8);
  r.key.weights = parse_weight_format(s.column_text(9));
  r.key.template_version = s.column_text(10);
  r.config = s.column_text(11);
  r.time_us = s.column_double(12);
  r.gbps = s.column_double(13);
  r.pct_of_ceiling = s.column_double(14);
  r.strategy = s.column_text(15);
  r.driver_version = s.column_int(16);
  r.nvrtc_version = s.column_text(17);
  r.timestamp = s.column_int64(18);
  validate_record(r);  // r.candidates is still empty: the winner alone
  return s.column_int64(0);
}

// The candidates of one winner. One that fails validation is left out (and reported) rather
// than losing the whole entry: the winner is what a server needs.
std::vector<CandidateResult> load_candidates(const Connection& conn, std::int64_t tuned_id,
                                             const std::string& row, std::vector<std::string>* skipped) {
  Statement s = conn.prepare(
      "SELECT config, outcome, reason, time_us, gbps, pct_of_ceiling, seq FROM candidates"
      " WHERE tuned_id = ?1 ORDER BY seq");
  s.bind(1, tuned_id);
  std::vector<CandidateResult> out;
  while (s.step()) {
    CandidateResult c;
    try {
      c.config = s.column_text(0);
      c.outcome = parse_outcome(s.column_text(1));
      c.reason = s.column_text(2);
      c.time_us = s.column_double(3);
      c.gbps = s.column_double(4);
      c.pct_of_ceiling = s.column_double(5);
      validate_candidate(c);
    } catch (const InvalidArgument& e) {
      if (skipped != nullptr)
        skipped->push_back(row + ", candidate " + std::to_string(s.column_int64(6)) + ": " +
                           abbreviated(e.what(), 300));
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The usable rows of `s`; each unusable one is skipped and, when `skipped` is given, described.
std::vector<TuneRecord> load_rows(const Connection& conn, Statement& s, bool with_candidates,
                                  std::vector<std::string>* skipped) {
  std::vector<TuneRecord> out;
  while (s.step()) {
    TuneRecord r;
    std::int64_t id = 0;
    try {
      id = read_tuned_row(s, r);
    } catch (const InvalidArgument& e) {
      if (skipped != nullptr) skipped->push_back(describe_row(s) + ": " + abbreviated(e.what(), 300));
      continue;
    }
    if (with_candidates) r.candidates = load_candidates(conn, id, describe_row(s), skipped);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::optional<TuneRecord> load_tuned(const Connection& conn, const CacheKey& key,
                                     bool with_candidates) {
  Statement s = conn.prepare(std::string(kSelectTuned) + kWhereKey);
  bind_key(s, key);
  std::vector<TuneRecord> rows = load_rows(conn, s, with_candidates, nullptr);
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front());  // UNIQUE on the key: at most one
}

std::optional<double> load_tuned_time(const Connection& conn, const CacheKey& key) {
  const std::optional<TuneRecord> r = load_tuned(conn, key, false);
  if (!r) return std::nullopt;
  return r->time_us;
}

bool has_tuned_row(const Connection& conn, const CacheKey& key) {
  Statement s = conn.prepare(std::string("SELECT 1 FROM tuned") + kWhereKey);
  bind_key(s, key);
  return s.step();
}

std::vector<TuneRecord> load_all_tuned(const Connection& conn, bool with_candidates,
                                       std::vector<std::string>* skipped) {
  Statement s = conn.prepare(std::string(kSelectTuned) +
                             " ORDER BY gpu_name, sm_count, cc_major, cc_minor, dtype, n, k,"
                             " batch, weights, template_version");
  return load_rows(conn, s, with_candidates, skipped);
}

std::vector<TuneRecord> load_same_family(const Connection& conn, const CacheKey& key) {
  Statement s = conn.prepare(std::string(kSelectTuned) + kWhereGpu +
                             " AND dtype = ?5 AND batch = ?6 AND weights = ?7 AND template_version = ?8"
                             " ORDER BY n, k");
  bind_gpu(s, key.gpu).bind(5, to_string(key.dtype)).bind(6, key.batch).bind(7, to_string(key.weights))
      .bind(8, key.template_version);
  return load_rows(conn, s, false, nullptr);
}

void replace_tuned(const Connection& conn, const TuneRecord& r) {
  // Candidates first: they reference the winner row (ON DELETE CASCADE would do it too, but
  // only where the connection enabled foreign keys).
  Statement del_candidates = conn.prepare(
      std::string("DELETE FROM candidates WHERE tuned_id IN (SELECT id FROM tuned") + kWhereKey +
      ")");
  bind_key(del_candidates, r.key);
  del_candidates.run();
  Statement del_tuned = conn.prepare(std::string("DELETE FROM tuned") + kWhereKey);
  bind_key(del_tuned, r.key);
  del_tuned.run();

  Statement ins = conn.prepare(
      "INSERT INTO tuned (gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, weights,"
      " template_version, config, time_us, gbps, pct_of_ceiling, strategy, driver_version,"
      " nvrtc_version, timestamp)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
  bind_key(ins, r.key);
  ins.bind(11, r.config).bind(12, r.time_us).bind(13, r.gbps).bind(14, r.pct_of_ceiling)
      .bind(15, r.strategy).bind(16, r.driver_version).bind(17, r.nvrtc_version)
      .bind(18, r.timestamp);
  ins.run();
  const std::int64_t tuned_id = conn.last_insert_rowid();

  Statement ins_candidate = conn.prepare(
      "INSERT INTO candidates (tuned_id, seq, config, outcome, reason, time_us, gbps,"
      " pct_of_ceiling) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  for (std::size_t seq = 0; seq < r.candidates.size(); ++seq) {
    const CandidateResult& c = r.candidates[seq];
    ins_candidate.bind(1, tuned_id).bind(2, static_cast<std::int64_t>(seq)).bind(3, c.config)
        .bind(4, to_string(c.outcome)).bind(5, c.reason).bind(6, c.time_us).bind(7, c.gbps)
        .bind(8, c.pct_of_ceiling);
    ins_candidate.run();
    ins_candidate.reset();
  }
}

}  // namespace gemvtune::cache
