// RAII wrappers over the SQLite C API: a connection, a prepared statement, a write and a read
// transaction. Every failure becomes a gemvtune::CacheError carrying SQLite's message and
// the database path, so callers never look at result codes.
#pragma once
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gemvtune::cache {

// Throws CacheError "cache <path>: <what>: <sqlite message>", with a hint naming the wait when
// the cause is another process holding the lock past the busy timeout. With a Connection at
// hand use the overload below it, which knows the timeout.
[[noreturn]] void throw_sqlite_error(const std::string& path, std::string_view what, sqlite3* db,
                                     int busy_timeout_ms);
// Throws CacheError "cache <path>: <what>".
[[noreturn]] void throw_cache_error(const std::string& path, std::string_view what);

class Statement;
class Connection;
// throw_sqlite_error for conn: its path, its last error and its busy timeout.
[[noreturn]] void throw_sqlite_error(const Connection& conn, std::string_view what);

// One open database handle. Movable, not copyable; closes on destruction.
class Connection {
 public:
  // flags: SQLITE_OPEN_* (READONLY, or READWRITE with or without CREATE).
  Connection(const std::string& path, int flags);
  // Read-only with SQLite's immutable flag: no locks, no -wal/-shm. Only correct for a file
  // that nobody can be writing (see open.cpp).
  static Connection open_immutable(const std::string& path);
  ~Connection();
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements that return no rows the caller needs.
  void exec(std::string_view sql) const;
  Statement prepare(std::string_view sql) const;
  // First column of the first row of `sql` as an integer (for PRAGMAs and counts).
  std::int64_t query_int(std::string_view sql) const;
  std::string query_text(std::string_view sql) const;

  void set_busy_timeout_ms(int ms);
  int busy_timeout_ms() const { return busy_timeout_ms_; }
  // True when SQLite opened the file read-only even though read-write was asked for
  // (it does so silently when the file is write protected).
  bool is_read_only() const;
  std::int64_t last_insert_rowid() const;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

 private:
  // Opens `name` (a path or a file: URI) and reports errors against `path`.
  Connection(const std::string& path, const std::string& name, int flags);
  void close() noexcept;

  sqlite3* db_ = nullptr;
  std::string path_;
  int busy_timeout_ms_ = 0;
};

// One prepared statement. Bind indexes start at 1, column indexes at 0 (as in SQLite).
class Statement {
 public:
  Statement(const Connection& conn, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, std::int64_t{value}); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }

  // Advances to the next row: true when a row is available, false when done.
  bool step();
  // Runs a statement that returns no rows.
  void run();
  // Clears bindings and rewinds, so the statement can be run again with new values.
  void reset();

  std::int64_t column_int64(int col) const;
  // A value outside int's range reads as INT_MIN, which validation then refuses.
  int column_int(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;

 private:
  void finalize() noexcept;

  sqlite3_stmt* stmt_ = nullptr;
  const Connection* conn_ = nullptr;
};

// BEGIN IMMEDIATE on construction: the write lock is taken up front (waiting up to the
// busy timeout), so a transaction never fails half way because another process wrote
// first. Rolls back on destruction unless commit() was called.
class WriteTransaction {
 public:
  explicit WriteTransaction(const Connection& conn);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;

  void commit();

 private:
  const Connection& conn_;
  bool open_ = true;
};

// BEGIN (deferred) on construction, ended on destruction: several reads see one snapshot
// of the file even while another process commits between them. Nothing to commit.
class ReadTransaction {
 public:
  explicit ReadTransaction(const Connection& conn);
  ~ReadTransaction();
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  const Connection& conn_;
};

}  // namespace gemvtune::cache
