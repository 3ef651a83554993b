// The open sequence of a cache file. An existing file is first opened with
// SQLITE_OPEN_READONLY and checked (SQLite? healthy? ours or empty? not newer?), so a wrong
// path is refused byte-identical; only then is it reopened read-write, migrated inside
// BEGIN IMMEDIATE and switched to WAL.
#include "cache/open.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <system_error>
#include <thread>

#include "cache/file_check.hpp"
#include "cache/schema.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

namespace fs = std::filesystem;

// "a FIFO", "a character device", ... for the message refusing it.
const char* kind_of(const fs::file_status& status) {
  switch (status.type()) {
    case fs::file_type::fifo: return "a FIFO";
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::socket: return "a socket";
    default: return "a file of another kind";
  }
}

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

void create_parent_directories(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw_cache_error(path, "cannot create directory " + parent.string() + ": " + ec.message());
}

// WAL mode keeps <file>-wal and <file>-shm beside the database, so writing needs the
// directory too, not only the file.
void require_writable(const std::string& path) {
  if (::access(path.c_str(), W_OK) != 0)
    throw_cache_error(path, "file is not writable (opened read_write)");
  // Side files a process of another user left (killed before it closed the cache): SQLite
  // would say only "attempt to write a readonly database".
  for (const char* side : {"-wal", "-shm"}) {
    const std::string file = path + side;
    if (::access(file.c_str(), F_OK) == 0 && ::access(file.c_str(), W_OK) != 0)
      throw_cache_error(path, file + " is not writable (left by another user's process?); that user can fold "
                              "it into the cache by opening it read-write once (e.g. gemvtune import of any export)");
  }
  const std::string dir = directory_of(path);
  if (::access(dir.c_str(), W_OK) != 0)
    throw_cache_error(path, "directory " + dir +
                                " is not writable (needed for the -wal and -shm files of a "
                                "read_write cache)");
}

// True when SQLite cannot read a WAL-mode file read-only because it cannot create the
// file's -shm in a directory this process may not write.
bool cannot_create_shm(const Connection& conn) {
  if (sqlite3_exec(conn.handle(), "PRAGMA schema_version", nullptr, nullptr, nullptr) == SQLITE_OK)
    return false;
  const int code = sqlite3_extended_errcode(conn.handle());
  // A -wal with no -shm in a directory this process may not write: SQLite cannot build the
  // index it needs to read the -wal, and would say only "unable to open database file".
  // Reading the file as immutable would skip the -wal's committed entries, so refuse.
  if ((code & 0xff) == SQLITE_CANTOPEN && ::access((conn.path() + "-wal").c_str(), F_OK) == 0 &&
      ::access((conn.path() + "-shm").c_str(), F_OK) != 0 && ::access(directory_of(conn.path()).c_str(), W_OK) != 0)
    throw_cache_error(conn.path(), "cannot read it: its -wal holds entries not yet in the file, and SQLite needs a "
                                   "-shm beside it to read them, which this process may not create in " +
                                   directory_of(conn.path()) + "; a user who may write there folds the -wal in by "
                                   "opening the cache read-write once (e.g. gemvtune import of any export)");
  // Another process held a lock for the whole busy timeout: say so now, rather than wait as
  // long again in check_healthy_sqlite and then report it.
  if ((code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED)
    throw_sqlite_error(conn, "cannot read the database");
  return code == SQLITE_READONLY_DIRECTORY || code == SQLITE_READONLY_CANTINIT;
}

// Opens an existing file with SQLITE_OPEN_READONLY. A WAL cache in a directory we cannot
// write (a shared, write-protected cache) is read as immutable instead: a writer would have
// needed that directory for its -wal and -shm, and had they been there SQLite would have
// used them, so nobody is changing the file.
Connection open_for_reading(const std::string& path) {
  Connection conn(path, SQLITE_OPEN_READONLY);
  conn.set_busy_timeout_ms(kBusyTimeoutMs);  // before the probe: a writer may hold a lock
  if (!cannot_create_shm(conn)) return conn;
  Connection immutable = Connection::open_immutable(path);
  immutable.set_busy_timeout_ms(kBusyTimeoutMs);
  return immutable;
}

// Verifies an existing file without writing to it; returns its read-only connection.
// SQLite's read-only open of a WAL-mode file may create an empty -wal and a -shm beside it
// (it needs them to read safely while others write); the file itself is never changed.
Connection inspect_existing(const std::string& path, SchemaState& state) {
  Connection conn = open_for_reading(path);
  check_healthy_sqlite(conn);
  state = read_schema_state(conn);
  check_usable(state, path);
  return conn;
}

Connection open_read_only(const std::string& path) {
  SchemaState state;
  Connection conn = inspect_existing(path, state);
  if (state.kind == FileKind::empty) {
    throw_cache_error(path, "is an empty database, not yet a gemvtune cache: nothing has been "
                            "stored in it (storing a result, e.g. by tune, import or peak, "
                            "initialises it)");
  }
  if (state.version < kSchemaVersion) {
    throw_cache_error(path, "schema version " + std::to_string(state.version) +
                                " is older than this build's (" +
                                std::to_string(kSchemaVersion) +
                                "); a command that stores into it (gemvtune tune, import or peak) "
                                "upgrades it first, keeping every entry");
  }
  conn.exec("PRAGMA query_only = 1");  // belt and braces on top of SQLITE_OPEN_READONLY
  return conn;
}

// Switching a file to WAL needs it to itself, and SQLite answers SQLITE_BUSY at once, without
// the busy handler, where waiting could deadlock (this connection reading while another
// process's write transaction waits to commit, as when several processes create one cache at
// once: 7 of 1200 such opens failed). So the switch is retried until the busy timeout.
std::string switch_to_wal(const Connection& conn) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(conn.busy_timeout_ms());
  for (;;) {
    try {
      return conn.query_text("PRAGMA journal_mode = WAL");
    } catch (const CacheError&) {
      const int code = sqlite3_extended_errcode(conn.handle()) & 0xff;
      if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || Clock::now() >= deadline) throw;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Connection open_read_write(const std::string& path, bool exists) {
  int flags = SQLITE_OPEN_READWRITE;
  if (exists) {
    // Permissions first: in a write-protected directory the read-only inspection of a WAL
    // file would fail with a less helpful message.
    require_writable(path);
    SchemaState state;
    inspect_existing(path, state);  // refuses foreign/corrupt/newer files before any write
  } else {
    create_parent_directories(path);
    const std::string dir = directory_of(path);
    if (::access(dir.c_str(), W_OK) != 0)
      throw_cache_error(path, "cannot create the file: directory " + dir + " is not writable");
    flags |= SQLITE_OPEN_CREATE;
  }

  Connection conn(path, flags);
  // SQLite silently falls back to read-only for a write-protected file.
  if (conn.is_read_only()) throw_cache_error(path, "file is not writable (opened read_write)");
  conn.set_busy_timeout_ms(kBusyTimeoutMs);
  // Migrations run with foreign keys off: rebuilding a table (v1 -> v2) drops the old one,
  // which with them on would cascade-delete every candidate. The pragma is a no-op inside a
  // transaction, hence set here, and turned on once the schema is current.
  conn.exec("PRAGMA foreign_keys = OFF");

  // Another process may have created or migrated the file since the check above, so the
  // state is read again under the write lock before migrating.
  {
    WriteTransaction tx(conn);
    migrate_to_current(conn, read_schema_state(conn));
    tx.commit();
  }
  conn.exec("PRAGMA foreign_keys = ON");

  // WAL lets readers and one writer work at once; persistent in the file once set.
  const std::string journal = switch_to_wal(conn);
  if (journal != "wal") throw_cache_error(path, "cannot switch to WAL journal mode (got " + journal + ")");
  return conn;
}

}  // namespace

Connection open_cache(const std::string& path, CacheMode mode) {
  if (path.empty()) throw_cache_error(path, "empty path");
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  const bool exists = fs::exists(status);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw_cache_error(path, "cannot stat: " + ec.message());
  if (exists && fs::is_directory(status)) throw_cache_error(path, "is a directory, not a file");
  // SQLite would block on a FIFO until a writer comes, and put a -journal beside a device.
  if (exists && !fs::is_regular_file(status))
    throw_cache_error(path, std::string("is ") + kind_of(status) + ", not a regular file");

  if (mode == CacheMode::read_only) {
    if (!exists) throw_cache_error(path, "file does not exist (opened read_only, so not created)");
    return open_read_only(path);
  }
  return open_read_write(path, exists);
}

}  // namespace gemvtune::cache
