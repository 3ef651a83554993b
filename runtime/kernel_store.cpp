// KernelStore (see kernel_store.hpp): write-then-rename of cubins with a checksum trailer, and
// checks on load (trailer, checksum, ELF completeness) so a torn, truncated or altered file is
// dropped on the host, never handed to the driver.
#include "runtime/kernel_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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

KernelStore::KernelStore(std::string dir) : dir_(std::move(dir)) {}

std::string KernelStore::file_name(const std::string& kernel_name, const std::string& arch) {
  return kernel_name + "-" + arch + "-nvrtc" + jit::nvrtc_version() + "-" + template_version() + ".cubin";
}

std::string KernelStore::path_of(const std::string& kernel_name, const std::string& arch) const {
  return (fs::path(dir_) / file_name(kernel_name, arch)).string();
}

std::optional<std::vector<char>> KernelStore::load(const std::string& kernel_name, const std::string& arch) {
  const std::string path = path_of(kernel_name, arch);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  bool usable = !in.bad() && bytes.size() > kTrailerBytes;
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
  // Unique per process and call, in the same directory so rename() is atomic.
  const std::string temp_path = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                                std::to_string(sequence.fetch_add(1));
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
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
