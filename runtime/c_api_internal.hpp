// What the two halves of the C API (c_api.cpp: runtime; c_api_offline.cpp: the cache commands)
// share: error recording, exception-to-status mapping, reading the size-carrying structs and
// checking a problem.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "gemvtune/dtype.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/gemvtune.h"
#include "gemvtune/shape.hpp"

namespace gemvtune::capi {

// Records `what` as this thread's last error and returns status.
gemvtune_status fail(gemvtune_status status, const std::string& what);

// Called inside a catch block: maps the exception in flight to a status and records its message.
gemvtune_status status_of_current_exception();

// Copies a caller's size-carrying struct into a zero-filled T (see gemvtune.h): struct_size
// must be at least min_size; bytes beyond sizeof(T) must be zero. Throws InvalidArgument
// naming the function and the struct.
template <typename T>
T read_struct(const T* p, std::size_t min_size, const char* function, const char* type) {
  if (!p) throw InvalidArgument(std::string(function) + ": " + type + " is NULL");
  const std::size_t size = p->struct_size;
  if (size < min_size)
    throw InvalidArgument(std::string(function) + ": " + type + ".struct_size is " + std::to_string(size) +
                          ", expected sizeof(" + type + ") = " + std::to_string(sizeof(T)));
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(p);
  for (std::size_t i = sizeof(T); i < size; ++i)
    if (bytes[i] != 0)
      throw InvalidArgument(std::string(function) + ": " + type + " has fields this build does not know (struct_size " +
                            std::to_string(size) + " > " + std::to_string(sizeof(T)) + ") that are not zero");
  T out;
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, p, size < sizeof(T) ? size : sizeof(T));
  return out;
}

// A problem as this build can run it.
struct CheckedProblem {
  std::int64_t m = 1;
  Shape shape;
  DType dtype = DType::bf16;
  WeightFormat weights = WeightFormat::dense;
  std::optional<Shape> after;  // gemvtune_problem.after_n x after_k, when not 0 x 0
};

// Validates a problem the same way for every entry point; throws InvalidArgument with the
// reason (bad sizes, dtype or batch; an unknown weight format, or K that is not a multiple of
// an int4 format's group).
CheckedProblem check_problem(const gemvtune_problem* problem, const char* function);

// A library-allocated copy of text for a char** out parameter (released by gemvtune_free).
char* copy_out(const std::string& text);

}  // namespace gemvtune::capi
