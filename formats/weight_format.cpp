// Weight formats: text forms, sizes, layout checks and PackedWeights (see gemvtune/weights.hpp).
#include <string>

#include "formats/internal.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune {

std::string_view to_string(WeightFormat f) {
  switch (f) {
    case WeightFormat::dense: return "dense";
    case WeightFormat::int8: return "int8";
    case WeightFormat::fp8: return "fp8";
    case WeightFormat::fp8_tensor: return "fp8t";
    case WeightFormat::int4_g32: return "int4g32";
    case WeightFormat::int4_g64: return "int4g64";
    case WeightFormat::int4_g128: return "int4g128";
  }
  return "?";
}

namespace {
std::string accepted_names() {
  std::string s;
  for (WeightFormat f : kAllWeightFormats) {
    if (!s.empty()) s += ", ";
    s += to_string(f);
  }
  return s;
}
}  // namespace

WeightFormat parse_weight_format(std::string_view text) {
  for (WeightFormat f : kAllWeightFormats)
    if (text == to_string(f)) return f;
  throw InvalidArgument("unknown weight format '" + std::string(text) + "' (expected one of " +
                        accepted_names() + ")");
}

WeightFormat parse_weights_option(std::string_view text, DType activation) {
  for (WeightFormat f : kAllWeightFormats)
    if (text == to_string(f)) return f;
  DType t;
  try {
    t = parse_dtype(text);
  } catch (const InvalidArgument&) {
    throw InvalidArgument("unknown weight format '" + std::string(text) + "' (expected one of " +
                          accepted_names() + ", or the activation dtype " +
                          std::string(to_string(activation)) + " for dense weights)");
  }
  if (t != activation)
    throw InvalidArgument("weights '" + std::string(text) + "' are dense " +
                          std::string(to_string(t)) + " but the activations are " +
                          std::string(to_string(activation)) +
                          ": dense weights are in the activation dtype (use --weights dense, "
                          "or set the dtype to " + std::string(to_string(t)) + ")");
  return WeightFormat::dense;
}

bool is_int4(WeightFormat f) {
  return f == WeightFormat::int4_g32 || f == WeightFormat::int4_g64 ||
         f == WeightFormat::int4_g128;
}
bool is_fp8(WeightFormat f) { return f == WeightFormat::fp8 || f == WeightFormat::fp8_tensor; }
bool is_quantized(WeightFormat f) { return f != WeightFormat::dense; }

int group_size(WeightFormat f) {
  switch (f) {
    case WeightFormat::int4_g32: return 32;
    case WeightFormat::int4_g64: return 64;
    case WeightFormat::int4_g128: return 128;
    default: return 0;
  }
}

WeightFormat int4_format(int group) {
  switch (group) {
    case 32: return WeightFormat::int4_g32;
    case 64: return WeightFormat::int4_g64;
    case 128: return WeightFormat::int4_g128;
  }
  throw InvalidArgument("int4 group size " + std::to_string(group) +
                        " is not supported (expected 32, 64 or 128)");
}

int weight_bits(WeightFormat f, DType activation) {
  if (f == WeightFormat::dense) return static_cast<int>(8 * dtype_size(activation));
  return is_int4(f) ? 4 : 8;
}

std::size_t scale_bytes(WeightFormat f, DType activation) {
  if (f == WeightFormat::dense) return 0;
  return is_int4(f) ? dtype_size(activation) : 4;
}

namespace {
std::string describe(WeightFormat f, DType a, std::int64_t n, std::int64_t k) {
  return std::string(to_string(f)) + " weights " + std::to_string(n) + "x" + std::to_string(k) +
         " (" + std::string(to_string(a)) + " activations)";
}

std::int64_t row_bytes_of(WeightFormat f, DType a, std::int64_t ld) {
  if (f == WeightFormat::dense) return ld * static_cast<std::int64_t>(dtype_size(a));
  return is_int4(f) ? ld / 2 : ld;
}

std::int64_t groups_of(WeightFormat f, std::int64_t k) {
  if (is_int4(f)) return k / group_size(f);
  if (f == WeightFormat::int8 || f == WeightFormat::fp8) return 1;
  return 0;
}

// Sizes of q, scales and zeros in bytes, with every product checked.
WeightBytes storage_bytes(WeightFormat f, DType a, std::int64_t n, std::int64_t k,
                          std::int64_t ld) {
  const std::string what = describe(f, a, n, k);
  WeightBytes b;
  b.weights = formats::checked_mul(n, row_bytes_of(f, a, ld), what);
  const auto sb = static_cast<std::int64_t>(scale_bytes(f, a));
  if (f == WeightFormat::fp8_tensor) {
    b.scales = 4;
  } else if (f != WeightFormat::dense) {
    b.scales = formats::checked_mul(formats::checked_mul(n, groups_of(f, k), what), sb, what);
  }
  if (is_int4(f)) b.zeros = b.scales;
  if (b.weights > INT64_MAX - b.scales - b.zeros)
    throw InvalidArgument(what + ": size overflows");
  return b;
}
}  // namespace

void check_weight_layout(WeightFormat f, DType a, std::int64_t n, std::int64_t k,
                         std::int64_t ld) {
  const std::string what = describe(f, a, n, k);
  if (n < 1 || k < 1) throw InvalidArgument(what + ": N and K must be at least 1");
  if (n > kMaxDim || k > kMaxDim)
    throw InvalidArgument(what + ": N and K must be at most " + std::to_string(kMaxDim));
  if (ld < k)
    throw InvalidArgument(what + ": ld = " + std::to_string(ld) + " is less than K = " +
                          std::to_string(k));
  if (ld > kMaxDim)
    throw InvalidArgument(what + ": ld = " + std::to_string(ld) + " is above " +
                          std::to_string(kMaxDim));
  if (is_int4(f)) {
    const int g = group_size(f);
    if (k % g != 0)
      throw InvalidArgument(what + ": K = " + std::to_string(k) +
                            " is not a multiple of the group size " + std::to_string(g) +
                            " of " + std::string(to_string(f)));
    if (ld % 2 != 0)
      throw InvalidArgument(what + ": ld = " + std::to_string(ld) +
                            " is odd; int4 rows hold two weights per byte, so ld must be even");
  }
  storage_bytes(f, a, n, k, ld);
}

WeightBytes weight_bytes(WeightFormat f, DType a, std::int64_t n, std::int64_t k) {
  check_weight_layout(f, a, n, k, k);
  return storage_bytes(f, a, n, k, k);
}

double bytes_per_weight(WeightFormat f, DType a, std::int64_t n, std::int64_t k) {
  const WeightBytes b = weight_bytes(f, a, n, k);
  return static_cast<double>(b.total()) / (static_cast<double>(n) * static_cast<double>(k));
}

std::int64_t PackedWeights::row_bytes() const { return row_bytes_of(format, activation, ld); }
std::int64_t PackedWeights::groups_per_row() const { return groups_of(format, k); }

bool PackedWeights::operator==(const PackedWeights& o) const {
  return format == o.format && activation == o.activation && n == o.n && k == o.k &&
         ld == o.ld && q == o.q && scales == o.scales && zeros == o.zeros;
}

PackedWeights make_packed_weights(WeightFormat f, DType a, std::int64_t n, std::int64_t k,
                                  std::int64_t ld) {
  if (ld == 0) ld = k;
  check_weight_layout(f, a, n, k, ld);
  const WeightBytes b = storage_bytes(f, a, n, k, ld);
  PackedWeights w;
  w.format = f;
  w.activation = a;
  w.n = n;
  w.k = k;
  w.ld = ld;
  w.q.assign(static_cast<std::size_t>(b.weights), 0);
  w.scales.assign(static_cast<std::size_t>(b.scales), 0);
  w.zeros.assign(static_cast<std::size_t>(b.zeros), 0);
  return w;
}

void check_packed_weights(const PackedWeights& w) {
  check_weight_layout(w.format, w.activation, w.n, w.k, w.ld);
  const WeightBytes b = storage_bytes(w.format, w.activation, w.n, w.k, w.ld);
  auto check = [&](const char* name, std::size_t have, std::int64_t want) {
    if (have != static_cast<std::size_t>(want))
      throw InvalidArgument(describe(w.format, w.activation, w.n, w.k) + ", ld " +
                            std::to_string(w.ld) + ": " + name + " has " + std::to_string(have) +
                            " bytes, expected " + std::to_string(want));
  };
  check("q", w.q.size(), b.weights);
  check("scales", w.scales.size(), b.scales);
  check("zeros", w.zeros.size(), b.zeros);
}

}  // namespace gemvtune
