// Names and parsing of dtypes and shapes.
#include <cctype>
#include <charconv>

#include "gemvtune/dtype.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/shape.hpp"

namespace gemvtune {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType parse_dtype(std::string_view text) {
  if (text == "fp32" || text == "f32" || text == "float32" || text == "float") return DType::f32;
  if (text == "fp16" || text == "f16" || text == "float16" || text == "half") return DType::f16;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  throw InvalidArgument("unknown dtype '" + std::string(text) + "' (expected fp32, fp16 or bf16)");
}

std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

namespace {
// Parses a whole decimal field; returns false on anything else (signs, spaces). A run of
// digits too long for int64 reads as kMaxDim + 1, so the caller says it is too large rather
// than "not a positive integer".
bool parse_dim(std::string_view s, std::int64_t& out) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size()) {
    out = static_cast<std::int64_t>(kMaxDim) + 1;
    return true;
  }
  return ec == std::errc() && end == s.data() + s.size();
}

// The text as a message quotes it: bytes that would not show (control bytes, a stray BOM's)
// written as \xNN, so a line that looks valid says what is in it.
std::string visible(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto b = static_cast<unsigned char>(ch);
    if (b >= 0x20 && b < 0x7F) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}
}  // namespace

void check_shape(const Shape& s) {
  if (s.n < 1 || s.k < 1)
    throw InvalidArgument("shape " + std::to_string(s.n) + "x" + std::to_string(s.k) +
                          ": N and K must be at least 1");
  if (s.n > kMaxDim || s.k > kMaxDim)
    throw InvalidArgument("shape " + to_string(s) + ": N and K must be at most " +
                          std::to_string(kMaxDim));
}

Shape parse_shape(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("bad shape '" + visible(text) + "': " + why + " (expected NxK, e.g. 4096x14336)");
  };
  auto x = text.find_first_of("xX");
  if (x == std::string_view::npos) throw bad("no 'x' between N and K");
  Shape s;
  if (!parse_dim(text.substr(0, x), s.n)) throw bad("N is not a positive integer");
  if (!parse_dim(text.substr(x + 1), s.k)) throw bad("K is not a positive integer");
  if (s.n < 1 || s.k < 1) throw bad("N and K must be at least 1");
  if (s.n > kMaxDim || s.k > kMaxDim) throw bad("N and K must be at most " + std::to_string(kMaxDim));
  return s;
}

std::string to_string(const Shape& s) { return std::to_string(s.n) + "x" + std::to_string(s.k); }

std::string to_string(const Shape& s, int batch) {
  return (batch > 1 ? std::to_string(batch) + "x" : std::string()) + to_string(s);
}

}  // namespace gemvtune
