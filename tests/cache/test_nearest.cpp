// nearest(): the closest tuned shape by |log(n/n')| + |log(k/k')| within the same gpu,
// dtype, batch and template version, skipping configs the caller cannot use.
#include <gtest/gtest.h>

#include "cache_test_util.hpp"

namespace gemvtune {
namespace {

using cache_test::make_key;
using cache_test::make_record;

// Configs as labels of the entries (any valid, distinct config text would do).
const std::string cfg_4096x4096 = cache_test::label_config(0);
const std::string cfg_8192x8192 = cache_test::label_config(1);
const std::string cfg_4096x14336 = cache_test::label_config(2);
const std::string cfg_14336x4096 = cache_test::label_config(3);
const std::string wrong_gpu_sm = cache_test::label_config(4);
const std::string wrong_gpu_name = cache_test::label_config(5);
const std::string wrong_dtype = cache_test::label_config(6);
const std::string wrong_batch = cache_test::label_config(7);
const std::string wrong_template = cache_test::label_config(8);

class CacheNearest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The family the queries target: H200, bf16, batch 1, tpl-1.
    store(4096, 4096, cfg_4096x4096);
    store(8192, 8192, cfg_8192x8192);
    store(4096, 14336, cfg_4096x14336);
    store(14336, 4096, cfg_14336x4096);
    // Exact query shapes in other families: must never be returned.
    const GpuIdentity other_sm{"NVIDIA H200", 114, 9, 0};
    const GpuIdentity other_name{"NVIDIA H100", 132, 9, 0};
    cache.store(make_record(make_key(4000, 4000, other_sm), wrong_gpu_sm));
    cache.store(make_record(make_key(4000, 4000, other_name), wrong_gpu_name));
    cache.store(make_record(make_key(4000, 4000, cache_test::h200(), DType::f16), wrong_dtype));
    cache.store(make_record(make_key(4000, 4000, cache_test::h200(), DType::bf16, 8), wrong_batch));
    cache.store(make_record(make_key(4000, 4000, cache_test::h200(), DType::bf16, 1, "tpl-2"),
                            wrong_template));
  }
  void store(std::int64_t n, std::int64_t k, const std::string& config) {
    cache.store(make_record(make_key(n, k), config));
  }
  std::string nearest_config(std::int64_t n, std::int64_t k,
                             const std::function<bool(const std::string&)>& usable) {
    const auto r = cache.nearest(make_key(n, k), usable);
    return r ? r->config : "(none)";
  }

  cache_test::TempDir dir;
  TuningCache cache{dir.file("cache.sqlite"), CacheMode::read_write};
  static bool any(const std::string&) { return true; }
};

TEST_F(CacheNearest, PicksClosestShapeAndNeverCrossesFamilies) {
  EXPECT_EQ(nearest_config(4000, 4000, any), cfg_4096x4096);
  EXPECT_EQ(nearest_config(7000, 9000, any), cfg_8192x8192);
  EXPECT_EQ(nearest_config(4096, 12000, any), cfg_4096x14336);
  EXPECT_EQ(nearest_config(16000, 4096, any), cfg_14336x4096);
}

TEST_F(CacheNearest, ExactShapeCounts) {
  const auto r = cache.nearest(make_key(8192, 8192), any);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config, cfg_8192x8192);
  EXPECT_EQ(r->key.shape, (Shape{8192, 8192}));
}

TEST_F(CacheNearest, OtherShapesOnlyLeavesTheExactShapeOut) {
  const auto r = cache.nearest(make_key(8192, 8192), any, /*other_shapes_only=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(r->key.shape, (Shape{8192, 8192}));
  EXPECT_NE(r->config, cfg_8192x8192);
}

TEST_F(CacheNearest, SkipsConfigsThePredicateRejects) {
  const auto not_4096 = [](const std::string& c) { return c != cfg_4096x4096; };
  // From 4000x4000: 4096x14336 and 14336x4096 tie (1.30) ahead of 8192x8192 (1.43);
  // the tie goes to the smaller (n, k).
  EXPECT_EQ(nearest_config(4000, 4000, not_4096), cfg_4096x14336);
  const auto only_8192 = [](const std::string& c) { return c == cfg_8192x8192; };
  EXPECT_EQ(nearest_config(4000, 4000, only_8192), cfg_8192x8192);
  EXPECT_EQ(nearest_config(4000, 4000, [](const std::string&) { return false; }), "(none)");
}

TEST_F(CacheNearest, OtherFamiliesOnlyMatchThemselves) {
  const auto r = cache.nearest(make_key(4000, 4000, cache_test::h200(), DType::f16), any);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->config, wrong_dtype);
  EXPECT_FALSE(cache.nearest(make_key(4000, 4000, cache_test::h200(), DType::f32), any));
  EXPECT_FALSE(cache.nearest(make_key(4000, 4000, cache_test::h200(), DType::bf16, 2), any));
  EXPECT_FALSE(
      cache.nearest(make_key(4000, 4000, GpuIdentity{"NVIDIA H200", 132, 10, 0}), any));
}

}  // namespace
}  // namespace gemvtune
