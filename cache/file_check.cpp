// Read-only health check of an existing database file: is it SQLite at all, and does
// PRAGMA quick_check pass. Uses the C API directly so the SQLite result code can be turned
// into a message about the file rather than about a statement.
#include "cache/file_check.hpp"

#include <string>

namespace gemvtune::cache {
namespace {

// Runs `sql` and collects the first column of every row, joined by "; " (at most a few).
int collect_rows(sqlite3* db, const char* sql, std::string& rows) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  int count = 0;
  while (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    if (count++ < 5) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      if (!rows.empty()) rows += "; ";
      rows += text != nullptr ? text : "";
    }
    rc = SQLITE_OK;
  }
  sqlite3_finalize(stmt);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

}  // namespace

void check_healthy_sqlite(const Connection& conn) {
  sqlite3* db = conn.handle();
  std::string rows;
  // Reading the schema cookie makes SQLite read and validate the file header.
  int rc = collect_rows(db, "PRAGMA schema_version", rows);
  if ((rc & 0xff) == SQLITE_NOTADB) {
    throw_sqlite_error(conn, "is not a SQLite database");
  }
  if ((rc & 0xff) == SQLITE_CORRUPT) {
    throw_sqlite_error(conn, "is a corrupt SQLite database");
  }
  if (rc != SQLITE_OK) throw_sqlite_error(conn, "cannot read the database");

  rows.clear();
  rc = collect_rows(db, "PRAGMA quick_check", rows);
  if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
    throw_sqlite_error(conn, "is a corrupt SQLite database");
  }
  if (rc != SQLITE_OK) throw_sqlite_error(conn, "cannot check the database");
  if (rows != "ok") {
    throw_cache_error(conn.path(), "is a corrupt SQLite database (quick_check: " + rows + ")");
  }
}

}  // namespace gemvtune::cache
