// The cache's schema version and its migrations. The version lives in the SQLite header
// (PRAGMA user_version) and the file is marked as ours by PRAGMA application_id, so both can
// be read from any SQLite file without touching its tables.
#pragma once
#include <cstdint>
#include <string>

#include "cache/sqlite.hpp"

namespace gemvtune::cache {

// The version this build creates and understands. Raising it means adding one migration
// function to kMigrations in schema.cpp.
//   1: tuned (winners), candidates, peaks
//   2: tuned gains `weights` (the weight format, 'dense' for v1 rows), part of its UNIQUE key
inline constexpr int kSchemaVersion = 2;
// "GMVT": marks a SQLite file as a gemvtune cache.
inline constexpr std::int32_t kApplicationId = 0x474D5654;

// What an existing SQLite file is, as far as the cache is concerned.
enum class FileKind {
  empty,    // no schema objects and no application id: ours to initialise
  ours,     // marked with kApplicationId
  foreign,  // another program's database
};

struct SchemaState {
  FileKind kind = FileKind::empty;
  int version = 0;  // user_version; 0 for an empty file
};

SchemaState read_schema_state(const Connection& conn);

// Throws CacheError naming the path unless this build can use the file (possibly after
// migrating it): foreign files and newer schema versions are refused.
void check_usable(const SchemaState& state, const std::string& path);

// Upgrades from `state.version` to kSchemaVersion and marks the file as ours. The caller
// holds a WriteTransaction, so a failed step leaves the file as it was, and has foreign keys
// off on the connection (a migration that rebuilds a table must not cascade-delete the rows
// that reference it; SQLite ignores the pragma inside a transaction).
void migrate_to_current(const Connection& conn, const SchemaState& state);

}  // namespace gemvtune::cache
