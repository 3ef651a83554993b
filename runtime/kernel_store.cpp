// KernelStore (see kernel_store.hpp): write-then-rename of cubins with a checksum trailer, and
// checks on load (trailer, checksum, ELF completeness) so a torn, truncated or altered file is
// dropped on the host, never handed to the driver.
#include "runtime/kernel_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "gemvtune/generator.hpp"
#include "generator/hash.hpp"
#include "jit/elf_image.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune::runtime {
namespace fs = std::filesystem;

namespace {

template <typename T>
T read_at(const std::vector<char>& b, std::size_t offset) {
  T v{};
  std::memcpy(&v, b.data() + offset, sizeof(T));
  return v;  // ELF of CUDA is little-endian, like every host gemvtune runs on
}

// Every stored file is the cubin followed by this trailer: 8 bytes of magic, then the FNV-1a
// of the cubin, little-endian.
constexpr char kTrailerMagic[8] = {'g', 't', 'c', 'u', 'b', 'i', 'n', '1'};
constexpr std::size_t kTrailerBytes = sizeof kTrailerMagic + sizeof(std::uint64_t);

std::uint64_t checksum(const char* data, std::size_t n) { return fnv1a(std::string_view(data, n)); }

// Larger than any cubin of these kernels (tens to hundreds of KB), small enough to read
// while the store lock is held.
constexpr off_t kMaxStoredBytes = 64 << 20;

bool read_all(int fd, char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;  // an error, or shorter than fstat said (truncated meanwhile)
    data += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

KernelStore::KernelStore(std::string dir) : dir_(std::move(dir)) {
  std::error_code ec;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.find(".cubin.tmp.") == std::string::npos) continue;  // save()'s temporary names only
    std::error_code e;
    if (it->is_regular_file(e) && it->last_write_time(e) < stale && !e) fs::remove(it->path(), e);
  }
}

std::string KernelStore::file_name(const std::string& kernel_name, const std::string& arch) {
  return kernel_name + "-" + arch + "-nvrtc" + jit::nvrtc_version() + "-" + template_version() + ".cubin";
}

std::string KernelStore::path_of(const std::string& kernel_name, const std::string& arch) const {
  return (fs::path(dir_) / file_name(kernel_name, arch)).string();
}

std::optional<std::vector<char>> KernelStore::load(const std::string& kernel_name, const std::string& arch) {
  const std::string path = path_of(kernel_name, arch);
  // The store lock is held here, so nothing at the path may block or exhaust us: O_NONBLOCK
  // keeps a FIFO from blocking the open, and fstat then refuses anything but a regular file of
  // a size a cubin can have (a directory, a device, a symlink to /dev/zero, a huge file).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // absent, or unreadable: a save replaces it
  std::vector<char> bytes;
  bool usable = false;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > static_cast<off_t>(kTrailerBytes) &&
      st.st_size <= kMaxStoredBytes) {
    bytes.resize(static_cast<std::size_t>(st.st_size));
    usable = read_all(fd, bytes.data(), bytes.size());
  }
  ::close(fd);
  if (usable) {
    const std::size_t n = bytes.size() - kTrailerBytes;
    usable = std::memcmp(bytes.data() + n, kTrailerMagic, sizeof kTrailerMagic) == 0 &&
             read_at<std::uint64_t>(bytes, n + sizeof kTrailerMagic) == checksum(bytes.data(), n);
    bytes.resize(n);
  }
  if (!usable || !jit::is_complete_elf(bytes)) {
    discard(kernel_name, arch);
    return std::nullopt;
  }
  return bytes;
}

bool KernelStore::save(const std::string& kernel_name, const std::string& arch,
                       const std::vector<char>& cubin) {
  static std::atomic<unsigned long> sequence{0};
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return false;
  const std::string final_path = path_of(kernel_name, arch);
  // Unique per process and call, in the same directory so rename() is atomic. A name taken by
  // a killed process of the same pid (PID 1 in a container restarts with the same pid) is
  // passed over for the next one.
  std::string temp_path;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp_path = final_path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(sequence.fetch_add(1));
    fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) return false;
  }
  if (fd < 0) return false;
  // No fsync, which only a durable store would need: a file torn by a crash fails the checksum
  // on load and is recompiled, so a plan never waits on the disk.
  char trailer[kTrailerBytes];
  std::memcpy(trailer, kTrailerMagic, sizeof kTrailerMagic);
  const std::uint64_t sum = checksum(cubin.data(), cubin.size());
  std::memcpy(trailer + sizeof kTrailerMagic, &sum, sizeof sum);
  bool ok = write_all(fd, cubin.data(), cubin.size()) && write_all(fd, trailer, sizeof trailer);
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = ::rename(temp_path.c_str(), final_path.c_str()) == 0;
  if (!ok) ::unlink(temp_path.c_str());
  return ok;
}

void KernelStore::discard(const std::string& kernel_name, const std::string& arch) {
  ++rejected_;
  std::error_code ec;
  fs::remove(path_of(kernel_name, arch), ec);  // another process may have removed it already
}

}  // namespace gemvtune::runtime
