// NVRTC compile of one kernel to a cubin; RAII over nvrtcProgram.
#include "jit/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <regex>

#include "gemvtune/error.hpp"
#include "jit/cubin_info.hpp"

namespace gemvtune::jit {

namespace {
class Program {
 public:
  Program(const std::string& source, const std::string& name) {
    check(nvrtcCreateProgram(&p_, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
  }
  ~Program() {
    if (p_) nvrtcDestroyProgram(&p_);
  }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }

  std::string log() const {
    std::size_t size = 0;
    if (nvrtcGetProgramLogSize(p_, &size) != NVRTC_SUCCESS || size == 0) return {};
    std::string log(size, '\0');
    nvrtcGetProgramLog(p_, log.data());
    while (!log.empty() && log.back() == '\0') log.pop_back();
    return log;
  }

  static void check(nvrtcResult r, const char* call) {
    if (r != NVRTC_SUCCESS) throw Error(std::string(call) + " failed: " + nvrtcGetErrorString(r));
  }

 private:
  nvrtcProgram p_ = nullptr;
};

int report_number(const std::string& log, const std::regex& re) {
  std::smatch m;
  return std::regex_search(log, m, re) ? std::stoi(m[1]) : -1;
}
}  // namespace

CompiledKernel compile_kernel(const std::string& source, const std::string& kernel_name,
                              const std::string& arch) {
  Program program(source, kernel_name);
  const std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17",
                                            "--ptxas-options=-v"};
  std::vector<const char*> argv;
  std::string joined;
  for (const auto& o : options) {
    argv.push_back(o.c_str());
    joined += (joined.empty() ? "" : " ") + o;
  }
  const nvrtcResult r = nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  CompiledKernel out;
  out.log = program.log();
  // Out of memory says nothing about the source (a retry may succeed), so it is not a
  // CompileError, which the kernel caches keep as the answer for good.
  if (r == NVRTC_ERROR_OUT_OF_MEMORY)
    throw Error("NVRTC ran out of memory compiling " + kernel_name + " for " + arch);
  if (r != NVRTC_SUCCESS)
    throw CompileError("NVRTC could not compile " + kernel_name + " for " + arch + ": " +
                           nvrtcGetErrorString(r),
                       out.log, joined);
  std::size_t size = 0;
  Program::check(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
  if (size == 0)
    throw CompileError("NVRTC produced no cubin for " + kernel_name + " (is " + arch +
                           " a real architecture?)",
                       out.log, joined);
  out.cubin.resize(size);
  Program::check(nvrtcGetCUBIN(program.get(), out.cubin.data()), "nvrtcGetCUBIN");
  out.name = kernel_name;
  out.arch = arch;
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex stores(R"((\d+) bytes spill stores)");
  static const std::regex loads(R"((\d+) bytes spill loads)");
  static const std::regex stack(R"((\d+) bytes stack frame)");
  out.registers = report_number(out.log, regs);
  out.spill_store_bytes = std::max(0, report_number(out.log, stores));
  out.spill_load_bytes = std::max(0, report_number(out.log, loads));
  out.stack_frame_bytes = std::max(0, report_number(out.log, stack));
  // The cubin itself says the same; use it where the log lacks ptxas' report.
  if (auto res = read_cubin_resources(out.cubin)) {
    if (out.registers <= 0) out.registers = res->registers;
    out.stack_frame_bytes = std::max(out.stack_frame_bytes, res->stack_frame_bytes);
    out.shared_bytes = res->shared_bytes;
  }
  return out;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace gemvtune::jit
