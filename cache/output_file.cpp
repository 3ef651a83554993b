// write_output_file (see output_file.hpp). The atomic case writes a unique temporary file beside
// the target and renames it over the target, so an interrupted export never leaves a
// truncated backup where a good one was. Renaming over anything but a regular file would
// replace it: a symlink would become a plain file, and as root `--out /dev/null` would
// replace /dev/null; such targets are opened and written instead.
#include "cache/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "cache/text.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cache {
namespace {

// Closes on destruction and, while `temporary`, unlinks the file too.
class OutputFd {
 public:
  OutputFd(int fd, std::string path, bool temporary) : fd_(fd), path_(std::move(path)), temporary_(temporary) {}
  ~OutputFd() {
    if (fd_ >= 0) ::close(fd_);
    if (temporary_) ::unlink(path_.c_str());
  }
  OutputFd(const OutputFd&) = delete;
  OutputFd& operator=(const OutputFd&) = delete;

  int fd() const { return fd_; }
  // Closes and reports close errors (NFS reports write errors there).
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }
  void keep() { temporary_ = false; }  // renamed into place: nothing to remove

 private:
  int fd_;
  std::string path_;
  bool temporary_;
};

// Where the path itself is at fault (the caller can fix it) the error is InvalidArgument;
// a write that fails on a good path (ENOSPC, EIO) is an Error.
[[noreturn]] void fail(const std::string& what, const std::string& path, int error) {
  const std::string message = "cannot " + what + " '" + abbreviated(path, 1000) + "': " + std::strerror(error);
  switch (error) {
    case ENOENT: case ENOTDIR: case EACCES: case EPERM: case EROFS: case EISDIR: case ENAMETOOLONG: case ELOOP:
      throw InvalidArgument(message);
    default:
      throw Error(message);
  }
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("write", path, errno);
    done += static_cast<std::size_t>(n);
  }
}

// Into the same directory (rename does not cross file systems), keeping the mode of the file
// it replaces, or the mode a new file gets under the umask: the temporary is created with 0666
// and the kernel applies the umask (reading it with umask(0) and back would change it for the
// whole process meanwhile, while a server's other threads may be creating files).
void replace_atomically(const std::string& path, const std::string& text, const struct stat* existing) {
  static std::atomic<unsigned> sequence{0};
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    temp = path + ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(sequence.fetch_add(1));
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail("create a temporary file beside", path, errno);
  OutputFd out(fd, temp, true);
  if (existing != nullptr && ::fchmod(out.fd(), existing->st_mode & 07777) != 0)
    fail("set the mode of", temp, errno);
  write_all(out.fd(), text, temp);
  if (out.close() != 0) fail("write", temp, errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail("rename '" + temp + "' to", path, errno);
  out.keep();
}

void write_in_place(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail("open", path, errno);
  OutputFd out(fd, path, false);
  write_all(out.fd(), text, path);
  if (out.close() != 0) fail("write", path, errno);
}

}  // namespace

void write_output_file(const std::string& path, const std::string& text) {
  if (path.empty()) throw InvalidArgument("the output path is empty");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail("inspect", path, errno);
    replace_atomically(path, text, nullptr);
    return;
  }
  if (S_ISDIR(st.st_mode)) throw InvalidArgument("cannot write '" + abbreviated(path, 1000) + "': it is a directory");
  if (S_ISREG(st.st_mode)) {
    replace_atomically(path, text, &st);
    return;
  }
  write_in_place(path, text);
}

void refuse_cache_files_as_output(const std::string& option, const std::string& out, const std::string& cache_path) {
  namespace fs = std::filesystem;
  struct Side {
    const char* suffix;
    const char* what;
  };
  static constexpr Side kSides[] = {{"", "the cache itself"},
                                    {"-wal", "the cache's write-ahead log (it holds committed entries)"},
                                    {"-shm", "the cache's shared-memory index"},
                                    {"-journal", "the cache's rollback journal"}};
  std::error_code ec;
  // A file that does not exist yet is compared by its absolute path (a later writer may create it).
  const fs::path out_abs = fs::weakly_canonical(out, ec);
  for (const Side& side : kSides) {
    const std::string file = cache_path + side.suffix;
    std::error_code same_ec, abs_ec;
    const bool same = fs::equivalent(out, file, same_ec) ||
                      (!ec && fs::weakly_canonical(file, abs_ec) == out_abs && !abs_ec);
    if (same)
      throw InvalidArgument(option + " '" + abbreviated(out, 1000) + "' is " + side.what +
                            "; writing JSON there would destroy it");
  }
}

}  // namespace gemvtune::cache
