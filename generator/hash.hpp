// FNV-1a, 64 bit: a fast, stable hash of bytes, for version tags and file checksums (not for
// security).
#pragma once
#include <cstdint>
#include <string_view>

namespace gemvtune {

constexpr std::uint64_t kFnv1aSeed = 1469598103934665603ull;

inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = kFnv1aSeed) {
  for (unsigned char ch : bytes) h = (h ^ ch) * 1099511628211ull;
  return h;
}

}  // namespace gemvtune
