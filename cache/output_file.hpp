// Writing an output file (an export's JSON) for the CLI and the C API alike: a new path or a
// regular file is replaced atomically; anything else the path names (a symlink, /dev/stdout,
// a FIFO, a character device) is written in place, as a shell redirection would, and stays
// what it is.
#pragma once
#include <string>

namespace gemvtune::cache {

// Writes `text` to `path` as above. A path that cannot be written (a directory, a missing or
// read-only directory, no permission) throws InvalidArgument naming it and the reason; a
// failure while writing (a full disk) throws Error. Either way a failed atomic write leaves
// the old file as it was and no temporary file behind.
void write_output_file(const std::string& path, const std::string& text);

// Throws InvalidArgument when `out` names the cache at `cache_path` or one of the files SQLite
// keeps beside it (-wal, -shm, -journal): the -wal holds committed entries not yet copied into
// the cache, so writing a document there loses them. `option` names the argument ("--out").
void refuse_cache_files_as_output(const std::string& option, const std::string& out, const std::string& cache_path);

}  // namespace gemvtune::cache
