// gemvtune: the command-line entry point. Dispatches to one command and maps errors to exit
// statuses: 2 for usage errors (bad arguments), 1 for runtime failures.
#include <iostream>

#include "cli/cli_common.hpp"
#include "gemvtune/error.hpp"

namespace gemvtune::cli {

int cmd_explain(const std::vector<std::string>& args);  // cli/cmd_explain.cpp

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"info", "GPU name, SMs, compute capability, L2, driver and NVRTC versions", cmd_info},
      {"emit", "print the generated CUDA source of a config", cmd_emit},
      {"run", "check one config against a float64 reference and time it", cmd_run},
      {"tune", "find the fastest correct config of shapes and store it in the cache", cmd_tune},
      {"query", "which config a shape gets on this GPU, and where it comes from", cmd_query},
      {"explain", "why a config runs as fast as it does: grid, waves, bytes in flight, registers, model", cmd_explain},
      {"list", "list the tuned entries of the cache", cmd_list},
      {"export", "write the cache as JSON", cmd_export},
      {"import", "merge a JSON export into the cache", cmd_import},
      {"peak", "measure and store the GPU's read bandwidth ceiling", cmd_peak},
      {"fit", "the model's constants refitted to a GPU's measurements in the cache, beside the shipped ones", cmd_fit},
      {"bench", "tuned kernels against cuBLAS and the untuned default, per shape", cmd_bench},
  };
  return table;
}

namespace {
void print_usage(std::ostream& out) {
  out << "usage: gemvtune <command> [options]   (gemvtune <command> --help for its options)\n\n"
         "gemvtune tunes the GEMV kernels of LLM decode: Y = X W^T with W row-major N x K (bf16, fp16,\n"
         "fp32, or int8 / fp8 e4m3 / int4g128 weights) and X of M = 1..16 rows (--batch).\n\n"
         "commands:\n";
  for (const auto& c : commands()) out << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << "\n";
}
// A command's answer is what a script reads: if stdout could not take it (a full disk, a closed
// pipe's reader) the run failed, whatever the command returned.
int with_stdout_checked(const std::string& who, int status) {
  std::cout.flush();
  if (std::cout) return status;
  std::cerr << who << ": error: cannot write to stdout\n";
  return status == kOk ? kRuntimeError : status;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_usage(std::cerr);
    return kUsageError;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_usage(std::cout);
    return with_stdout_checked("gemvtune", kOk);
  }
  for (const auto& c : commands()) {
    if (args[0] != c.name) continue;
    try {
      return with_stdout_checked("gemvtune " + std::string(c.name),
                                 c.run(std::vector<std::string>(args.begin() + 1, args.end())));
    } catch (const UsageError& e) {
      std::cerr << "gemvtune " << c.name << ": " << short_message(e.what()) << "\n";
      return kUsageError;
    } catch (const InvalidArgument& e) {
      // Bad input is often quoted back; a 100 KB argument must not come back whole.
      std::cerr << "gemvtune " << c.name << ": " << short_message(e.what()) << "\n";
      return kUsageError;
    } catch (const std::exception& e) {
      std::cerr << "gemvtune " << c.name << ": error: " << e.what() << "\n";
      return kRuntimeError;
    }
  }
  std::cerr << "gemvtune: unknown command '" << args[0] << "'\n";
  print_usage(std::cerr);
  return kUsageError;
}

}  // namespace gemvtune::cli

int main(int argc, char** argv) { return gemvtune::cli::main(argc, argv); }
