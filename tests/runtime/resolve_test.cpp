// resolve_config against a real cache file: exact entry, nearest usable shape, analytic
// default, and never an entry of another GPU, template version, dtype or weight format.
#include <gtest/gtest.h>

#include "cache/cache_test_util.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gemvtune/tuner.hpp"

using namespace gemvtune;
using cache_test::TempDir;

namespace {
const GpuIdentity kH200{"NVIDIA H200", 132, 9, 0};
const GpuIdentity kH100{"NVIDIA H100 80GB HBM3", 132, 9, 0};

TuneRecord record(const GpuIdentity& gpu, Shape shape, const std::string& config, DType t = DType::bf16,
                  const std::string& templates = template_version()) {
  TuneRecord r = cache_test::make_record(
      cache_test::make_key(shape.n, shape.k, gpu, t, 1, templates), config, 9.5);
  r.candidates.clear();
  return r;
}

GpuModelParams params(const GpuIdentity& gpu) {
  GpuModelParams p;
  p.sm_count = gpu.sm_count;
  return p;
}

// A config the model rates as good as its default for shape s: lent to s unchanged (a config
// predicted far slower than the default of its kind is replaced; see BorrowedConfig* below).
std::string plausible(Shape s, DType t = DType::bf16, int m = 1) {
  return to_string(default_config(t, s, params(kH200), m));
}

struct ResolveTest : ::testing::Test {
  TempDir dir;
  TuningCache cache{dir.file("cache.sqlite"), CacheMode::read_write};
};
}  // namespace

TEST_F(ResolveTest, EmptyCacheGivesTheModelDefault) {
  const Resolved r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_EQ(r.source_text, "default (analytic model)");
  EXPECT_EQ(r.config, default_config(DType::bf16, {4096, 4096}, params(kH200)));
  EXPECT_FALSE(r.record);
}

TEST_F(ResolveTest, NoCacheAtAllGivesTheModelDefault) {
  const Resolved r = resolve_config(nullptr, kH200, {1024, 4096}, DType::f16);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_EQ(r.config, default_config(DType::f16, {1024, 4096}, params(kH200)));
}

TEST_F(ResolveTest, ExactEntry) {
  cache.store(record(kH200, {4096, 4096}, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  cache.store(record(kH200, {4096, 8192}, "t64_r1_kw1_v16_u8_sk1_nc"));
  const Resolved r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::exact);
  EXPECT_EQ(r.source_text, "exact");
  EXPECT_EQ(to_string(r.config), "t256_r2_kw2_v16_u2_sk1_cs_pdl");
  ASSERT_TRUE(r.record);
  EXPECT_EQ(r.record->key.shape, (Shape{4096, 4096}));
  EXPECT_EQ(r.record->time_us, 9.5);
}

TEST_F(ResolveTest, NearestShapeSaysWhichShape) {
  cache.store(record(kH200, {4096, 4096}, plausible({5120, 4096})));
  cache.store(record(kH200, {128256, 4096}, "t64_r1_kw1_v16_u8_sk1_nc"));
  const Resolved r = resolve_config(&cache, kH200, {5120, 4096}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(r.source_text, "nearest 4096x4096");
  EXPECT_EQ(to_string(r.config), plausible({5120, 4096}));
}

// What a shape nobody tuned gets (bench's "untuned" variant): its own entries, at any batch, are
// left out; the nearest other shape answers, else the default.
TEST_F(ResolveTest, OtherShapesScopeLeavesTheShapesOwnEntriesOut) {
  cache.store(record(kH200, {4096, 4096}, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  cache.store(record(kH200, {4096, 8192}, plausible({4096, 4096})));
  const Resolved own = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16);
  EXPECT_EQ(own.source, ConfigSource::exact);
  const Resolved other =
      resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 1, WeightFormat::dense, ResolveScope::other_shapes);
  EXPECT_EQ(other.source, ConfigSource::nearest);
  EXPECT_EQ(other.source_text, "nearest 4096x8192");
  EXPECT_EQ(to_string(other.config), plausible({4096, 4096}));
  // Alone in the cache, the shape gets the model's default.
  TempDir d2;
  TuningCache alone{d2.file("c.sqlite"), CacheMode::read_write};
  alone.store(record(kH200, {4096, 4096}, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  const Resolved none =
      resolve_config(&alone, kH200, {4096, 4096}, DType::bf16, 1, WeightFormat::dense, ResolveScope::other_shapes);
  EXPECT_EQ(none.source, ConfigSource::model_default);
  EXPECT_EQ(none.config, default_config(DType::bf16, {4096, 4096}, params(kH200)));
}

TEST_F(ResolveTest, NearestSkipsConfigsThatCannotRunTheShape) {
  // sk8 needs K to hold 8 warp-wide loads (8 x 256 bf16 elements): not K = 512.
  cache.store(record(kH200, {4096, 1024}, "t128_r1_kw1_v16_u2_sk8_cs"));
  cache.store(record(kH200, {4096, 16384}, plausible({4096, 512})));
  const Resolved r = resolve_config(&cache, kH200, {4096, 512}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(r.source_text, "nearest 4096x16384");
  EXPECT_EQ(to_string(r.config), plausible({4096, 512}));
}

TEST_F(ResolveTest, AnUnusableExactEntryFallsBackToNearest) {
  cache.store(record(kH200, {4096, 512}, "t128_r1_kw1_v16_u2_sk8_cs"));  // cannot run K = 512
  cache.store(record(kH200, {2048, 512}, plausible({4096, 512})));
  const Resolved r = resolve_config(&cache, kH200, {4096, 512}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(to_string(r.config), plausible({4096, 512}));
}

TEST_F(ResolveTest, NeverUsesAnotherGpu) {
  cache.store(record(kH100, {4096, 4096}, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  cache.store(record(GpuIdentity{"NVIDIA H200", 114, 9, 0}, {4096, 4096}, "t64_r1_kw1_v16_u8_sk1_nc"));
  const Resolved r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_FALSE(r.record);
}

TEST_F(ResolveTest, NeverUsesAnotherTemplateVersion) {
  cache.store(record(kH200, {4096, 4096}, "t256_r2_kw2_v16_u2_sk1_cs_pdl", DType::bf16, "0123456789abcdef"));
  const Resolved r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  cache.store(record(kH200, {8192, 4096}, plausible({4096, 4096})));
  EXPECT_EQ(resolve_config(&cache, kH200, {4096, 4096}, DType::bf16).source_text, "nearest 8192x4096");
}

TEST_F(ResolveTest, NeverUsesAnotherDtype) {
  cache.store(record(kH200, {4096, 4096}, "t256_r2_kw2_v16_u2_sk1_cs_pdl", DType::f16));
  EXPECT_EQ(resolve_config(&cache, kH200, {4096, 4096}, DType::bf16).source, ConfigSource::model_default);
  EXPECT_EQ(resolve_config(&cache, kH200, {4096, 4096}, DType::f16).source, ConfigSource::exact);
}

namespace {
TuneRecord weights_record(Shape shape, WeightFormat w, const std::string& config, int batch = 1) {
  TuneRecord r = cache_test::make_record(
      cache_test::make_key(shape.n, shape.k, kH200, DType::bf16, batch, template_version(), w), config, 9.5);
  r.candidates.clear();
  return r;
}
}  // namespace

// Exact, covering M and nearest shape each look at entries of the asked format only.
TEST_F(ResolveTest, NeverMixesWeightFormats) {
  cache.store(weights_record({4096, 4096}, WeightFormat::dense, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  cache.store(weights_record({4096, 4096}, WeightFormat::int4_g128, "t64_r1_kw1_v16_u8_sk1_nc"));
  cache.store(weights_record({8192, 4096}, WeightFormat::int8, "t128_r1_kw1_v16_u4_sk1_cs"));
  cache.store(weights_record({4096, 4096}, WeightFormat::fp8, "t128_r1_kw4_v16_u2_sk1_cs_pdl_m4", 4));

  Resolved r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::exact);
  EXPECT_EQ(to_string(r.config), "t256_r2_kw2_v16_u2_sk1_cs_pdl");
  EXPECT_EQ(r.record->key.weights, WeightFormat::dense);

  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 1, WeightFormat::int4_g128);
  EXPECT_EQ(r.source, ConfigSource::exact);
  EXPECT_EQ(to_string(r.config), "t64_r1_kw1_v16_u8_sk1_nc");
  EXPECT_EQ(r.record->key.weights, WeightFormat::int4_g128);

  // int8 has only 8192x4096: that is its nearest, not the dense or int4 entry of the exact shape.
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 1, WeightFormat::int8);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(r.source_text, "nearest 8192x4096");
  EXPECT_EQ(r.record->key.weights, WeightFormat::int8);

  // fp8 at M = 3 is covered by its own M = 4 entry; dense at M = 3 has no entry that covers it
  // (only M = 1) and never takes fp8's.
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 3, WeightFormat::fp8);
  EXPECT_EQ(r.source_text, "same shape at M=4");
  EXPECT_EQ(r.record->key.weights, WeightFormat::fp8);
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 3);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_FALSE(r.record);

  // A format with no entry at all: the model's default, said to be the default, for any M.
  for (int m : {1, 8}) {
    r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, m, WeightFormat::int4_g32);
    EXPECT_EQ(r.source, ConfigSource::model_default);
    EXPECT_EQ(r.source_text, "default (analytic model)");
    EXPECT_EQ(r.config, default_config(DType::bf16, {4096, 4096}, params(kH200), m, WeightFormat::int4_g32));
    EXPECT_FALSE(why_invalid_for(r.config, DType::bf16, {4096, 4096}, m, WeightFormat::int4_g32));
    EXPECT_FALSE(r.record);
  }
  // A stored config the format's family cannot run (tensor cores for int4 with groups of 64,
  // the ring for int4) is not served.
  cache.store(weights_record({2048, 4096}, WeightFormat::int4_g64, "tc_t128_r1_kw4_v16_u2_sk1_cs_pdl"));
  r = resolve_config(&cache, kH200, {2048, 4096}, DType::bf16, 1, WeightFormat::int4_g64);
  EXPECT_NE(to_string(r.config), "tc_t128_r1_kw4_v16_u2_sk1_cs_pdl");
  cache.store(weights_record({2048, 4096}, WeightFormat::int4_g128, "t64_r2_kw1_v16_u4_sk1_cs_pdl_ring"));
  r = resolve_config(&cache, kH200, {2048, 4096}, DType::bf16, 1, WeightFormat::int4_g128);
  EXPECT_NE(to_string(r.config), "t64_r2_kw1_v16_u4_sk1_cs_pdl_ring");
}

// A register-capped winner (the tuner's capped twins, "_rc") is served as stored, for its own
// shape and for the batches its m tile covers; an "_rc" config stored for dense weights, which
// the rules refuse, is not.
TEST_F(ResolveTest, ServesRegisterCappedEntries) {
  const std::string capped = "tc_t64_r2_kw2_v16_u2_sk1_cs_pdl_rc_m16";
  cache.store(weights_record({28672, 4096}, WeightFormat::fp8, capped, 16));
  Resolved r = resolve_config(&cache, kH200, {28672, 4096}, DType::bf16, 16, WeightFormat::fp8);
  EXPECT_EQ(r.source, ConfigSource::exact);
  EXPECT_EQ(to_string(r.config), capped);
  EXPECT_TRUE(r.config.reg_cap);
  r = resolve_config(&cache, kH200, {28672, 4096}, DType::bf16, 13, WeightFormat::fp8);
  EXPECT_EQ(r.source_text, "same shape at M=16");
  EXPECT_EQ(to_string(r.config), capped);
  cache.store(weights_record({4096, 4096}, WeightFormat::dense, "tc_t128_r1_kw4_v16_u4_sk1_cs_pdl_rc_m16", 16));
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 16);
  EXPECT_FALSE(r.config.reg_cap) << to_string(r.config);
  EXPECT_FALSE(why_invalid_for(r.config, DType::bf16, {4096, 4096}, 16));
}

TEST_F(ResolveTest, DefaultUsesTheStoredCeiling) {
  PeakRecord p;
  p.gpu = kH200;
  p.gbps = 1000;  // far below the built-in guess: the model must see it
  p.bytes = 1 << 30;
  cache.store_peak(p);
  GpuModelParams slow = params(kH200);
  slow.read_ceiling_gbps = 1000;
  EXPECT_EQ(resolve_config(&cache, kH200, {4096, 4096}, DType::bf16).config,
            default_config(DType::bf16, {4096, 4096}, slow));
}

TEST_F(ResolveTest, BadShapeIsRefused) {
  EXPECT_THROW(resolve_config(&cache, kH200, {0, 4096}, DType::bf16), InvalidArgument);
}

TEST(ConfigSourceNames, Text) {
  EXPECT_EQ(to_string(ConfigSource::exact), "exact");
  EXPECT_EQ(to_string(ConfigSource::nearest), "nearest");
  EXPECT_EQ(to_string(ConfigSource::model_default), "default");
}

namespace {
TuneRecord batch_record(Shape shape, int batch, const std::string& config) {
  TuneRecord r = cache_test::make_record(
      cache_test::make_key(shape.n, shape.k, kH200, DType::bf16, batch, template_version()), config, 9.5);
  r.candidates.clear();
  return r;
}
}  // namespace

TEST_F(ResolveTest, BatchExactThenCoveringThenNearest) {
  cache.store(batch_record({4096, 4096}, 1, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  cache.store(batch_record({4096, 4096}, 4, "tc_t128_r1_kw4_v16_u2_sk1_cs_pdl_m4"));
  cache.store(batch_record({4096, 4096}, 16, "tc_t128_r1_kw4_v16_u4_sk1_cs_pdl_m16"));
  cache.store(batch_record({4096, 14336}, 8, "tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_m8"));

  Resolved r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 4);
  EXPECT_EQ(r.source, ConfigSource::exact);
  EXPECT_EQ(to_string(r.config), "tc_t128_r1_kw4_v16_u2_sk1_cs_pdl_m4");

  // M = 3 is untuned: the smallest tuned M above it whose kernel covers it, named.
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 3);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(r.source_text, "same shape at M=4");
  EXPECT_EQ(r.config.m_tile, 4);
  // M = 5 skips M = 4 (its m tile is too small) and takes M = 16.
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 5);
  EXPECT_EQ(r.source_text, "same shape at M=16");
  EXPECT_FALSE(why_invalid_for(r.config, DType::bf16, {4096, 4096}, 5));

  // Another shape at M = 8: the nearest tuned shape at M = 8.
  r = resolve_config(&cache, kH200, {4096, 12288}, DType::bf16, 8);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(r.source_text, "nearest 4096x14336");
  EXPECT_EQ(r.config.m_tile, 8);

  // Nothing covers M = 9 on 4096x12288 except the M = 16 entry of 4096x4096.
  r = resolve_config(&cache, kH200, {4096, 12288}, DType::bf16, 9);
  EXPECT_EQ(r.source_text.rfind("nearest 4096x4096 at M=16", 0), 0u) << r.source_text << " " << to_string(r.config);
  EXPECT_EQ(r.config.m_tile, 16);

  // No entry of any M for fp16: the model's default for that M.
  r = resolve_config(&cache, kH200, {4096, 4096}, DType::f16, 8);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_EQ(r.config, default_config(DType::f16, {4096, 4096}, params(kH200), 8));
  EXPECT_EQ(r.config.m_tile, 8);

  EXPECT_THROW(resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 0), InvalidArgument);
  EXPECT_THROW(resolve_config(&cache, kH200, {4096, 4096}, DType::bf16, 17), InvalidArgument);
}

// An aligned-body (al) winner of a misaligned shape is not lent to a shape whose rows are
// 16-byte aligned (it measured 0.88x cuBLAS there on the H200), but still to a misaligned one.
TEST_F(ResolveTest, NearestLendsAlignedBodyConfigsOnlyToMisalignedRows) {
  cache.store(record(kH200, {4096, 4093}, "t128_r1_kw1_v16_u4_sk1_cs_pdl_al"));
  cache.store(record(kH200, {3584, 4096}, "t256_r1_kw2_v16_u4_sk1_cs_pdl_pf"));
  const Resolved aligned = resolve_config(&cache, kH200, {4608, 3584}, DType::bf16);
  EXPECT_EQ(aligned.source_text, "nearest 3584x4096");
  EXPECT_EQ(to_string(aligned.config), "t256_r1_kw2_v16_u4_sk1_cs_pdl_pf");
  const Resolved misaligned = resolve_config(&cache, kH200, {4608, 3581}, DType::bf16);
  EXPECT_EQ(misaligned.source_text, "nearest 4096x4093");
  EXPECT_EQ(to_string(misaligned.config), "t128_r1_kw1_v16_u4_sk1_cs_pdl_al");
  // Its own entry is the shape's, al or not.
  cache.store(record(kH200, {4608, 3584}, "t128_r1_kw1_v16_u4_sk1_cs_pdl_al"));
  EXPECT_EQ(resolve_config(&cache, kH200, {4608, 3584}, DType::bf16).source, ConfigSource::exact);
}

// Misaligned rows borrow only al configs: a plain (here register-capped) config of an aligned
// shape would run as an al variant nobody timed (H200: 33.2 us on 11008x4095 against 25.2 for
// the model's default, run as al). With no al entry the model's default runs.
TEST_F(ResolveTest, MisalignedRowsBorrowOnlyAlignedBodyConfigs) {
  cache.store(record(kH200, {11008, 4096}, "t128_r1_kw2_v16_u4_sk1_cs_pdl_pf_rc56"));
  const Resolved alone = resolve_config(&cache, kH200, {11008, 4095}, DType::bf16);
  EXPECT_EQ(alone.source, ConfigSource::model_default) << alone.source_text;
  EXPECT_EQ(alone.config, default_config(DType::bf16, {11008, 4095}, params(kH200)));
  EXPECT_TRUE(misaligned_variant(alone.config, 2).aligned_body) << to_string(alone.config);
  // An aligned shape still borrows the plain config.
  EXPECT_EQ(resolve_config(&cache, kH200, {11008, 4088}, DType::bf16).source_text, "nearest 11008x4096");
  cache.store(record(kH200, {4097, 4099}, "t128_r1_kw1_v16_u4_sk1_cs_pdl_al"));
  const Resolved lent = resolve_config(&cache, kH200, {11008, 4095}, DType::bf16);
  EXPECT_EQ(lent.source_text, "nearest 4097x4099");
  EXPECT_EQ(to_string(lent.config), "t128_r1_kw1_v16_u4_sk1_cs_pdl_al");
  // fp32 rows of K = 4093 elements are misaligned too; quantized weights have no al and keep
  // borrowing as before (tested with the formats below).
  EXPECT_EQ(resolve_config(&cache, kH200, {11008, 4093}, DType::f32).source, ConfigSource::model_default);
}

// A pf config (L2 prefetch of each warp's whole K slice) is lent only where the prefetch fits in
// L2: tuned on 4096x4096 (4 KB per warp), not lent to 4096x14336 (14 KB per warp: every warp
// slot of the H200 would ask for 117 MB), where it measured 0.85x cuBLAS.
TEST_F(ResolveTest, NearestLendsPrefetchConfigsOnlyWhereThePrefetchFitsInL2) {
  const KernelConfig pf = parse_config("t128_r1_kw2_v16_u4_sk1_cs_pdl_pf");
  EXPECT_TRUE(prefetch_fits_l2(pf, DType::bf16, {4096, 4096}, params(kH200)));
  EXPECT_TRUE(prefetch_fits_l2(pf, DType::bf16, {6144, 4096}, params(kH200)));
  EXPECT_FALSE(prefetch_fits_l2(pf, DType::bf16, {4096, 14336}, params(kH200)));
  EXPECT_TRUE(prefetch_fits_l2(pf, DType::bf16, {16, 14336}, params(kH200)));  // 0.5 MB in all
  EXPECT_TRUE(prefetch_fits_l2(parse_config("t128_r1_kw2_v16_u4_sk1_cs_pdl"), DType::bf16, {4096, 14336},
                               params(kH200)));
  cache.store(record(kH200, {4096, 4096}, "t128_r1_kw2_v16_u4_sk1_cs_pdl_pf"));
  EXPECT_EQ(resolve_config(&cache, kH200, {6144, 4096}, DType::bf16).source_text, "nearest 4096x4096");
  const Resolved long_k = resolve_config(&cache, kH200, {4096, 14336}, DType::bf16);
  EXPECT_EQ(long_k.source, ConfigSource::model_default);
  cache.store(record(kH200, {14336, 4096}, "t128_r1_kw1_v16_u8_sk1_cs_pdl"));
  EXPECT_EQ(resolve_config(&cache, kH200, {4096, 14336}, DType::bf16).source_text, "nearest 14336x4096");
}

// A CUDA-core config is not lent where a warp's share of a row does not fill one trip of its
// unroll (the trip's loads past the warp's end are repeats that cost as real ones do):
// 32000x4096's t128_r1_kw2_v16_u8 (8 chunks a warp, one whole trip) on K = 3584 (7) ran
// 256000x3584 at 0.91x cuBLAS on the H200, the model's default 1.02x
// (sweeps/h200_bf16_trips_pdl.csv).
TEST_F(ResolveTest, NearestLendsNoConfigWhoseWarpsCannotFillATripHere) {
  const KernelConfig lent = parse_config("t128_r1_kw2_v16_u8_sk1_cs_pdl_pf");
  const ModelEstimate there = estimate(lent, DType::bf16, {32000, 4096}, params(kH200));
  EXPECT_DOUBLE_EQ(there.issued_loads, 1.0);
  EXPECT_FALSE(there.short_trip);
  const ModelEstimate here = estimate(lent, DType::bf16, {256000, 3584}, params(kH200));
  EXPECT_DOUBLE_EQ(here.issued_loads, 8.0 / 7.0);  // 14 chunks a row, 7 a warp, one trip of 8 loads
  EXPECT_TRUE(here.short_trip);
  // kw4 u8 on K = 4096: 4 chunks a warp, half the trip repeats (2.1x the best on 32000x4096).
  const ModelEstimate half = estimate(parse_config("t128_r1_kw4_v16_u8_sk1_cs_pdl"), DType::bf16, {32000, 4096}, params(kH200));
  EXPECT_DOUBLE_EQ(half.issued_loads, 2.0);
  EXPECT_NEAR(half.transfer_us / there.transfer_us, 2.0, 0.2);
  cache.store(record(kH200, {32000, 4096}, to_string(lent)));
  EXPECT_EQ(resolve_config(&cache, kH200, {28672, 4096}, DType::bf16).source_text, "nearest 32000x4096");
  const Resolved r = resolve_config(&cache, kH200, {256000, 3584}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_FALSE(estimate(r.config, DType::bf16, {256000, 3584}, params(kH200)).short_trip) << to_string(r.config);
}

// A lent config runs with this shape's split-K (a launch parameter) where its grid's waves
// changed: 4096x4096's tc_t128_r1_kw4_u4 with two splits at M = 2 makes 1.5x the blocks on
// 6144x4096, where one split keeps the grid within a wave, and ran 15.99 us there against 17.34
// with two (H200, sweeps/h200_batch_4852aee_pdl.csv). The text says what changed. On a shape of
// the same N (the same grid) the tuned split stays. On 1024x4096 it would take split 4 (4.37
// us there), which the model predicts far slower than the default, an 8-row-tile wide block
// (3.57 us): the default runs.
TEST_F(ResolveTest, BorrowedConfigGetsThisShapesSplitK) {
  cache.store(batch_record({4096, 4096}, 2, "tc_t128_r1_kw4_v16_u4_sk2_cs_pdl_m2"));
  const Resolved r = resolve_config(&cache, kH200, {6144, 4096}, DType::bf16, 2);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(to_string(r.config), "tc_t128_r1_kw4_v16_u4_sk1_cs_pdl_m2");
  EXPECT_EQ(r.source_text, "nearest 4096x4096 with split-K 1 (was 2)");
  ASSERT_TRUE(r.record);
  EXPECT_EQ(r.record->config, "tc_t128_r1_kw4_v16_u4_sk2_cs_pdl_m2");  // what was stored
  const Resolved same_n = resolve_config(&cache, kH200, {4096, 14336}, DType::bf16, 2);
  EXPECT_EQ(same_n.source_text, "nearest 4096x4096");
  EXPECT_EQ(same_n.config.split_k, 2);
  const Resolved quarter = resolve_config(&cache, kH200, {1024, 4096}, DType::bf16, 2);
  EXPECT_EQ(quarter.source, ConfigSource::model_default);
  EXPECT_NE(quarter.source_text.find("with split-K 4 (was 2) predicted"), std::string::npos) << quarter.source_text;
  EXPECT_EQ(quarter.config, default_config(DType::bf16, {1024, 4096}, params(kH200), 2));
}

// Nor a split that leaves a warp fewer than 256 elements of K: 4096x4096's wide block (8 warps
// along K) lent to 1024x4096 at M = 4 took split 4 (128 a warp), 6.17 us on the H200 where split 2
// ran 4.69 and the best config 3.91 (sweeps/h200_batch_4316d86_kw_pdl.csv). The split it takes
// there is 2, and since the model of 2026-12-05 the default replaces even that (on today's
// kernel split 2 ran 4.84 us, the default, tc_t512_r1_kw16_w8, 3.58: sweeps/h200_batch_4852aee_pdl.csv).
TEST_F(ResolveTest, BorrowedSplitKeepsAWarpsShareOfK) {
  cache.store(batch_record({4096, 4096}, 4, "tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m4"));
  const Resolved r = resolve_config(&cache, kH200, {1024, 4096}, DType::bf16, 4);
  EXPECT_NE(r.source_text.find("with split-K 2 (was 1)"), std::string::npos) << r.source_text;
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_GE(4096 / (r.config.k_warps * r.config.split_k), 256) << to_string(r.config);
  // Where the lent config stays (2048x4096), it keeps its one split.
  const Resolved half = resolve_config(&cache, kH200, {2048, 4096}, DType::bf16, 4);
  EXPECT_EQ(half.source_text, "nearest 4096x4096");
  EXPECT_EQ(half.config.split_k, 1);
}

// A lent config gives way to the default of its kind, and the text says why, where no split
// keeps its grid within one wave as it was (H200, int8 at M = 16: 4096x4096's 256-thread blocks,
// one per SM, make 1.45 waves on 6144x4096 and ran 17.02 us, the default 10.64) or where the
// model predicts it far slower. Across kernel families the lent config stays: the
// model's estimates are least reliable there (int8 at M = 1, 4096x14336: a lent CUDA-core config
// 18.63 us, the tensor-core default 28.31).
TEST_F(ResolveTest, BorrowedConfigWithABrokenWaveOrFarSlowerGivesItsKindsDefault) {
  cache.store(weights_record({4096, 4096}, WeightFormat::int8, "tc_t256_r1_kw4_v16_u4_sk1_cs_pdl_m16", 16));
  Resolved r = resolve_config(&cache, kH200, {6144, 4096}, DType::bf16, 16, WeightFormat::int8);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_EQ(r.config, default_config(DType::bf16, {6144, 4096}, params(kH200), 16, WeightFormat::int8));
  EXPECT_EQ(r.source_text, "default (analytic model; the config of nearest 4096x4096 makes more than one wave at every split)");
  EXPECT_FALSE(r.record);
  ASSERT_TRUE(r.declined);  // what was lent and not used, for query and scripts
  EXPECT_EQ(r.declined->config, "tc_t256_r1_kw4_v16_u4_sk1_cs_pdl_m16");
  EXPECT_EQ(r.declined->key.shape, (Shape{4096, 4096}));
  // Predicted far slower: 4096x4096's split-2 winner at M = 16 on 1024x4096 (split 4 there, and
  // still slower than the default by the model; H200: 6.81 us lent, 5.66 the default).
  cache.store(batch_record({4096, 4096}, 16, "tc_t128_r1_kw4_v16_u2_sk2_cs_pdl_m16"));
  r = resolve_config(&cache, kH200, {1024, 4096}, DType::bf16, 16);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_EQ(r.source_text.rfind("default (analytic model; the config of nearest 4096x4096 with split-K 4 (was 2) predicted ", 0), 0u)
      << r.source_text;
  EXPECT_NE(r.source_text.find("% slower)"), std::string::npos);

  cache.store(weights_record({4096, 4096}, WeightFormat::int8, "t64_r8_kw2_v16_u1_sk1_cs_pdl"));
  r = resolve_config(&cache, kH200, {4096, 14336}, DType::bf16, 1, WeightFormat::int8);
  ASSERT_EQ(default_config(DType::bf16, {4096, 14336}, params(kH200), 1, WeightFormat::int8).family,
            Family::tensor_core);  // another family: the lent config stays
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(to_string(r.config), "t64_r8_kw2_v16_u1_sk1_cs_pdl");
}

// A lent config charged for the blocks it runs beyond the default's (kBlockUs): 9216x3072's
// t64_r1_kw2_v16_u2_pf makes 8192 blocks of 2 KB on 8192x1024 where the default makes 1024; on an
// H100 it ran 10.9 us there (0.75x cuBLAS), the default 6.9. On 9216x3072's own neighbour with the
// same K it still lends, and an equal grid is not charged at all (the int4 test below).
TEST_F(ResolveTest, BorrowedConfigIsChargedForItsExtraBlocks) {
  cache.store(record(kH200, {9216, 3072}, "t64_r1_kw2_v16_u2_sk1_cs_pdl_pf"));
  const Resolved small_k = resolve_config(&cache, kH200, {8192, 1024}, DType::bf16);
  EXPECT_EQ(small_k.source, ConfigSource::model_default) << small_k.source_text;
  EXPECT_NE(small_k.source_text.find("the config of nearest 9216x3072 predicted"), std::string::npos)
      << small_k.source_text;
  EXPECT_EQ(small_k.config, default_config(DType::bf16, {8192, 1024}, params(kH200)));
  const Resolved same_k = resolve_config(&cache, kH200, {10240, 3072}, DType::bf16);
  EXPECT_EQ(same_k.source_text, "nearest 9216x3072");
}

// Blocks of 4 KB and more are not charged: 11008x4096's t128_r1_kw4_v16_u2_pf makes 14336 blocks
// of 7 KB on 14336x3584, four times the default's (t256_r2_kw4_v16_u1 on a GPU of 3132 GB/s),
// and ran 1.13x cuBLAS there on an H100 where the default ran 0.96x.
TEST_F(ResolveTest, BorrowedConfigsWithBlocksOfFourKiBOrMoreAreNotCharged) {
  const GpuIdentity h100{"NVIDIA H100 80GB HBM3", 132, 9, 0};
  PeakRecord peak;
  peak.gpu = h100;
  peak.gbps = 3132;
  peak.bytes = std::int64_t{4} << 30;
  cache.store_peak(peak);
  cache.store(record(h100, {11008, 4096}, "t128_r1_kw4_v16_u2_sk1_cs_pdl_pf"));
  const Resolved r = resolve_config(&cache, h100, {14336, 3584}, DType::bf16);
  EXPECT_EQ(r.source, ConfigSource::nearest) << r.source_text;
  EXPECT_EQ(to_string(r.config), "t128_r1_kw4_v16_u2_sk1_cs_pdl_pf");
}

// int4 weights at M = 1: the lent config runs as stored (the model ranks int4 kernels worst there).
TEST_F(ResolveTest, BorrowedInt4ConfigRunsAsStoredAtBatchOne) {
  cache.store(weights_record({4096, 4096}, WeightFormat::int4_g128, "tc_t256_r1_kw4_v16_u1_sk1_cs_pdl_ring", 1));
  const Resolved r = resolve_config(&cache, kH200, {6144, 4096}, DType::bf16, 1, WeightFormat::int4_g128);
  EXPECT_EQ(r.source, ConfigSource::nearest);
  EXPECT_EQ(r.source_text, "nearest 4096x4096");
  EXPECT_EQ(to_string(r.config), "tc_t256_r1_kw4_v16_u1_sk1_cs_pdl_ring");
}

// At M > 1 it is fitted to the shape as other formats' are. On the H200 (sweep of 2026-12-01,
// sweeps/h200_int4g128_m16_6223e09_pdl.csv, the ring kernel) 4096x4096's winner ran 18.30 us on
// 6144x4096 at M = 16 as stored and 23.07 with the split the model re-picks, and the default
// taken instead 12.72 (the best 12.23; bf16 cuBLAS 15.72).
TEST_F(ResolveTest, BorrowedInt4ConfigIsFittedAtLargerBatch) {
  cache.store(weights_record({4096, 4096}, WeightFormat::int4_g128, "tc_t256_r1_kw4_v16_u1_sk1_cs_pdl_ring_m16", 16));
  const Resolved r = resolve_config(&cache, kH200, {6144, 4096}, DType::bf16, 16, WeightFormat::int4_g128);
  EXPECT_EQ(r.source, ConfigSource::model_default);
  EXPECT_EQ(r.source_text,
            "default (analytic model; the config of nearest 4096x4096 with split-K 2 (was 1) predicted 20% slower)");
  EXPECT_EQ(to_string(r.config), "tc_t128_r1_kw4_v16_u1_sk1_cs_pdl_ring_m16");
}
