// RAII wrappers over the SQLite C API (see sqlite.hpp). The only file that turns SQLite
// result codes into exceptions; destructors swallow errors because they must not throw.
#include "cache/sqlite.hpp"

#include <limits>
#include <utility>

#include "cache/text.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {

void throw_cache_error(const std::string& path, std::string_view what) {
  // A path past PATH_MAX cannot name a file anyway; a 100 KB one must not fill the terminal.
  throw CacheError("cache " + abbreviated(path, 1000) + ": " + std::string(what));
}

namespace {

// SQLite's "database is locked" says nothing of why or what to do; after the busy timeout it
// means another connection kept the write lock all that time.
std::string busy_hint(sqlite3* db, int busy_timeout_ms) {
  if (db == nullptr || (sqlite3_extended_errcode(db) & 0xff) != SQLITE_BUSY) return "";
  const std::string wait = busy_timeout_ms % 1000 == 0 ? std::to_string(busy_timeout_ms / 1000) + " s"
                                                       : std::to_string(busy_timeout_ms) + " ms";
  return "; another process (a tune, import or peak?) held the cache locked for longer than the " +
         wait + " this one waits; try again when it has finished";
}

}  // namespace

void throw_sqlite_error(const std::string& path, std::string_view what, sqlite3* db, int busy_timeout_ms) {
  std::string message(what);
  if (db != nullptr) {
    message += ": ";
    message += sqlite3_errmsg(db);
    message += " (SQLite code " + std::to_string(sqlite3_extended_errcode(db)) + ")";
    message += busy_hint(db, busy_timeout_ms);
  }
  throw_cache_error(path, message);
}

void throw_sqlite_error(const Connection& conn, std::string_view what) {
  throw_sqlite_error(conn.path(), what, conn.handle(), conn.busy_timeout_ms());
}

// ---- Connection ----------------------------------------------------------------------

namespace {

// "file:" URI of a path: everything outside the unreserved set is %-escaped, so '?', '#'
// and '%' in a file name stay part of the name.
std::string file_uri(const std::string& path) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : path) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '/' || c == '-' || c == '_' || c == '.' ||
                       c == '~';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  return uri;
}

}  // namespace

// SQLite may be built to read any name starting with "file:" as a URI (Debian's is), which
// would make `--db file:p.sqlite` open p.sqlite; and ":memory:" is no file at all. A "./"
// in front keeps every relative path a plain path.
Connection::Connection(const std::string& path, int flags)
    : Connection(path, !path.empty() && path[0] != '/' ? "./" + path : path, flags) {}

Connection Connection::open_immutable(const std::string& path) {
  return Connection(path, file_uri(path) + "?immutable=1",
                    SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
}

Connection::Connection(const std::string& path, const std::string& name, int flags)
    : path_(path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    // sqlite3_open_v2 may hand back a handle even on failure; it holds the message and
    // must still be closed.
    std::string message = std::string("cannot open: ") +
                          (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close_v2(db);
    throw_cache_error(path, message);
  }
  db_ = db;
  // Extended codes tell SQLITE_READONLY_DBMOVED from a plain SQLITE_READONLY etc.
  sqlite3_extended_result_codes(db_, 1);
}

Connection::~Connection() { close(); }

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)),
      busy_timeout_ms_(other.busy_timeout_ms_) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    busy_timeout_ms_ = other.busy_timeout_ms_;
  }
  return *this;
}

void Connection::close() noexcept {
  // close_v2 defers the close until outstanding statements are finalized, so the order in
  // which owners are destroyed cannot leak the handle.
  if (db_ != nullptr) sqlite3_close_v2(db_);
  db_ = nullptr;
}

void Connection::exec(std::string_view sql) const {
  char* error = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = "SQL failed (" + text + "): " + (error != nullptr ? error : "?") +
                          busy_hint(db_, busy_timeout_ms_);
    sqlite3_free(error);
    throw_cache_error(path_, message);
  }
}

Statement Connection::prepare(std::string_view sql) const { return Statement(*this, sql); }

std::int64_t Connection::query_int(std::string_view sql) const {
  Statement s(*this, sql);
  if (!s.step()) throw_cache_error(path_, "no result from: " + std::string(sql));
  return s.column_int64(0);
}

std::string Connection::query_text(std::string_view sql) const {
  Statement s(*this, sql);
  if (!s.step()) throw_cache_error(path_, "no result from: " + std::string(sql));
  return s.column_text(0);
}

void Connection::set_busy_timeout_ms(int ms) {
  if (sqlite3_busy_timeout(db_, ms) != SQLITE_OK)
    throw_sqlite_error(path_, "cannot set busy timeout", db_, busy_timeout_ms_);
  busy_timeout_ms_ = ms;
}

bool Connection::is_read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

// ---- Statement -----------------------------------------------------------------------

Statement::Statement(const Connection& conn, std::string_view sql) : conn_(&conn) {
  if (sql.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw_cache_error(conn.path(), "SQL text too long");
  if (sqlite3_prepare_v2(conn.handle(), sql.data(), static_cast<int>(sql.size()), &stmt_,
                         nullptr) != SQLITE_OK) {
    throw_sqlite_error(conn, "cannot prepare (" + std::string(sql) + ")");
  }
}

Statement::~Statement() { finalize(); }

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), conn_(other.conn_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    finalize();
    stmt_ = std::exchange(other.stmt_, nullptr);
    conn_ = other.conn_;
  }
  return *this;
}

void Statement::finalize() noexcept {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
  stmt_ = nullptr;
}

Statement& Statement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK)
    throw_sqlite_error(*conn_, "cannot bind parameter");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK)
    throw_sqlite_error(*conn_, "cannot bind parameter");
  return *this;
}

Statement& Statement::bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies the text, so the caller's buffer may go away.
  if (sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT,
                          SQLITE_UTF8) != SQLITE_OK)
    throw_sqlite_error(*conn_, "cannot bind parameter");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_sqlite_error(*conn_, std::string("statement failed (") + sqlite3_sql(stmt_) + ")");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);  // returns the previous step's error, already reported by step()
  sqlite3_clear_bindings(stmt_);
}

std::int64_t Statement::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }

int Statement::column_int(int col) const {
  // sqlite3_column_int keeps the low 32 bits, so 2^32 + 132 SMs would read as a valid 132.
  const std::int64_t v = sqlite3_column_int64(stmt_, col);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return std::numeric_limits<int>::min();
  return static_cast<int>(v);
}

double Statement::column_double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::column_text(int col) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (text == nullptr) return {};  // NULL column
  return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

// ---- WriteTransaction ----------------------------------------------------------------

WriteTransaction::WriteTransaction(const Connection& conn) : conn_(conn) {
  conn_.exec("BEGIN IMMEDIATE");
}

WriteTransaction::~WriteTransaction() {
  if (open_) sqlite3_exec(conn_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
  conn_.exec("COMMIT");
  open_ = false;
}

// ---- ReadTransaction -----------------------------------------------------------------

ReadTransaction::ReadTransaction(const Connection& conn) : conn_(conn) { conn_.exec("BEGIN"); }

ReadTransaction::~ReadTransaction() {
  sqlite3_exec(conn_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace gemvtune::cache
