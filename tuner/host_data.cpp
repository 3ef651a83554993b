// Host-side test data and the float64 reference (see host_data.hpp).
#include "tuner/host_data.hpp"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gemvtune/error.hpp"

namespace gemvtune {

float bf16_bits_to_float(std::uint16_t b) {
  std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return static_cast<std::uint16_t>(u >> 16);
}

// The arithmetic definitions of the fp16 conversions (frexp, ldexp, nearbyint): slow, about
// 8 s of a 64 s batch tune of the preset's fp16 data on the H200 machine (bench/results/h200.md,
// 2026-12-02), so the tuner uses the bit-level forms below, which tests/tuner/host_data_test.cpp
// holds equal to these on every fp16 value, every rounding midpoint and random floats.
float fp16_bits_to_float_reference(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float mag;
  if (exp == 0) mag = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) mag = man ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else mag = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  std::uint32_t u;
  std::memcpy(&u, &mag, 4);
  u |= sign;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t float_to_fp16_bits_reference(float f) {
  std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (std::isnan(f)) return 0x7e00;
  if (a >= 65520.f) return sign | 0x7c00;
  if (a < std::ldexp(1.f, -24 - 1)) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1 + 15;
  if (exp <= 0) {  // subnormal: units of 2^-24
    return sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  // 11 significant bits: units of 2^(e-11); nearbyint rounds to even.
  auto q = static_cast<std::uint32_t>(std::nearbyint(std::ldexp(a, 11 - e)));
  if (q == 2048) {
    q = 1024;
    ++exp;
  }
  if (exp >= 31) return sign | 0x7c00;
  return sign | static_cast<std::uint16_t>((exp << 10) | (q & 0x3ffu));
}

float fp16_bits_to_float(std::uint16_t h) {
  // Every value once, from the reference: 256 KB, built on first use (thread-safe static).
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t i = 0; i < 65536; ++i) t[i] = fp16_bits_to_float_reference(static_cast<std::uint16_t>(i));
    return t;
  }();
  return table[h];
}

std::uint16_t float_to_fp16_bits(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return 0x7e00;                      // NaN
  if (x >= 0x477ff000u) return sign | 0x7c00;              // >= 65520 rounds to infinity
  if (x < 0x38800000u) return float_to_fp16_bits_reference(f);  // below 2^-14: zero or subnormal, rare
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a
  // carry out of the mantissa moves into the exponent, as it should.
  const std::uint32_t r = x - (112u << 23);
  return sign | static_cast<std::uint16_t>((r + 0x0fffu + ((r >> 13) & 1u)) >> 13);
}

double element_value(DType t, const void* p) {
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::bf16 ? bf16_bits_to_float(h) : fp16_bits_to_float(h);
}

double HostArray::get(std::size_t i) const { return element_value(dtype, bytes.data() + i * dtype_size(dtype)); }

void store_element(DType t, void* p, double value) {
  const float f = static_cast<float>(value);
  if (t == DType::f32) {
    std::memcpy(p, &f, 4);
    return;
  }
  const std::uint16_t h = t == DType::bf16 ? float_to_bf16_bits(f) : float_to_fp16_bits(f);
  std::memcpy(p, &h, 2);
}

void HostArray::set(std::size_t i, double value) { store_element(dtype, bytes.data() + i * dtype_size(dtype), value); }

void HostArray::set_nan(std::size_t i) { set(i, std::numeric_limits<double>::quiet_NaN()); }

namespace {
// How many ranges parallel_ranges splits [0, count) into: one a core, each of at least
// kMinRangeWork elements touched (item_work each). Starting a thread costs tens of microseconds,
// more while NVRTC's threads hold every core, as they do through a tune: with a range per 4096
// items whatever their size, each candidate's output check started 16 threads for lm_head's
// 128 K outputs (well under a millisecond of work), while 4096x4096's reference, 16.8 M
// products, ran on two.
constexpr std::int64_t kMinRangeWork = std::int64_t{1} << 18;
std::int64_t range_count(std::int64_t count, std::int64_t item_work) {
  const std::int64_t work = count * std::max<std::int64_t>(1, item_work);
  return std::max<std::int64_t>(1, std::min<std::int64_t>({std::int64_t{std::thread::hardware_concurrency()}, count,
                                                           work / kMinRangeWork}));
}

// Runs body(range, begin, end) for range 0 .. range_count(count, item_work) - 1, consecutive
// pieces of [0, count) in order: range 0 on the calling thread, each other on a thread of its own.
template <typename Body>
void parallel_ranges(std::int64_t count, std::int64_t item_work, const Body& body) {
  const std::int64_t ranges = range_count(count, item_work), per = (count + ranges - 1) / ranges;
  std::vector<std::thread> threads;
  for (std::int64_t r = 1; r < ranges; ++r) {
    const std::int64_t b = r * per, e = std::min(count, b + per);
    if (b < e) threads.emplace_back([&body, r, b, e] { body(r, b, e); });
  }
  body(0, 0, std::min(count, per));
  for (auto& t : threads) t.join();
}

// Runs body(begin, end) over [0, count) split across the machine's cores, item_work elements
// touched per item (a row's length, say): a 1 GB lm_head problem is drawn and its reference
// computed in well under a second on 16 cores.
template <typename Body>
void parallel_for(std::int64_t count, std::int64_t item_work, const Body& body) {
  parallel_ranges(count, item_work, [&body](std::int64_t, std::int64_t b, std::int64_t e) { body(b, e); });
}

// Counter-based generator: element i of a seed's stream, uniform in [-1, 1). The same seed
// gives the same data however the work is split across threads.
float uniform_at(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

// Elements first .. first + count - 1 of `a`: element i gets uniform_at(seed, i), as set() would
// store it. And the same elements' exact values as doubles. Both switch on the dtype once, not
// per element as get() and set() do, so the loops vectorise: per element, get() cost the
// reference more than its products (development machine: 58.7 M bf16 weights converted in
// 135 ms of a 16-row reference's 218 on two cores).
void fill_uniform(HostArray& a, std::int64_t first, std::int64_t count, std::uint64_t seed) {
  unsigned char* p = a.bytes.data() + first * static_cast<std::int64_t>(dtype_size(a.dtype));
  const auto fill = [&](const auto& store) {
    for (std::int64_t c = 0; c < count; ++c) store(c, uniform_at(seed, static_cast<std::uint64_t>(first + c)));
  };
  switch (a.dtype) {
    case DType::f32:
      return fill([&](std::int64_t c, float f) { std::memcpy(p + 4 * c, &f, 4); });
    case DType::bf16:
      return fill([&](std::int64_t c, float f) {
        const std::uint16_t h = float_to_bf16_bits(f);
        std::memcpy(p + 2 * c, &h, 2);
      });
    case DType::f16:
      return fill([&](std::int64_t c, float f) {
        const std::uint16_t h = float_to_fp16_bits(f);
        std::memcpy(p + 2 * c, &h, 2);
      });
  }
}

void to_doubles(const HostArray& a, std::int64_t first, std::int64_t count, double* out) {
  const unsigned char* p = a.bytes.data() + first * static_cast<std::int64_t>(dtype_size(a.dtype));
  std::uint16_t h;
  switch (a.dtype) {
    case DType::f32:
      for (std::int64_t c = 0; c < count; ++c) {
        float f;
        std::memcpy(&f, p + 4 * c, 4);
        out[c] = f;
      }
      return;
    case DType::bf16:
      for (std::int64_t c = 0; c < count; ++c) {
        std::memcpy(&h, p + 2 * c, 2);
        out[c] = bf16_bits_to_float(h);
      }
      return;
    case DType::f16:
      for (std::int64_t c = 0; c < count; ++c) {
        std::memcpy(&h, p + 2 * c, 2);
        out[c] = fp16_bits_to_float(h);
      }
      return;
  }
}
}  // namespace

GemvInputs random_inputs(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed, int m,
                         std::int64_t ldx) {
  if (ldx == 0) ldx = s.k;
  GemvInputs in{HostArray::uninitialised(t, static_cast<std::size_t>(s.n * ld)),  // every element drawn below
                HostArray(t, static_cast<std::size_t>((m - 1) * ldx + s.k)), s, ld, m, ldx};
  parallel_for(s.n, ld, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      fill_uniform(in.w, r * ld, s.k, seed);
      for (std::int64_t c = s.k; c < ld; ++c) in.w.set_nan(r * ld + c);
    }
  });
  in.x = random_x(t, s.k, m, ldx, seed);
  return in;
}

HostArray random_x(DType t, std::int64_t k, int m, std::int64_t ldx, std::uint64_t seed) {
  if (ldx == 0) ldx = k;
  HostArray x(t, static_cast<std::size_t>((m - 1) * ldx + k));
  // Batch row 0 draws what batch 1 always drew; padding between rows is NaN.
  for (int i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < ldx && i * ldx + c < static_cast<std::int64_t>(x.size()); ++c) {
      if (c < k) x.set(i * ldx + c, uniform_at(~seed - static_cast<std::uint64_t>(i), i * ldx + c));
      else x.set_nan(i * ldx + c);
    }
  return x;
}

PackedWeights random_packed_weights(WeightFormat f, DType t, const Shape& s, std::int64_t ld, std::uint64_t seed) {
  PackedWeights w = make_packed_weights(f, t, s.n, s.k, ld);
  const std::int64_t row_bytes = w.row_bytes();
  const auto unit = [&](std::uint64_t stream, std::uint64_t i) { return 0.5 * (uniform_at(seed ^ stream, i) + 1.0); };
  // Codes from u in [0, 1) (weight r * K + c's draw), the format chosen once a row rather than
  // once a weight: about 1.5x faster on the development machine, the same codes.
  parallel_for(s.n, s.k, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      std::uint8_t* row = w.q.data() + r * row_bytes;
      const auto u = [&](std::int64_t c) { return unit(1, static_cast<std::uint64_t>(r * s.k + c)); };
      if (is_int4(f)) {  // element c in the low nibble of byte c / 2 for even c, the high for odd
        const auto code = [&](std::int64_t c) { return c < s.k ? std::min(15, static_cast<int>(u(c) * 16)) : 0; };
        for (std::int64_t c = 0; c < s.k; c += 2) row[c / 2] = static_cast<std::uint8_t>(code(c) | code(c + 1) << 4);
      } else if (is_fp8(f)) {
        for (std::int64_t c = 0; c < s.k; ++c) {
          int code = std::min(255, static_cast<int>(u(c) * 256));
          if ((code & 0x7f) == 0x7f) code -= 1;  // 0x7f and 0xff are NaN
          row[c] = static_cast<std::uint8_t>(code);
        }
      } else {
        for (std::int64_t c = 0; c < s.k; ++c) row[c] = static_cast<std::uint8_t>(std::min(255, static_cast<int>(u(c) * 256)));
      }
    }
  });
  // Scales (and zeros): |w| stays within about 1, as for the dense inputs.
  const double code_max = is_int4(f) ? 15.0 : is_fp8(f) ? 448.0 : 128.0;
  const std::size_t scale_size = scale_bytes(f, t);
  const std::int64_t scale_count = static_cast<std::int64_t>(w.scales.size() / scale_size);
  for (std::int64_t i = 0; i < scale_count; ++i) {
    const double scale = (0.25 + unit(2, static_cast<std::uint64_t>(i))) / code_max;
    if (is_int4(f)) {
      store_element(t, w.scales.data() + i * scale_size, scale);
      store_element(t, w.zeros.data() + i * scale_size, 15.0 * unit(3, static_cast<std::uint64_t>(i)));
    } else {
      const float s32 = static_cast<float>(scale);
      std::memcpy(w.scales.data() + i * 4, &s32, 4);
    }
  }
  check_packed_weights(w);
  return w;
}

namespace {

// X's rows first .. m - 1 (row stride ldx) as float64, (m - first) x k.
std::vector<double> x_as_doubles(const HostArray& x, int first, int m, std::int64_t k, std::int64_t ldx) {
  std::vector<double> xd(static_cast<std::size_t>((m - first) * k));
  for (int i = first; i < m; ++i)
    to_doubles(x, i * ldx, k, xd.data() + (i - first) * k);
  return xd;
}

void check_first_row(int first_row, int m) {
  if (first_row < 0 || first_row > m)
    throw InvalidArgument("reference rows from " + std::to_string(first_row) + " of a batch of " + std::to_string(m));
}

// Y = X W^T in float64, W's row r given by row(r, wd) as k doubles; y[i * n + r].
// Each dot product is eight partial sums over c mod 8, added in a fixed order at the end: one
// chain of dependent float64 adds waits for each add (about 0.9 G products a second a core on
// the development machine; 5.6 G with eight chains, which the compiler also vectorises), and a
// batch tune draws references of up to 8 G products (16x128256x4096; on the H200 machine that
// job's setup went 0.86 -> 0.62 s, the 35-pair tune's setup 10.1 -> 9.6 s: bench/results/h200.md,
// 2026-12-04 19:51 UTC). The order differs from a left-to-right sum by float64 rounding, far
// below any kernel's tolerance, and is fixed.
template <typename Row>
std::vector<double> reference_rows(std::int64_t n, std::int64_t k, int m, const std::vector<double>& xd,
                                   const Row& row) {
  constexpr int kParts = 8;
  std::vector<double> y(static_cast<std::size_t>(m * n));
  parallel_for(n, k * (m + 1), [&](std::int64_t begin, std::int64_t end) {  // a row: converted, then m dots
    std::vector<double> wd(static_cast<std::size_t>(k));
    for (std::int64_t r = begin; r < end; ++r) {
      row(r, wd.data());
      for (int i = 0; i < m; ++i) {
        const double* xi = xd.data() + i * k;
        double part[kParts] = {};
        std::int64_t c = 0;
        for (; c + kParts <= k; c += kParts)
          for (int j = 0; j < kParts; ++j) part[j] += wd[c + j] * xi[c + j];
        for (int j = 0; c < k; ++c, ++j) part[j] += wd[c] * xi[c];
        double acc = 0;
        for (double p : part) acc += p;
        y[i * n + r] = acc;
      }
    }
  });
  return y;
}

}  // namespace

std::vector<double> reference_gemv(const PackedWeights& w, const HostArray& x, int m, std::int64_t ldx,
                                   int first_row) {
  check_first_row(first_row, m);
  const std::int64_t k = w.k;
  return reference_rows(w.n, k, m - first_row, x_as_doubles(x, first_row, m, k, ldx == 0 ? k : ldx),
                        [&](std::int64_t r, double* wd) { dequantize_row(w, r, wd); });
}

std::vector<double> reference_gemv(const GemvInputs& in, int first_row) {
  check_first_row(first_row, in.m);
  const std::int64_t k = in.shape.k;
  return reference_rows(in.shape.n, k, in.m - first_row, x_as_doubles(in.x, first_row, in.m, k, in.ldx),
                        [&](std::int64_t r, double* wd) { to_doubles(in.w, r * in.ld, k, wd); });
}

double rel_tol(DType t) {
  switch (t) {
    case DType::f32: return 1e-5;
    case DType::f16: return std::ldexp(1.0, -10);
    case DType::bf16: return std::ldexp(1.0, -7);
  }
  return 0;
}

// Split across the cores like the reference (one check per candidate: 43 checks of 2 M outputs
// took 1.0-1.3 s of 16x128256x4096's tune on the H200 machine, one core each). Each range's sums
// are added in the ranges' order, so the result depends only on the machine's core count; ok and
// first_bad do not depend on it at all.
Comparison compare_output(const HostArray& y, const std::vector<double>& ref) {
  struct Part {
    double ref_sq = 0, err_sq = 0, max_abs = 0;
    std::int64_t first_bad = -1;
  };
  const std::int64_t count = static_cast<std::int64_t>(std::min(ref.size(), y.size()));
  std::vector<Part> parts(static_cast<std::size_t>(range_count(count, 1)));  // in range order
  double ref_sq = 0;
  for (std::size_t i = static_cast<std::size_t>(count); i < ref.size(); ++i) ref_sq += ref[i] * ref[i];
  parallel_ranges(count, 1, [&](std::int64_t range, std::int64_t begin, std::int64_t end) {
    double sq = 0;  // summed locally: neighbouring Parts share cache lines
    for (std::int64_t i = begin; i < end; ++i) sq += ref[i] * ref[i];
    parts[range].ref_sq = sq;
  });
  for (const Part& p : parts) ref_sq += p.ref_sq;
  const double rms = ref.empty() ? 0 : std::sqrt(ref_sq / ref.size());
  const double tol_rel = rel_tol(y.dtype), tol_abs = 1e-4 * rms + 1e-30;

  parallel_ranges(count, 1, [&](std::int64_t range, std::int64_t begin, std::int64_t end) {
    Part p = parts[range];
    constexpr std::int64_t kBlock = 1024;  // y converted a block at a time (to_doubles)
    double yd[kBlock];
    for (std::int64_t b = begin; b < end; b += kBlock) {
      const std::int64_t len = std::min(kBlock, end - b);
      to_doubles(y, b, len, yd);
      for (std::int64_t j = 0; j < len; ++j) {
        const std::int64_t i = b + j;
        const double v = yd[j], err = std::fabs(v - ref[i]);
        const bool good = !std::isnan(v) && err <= tol_rel * std::fabs(ref[i]) + tol_abs;
        if (!good && p.first_bad < 0) p.first_bad = i;
        if (std::isnan(v)) {
          p.err_sq = p.max_abs = std::numeric_limits<double>::infinity();
        } else {
          p.err_sq += err * err;
          p.max_abs = std::max(p.max_abs, err);
        }
      }
    }
    parts[range] = p;
  });
  Comparison c;
  double err_sq = 0;
  c.ok = y.size() == ref.size();
  for (const Part& p : parts) {  // ranges in order: the first bad is the earliest range's
    if (p.first_bad >= 0 && c.first_bad < 0) c.first_bad = p.first_bad;
    err_sq += p.err_sq;
    c.max_abs_error = std::max(c.max_abs_error, p.max_abs);
  }
  c.ok = c.ok && c.first_bad < 0;
  c.rel_l2_error = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  return c;
}

std::string Comparison::describe() const {
  std::string s = ok ? "ok" : "WRONG";
  s += ": relative L2 error " + std::to_string(rel_l2_error) + ", max abs error " + std::to_string(max_abs_error);
  if (first_bad >= 0) s += ", first bad element " + std::to_string(first_bad);
  return s;
}

}  // namespace gemvtune
