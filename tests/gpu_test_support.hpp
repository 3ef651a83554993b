// Shared by the GPU tests: skip with a clear message where there is no driver or GPU.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "jit/driver_api.hpp"

// Use first in a TEST body that needs a GPU.
#define GEMVTUNE_REQUIRE_GPU()                                                   \
  do {                                                                            \
    std::string gemvtune_why;                                                     \
    if (!::gemvtune::jit::driver_available(&gemvtune_why))                        \
      GTEST_SKIP() << "needs a CUDA GPU, none here: " << gemvtune_why;            \
  } while (0)
