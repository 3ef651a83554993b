// The C API without a GPU: errors come back as statuses with a message, never as a crash.
#include <gtest/gtest.h>

#include <string>

#include "gemvtune/gemvtune.h"
#include "jit/driver_api.hpp"

namespace {

TEST(CApi, RuntimeCreateWithoutGpuReportsNoGpu) {
  if (gemvtune::jit::driver_available()) GTEST_SKIP() << "a GPU is present; covered by the GPU tests";
  gemvtune_runtime* rt = reinterpret_cast<gemvtune_runtime*>(0x1);
  EXPECT_EQ(gemvtune_runtime_create(nullptr, 0, &rt), GEMVTUNE_ERROR_NO_GPU);
  EXPECT_EQ(rt, nullptr) << "out is cleared on failure";
  EXPECT_STRNE(gemvtune_last_error(), "");
  gemvtune_runtime_destroy(rt);  // NULL is fine
}

TEST(CApi, NullOutPointersAreInvalidArguments) {
  EXPECT_EQ(gemvtune_runtime_create(nullptr, 0, nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(gemvtune_last_error()).find("out is NULL"), std::string::npos);
  EXPECT_EQ(gemvtune_plan_create(nullptr, 8, 8, "bf16", nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  gemvtune_runtime* rt = nullptr;
  EXPECT_EQ(gemvtune_runtime_create(nullptr, -1, &rt), GEMVTUNE_ERROR_INVALID_ARGUMENT);
}

TEST(CApi, BadDtypeShapeAndNullHandlesAreInvalidArguments) {
  gemvtune_plan* plan = reinterpret_cast<gemvtune_plan*>(0x1);
  EXPECT_EQ(gemvtune_plan_create(nullptr, 8, 8, "int8", &plan), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::string(gemvtune_last_error()).find("int8"), std::string::npos) << gemvtune_last_error();
  EXPECT_EQ(gemvtune_plan_create(nullptr, 8, 8, nullptr, &plan), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemvtune_plan_create(nullptr, 0, 8, "bf16", &plan), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemvtune_plan_create(nullptr, 8, 8, "bf16", &plan), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemvtune_plan_launch(nullptr, 0, 0, 0, 0, nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(gemvtune_plan_config(nullptr), "");
  gemvtune_plan_destroy(nullptr);
  EXPECT_STREQ(gemvtune_status_name(GEMVTUNE_ERROR_COMPILE), "GEMVTUNE_ERROR_COMPILE");
}

}  // namespace
