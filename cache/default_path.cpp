// Where the cache lives when the user does not say: $GEMVTUNE_CACHE, else the XDG cache
// directory, else ~/.cache (the XDG default).
#include <cstdlib>
#include <string>

#include "gemvtune/cache.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune {
namespace {

// An unset and an empty variable mean the same: "not configured".
const char* non_empty_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

}  // namespace

std::string TuningCache::default_path() {
  if (const char* explicit_path = non_empty_env("GEMVTUNE_CACHE")) return explicit_path;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (const char* xdg = non_empty_env("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/')
    return std::string(xdg) + "/gemvtune/gemvtune.sqlite";
  if (const char* home = non_empty_env("HOME"))
    return std::string(home) + "/.cache/gemvtune/gemvtune.sqlite";
  throw CacheError(
      "cannot choose a cache path: none of GEMVTUNE_CACHE, XDG_CACHE_HOME or HOME is set");
}

}  // namespace gemvtune
