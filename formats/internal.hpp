// Internal helpers of formats/: rounding to and down to a dtype, overflow-checked sizes and
// argument checks. Elements of the activation dtype are read and written with the library's own
// element_value and store_element (tuner/host_data.hpp); nothing here is public.
#pragma once
#include <cstdint>
#include <string>

#include "gemvtune/dtype.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune::formats {

// v rounded to the nearest value of dtype t (ties to even), as a double.
double round_to(DType t, double v);
// The largest value of dtype t that is <= v, for finite v > 0 (0 when v is below the smallest
// subnormal; the largest finite value when v is above it).
double round_down_to(DType t, double v);
// Largest finite value of dtype t.
double max_finite(DType t);

// a * b, throwing InvalidArgument "<what>: size overflows" when it does not fit in int64 (and
// in size_t). a, b >= 0.
std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what);

// Smallest positive (subnormal) value of dtype t.
double min_positive(DType t);

// Throws InvalidArgument naming `name` unless m has data, rows x cols elements and ld >= cols
// (or 0).
void check_matrix(const HostMatrix& m, std::int64_t rows, std::int64_t cols,
                  const std::string& name);
// Throws InvalidArgument naming `name` when p is null.
void check_pointer(const void* p, const std::string& name);

// "%g" of a double with enough digits to tell values apart in messages.
std::string num(double v);

}  // namespace gemvtune::formats
