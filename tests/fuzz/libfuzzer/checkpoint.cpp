// libFuzzer target: the GPTQ and AWQ converters (formats/checkpoint.cpp) on tensors made of the
// input's bytes: N, K, the group, the zero-point format, the activation dtype and the row stride
// from its first bytes, qweight, qzeros and fp16 scales from the rest (repeated as needed). A
// conversion either throws InvalidArgument or gives packed weights that check_packed_weights
// accepts and whose every element is what weights.hpp says the checkpoint holds: the nibbles
// unpacked here the other way round (AWQ's nibble i holds column 8j + {0,2,4,6,1,3,5,7}[i];
// GPTQ's v1 zero is the nibble + 1), the scale the checkpoint's rounded to the activation dtype,
// and dequantize = (code - zero) x scale exactly. Anything else is a finding.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gemvtune/error.hpp"
#include "gemvtune/weights.hpp"

namespace {
using namespace gemvtune;

struct Bytes {
  const std::uint8_t* data;
  std::size_t size, at = 0;
  std::uint8_t next() { return size == 0 ? 0 : data[at++ % size]; }
  std::uint32_t word() {
    std::uint32_t w = 0;
    for (int i = 0; i < 4; ++i) w |= static_cast<std::uint32_t>(next()) << (8 * i);
    return w;
  }
};

double half_value(std::uint16_t bits) {  // IEEE fp16
  const int e = (bits >> 10) & 31, f = bits & 1023;
  const double sign = bits & 0x8000 ? -1 : 1;
  if (e == 31) return f ? NAN : sign * INFINITY;
  return sign * (e ? std::ldexp(1024 + f, e - 25) : std::ldexp(f, -24));
}

void check(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 6) return 0;
  Bytes in{data, size};
  const bool awq = in.next() & 1;
  const std::int64_t n = 8 * (1 + in.next() % 8);
  const int group = 32 << (in.next() % 3);
  const std::int64_t k = group * (1 + in.next() % 4);
  const std::uint8_t flags = in.next();
  const DType a = flags & 1 ? DType::bf16 : DType::f16;
  const GptqZeros zeros_format = flags & 2 ? GptqZeros::v2 : GptqZeros::v1;
  const std::int64_t ld = flags & 4 ? k + 2 * (in.next() % 8) : 0;
  const std::int64_t groups = k / group;

  std::vector<std::int32_t> qweight(static_cast<std::size_t>(awq ? k * (n / 8) : (k / 8) * n));
  std::vector<std::int32_t> qzeros(static_cast<std::size_t>(groups * (n / 8)));
  std::vector<std::uint16_t> scales(static_cast<std::size_t>(groups * n));  // [K/G][N], fp16 bits
  for (auto& w : qweight) w = static_cast<std::int32_t>(in.word());
  for (auto& w : qzeros) w = static_cast<std::int32_t>(in.word());
  for (auto& s : scales) s = static_cast<std::uint16_t>(in.next() | in.next() << 8);
  const HostMatrix scale_matrix = host_matrix(scales.data(), DType::f16, groups, n);

  PackedWeights p;
  try {
    if (awq) {
      AwqTensors t;
      t.qweight = qweight.data();
      t.qzeros = qzeros.data();
      t.scales = scale_matrix;
      t.n = n, t.k = k, t.group = group;
      p = from_awq(t, a, ld);
    } else {
      GptqTensors t;
      t.qweight = qweight.data();
      t.qzeros = qzeros.data();
      t.scales = scale_matrix;
      t.n = n, t.k = k, t.group = group, t.zeros_format = zeros_format;
      p = from_gptq(t, a, ld);
    }
  } catch (const InvalidArgument&) {
    return 0;
  }
  check_packed_weights(p);  // must not throw
  check(p.n == n && p.k == k && p.ld == (ld ? ld : k) && group_size(p.format) == group);

  // The checkpoint's codes and zeros, unpacked here from the layouts weights.hpp documents.
  std::vector<int> code(static_cast<std::size_t>(n * k)), zero(static_cast<std::size_t>(n * groups));
  static constexpr int kAwqColumnOfNibble[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  const auto nibble = [](std::int32_t w, int i) { return static_cast<int>((static_cast<std::uint32_t>(w) >> (4 * i)) & 15); };
  for (std::int64_t row = 0; row < k; ++row)  // the checkpoint's K rows
    for (std::int64_t j = 0; j < (awq ? n / 8 : n); ++j)
      for (int i = 0; i < 8; ++i) {
        if (awq) code[static_cast<std::size_t>((8 * j + kAwqColumnOfNibble[i]) * k + row)] = nibble(qweight[row * (n / 8) + j], i);
        else if (row % 8 == 0) code[static_cast<std::size_t>(j * k + row + i)] = nibble(qweight[(row / 8) * n + j], i);
      }
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t j = 0; j < n / 8; ++j)
      for (int i = 0; i < 8; ++i) {
        const int column = awq ? 8 * j + kAwqColumnOfNibble[i] : 8 * j + i;
        zero[static_cast<std::size_t>(column * groups + g)] =
            nibble(qzeros[g * (n / 8) + j], i) + (!awq && zeros_format == GptqZeros::v1 ? 1 : 0);
      }
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c) {
      const std::int64_t g = c / group;
      check(weight_code(p, r, c) == code[static_cast<std::size_t>(r * k + c)]);
      check(weight_zero(p, r, c) == zero[static_cast<std::size_t>(r * groups + g)]);
      const double given = half_value(scales[static_cast<std::size_t>(g * n + r)]), scale = weight_scale(p, r, c);
      check(std::isfinite(scale));
      if (a == DType::f16) check(scale == given);
      else check(std::fabs(scale - given) <= std::fabs(given) * std::ldexp(1.0, -8));  // bf16: nearest
      check(dequantize(p, r, c) == (weight_code(p, r, c) - weight_zero(p, r, c)) * scale);
    }
  return 0;
}
