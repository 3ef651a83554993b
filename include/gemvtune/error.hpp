// Exception types thrown by the gemvtune library. Library code never calls exit();
// callers (the CLI, a server) decide what an error means for the process.
#pragma once
#include <stdexcept>
#include <string>

namespace gemvtune {

// Base of every error the library throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The caller asked for something malformed or impossible (bad shape text, unknown dtype,
// a config that cannot run). The CLI maps it to exit status 2.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// NVRTC rejected a program; carries the compile log and the options used.
class CompileError : public Error {
 public:
  CompileError(const std::string& what, std::string log, std::string options)
      : Error(what + "\noptions: " + options + "\nNVRTC log:\n" + log),
        log_(std::move(log)), options_(std::move(options)) {}
  const std::string& log() const { return log_; }
  const std::string& options() const { return options_; }

 private:
  std::string log_, options_;
};

// A CUDA Driver API call failed; names the call and the driver's error string.
class CudaError : public Error {
 public:
  CudaError(const std::string& call, int code, const std::string& name, const std::string& text)
      : Error(call + " failed: " + name + " (" + std::to_string(code) + "): " + text), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// No CUDA driver or no GPU on this machine. Tests skip on it; the CLI prints it in one line.
class NoGpu : public Error {
 public:
  using Error::Error;
};

// The cache database could not be used (not SQLite, corrupt, newer schema, locked, read-only).
class CacheError : public Error {
 public:
  using Error::Error;
};

}  // namespace gemvtune
