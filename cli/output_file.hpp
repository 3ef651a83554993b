// Writing a command's output to --out: "-" is stdout; a new path or a regular file is
// replaced atomically; anything else the path names (a symlink, /dev/stdout, a FIFO, a
// character device) is written in place, as a shell redirection would, and stays what it is.
#pragma once
#include <string>

namespace gemvtune::cli {

// Writes `text` to `path` as above. Throws gemvtune::Error naming the path and the reason;
// a failed atomic write leaves the old file as it was and no temporary file behind.
void write_output(const std::string& path, const std::string& text);

}  // namespace gemvtune::cli
