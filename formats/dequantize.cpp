// Element access and dequantization of PackedWeights; HostMatrix views (see weights.hpp).
#include <array>
#include <cstring>

#include "formats/internal.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/weights.hpp"
#include "tuner/host_data.hpp"

namespace gemvtune {

namespace {
float load_f32(const std::uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}
const std::uint8_t* row_ptr(const PackedWeights& w, std::int64_t row) {
  return w.q.data() + row * w.row_bytes();
}
std::int64_t group_index(const PackedWeights& w, std::int64_t row, std::int64_t col) {
  return row * w.groups_per_row() + col / group_size(w.format);
}
}  // namespace

int weight_code(const PackedWeights& w, std::int64_t row, std::int64_t col) {
  const std::uint8_t* r = row_ptr(w, row);
  switch (w.format) {
    case WeightFormat::dense:
      throw InvalidArgument("dense weights have no codes");
    case WeightFormat::int8:
      return static_cast<std::int8_t>(r[col]);
    case WeightFormat::fp8:
    case WeightFormat::fp8_tensor:
      return r[col];
    default: {
      const std::uint8_t b = r[col / 2];
      return (col & 1) ? (b >> 4) : (b & 0xf);
    }
  }
}

double weight_scale(const PackedWeights& w, std::int64_t row, std::int64_t col) {
  switch (w.format) {
    case WeightFormat::dense: return 1.0;
    case WeightFormat::int8:
    case WeightFormat::fp8: return load_f32(w.scales.data() + row * 4);
    case WeightFormat::fp8_tensor: return load_f32(w.scales.data());
    default:
      return element_value(
          w.activation,
          w.scales.data() + group_index(w, row, col) * dtype_size(w.activation));
  }
}

double weight_zero(const PackedWeights& w, std::int64_t row, std::int64_t col) {
  if (!is_int4(w.format)) return 0.0;
  return element_value(
      w.activation, w.zeros.data() + group_index(w, row, col) * dtype_size(w.activation));
}

double dequantize(const PackedWeights& w, std::int64_t row, std::int64_t col) {
  switch (w.format) {
    case WeightFormat::dense:
      return element_value(w.activation,
                                  row_ptr(w, row) + col * dtype_size(w.activation));
    case WeightFormat::int8:
      return weight_code(w, row, col) * weight_scale(w, row, col);
    case WeightFormat::fp8:
    case WeightFormat::fp8_tensor:
      return e4m3_to_double(static_cast<std::uint8_t>(weight_code(w, row, col))) *
             weight_scale(w, row, col);
    default:
      return (weight_code(w, row, col) - weight_zero(w, row, col)) * weight_scale(w, row, col);
  }
}

void dequantize_row(const PackedWeights& w, std::int64_t row, double* out) {
  const std::uint8_t* r = row_ptr(w, row);
  switch (w.format) {
    case WeightFormat::dense: {
      const std::size_t sz = dtype_size(w.activation);
      for (std::int64_t c = 0; c < w.k; ++c) out[c] = element_value(w.activation, r + c * sz);
      return;
    }
    case WeightFormat::int8: {
      const double s = weight_scale(w, row, 0);
      for (std::int64_t c = 0; c < w.k; ++c) out[c] = static_cast<std::int8_t>(r[c]) * s;
      return;
    }
    case WeightFormat::fp8:
    case WeightFormat::fp8_tensor: {
      // Every code's value, built once (thread-safe static): built per row, it took most of a
      // 28672-row reference's time.
      static const std::array<double, 256> table = [] {
        std::array<double, 256> t{};
        for (int i = 0; i < 256; ++i) t[i] = e4m3_to_double(static_cast<std::uint8_t>(i));
        return t;
      }();
      const double s = weight_scale(w, row, 0);
      for (std::int64_t c = 0; c < w.k; ++c) out[c] = table[r[c]] * s;
      return;
    }
    default: {
      const int g = group_size(w.format);
      for (std::int64_t c0 = 0; c0 < w.k; c0 += g) {
        const double s = weight_scale(w, row, c0), z = weight_zero(w, row, c0);
        for (std::int64_t c = c0; c < c0 + g; ++c) {
          const std::uint8_t b = r[c / 2];
          out[c] = (((c & 1) ? (b >> 4) : (b & 0xf)) - z) * s;
        }
      }
      return;
    }
  }
}

std::vector<double> dequantize(const PackedWeights& w) {
  check_packed_weights(w);
  std::vector<double> out(static_cast<std::size_t>(formats::checked_mul(w.n, w.k, "dequantize")));
  for (std::int64_t r = 0; r < w.n; ++r) dequantize_row(w, r, out.data() + r * w.k);
  return out;
}

// --- HostMatrix ------------------------------------------------------------------------------

double HostMatrix::at(std::int64_t r, std::int64_t c) const {
  const std::int64_t i = r * (ld ? ld : cols) + c;
  switch (element) {
    case HostElement::f64: return static_cast<const double*>(data)[i];
    case HostElement::f32: return static_cast<const float*>(data)[i];
    case HostElement::f16: return fp16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case HostElement::bf16: return bf16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
  }
  return 0;
}

HostMatrix host_matrix(const double* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return HostMatrix{p, HostElement::f64, rows, cols, ld};
}
HostMatrix host_matrix(const float* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return HostMatrix{p, HostElement::f32, rows, cols, ld};
}
HostMatrix host_matrix(const std::uint16_t* bits, DType t, std::int64_t rows, std::int64_t cols,
                       std::int64_t ld) {
  if (t == DType::f32)
    throw InvalidArgument("host_matrix: 16-bit data cannot be fp32 (use the float overload)");
  return HostMatrix{bits, t == DType::bf16 ? HostElement::bf16 : HostElement::f16, rows, cols, ld};
}

}  // namespace gemvtune
