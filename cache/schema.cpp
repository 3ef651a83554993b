// Schema versions and migrations of the cache file. kMigrations[v] upgrades a file from
// version v to v + 1; a new schema version is one more function appended to the list.
#include "cache/schema.hpp"

#include <iterator>

namespace gemvtune::cache {
namespace {

// v0 -> v1: the winners, every measured candidate, and the bandwidth ceiling per GPU. A new
// file runs every migration in turn, so this stays the v1 schema as it was released.
void create_v1_tables(const Connection& conn) {
  conn.exec(R"sql(
    CREATE TABLE tuned (
      id               INTEGER PRIMARY KEY,
      gpu_name         TEXT    NOT NULL,
      sm_count         INTEGER NOT NULL,
      cc_major         INTEGER NOT NULL,
      cc_minor         INTEGER NOT NULL,
      n                INTEGER NOT NULL,
      k                INTEGER NOT NULL,
      dtype            TEXT    NOT NULL,
      batch            INTEGER NOT NULL,
      template_version TEXT    NOT NULL,
      config           TEXT    NOT NULL,
      time_us          REAL    NOT NULL,
      gbps             REAL    NOT NULL,
      pct_of_ceiling   REAL    NOT NULL,
      strategy         TEXT    NOT NULL,
      driver_version   INTEGER NOT NULL,
      nvrtc_version    TEXT    NOT NULL,
      timestamp        INTEGER NOT NULL,
      UNIQUE (gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, template_version)
    );
    CREATE TABLE candidates (
      tuned_id       INTEGER NOT NULL REFERENCES tuned(id) ON DELETE CASCADE,
      seq            INTEGER NOT NULL,  -- position in TuneRecord::candidates
      config         TEXT    NOT NULL,
      outcome        TEXT    NOT NULL,
      reason         TEXT    NOT NULL,
      time_us        REAL    NOT NULL,
      gbps           REAL    NOT NULL,
      pct_of_ceiling REAL    NOT NULL,
      PRIMARY KEY (tuned_id, seq)
    );
    CREATE TABLE peaks (
      gpu_name       TEXT    NOT NULL,
      sm_count       INTEGER NOT NULL,
      cc_major       INTEGER NOT NULL,
      cc_minor       INTEGER NOT NULL,
      gbps           REAL    NOT NULL,
      bytes          INTEGER NOT NULL,
      driver_version INTEGER NOT NULL,
      timestamp      INTEGER NOT NULL,
      PRIMARY KEY (gpu_name, sm_count, cc_major, cc_minor)
    );
  )sql");
}

// v1 -> v2: the weight format joins the key of `tuned` (issue 12, quantized weights). SQLite
// cannot change a UNIQUE constraint in place, so the table is rebuilt as SQLite documents
// ("Making Other Kinds Of Table Schema Changes"): create the new table, copy every row with
// its id (so candidates.tuned_id stays valid) as dense, which is all a v1 file can hold, drop
// the old table and rename the new one. Dropping a table deletes its rows first, and with
// foreign keys on that DELETE would cascade to every candidate; so migrations run with
// foreign keys off (open.cpp turns them on afterwards), checked here rather than assumed, and
// the rows are counted before and after, inside the caller's transaction.
void add_weights_to_key(const Connection& conn) {
  if (conn.query_int("PRAGMA foreign_keys") != 0)
    throw_cache_error(conn.path(), "internal error: the v1 -> v2 migration needs foreign keys off "
                                   "(dropping the old table would delete every candidate)");
  constexpr const char* kCountRows =
      "SELECT (SELECT count(*) FROM tuned) * 4294967296 +"
      " (SELECT count(*) FROM candidates WHERE tuned_id IN (SELECT id FROM tuned))";
  const std::int64_t before = conn.query_int(kCountRows);
  conn.exec(R"sql(
    CREATE TABLE tuned_v2 (
      id               INTEGER PRIMARY KEY,
      gpu_name         TEXT    NOT NULL,
      sm_count         INTEGER NOT NULL,
      cc_major         INTEGER NOT NULL,
      cc_minor         INTEGER NOT NULL,
      n                INTEGER NOT NULL,
      k                INTEGER NOT NULL,
      dtype            TEXT    NOT NULL,
      batch            INTEGER NOT NULL,
      weights          TEXT    NOT NULL DEFAULT 'dense',
      template_version TEXT    NOT NULL,
      config           TEXT    NOT NULL,
      time_us          REAL    NOT NULL,
      gbps             REAL    NOT NULL,
      pct_of_ceiling   REAL    NOT NULL,
      strategy         TEXT    NOT NULL,
      driver_version   INTEGER NOT NULL,
      nvrtc_version    TEXT    NOT NULL,
      timestamp        INTEGER NOT NULL,
      UNIQUE (gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, weights, template_version)
    );
    INSERT INTO tuned_v2 (id, gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, weights,
                          template_version, config, time_us, gbps, pct_of_ceiling, strategy,
                          driver_version, nvrtc_version, timestamp)
      SELECT id, gpu_name, sm_count, cc_major, cc_minor, n, k, dtype, batch, 'dense',
             template_version, config, time_us, gbps, pct_of_ceiling, strategy,
             driver_version, nvrtc_version, timestamp
      FROM tuned;
    DROP TABLE tuned;
    ALTER TABLE tuned_v2 RENAME TO tuned;
  )sql");
  // Every winner, and every candidate that had its winner, must still be there (candidates
  // whose winner was already missing are left as they were: they are never read).
  if (conn.query_int(kCountRows) != before)
    throw_cache_error(conn.path(), "internal error: the v1 -> v2 migration lost rows; the file is "
                                   "left as it was");
}

using Migration = void (*)(const Connection&);
constexpr Migration kMigrations[] = {
    &create_v1_tables,    // 0 -> 1
    &add_weights_to_key,  // 1 -> 2
};
static_assert(std::size(kMigrations) == kSchemaVersion, "one migration per schema version");

}  // namespace

SchemaState read_schema_state(const Connection& conn) {
  // One statement, so one snapshot: read one by one, a file another process created in
  // between (its tables and header in one transaction) looked like one with tables and no
  // marker, a foreign database (1 in 1200 opens of a new file by 8 processes at once).
  Statement st = conn.prepare(
      "SELECT (SELECT * FROM pragma_application_id), (SELECT * FROM pragma_user_version), "
      "(SELECT count(*) FROM sqlite_master)");
  if (!st.step()) throw_cache_error(conn.path(), "internal error: reading the schema state returned no row");
  const std::int64_t application_id = st.column_int64(0), user_version = st.column_int64(1), objects = st.column_int64(2);
  SchemaState state;
  state.version = static_cast<int>(user_version);
  if (application_id == kApplicationId) {
    state.kind = FileKind::ours;
  } else if (application_id == 0 && user_version == 0 && objects == 0) {
    state.kind = FileKind::empty;  // e.g. a 0-byte file, or `sqlite3 f.db VACUUM`
  } else {
    state.kind = FileKind::foreign;
  }
  return state;
}

void check_usable(const SchemaState& state, const std::string& path) {
  if (state.kind == FileKind::foreign) {
    throw_cache_error(path,
                      "is a SQLite database of another program (it has tables or an "
                      "application id but no gemvtune marker); refusing to touch it");
  }
  if (state.version > kSchemaVersion) {
    throw_cache_error(path, "schema version " + std::to_string(state.version) +
                                " is newer than this build supports (" +
                                std::to_string(kSchemaVersion) + "); refusing to downgrade");
  }
  if (state.version < 0) {
    throw_cache_error(path, "invalid schema version " + std::to_string(state.version));
  }
}

void migrate_to_current(const Connection& conn, const SchemaState& state) {
  check_usable(state, conn.path());
  if (state.kind == FileKind::ours && state.version == kSchemaVersion) return;
  for (int v = state.version; v < kSchemaVersion; ++v) kMigrations[v](conn);
  // Header fields, written inside the caller's transaction like the tables.
  conn.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  conn.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
}

}  // namespace gemvtune::cache
