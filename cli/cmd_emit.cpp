// gemvtune emit CONFIG: print the generated source.
#include <iostream>

#include "cli/cli_common.hpp"
#include "cli/weights_option.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::cli {

int cmd_emit(const std::vector<std::string>& args) {
  po::options_description desc("emit options");
  std::string config, dtype, weights;
  desc.add_options()("config", po::value(&config)->required(), "config, e.g. t128_r2_kw1_v16_u4_sk1_cs")(
      "dtype", po::value(&dtype)->default_value("bf16"), "fp32, fp16 or bf16")(
      "weights", po::value(&weights)->default_value(kWeightsDefault), kWeightsHelp);
  po::positional_options_description pos;
  pos.add("config", 1);
  po::variables_map vm;
  if (parse_or_help(args, desc, pos, vm, "gemvtune emit CONFIG [--dtype bf16] [--weights FORMAT]")) return kOk;
  const DType t = parse_dtype(dtype);
  std::cout << generate_source(parse_config(config), t, parse_weights(weights, t));
  return kOk;
}

}  // namespace gemvtune::cli
