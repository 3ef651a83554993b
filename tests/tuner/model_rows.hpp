// Fit rows that the analytic model itself produced: every config of the fp32 search space of
// each (shape, M), timed by estimate() with `truth`'s constants (at most `per_problem` of each),
// so that a fit over them should recover those constants. Shared by the model-fit tests
// (defaults_test.cpp, fit_report_test.cpp).
#pragma once
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <vector>

#include "gemvtune/model.hpp"
#include "gemvtune/search_space.hpp"
#include "gemvtune/shape.hpp"
#include "tuner/model_fit.hpp"

namespace gemvtune::model_rows {

inline std::vector<FitRow> fp32_rows_of(const GpuModelParams& truth, std::initializer_list<const char*> shapes,
                                        std::initializer_list<int> batches,
                                        std::size_t per_problem = std::numeric_limits<std::size_t>::max()) {
  std::vector<FitRow> rows;
  for (const char* text : shapes)
    for (int m : batches) {
      std::size_t taken = 0;
      for (const KernelConfig& c : search_space_for(DType::f32, parse_shape(text), m)) {
        if (taken++ == per_problem) break;
        FitRow r;
        r.config = c;
        r.dtype = DType::f32;
        r.shape = parse_shape(text);
        r.m = m;
        r.us = estimate(c, r.dtype, r.shape, truth).time_us;
        rows.push_back(r);
      }
    }
  return rows;
}

}  // namespace gemvtune::model_rows
