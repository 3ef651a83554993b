// libFuzzer target: config text, as the CLI's --config, the cache and the C API take it. The
// input is "CONFIG" or "CONFIG|NxK|M|WEIGHTS|DTYPE". parse_config either refuses with
// InvalidArgument or gives a config whose text is the input (the strict round trip of
// config.hpp); a config the rules accept for the problem gets a source from the generator, at
// most 48 KB of shared memory and a finite, positive model time. Anything else is a finding.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"

namespace {
std::string field(const std::string& text, std::size_t index) {
  std::size_t begin = 0;
  for (std::size_t i = 0; i < index; ++i) {
    begin = text.find('|', begin);
    if (begin == std::string::npos) return {};
    ++begin;
  }
  return text.substr(begin, text.find('|', begin) - begin);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gemvtune;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string text = field(input, 0);
  KernelConfig c;
  try {
    c = parse_config(text);
  } catch (const InvalidArgument&) {
    return 0;
  }
  if (to_string(c) != text) std::abort();
  Shape s{4096, 4096};
  int m = c.m_tile;
  WeightFormat w = WeightFormat::dense;
  DType t = DType::bf16;
  try {
    if (!field(input, 1).empty()) s = parse_shape(field(input, 1));
    if (!field(input, 2).empty()) m = std::stoi(field(input, 2));
    if (!field(input, 3).empty()) w = parse_weight_format(field(input, 3));
    if (!field(input, 4).empty()) t = parse_dtype(field(input, 4));
  } catch (const std::exception&) {
    return 0;  // a malformed problem: the parsers' own business
  }
  if (why_invalid_for(c, t, s, m, w)) return 0;
  if (static_shared_bytes(c, w).total() > 48 * 1024) std::abort();
  if (generate_source(c, t, w).empty()) std::abort();
  const double us = estimate(c, t, s, GpuModelParams{}, w).time_us;
  if (!std::isfinite(us) || us <= 0) std::abort();
  return 0;
}
