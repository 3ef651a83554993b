// libFuzzer target: what `gemvtune import` reads. Every input is either refused with
// InvalidArgument or accepted; an accepted document imports into a fresh cache, exports, and
// reads back to the same records (a second import changes nothing). Anything else (another
// exception, a crash, a sanitizer report) is a finding. scripts/fuzz.sh builds and runs it.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <unistd.h>

#include "gemvtune/cache.hpp"
#include "gemvtune/error.hpp"

namespace {
// One cache file for the process, emptied by deleting it between accepted inputs.
std::string cache_path() {
  static const std::string path = [] {
    const auto dir = std::filesystem::temp_directory_path() / ("gemvtune-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return (dir / "cache.sqlite").string();
  }();
  return path;
}

void remove_cache() {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(cache_path() + suffix);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gemvtune;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  CacheDocument doc;
  try {
    doc = read_cache_json(in, "fuzz");
  } catch (const InvalidArgument&) {
    return 0;
  }
  remove_cache();
  {
    TuningCache cache(cache_path(), CacheMode::read_write);
    cache.import_document(doc);
    std::ostringstream out;
    cache.export_json(out);
    std::istringstream again(out.str());
    const CacheDocument back = read_cache_json(again, "export");  // must not throw
    if (back.tuned.size() > doc.tuned.size() || back.peaks.size() > doc.peaks.size()) std::abort();
    const TuningCache::ImportStats second = cache.import_document(back);
    if (second.added != 0) std::abort();
  }
  remove_cache();
  return 0;
}
