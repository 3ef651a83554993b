// Converters from checkpoint tensors to PackedWeights: GPTQ, AWQ and plain tensors.
//
// Bit layouts as in the public sources (checked against them):
//   GPTQ: AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py, QuantLinear.pack: qweight
//     [K/8][N] with qweight[row] |= intweight[j] << (4 * (j - i)) for the 8 rows of K j = i..i+7;
//     qzeros [K/G][N/8] packed along N the same way after `zeros -= 1`; forward unpacks with
//     (qzeros >> 4 * i) & 15 and adds 1 back. GPTQModel's gptq_v2 format drops the -1/+1.
//   AWQ: AutoAWQ awq/modules/linear/gemm.py, WQLinear_GEMM.from_linear: qweight [K][N/8],
//     qweight[:, col] |= intweight[:, col * 8 + order_map[i]] << (4 * i) with
//     order_map = [0, 2, 4, 6, 1, 3, 5, 7]; qzeros [K/G][N/8] packed alike, zeros as they are;
//     w = (q - zero) * scale. Unpackers use the inverse order [0, 4, 1, 5, 2, 6, 3, 7].
#include <cmath>
#include <cstring>

#include "formats/internal.hpp"
#include "tuner/host_data.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune {

namespace {

constexpr int kAwqNibbleOfColumn[8] = {0, 4, 1, 5, 2, 6, 3, 7};  // inverse of AWQ's order_map

WeightFormat int4_format_for(const std::string& who, int group) {
  if (group != 32 && group != 64 && group != 128)
    throw InvalidArgument(who + ": group size " + std::to_string(group) +
                          " is not supported (expected 32, 64 or 128" +
                          (group <= 0 ? "; per-channel int4 (group -1) is not supported" : "") +
                          ")");
  return int4_format(group);
}

void check_n_multiple_of_8(const std::string& who, std::int64_t n) {
  if (n % 8 != 0)
    throw InvalidArgument(who + ": N = " + std::to_string(n) +
                          " is not a multiple of 8 (qzeros packs 8 output channels per int32)");
}

// Stores a scale or zero from a checkpoint into the activation dtype, refusing values that are
// not finite there.
void store_value(const std::string& who, const char* what, DType a, std::uint8_t* p, double v,
                 std::int64_t i, std::int64_t j) {
  const double r = formats::round_to(a, v);
  if (!std::isfinite(r))
    throw InvalidArgument(who + ": " + what + "[" + std::to_string(i) + "][" + std::to_string(j) +
                          "] = " + formats::num(v) + " is not a finite " +
                          std::string(to_string(a)) + " value");
  store_element(a, p, r);
}

std::uint32_t word(const std::int32_t* p, std::int64_t i) {
  std::uint32_t u;
  std::memcpy(&u, p + i, 4);
  return u;
}

// Scales [K/G][N] (transposed in the checkpoint) into p.scales [N][K/G].
void copy_transposed_scales(const std::string& who, const HostMatrix& scales, PackedWeights& p) {
  const std::int64_t groups = p.groups_per_row();
  const std::size_t asz = dtype_size(p.activation);
  formats::check_matrix(scales, groups, p.n, who + ": scales [K/G][N]");
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t n = 0; n < p.n; ++n)
      store_value(who, "scales", p.activation, p.scales.data() + (n * groups + g) * asz,
                  scales.at(g, n), g, n);
}

}  // namespace

PackedWeights from_gptq(const GptqTensors& t, DType a, std::int64_t ld) {
  const std::string who = "GPTQ";
  const WeightFormat f = int4_format_for(who, t.group);
  PackedWeights p = make_packed_weights(f, a, t.n, t.k, ld);
  check_n_multiple_of_8(who, t.n);
  formats::check_pointer(t.qweight, who + ": qweight");
  formats::check_pointer(t.qzeros, who + ": qzeros");
  const std::int64_t n_total = p.n, k_total = p.k, groups = p.groups_per_row();
  if (t.g_idx != nullptr) {
    for (std::int64_t k = 0; k < k_total; ++k)
      if (t.g_idx[k] != k / t.group)
        throw InvalidArgument(
            who + ": g_idx[" + std::to_string(k) + "] = " + std::to_string(t.g_idx[k]) +
            ", expected " + std::to_string(k / t.group) + " (k / " + std::to_string(t.group) +
            "): act-order (desc_act) checkpoints whose groups do not follow K are not supported");
  }
  copy_transposed_scales(who, t.scales, p);

  // Word [kw][n] holds k = 8kw..8kw+7, low nibble first: its four little-endian bytes are
  // exactly bytes 4kw..4kw+3 of row n here (even k in the low nibble).
  const std::int64_t rb = p.row_bytes();
  for (std::int64_t kw = 0; kw < k_total / 8; ++kw)
    for (std::int64_t n = 0; n < n_total; ++n) {
      const std::uint32_t u = word(t.qweight, kw * n_total + n);
      std::uint8_t* dst = p.q.data() + n * rb + kw * 4;
      for (int b = 0; b < 4; ++b) dst[b] = static_cast<std::uint8_t>(u >> (8 * b));
    }

  const std::size_t asz = dtype_size(a);
  const int offset = t.zeros_format == GptqZeros::v1 ? 1 : 0;
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t n = 0; n < n_total; ++n) {
      const std::uint32_t u = word(t.qzeros, g * (n_total / 8) + n / 8);
      const int z = static_cast<int>((u >> (4 * (n % 8))) & 0xf) + offset;
      store_element(a, p.zeros.data() + (n * groups + g) * asz, z);
    }
  return p;
}

PackedWeights from_awq(const AwqTensors& t, DType a, std::int64_t ld) {
  const std::string who = "AWQ";
  const WeightFormat f = int4_format_for(who, t.group);
  PackedWeights p = make_packed_weights(f, a, t.n, t.k, ld);
  check_n_multiple_of_8(who, t.n);
  formats::check_pointer(t.qweight, who + ": qweight");
  formats::check_pointer(t.qzeros, who + ": qzeros");
  const std::int64_t n_total = p.n, k_total = p.k, groups = p.groups_per_row();
  copy_transposed_scales(who, t.scales, p);

  const std::int64_t rb = p.row_bytes(), words = n_total / 8;
  for (std::int64_t k = 0; k < k_total; ++k)
    for (std::int64_t j = 0; j < words; ++j) {
      const std::uint32_t u = word(t.qweight, k * words + j);
      for (int c = 0; c < 8; ++c) {
        const auto v = static_cast<std::uint8_t>((u >> (4 * kAwqNibbleOfColumn[c])) & 0xf);
        p.q[static_cast<std::size_t>((j * 8 + c) * rb + k / 2)] |= (k & 1) ? v << 4 : v;
      }
    }

  const std::size_t asz = dtype_size(a);
  for (std::int64_t g = 0; g < groups; ++g)
    for (std::int64_t j = 0; j < words; ++j) {
      const std::uint32_t u = word(t.qzeros, g * words + j);
      for (int c = 0; c < 8; ++c) {
        const int z = static_cast<int>((u >> (4 * kAwqNibbleOfColumn[c])) & 0xf);
        store_element(a, p.zeros.data() + ((j * 8 + c) * groups + g) * asz, z);
      }
    }
  return p;
}

PackedWeights from_plain_int4(const std::uint8_t* values, std::int64_t values_ld,
                              const HostMatrix& scales, const HostMatrix& zeros, std::int64_t n,
                              std::int64_t k, int group, DType a, std::int64_t ld) {
  const std::string who = "plain int4";
  const WeightFormat f = int4_format_for(who, group);
  PackedWeights p = make_packed_weights(f, a, n, k, ld);
  formats::check_pointer(values, who + ": values");
  if (values_ld == 0) values_ld = k;
  if (values_ld < k)
    throw InvalidArgument(who + ": values row stride " + std::to_string(values_ld) +
                          " is less than K = " + std::to_string(k));
  const std::int64_t groups = p.groups_per_row(), rb = p.row_bytes();
  formats::check_matrix(scales, n, groups, who + ": scales [N][K/G]");
  formats::check_matrix(zeros, n, groups, who + ": zeros [N][K/G]");
  const std::size_t asz = dtype_size(a);
  for (std::int64_t r = 0; r < n; ++r) {
    for (std::int64_t c = 0; c < k; ++c) {
      const std::uint8_t v = values[r * values_ld + c];
      if (v > 15)
        throw InvalidArgument(who + ": values[" + std::to_string(r) + "][" + std::to_string(c) +
                              "] = " + std::to_string(v) + " is outside 0..15");
      p.q[static_cast<std::size_t>(r * rb + c / 2)] |= (c & 1) ? v << 4 : v;
    }
    for (std::int64_t g = 0; g < groups; ++g) {
      store_value(who, "scales", a, p.scales.data() + (r * groups + g) * asz, scales.at(r, g), r, g);
      store_value(who, "zeros", a, p.zeros.data() + (r * groups + g) * asz, zeros.at(r, g), r, g);
    }
  }
  return p;
}

namespace {
void copy_fp32_scales(const std::string& who, const float* scales, std::int64_t count,
                      PackedWeights& p) {
  formats::check_pointer(scales, who + ": scales");
  for (std::int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(scales[i]))
      throw InvalidArgument(who + ": scales[" + std::to_string(i) + "] = " +
                            formats::num(scales[i]) + " is not finite");
    std::memcpy(p.scales.data() + i * 4, scales + i, 4);
  }
}

void copy_bytes(const std::string& who, const void* src, std::int64_t src_ld, PackedWeights& p) {
  formats::check_pointer(src, who + ": values");
  if (src_ld == 0) src_ld = p.k;
  if (src_ld < p.k)
    throw InvalidArgument(who + ": values row stride " + std::to_string(src_ld) +
                          " is less than K = " + std::to_string(p.k));
  const auto* s = static_cast<const std::uint8_t*>(src);
  for (std::int64_t r = 0; r < p.n; ++r)
    std::memcpy(p.q.data() + r * p.row_bytes(), s + r * src_ld, static_cast<std::size_t>(p.k));
}
}  // namespace

PackedWeights from_plain_int8(const std::int8_t* values, std::int64_t values_ld,
                              const float* scales, std::int64_t n, std::int64_t k, DType a,
                              std::int64_t ld) {
  const std::string who = "plain int8";
  PackedWeights p = make_packed_weights(WeightFormat::int8, a, n, k, ld);
  copy_bytes(who, values, values_ld, p);
  copy_fp32_scales(who, scales, n, p);
  return p;
}

PackedWeights from_plain_fp8(const std::uint8_t* codes, std::int64_t codes_ld, const float* scales,
                             WeightFormat f, std::int64_t n, std::int64_t k, DType a,
                             std::int64_t ld) {
  const std::string who = "plain fp8";
  if (!is_fp8(f))
    throw InvalidArgument(who + ": format " + std::string(to_string(f)) +
                          " is not fp8 or fp8t");
  PackedWeights p = make_packed_weights(f, a, n, k, ld);
  copy_bytes(who, codes, codes_ld, p);
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t c = 0; c < k; ++c)
      if ((p.q[static_cast<std::size_t>(r * p.row_bytes() + c)] & 0x7f) == 0x7f)
        throw InvalidArgument(who + ": code [" + std::to_string(r) + "][" + std::to_string(c) +
                              "] is NaN (0x7f or 0xff)");
  copy_fp32_scales(who, scales, f == WeightFormat::fp8 ? n : 1, p);
  return p;
}

}  // namespace gemvtune
