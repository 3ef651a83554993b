// KernelStore without a GPU: a real sm_90 cubin from NVRTC written atomically and read back,
// its file name carrying arch, NVRTC and template versions, and truncated files refused.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "cache/cache_test_util.hpp"
#include "gemvtune/generator.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/elf_image.hpp"
#include "runtime/kernel_store.hpp"

namespace gemvtune {
namespace {
namespace fs = std::filesystem;

using cache_test::TempDir;

// Compiled once for the whole file: NVRTC needs no GPU, only the library.
const jit::CompiledKernel& sample_cubin() {
  static const jit::CompiledKernel compiled = [] {
    KernelConfig c;  // defaults: t128_r1_kw1_v16_u2_sk1_cs
    return jit::compile_kernel(generate_source(c, DType::bf16), kernel_name(c, DType::bf16), "sm_90");
  }();
  return compiled;
}

std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file() ? 1 : 0;
  return n;
}

// A store in a temporary directory and the path of the sample kernel's file in it.
struct StoreFile : ::testing::Test {
  TempDir tmp;
  const jit::CompiledKernel& k = sample_cubin();
  runtime::KernelStore store{tmp.path()};
  const std::string path = store.path_of(k.name, "sm_90");
};

TEST(KernelStore, FileNameCarriesArchNvrtcAndTemplateVersion) {
  const std::string name = runtime::KernelStore::file_name("gemv_bf16_x", "sm_90");
  EXPECT_EQ(name, "gemv_bf16_x-sm_90-nvrtc" + jit::nvrtc_version() + "-" + template_version() + ".cubin");
}

TEST(KernelStore, SavesAtomicallyAndReadsBack) {
  TempDir tmp;
  const auto& k = sample_cubin();
  ASSERT_TRUE(jit::is_complete_elf(k.cubin)) << "NVRTC's cubin must pass the ELF check";
  runtime::KernelStore store((fs::path(tmp.path()) / "nested" / "kernels").string());  // created on save
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  ASSERT_TRUE(store.save(k.name, "sm_90", k.cubin));
  EXPECT_EQ(files_in(fs::path(tmp.path()) / "nested" / "kernels"), 1u) << "no temporary file left behind";
  EXPECT_TRUE(fs::exists(store.path_of(k.name, "sm_90")));
  auto back = store.load(k.name, "sm_90");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, k.cubin);
  EXPECT_FALSE(store.load(k.name, "sm_100").has_value()) << "another arch is another file";
  // A second save replaces the file in place (rename over it).
  ASSERT_TRUE(store.save(k.name, "sm_90", k.cubin));
  EXPECT_EQ(files_in(fs::path(tmp.path()) / "nested" / "kernels"), 1u);
  EXPECT_EQ(store.files_rejected(), 0u);
}

TEST_F(StoreFile, TruncatedFileIsRejectedAndRemoved) {
  for (std::size_t keep : {std::size_t{0}, std::size_t{10}, std::size_t{64}, k.cubin.size() / 2,
                           k.cubin.size() - 1}) {
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(k.cubin.data(), static_cast<std::streamsize>(keep));
    }
    EXPECT_FALSE(store.load(k.name, "sm_90").has_value()) << "kept " << keep << " bytes";
    EXPECT_FALSE(fs::exists(path)) << "an unusable file is removed so a recompile replaces it";
  }
  EXPECT_EQ(store.files_rejected(), 5u);
}

TEST_F(StoreFile, AlteredOrTrailerlessFileIsRejectedAndRemoved) {
  ASSERT_TRUE(store.save(k.name, "sm_90", k.cubin));
  EXPECT_EQ(fs::file_size(path), k.cubin.size() + 16) << "cubin plus a 16-byte trailer";
  // One byte of code changed, size and ELF structure intact: only the checksum can tell.
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(k.cubin.size() - 200));
    f.put(static_cast<char>(k.cubin[k.cubin.size() - 200] ^ 0x5a));
  }
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  EXPECT_FALSE(fs::exists(path));
  // A bare cubin (a file of another format, or torn before its trailer) is not taken either.
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(k.cubin.data(), static_cast<std::streamsize>(k.cubin.size()));
  }
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  EXPECT_EQ(store.files_rejected(), 2u);
  // Saved again, it reads back whole.
  ASSERT_TRUE(store.save(k.name, "sm_90", k.cubin));
  EXPECT_EQ(store.load(k.name, "sm_90"), std::optional<std::vector<char>>(k.cubin));
}

TEST(KernelStore, UnwritableDirectoryIsNotAnError) {
  TempDir tmp;
  const fs::path file = fs::path(tmp.path()) / "a_file";
  std::ofstream(file) << "x";
  runtime::KernelStore store((file / "kernels").string());  // a directory under a regular file
  EXPECT_FALSE(store.save("k", "sm_90", sample_cubin().cubin));
}

// Whatever else sits at a kernel's path is refused as unusable, without blocking, throwing or
// reading it whole: load() runs under the runtime's store lock, so a FIFO there hung every
// later load, a directory made ifstream throw out of load() (every plan of that kernel then
// failed instead of recompiling), and a symlink to /dev/zero read until memory ran out.
TEST_F(StoreFile, ADirectoryFifoDeviceOrHugeFileAtTheKernelsPathIsRefused) {

  fs::create_directory(path);  // empty: removed, and the save then takes its place
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(store.save(k.name, "sm_90", k.cubin));
  EXPECT_EQ(store.load(k.name, "sm_90"), std::optional<std::vector<char>>(k.cubin));

  fs::remove(path);
  fs::create_directories(fs::path(path) / "inside");  // not empty: left alone, never read
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  fs::remove_all(path);

  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  ::alarm(10);  // a load that blocks on the FIFO fails the test instead of hanging it
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  ::alarm(0);
  EXPECT_FALSE(fs::exists(path)) << "the FIFO is discarded like any unusable file";

  fs::create_symlink("/dev/zero", path);
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  EXPECT_FALSE(fs::is_symlink(path));

  {  // sparse: 1 GiB that takes no disk
    std::ofstream big(path, std::ios::binary);
    big.seekp((1LL << 30) - 1);
    big.put('x');
  }
  EXPECT_FALSE(store.load(k.name, "sm_90").has_value());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(store.files_rejected(), 5u);
}

// A temporary name left by a killed process of the same pid (a container's PID 1) is passed
// over: the save failed on it every start.
TEST_F(StoreFile, ALeftoverTemporaryOfTheSamePidIsPassedOver) {
  // The store's sequence is process-wide: the saves of this file's earlier tests took fewer
  // than 12 numbers, so the next save's first name is among these.
  for (int i = 0; i < 12; ++i)
    std::ofstream(path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(i)) << "stale";
  EXPECT_TRUE(store.save(k.name, "sm_90", k.cubin));
  EXPECT_EQ(store.load(k.name, "sm_90"), std::optional<std::vector<char>>(k.cubin));
}

// Temporaries of saves that never finished are removed when a store opens, once an hour old (a
// writer killed between write and rename left them for good); a recent one, which a save in
// another process may be writing, and the stored kernels stay.
TEST_F(StoreFile, StaleTemporariesAreRemovedWhenTheStoreOpens) {
  ASSERT_TRUE(store.save(k.name, "sm_90", k.cubin));
  const std::string stale = path + ".tmp.99999.0", recent = path + ".tmp.99999.1";
  std::ofstream(stale) << "killed";
  std::ofstream(recent) << "being written";
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  runtime::KernelStore reopened(tmp.path());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(recent));
  EXPECT_EQ(reopened.load(k.name, "sm_90"), std::optional<std::vector<char>>(k.cubin));
}

}  // namespace
}  // namespace gemvtune
