// KernelStore: compiled GEMV cubins kept on disk across processes, so a restarted server loads
// its kernels instead of recompiling them with NVRTC. Each file is the cubin plus a checksum
// trailer, published by rename, and checked (trailer, checksum, ELF completeness) before the
// driver ever sees it.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gemvtune::runtime {

class KernelStore {
 public:
  // dir is created on the first save(); a missing dir simply has no kernels. Temporary files
  // of saves that never finished (a writer killed between write and rename) older than an
  // hour are removed here: nothing else would, and no save takes that long.
  explicit KernelStore(std::string dir);

  const std::string& dir() const { return dir_; }

  // "<kernel_name>-<arch>-nvrtc<version>-<template_version>.cubin": everything the bytes depend
  // on, so another NVRTC or template version never picks up a stale cubin.
  static std::string file_name(const std::string& kernel_name, const std::string& arch);
  std::string path_of(const std::string& kernel_name, const std::string& arch) const;

  // The stored cubin (trailer stripped), or nothing when absent or unusable (no trailer, a
  // checksum mismatch, or not a complete ELF image: torn, truncated or overwritten); an
  // unusable file is removed so the caller's recompile replaces it.
  std::optional<std::vector<char>> load(const std::string& kernel_name, const std::string& arch);

  // Writes cubin + trailer to a unique temporary name in dir, then renames over the final
  // name, so readers (other processes too) see either no file or a whole one; without fsync,
  // a crash can leave a torn file, which load() rejects. Returns false (never throws)
  // when the directory or file cannot be written: the store is only a speed-up.
  bool save(const std::string& kernel_name, const std::string& arch, const std::vector<char>& cubin);

  // Removes a stored file the driver refused (never throws).
  void discard(const std::string& kernel_name, const std::string& arch);

  std::size_t files_rejected() const { return rejected_; }

 private:
  std::string dir_;
  std::size_t rejected_ = 0;  // not atomic: callers serialize (see runtime.cpp)
};

}  // namespace gemvtune::runtime
