// The tuning cache: a SQLite file that remembers, per GPU model, shape, dtype, batch, weight
// format and template version, which kernel config won and every candidate that was measured, plus the
// measured bandwidth ceiling of each GPU. Safe for several processes writing one file.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gemvtune/dtype.hpp"
#include "gemvtune/gpu.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune {

// Everything a tuned config depends on. Two keys are the same entry only when every field is.
struct CacheKey {
  GpuIdentity gpu;
  Shape shape;
  DType dtype = DType::bf16;
  int batch = 1;
  // The format of W (dense: the activation dtype itself). A config tuned for one format is
  // never served for another: the kernels read different bytes.
  WeightFormat weights = WeightFormat::dense;
  std::string template_version;
};

// What happened to one measured candidate.
enum class Outcome { passed, incorrect, compile_failed, launch_failed, not_supported };

// "passed", "incorrect", "compile_failed", "launch_failed", "not_supported".
std::string_view to_string(Outcome o);
// Exact names of to_string only; throws InvalidArgument naming the text otherwise.
Outcome parse_outcome(std::string_view text);

struct CandidateResult {
  std::string config;  // text form of KernelConfig
  Outcome outcome = Outcome::passed;
  std::string reason;  // why it failed; empty when it passed
  double time_us = 0, gbps = 0, pct_of_ceiling = 0;
};

// One tuned shape: the winner and everything measured on the way.
struct TuneRecord {
  CacheKey key;
  std::string config;  // the winner, text form of KernelConfig
  double time_us = 0, gbps = 0, pct_of_ceiling = 0;
  std::string strategy;  // "exhaustive" / "model"
  int driver_version = 0;
  std::string nvrtc_version;
  std::int64_t timestamp = 0;  // unix seconds
  std::vector<CandidateResult> candidates;  // every measured candidate, failures with reason
};

// The measured bandwidth ceiling of one GPU model.
struct PeakRecord {
  GpuIdentity gpu;
  double gbps = 0;
  std::int64_t bytes = 0;  // bytes moved by the measurement
  int driver_version = 0;
  std::int64_t timestamp = 0;  // unix seconds
};

// The content of an export document: every winner with its candidates, and the peaks.
struct CacheDocument {
  std::vector<TuneRecord> tuned;
  std::vector<PeakRecord> peaks;
};

// Reads a whole document written by TuningCache::export_json and checks every record as
// store() would, touching no cache, so an import can be refused before any file is opened.
// `source` names the input in messages ("backup.json", "stdin"). Anything malformed, nested
// too deep, unreadable or invalid throws InvalidArgument "<source>: <place>: <problem>".
CacheDocument read_cache_json(std::istream& in, const std::string& source);

enum class CacheMode { read_only, read_write };

// RAII over one SQLite connection. Movable, not copyable; a moved-from cache may only be
// destroyed or assigned to. One object must not be used by two threads at once; several
// objects (in one process or many) may use one file at the same time.
// Every failure to use the file throws CacheError naming the path; bad input to store()
// or import throws InvalidArgument. A row of the file that store() would refuse (written by
// another tool, a newer build or by hand) is never served: find, contains, nearest, list,
// peak and export treat it as absent, store and import replace it, problems() describes it.
class TuningCache {
 public:
  // $GEMVTUNE_CACHE if set, else $XDG_CACHE_HOME/gemvtune/gemvtune.sqlite, else
  // $HOME/.cache/gemvtune/gemvtune.sqlite. Throws CacheError when none of them is set.
  static std::string default_path();

  // read_write creates the file and its parent directories when missing, upgrades an
  // older schema and needs the file and its directory writable (WAL keeps <path>-wal and
  // <path>-shm beside it). read_only never writes the file (SQLITE_OPEN_READONLY), refuses a
  // missing file and also reads a cache in a write-protected directory. A file that is not
  // a gemvtune cache (not SQLite, corrupt, another program's database, a newer schema) is
  // checked read-only first and refused byte-identical.
  TuningCache(const std::string& path, CacheMode mode);
  // For readers: no file at `path` yet is a normal state (nothing tuned) and gives nullopt;
  // anything else opens read_only, so a path that cannot even be looked at (too long, no
  // permission) is refused with the cache's message ("cache P: cannot stat: ...").
  static std::optional<TuningCache> open_if_present(const std::string& path);
  ~TuningCache();
  TuningCache(TuningCache&&) noexcept;
  TuningCache& operator=(TuningCache&&) noexcept;
  TuningCache(const TuningCache&) = delete;
  TuningCache& operator=(const TuningCache&) = delete;

  // One transaction: replaces the winner row for r.key and all of that key's candidate rows.
  void store(const TuneRecord& r);
  std::optional<TuneRecord> find(const CacheKey& k, bool with_candidates = false) const;
  bool contains(const CacheKey& k) const;
  // All usable winners (without candidates), ordered by gpu, dtype, n, k (then batch,
  // weight format, template); problems() names the rows left out.
  std::vector<TuneRecord> list() const;

  // The tuned shape on the same gpu, dtype, batch, weights and template_version nearest to
  // k.shape by |log(n/n')| + |log(k/k')| and whose config `usable` accepts; the exact shape
  // counts too unless other_shapes_only. Ties go to the smaller (n, k). An empty `usable`
  // accepts every config. Candidates are not loaded (find(r.key, true) does).
  std::optional<TuneRecord> nearest(const CacheKey& k,
                                    const std::function<bool(const std::string& config)>& usable,
                                    bool other_shapes_only = false) const;

  // Replaces the peak of p.gpu.
  void store_peak(const PeakRecord& p);
  std::optional<PeakRecord> peak(const GpuIdentity& gpu) const;

  // One line per row this build cannot use and so leaves out (an unusable winner leaves out
  // its entry, an unusable candidate only itself), naming the row and the problem.
  std::vector<std::string> problems() const;

  struct ExportStats {
    int tuned = 0, peaks = 0;
    std::vector<std::string> skipped;  // as problems(): rows left out of the document
  };
  // All usable winners with their candidates and all usable peaks, as indented JSON with a
  // format version: exactly what import accepts, so one bad row cannot block a restore.
  ExportStats export_json(std::ostream& out) const;

  struct ImportStats {
    int added = 0, replaced = 0, kept = 0;  // tuned entries
    // Read ceilings: new GPUs, ceilings raised (the file's is higher), ceilings kept.
    int peaks_added = 0, peaks_raised = 0, peaks_kept = 0;
  };
  // Merges a document into this cache in one transaction: for a key present in both, the
  // entry with the lower time_us stays (the existing one on a tie; an unusable existing row
  // is always replaced); for a peak, the higher gbps. An invalid record throws
  // InvalidArgument and nothing is written.
  ImportStats import_document(const CacheDocument& doc);
  // read_cache_json then import_document. The document is read and checked before this
  // cache is touched; errors name `source`.
  ImportStats import_json(std::istream& in, const std::string& source = "JSON input");

  const std::string& path() const;
  CacheMode mode() const;

 private:
  struct Impl;  // defined in cache/cache_impl.hpp; keeps sqlite3.h out of this header
  std::unique_ptr<Impl> impl_;
};

}  // namespace gemvtune
