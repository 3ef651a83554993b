// The quantizer: round to nearest from float64/fp32/fp16/bf16 host weights (see weights.hpp for
// the rules and docs/weights.md for why the int4 scale is rounded down).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "formats/internal.hpp"
#include "tuner/host_data.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune {

namespace {

// Row r of w into out[0..k), refusing non-finite values.
void read_row(const HostMatrix& w, std::int64_t r, std::vector<double>& out) {
  for (std::int64_t c = 0; c < w.cols; ++c) {
    const double v = w.at(r, c);
    if (!std::isfinite(v))
      throw InvalidArgument("quantize: weight [" + std::to_string(r) + "][" + std::to_string(c) +
                            "] is " + formats::num(v) + "; weights must be finite");
    out[static_cast<std::size_t>(c)] = v;
  }
}

double absmax(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

// The fp32 scale absmax / qmax: 1 for an all-zero row, never 0 or infinite.
float symmetric_scale(double amax, double qmax, std::int64_t row) {
  if (amax == 0) return 1.0f;
  const double s = amax / qmax;
  if (s > std::numeric_limits<float>::max())
    throw InvalidArgument("quantize: the scale of row " + std::to_string(row) + " (" +
                          formats::num(s) + ") does not fit in fp32");
  const auto f = static_cast<float>(s);
  return f > 0 ? f : std::numeric_limits<float>::denorm_min();
}

void store_f32(std::uint8_t* p, float f) { std::memcpy(p, &f, 4); }

}  // namespace

PackedWeights quantize(const HostMatrix& w, WeightFormat f, DType a, std::int64_t ld) {
  formats::check_pointer(w.data, "quantize: weights");
  if (w.ld != 0 && w.ld < w.cols)
    throw InvalidArgument("quantize: weights row stride " + std::to_string(w.ld) +
                          " is less than K = " + std::to_string(w.cols));
  PackedWeights p = make_packed_weights(f, a, w.rows, w.cols, ld);
  const std::int64_t n = p.n, k = p.k, rb = p.row_bytes();
  std::vector<double> row(static_cast<std::size_t>(k));

  double tensor_scale = 1.0;
  if (f == WeightFormat::fp8_tensor) {
    double amax = 0;
    for (std::int64_t r = 0; r < n; ++r) {
      read_row(w, r, row);
      amax = std::max(amax, absmax(row));
    }
    const float s = symmetric_scale(amax, 448.0, 0);
    store_f32(p.scales.data(), s);
    tensor_scale = s;
  }

  const std::size_t asz = dtype_size(a);
  for (std::int64_t r = 0; r < n; ++r) {
    read_row(w, r, row);
    std::uint8_t* q = p.q.data() + r * rb;
    switch (f) {
      case WeightFormat::dense:
        for (std::int64_t c = 0; c < k; ++c) store_element(a, q + c * asz, row[c]);
        break;
      case WeightFormat::int8: {
        const float s = symmetric_scale(absmax(row), 127.0, r);
        store_f32(p.scales.data() + r * 4, s);
        for (std::int64_t c = 0; c < k; ++c) {
          const double v = std::clamp(std::nearbyint(row[c] / s), -127.0, 127.0);
          q[c] = static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
        }
        break;
      }
      case WeightFormat::fp8:
      case WeightFormat::fp8_tensor: {
        double s = tensor_scale;
        if (f == WeightFormat::fp8) {
          const float fs = symmetric_scale(absmax(row), 448.0, r);
          store_f32(p.scales.data() + r * 4, fs);
          s = fs;
        }
        for (std::int64_t c = 0; c < k; ++c) q[c] = double_to_e4m3(row[c] / s);
        break;
      }
      default: {  // int4, asymmetric per group
        const int g = group_size(f);
        const std::int64_t groups = p.groups_per_row();
        for (std::int64_t gi = 0; gi < groups; ++gi) {
          const double* v = row.data() + gi * g;
          double lo = 0, hi = 0;  // the range always holds 0, so 0 is exact (q = z)
          for (int i = 0; i < g; ++i) {
            lo = std::min(lo, v[i]);
            hi = std::max(hi, v[i]);
          }
          double s = 1, z = 0;
          if (hi > lo) {
            const double exact = (hi - lo) / 15.0;
            if (exact > formats::max_finite(a))
              throw InvalidArgument("quantize: the int4 scale of row " + std::to_string(r) +
                                    ", group " + std::to_string(gi) + " (" + formats::num(exact) +
                                    ") does not fit in " + std::string(to_string(a)));
            // Rounded down, so 15 * s <= hi - lo: the group's extremes land on codes 0 and 15.
            s = formats::round_down_to(a, exact);
            if (s == 0) s = formats::min_positive(a);
            // Half up (not to even), so the largest value never lands on 14.5 and rounds down.
            z = std::clamp(std::floor(-lo / s + 0.5), 0.0, 15.0);
          }
          store_element(a, p.scales.data() + (r * groups + gi) * asz, s);
          store_element(a, p.zeros.data() + (r * groups + gi) * asz, z);
          for (int i = 0; i < g; ++i) {
            const auto code = static_cast<unsigned>(std::clamp(std::nearbyint(v[i] / s + z), 0.0, 15.0));
            const std::int64_t c = gi * g + i;
            q[c / 2] |= static_cast<std::uint8_t>((c & 1) ? code << 4 : code);
          }
        }
        break;
      }
    }
  }
  return p;
}

}  // namespace gemvtune
