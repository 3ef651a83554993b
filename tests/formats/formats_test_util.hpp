// What the formats tests share: reading a refusal's message.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "gemvtune/error.hpp"

// The message of the InvalidArgument that f throws ("" and a test failure if none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const gemvtune::InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument thrown";
  return "";
}
