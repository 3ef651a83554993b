// What both fuzz tests share: the fixed seed (overridable to explore, $GEMVTUNE_FUZZ_SEED),
// a scale for longer runs ($GEMVTUNE_FUZZ_SCALE, default 1: about 20 s each on 2 cores), and
// picking from a list.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace gemvtune::fuzz {

inline std::uint64_t seed() {
  const char* text = std::getenv("GEMVTUNE_FUZZ_SEED");
  return text != nullptr && text[0] != '\0' ? std::strtoull(text, nullptr, 10) : 20251130;
}

inline int scaled(int iterations) {
  const char* text = std::getenv("GEMVTUNE_FUZZ_SCALE");
  const double scale = text != nullptr && text[0] != '\0' ? std::atof(text) : 1.0;
  return static_cast<int>(iterations * (scale > 0 ? scale : 1.0));
}

using Rng = std::mt19937_64;

inline std::size_t below(Rng& rng, std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& items) {
  return items[below(rng, items.size())];
}

inline bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

// The first bytes of an input, escaped, to reproduce a finding from the test log.
inline std::string preview(const std::string& bytes, std::size_t max = 300) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (bytes.size() > max) out += "... (" + std::to_string(bytes.size()) + " bytes)";
  return out;
}

}  // namespace gemvtune::fuzz
