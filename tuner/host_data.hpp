// Host-side test data: dtype conversions, random fills and the float64 reference GEMV.
#pragma once
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "gemvtune/dtype.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune {

// An allocator that leaves new elements uninitialised: a problem's weights (up to 2 GB) are
// then first written, and their pages first touched, by the threads that draw them, instead of
// zeroed by one thread beforehand (1 GB took 0.9-1.2 s on the development machine).
template <typename T>
struct UninitialisedAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = UninitialisedAllocator<U>;
  };
  UninitialisedAllocator() = default;
  template <typename U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Raw element storage for any dtype: 2 or 4 bytes per element, as the GPU sees it.
struct HostArray {
  using Bytes = std::vector<unsigned char, UninitialisedAllocator<unsigned char>>;
  DType dtype = DType::bf16;
  Bytes bytes;

  HostArray(DType t, std::size_t count) : dtype(t), bytes(count * dtype_size(t), 0) {}  // zeros
  // count elements of no defined value, for an array the caller writes whole.
  static HostArray uninitialised(DType t, std::size_t count) {
    HostArray a(t, 0);
    a.bytes.resize(count * dtype_size(t));
    return a;
  }
  std::size_t size() const { return bytes.size() / dtype_size(dtype); }
  double get(std::size_t i) const;          // exact value of element i
  void set(std::size_t i, double value);    // rounded to nearest even in dtype
  void set_nan(std::size_t i);              // a quiet NaN: poison for "never read/written"
};

// The exact value of one element of dtype t stored at p (as the GPU stores it).
double element_value(DType t, const void* p);
// Stores value at p in dtype t, rounded to nearest even (through float, as the GPU's inputs are).
void store_element(DType t, void* p, double value);

float bf16_bits_to_float(std::uint16_t b);
std::uint16_t float_to_bf16_bits(float f);   // round to nearest even
float fp16_bits_to_float(std::uint16_t h);
std::uint16_t float_to_fp16_bits(float f);   // round to nearest even
// The same by their arithmetic definitions (frexp, ldexp, nearbyint): the tests' yardstick.
float fp16_bits_to_float_reference(std::uint16_t h);
std::uint16_t float_to_fp16_bits_reference(float f);

// W (N x ld, columns K..ld-1 set to NaN so a kernel that reads them fails) and X (m rows of
// ldx, padding NaN likewise), drawn uniformly from [-1, 1] and rounded to the dtype; each
// seed gives its own fresh data.
struct GemvInputs {
  HostArray w, x;
  Shape shape;
  std::int64_t ld;
  int m = 1;
  std::int64_t ldx = 0;  // >= K
};
GemvInputs random_inputs(DType t, const Shape& s, std::int64_t ld, std::uint64_t seed, int m = 1,
                         std::int64_t ldx = 0);

// Y = X W^T in float64 from the dtype-rounded inputs: m x N, row-major (y[i * N + r]). With
// first_row, only Y's rows first_row .. m - 1 ((m - first_row) x N): a problem re-batched to a
// larger M keeps the rows it has (DeviceProblem::reference).
std::vector<double> reference_gemv(const GemvInputs& in, int first_row = 0);

// X alone, as random_inputs draws it (m rows of ldx, padding NaN).
HostArray random_x(DType t, std::int64_t k, int m, std::int64_t ldx, std::uint64_t seed);

// Quantized W of format f (not dense), N x K with row stride ld: random codes over the whole
// range (fp8: every finite code, subnormals included), positive scales that keep |w| <= about 1
// like the dense inputs, int4 zeros anywhere in [0, 15] (not only integers). Padding is zero.
PackedWeights random_packed_weights(WeightFormat f, DType t, const Shape& s, std::int64_t ld, std::uint64_t seed);

// Y = X W^T in float64 over the exact values the packed weights stand for (dequantize).
std::vector<double> reference_gemv(const PackedWeights& w, const HostArray& x, int m, std::int64_t ldx,
                                   int first_row = 0);

// Compares a kernel's y with the reference. Per element |y - ref| must be within
// rel_tol(dtype) * |ref| + 1e-4 * rms(ref) (the second term covers fp32 accumulation order);
// NaN never passes (catches unwritten outputs, since y is poisoned with NaN first).
struct Comparison {
  bool ok = false;
  double max_abs_error = 0, rel_l2_error = 0;
  std::int64_t first_bad = -1;  // index of the first element out of tolerance
  std::string describe() const;
};
double rel_tol(DType t);  // one unit in the last place of the output dtype (fp32: 1e-5)
Comparison compare_output(const HostArray& y, const std::vector<double>& ref);

}  // namespace gemvtune
