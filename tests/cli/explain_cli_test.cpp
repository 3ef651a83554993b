// `gemvtune explain` as a user runs it, without a GPU (--gpu names the model): the JSON fields,
// the config and the read ceiling taken from the cache, the text form, and bad input exiting 2
// with a message. Where there is no GPU, the measurement says it was skipped and the exit is 0.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/generator.hpp"
#include "jit/driver_api.hpp"

using namespace gemvtune;
using namespace gemvtune::cli_test;
using Json = nlohmann::json;

namespace {
const char* const kH200Key = "NVIDIA H200/132sm/cc9.0";

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct CliExplain : ::testing::Test {
  cache_test::TempDir dir;
  CliResult run(const std::vector<std::string>& args) { return run_cli(args, dir.path()); }
  std::string db() const { return dir.file("cache.sqlite"); }
};

TEST_F(CliExplain, JsonHasTheGridWavesLittlesLawCubinAndModel) {
  const CliResult r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config",
                           "t128_r1_kw1_v16_u8_sk1_cs_pdl", "--db", db(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["config"], "t128_r1_kw1_v16_u8_sk1_cs_pdl");
  EXPECT_EQ(j["config_source"], "--config");
  EXPECT_EQ(j["arch"], "sm_90");
  EXPECT_EQ(j["grid"]["block_rows"], 4);
  EXPECT_EQ(j["grid"]["row_blocks"], 1024);
  EXPECT_EQ(j["grid"]["blocks"], 1024);
  EXPECT_EQ(j["grid"]["sm_count"], 132);
  EXPECT_DOUBLE_EQ(j["waves"]["model_waves"].get<double>(), 1024.0 / (4 * 132));
  EXPECT_GE(j["waves"]["wave_count"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(j["little"]["in_flight_per_sm_bytes"].get<double>(), 65536);
  EXPECT_NEAR(j["little"]["needed_per_sm_bytes"].get<double>(), 4470e9 / 132 * 800e-9, 1e-6);
  EXPECT_DOUBLE_EQ(j["little"]["latency_ns"].get<double>(), 800);
  EXPECT_DOUBLE_EQ(j["little"]["read_ceiling_gbps"].get<double>(), 4470);
  ASSERT_TRUE(j["cubin"].is_object()) << j.dump(2);
  EXPECT_GT(j["cubin"]["registers"].get<int>(), 0);
  EXPECT_EQ(j["cubin"]["spill_store_bytes"], 0);
  EXPECT_TRUE(j["cubin"]["residency"]["blocks_per_sm"].get<int>() >= 1);
  EXPECT_EQ(j["split_k"]["splits"], 1);
  EXPECT_GT(j["model"]["time_us"].get<double>(), 0.8);
  EXPECT_EQ(j["limiter"], "bandwidth");
  EXPECT_TRUE(contains(j["verdict"].get<std::string>(), "bandwidth"));
  if (!jit::driver_available()) {
    EXPECT_TRUE(j["measured"].is_null());
    EXPECT_TRUE(contains(j["measured_skipped"].get<std::string>(), "no GPU: measured time skipped"));
  }
}

TEST_F(CliExplain, TakesTheConfigAndCeilingFromTheCache) {
  {
    TuningCache cache(db(), CacheMode::read_write);
    const GpuIdentity h200{"NVIDIA H200", 132, 9, 0};
    cache.store(cache_test::make_record(cache_test::make_key(1024, 4096, h200, DType::bf16, 1, template_version()),
                                        "t256_r4_kw1_v16_u2_sk1_cs", 5.0));
    PeakRecord p;
    p.gpu = h200;
    p.gbps = 4000;
    p.bytes = std::int64_t{4} << 30;
    cache.store_peak(p);
  }
  const CliResult r = run({"explain", "--shape", "1024x4096", "--gpu", kH200Key, "--db", db(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["config"], "t256_r4_kw1_v16_u2_sk1_cs");
  EXPECT_EQ(j["config_source"], "exact");
  EXPECT_DOUBLE_EQ(j["little"]["read_ceiling_gbps"].get<double>(), 4000);
  EXPECT_EQ(j["grid"]["blocks"], 32);
  EXPECT_EQ(j["limiter"], "grid");
}

TEST_F(CliExplain, TextNamesEveryPartAndTheLimiter) {
  const CliResult r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config",
                           "t128_r1_kw1_v16_u1_sk1_cs_pdl", "--db", db()});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* part : {"grid", "residency", "waves", "in flight", "Little's law needs", "800 ns latency (assumed)",
                           "cubin", "split-K", "model", "measured", "limited by  bytes in flight"})
    EXPECT_TRUE(contains(r.out, part)) << part << "\n" << r.out;
  if (!jit::driver_available()) {
    EXPECT_TRUE(contains(r.out, "no GPU: measured time skipped")) << r.out;
  }
}

TEST_F(CliExplain, BadInputExits2WithAMessage) {
  CliResult r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config", "t128_bogus", "--db", db()});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "bad config 't128_bogus'")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  r = run({"explain", "--shape", "4096x4096", "--batch", "4", "--gpu", kH200Key, "--config",
           "t128_r1_kw1_v16_u8_sk1_cs_pdl", "--db", db()});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "cannot run bf16 4096x4096 at M=4")) << r.err;

  r = run({"explain", "--shape", "4096x", "--gpu", kH200Key, "--db", db()});
  EXPECT_EQ(r.status, 2);
  r = run({"explain", "--shape", "4096x4096", "--gpu", "H200", "--db", db()});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(r.err.empty());
  r = run({"explain", "--shape", "4096x4096", "--batch", "1", "--batch", "2", "--gpu", kH200Key, "--db", db()});
  EXPECT_EQ(r.status, 2);
}

}  // namespace
