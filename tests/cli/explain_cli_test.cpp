// `gemvtune explain` as a user runs it, without a GPU (--gpu names the model): the JSON fields,
// the config and the read ceiling taken from the cache, the text form, and bad input exiting 2
// with a message. Where there is no GPU, or the GPU is not the one --gpu names, the measurement
// says it was skipped and the exit is 0.
// --measured-us gives a time measured elsewhere: reported with its source, it decides the limiter.
#include <gtest/gtest.h>

#include <cctype>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/generator.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/driver_api.hpp"

using namespace gemvtune;
using namespace gemvtune::cli_test;
using Json = nlohmann::json;

namespace {

// explain measures only on the GPU --gpu names; on any other (an H100 here) it says why not.
bool gpu_is_the_named_one() {
  return jit::driver_available() && jit::read_gpu_info(0).id.key() == kH200Key;
}

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
  if (!jit::driver_available()) {
    // Without a measurement the model alone decides: 4096x4096 in 1024 blocks is bandwidth-bound.
    EXPECT_EQ(j["limiter"], "bandwidth");
    EXPECT_TRUE(contains(j["verdict"].get<std::string>(), "bandwidth"));
    EXPECT_TRUE(j["measured"].is_null());
    EXPECT_TRUE(contains(j["measured_skipped"].get<std::string>(), "no GPU: measured time skipped"));
  } else if (!gpu_is_the_named_one()) {
    EXPECT_TRUE(j["measured"].is_null()) << j.dump(2);
    EXPECT_TRUE(contains(j["measured_skipped"].get<std::string>(), std::string(", not ") + kH200Key))
        << j["measured_skipped"];
  } else {
    // On a GPU the measured time decides the limiter (whichever it is on this device, the
    // verdict names it); the model's figures above stay the same.
    ASSERT_TRUE(j["measured"].is_object()) << j.dump(2);
    EXPECT_GT(j["measured"]["us"].get<double>(), 0.0) << j.dump(2);
    const std::string verdict = j["verdict"].get<std::string>();
    EXPECT_TRUE(contains(verdict, "of the read ceiling")) << verdict;
    if (j["limiter"] == "not modelled") {
      EXPECT_TRUE(contains(verdict, "beyond the model")) << verdict;
    } else {
      EXPECT_TRUE(contains(verdict, j["limiter"].get<std::string>())) << verdict;
    }
  }
}

// 6144x4096's round-1 pick takes 88 registers now (NVRTC 13.0, sm_90): 2 blocks an SM and 1.45
// waves, where its capped twin fits 3 and one wave. A tensor-core config has no such twin.
// The tensor cores' al (templates/gemv_tcal.cu): its grid is 8 row sets for each 128-row band
// (4097 rows: 33 bands, 264 row sets of one a block), and the text says its rows are 8 apart.
TEST_F(CliExplain, TensorCoresAlignedBodyGridCoversEveryBand) {
  const std::vector<std::string> args = {"explain", "--shape", "4097x4099", "--batch", "8", "--gpu", kH200Key,
                                         "--config", "tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8", "--db", db()};
  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  const CliResult r = run(json_args);
  ASSERT_EQ(r.status, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["grid"]["block_rows"], 16);
  EXPECT_EQ(j["grid"]["row_blocks"], 264);
  EXPECT_EQ(j["cubin"]["spill_store_bytes"], 0);
  const CliResult text = run(args);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("16 rows per block (rows 8 apart, al)"), std::string::npos) << text.out;
  // The warps' steps along K (tuner/warp_steps.hpp): 127 whole chunks, 3 left and 2 edges.
  EXPECT_EQ(j["warp_steps"]["slowest"], 5);
  EXPECT_EQ(j["warp_steps"]["fastest"], 4);
  EXPECT_EQ(j["warp_steps"]["edge_chunks"], 2);
  EXPECT_NE(text.out.find("warp steps  5 steps for the slowest warp, 4 for the fastest"), std::string::npos) << text.out;
}

TEST_F(CliExplain, WarpStepsOnlyForTheDenseTensorCoreKernels) {
  const CliResult cc = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--db", db(), "--config",
                            "t128_r1_kw1_v16_u4_sk1_cs_pdl", "--json"});
  ASSERT_EQ(cc.status, 0) << cc.err;
  EXPECT_TRUE(Json::parse(cc.out)["warp_steps"].is_null());
  const CliResult tc = run({"explain", "--shape", "4096x4096", "--batch", "8", "--gpu", kH200Key, "--db", db(),
                            "--config", "tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m8"});
  ASSERT_EQ(tc.status, 0) << tc.err;
  EXPECT_NE(tc.out.find("warp steps  4 steps for every warp: 32 runs of 4 chunks over 8 warps"), std::string::npos)
      << tc.out;
}

TEST_F(CliExplain, NamesTheCappedTwinOneBlockAnSmFurtherOn) {
  const std::vector<std::string> base = {"explain", "--shape", "6144x4096", "--gpu", kH200Key, "--db", db(), "--config"};
  auto args = base;
  args.push_back("t256_r2_kw1_v16_u4_sk1_cs_pdl");
  const CliResult text = run(args);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "capped twin t256_r2_kw1_v16_u4_sk1_cs_pdl_rc80: 3 blocks per SM at 80 registers, 0.97 waves"))
      << text.out;
  args.push_back("--json");
  const CliResult json = run(args);
  ASSERT_EQ(json.status, 0) << json.err;
  const Json j = Json::parse(json.out);
  ASSERT_TRUE(j["capped_twin"].is_object()) << j.dump(2);
  EXPECT_EQ(j["capped_twin"]["config"], "t256_r2_kw1_v16_u4_sk1_cs_pdl_rc80");
  EXPECT_EQ(j["capped_twin"]["register_cap"], 80);
  EXPECT_EQ(j["capped_twin"]["residency"]["blocks_per_sm"], 3);
  EXPECT_NEAR(j["capped_twin"]["waves"].get<double>(), 384.0 / (3 * 132), 1e-9);
  EXPECT_EQ(j["cubin"]["residency"]["blocks_per_sm"], 2);

  auto tc = base;
  tc.insert(tc.end(), {"tc_t128_r2_kw4_v16_u4_sk1_cs_pdl_m8", "--batch", "8"});
  const CliResult tc_text = run(tc);
  ASSERT_EQ(tc_text.status, 0) << tc_text.err;
  EXPECT_FALSE(contains(tc_text.out, "capped twin")) << tc_text.out;
  tc.push_back("--json");
  const CliResult tc_json = run(tc);
  ASSERT_EQ(tc_json.status, 0) << tc_json.err;
  EXPECT_TRUE(Json::parse(tc_json.out)["capped_twin"].is_null());
}

TEST_F(CliExplain, SaysHowSplitKFinishes) {
  const auto finish = [&](const char* config, const char* weights, const char* batch) {
    const CliResult r = run({"explain", "--shape", "4096x4096", "--batch", batch, "--gpu", kH200Key, "--weights", weights,
                             "--config", config, "--db", db(), "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    const Json j = Json::parse(r.out);
    return std::make_pair(j["split_k"]["finish"].get<std::string>(), j["split_k"]["cluster_blocks"].get<int>());
  };
  EXPECT_EQ(finish("tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_m8", "dense", "8"), std::make_pair(std::string("cluster"), 2));
  EXPECT_EQ(finish("t128_r1_kw1_v16_u8_sk1_cs_pdl", "dense", "1"), std::make_pair(std::string("none"), 1));
  EXPECT_EQ(finish("t128_r2_kw1_v16_u2_sk2_cs", "int8", "1"), std::make_pair(std::string("workspace"), 1));
  const CliResult text = run({"explain", "--shape", "4096x4096", "--batch", "8", "--gpu", kH200Key, "--config",
                              "tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_m8", "--db", db()});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "run as one cluster")) << text.out;
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
    EXPECT_FALSE(contains(r.out, "without PDL")) << r.out;  // the twin is timed only beside a measurement
  } else if (!gpu_is_the_named_one()) {
    EXPECT_TRUE(contains(r.out, "measured time skipped: device 0 is ")) << r.out;
    EXPECT_TRUE(contains(r.out, std::string(", not ") + kH200Key)) << r.out;
    EXPECT_FALSE(contains(r.out, "without PDL")) << r.out;
  } else {
    EXPECT_TRUE(contains(r.out, "without PDL ")) << r.out;  // a PDL config: its twin, timed or why not
    EXPECT_TRUE(contains(r.out, "t128_r1_kw1_v16_u1_sk1_cs, timed the same way")) << r.out;
  }
}

// A config whose warps' last trip repeats loads (kw4 u8 on K = 4096: 4 chunks a warp, trips of 8)
// says so in the text and the JSON, and names repeated loads as its limiter; the same knobs at
// unroll 4 issue the row's loads once.
TEST_F(CliExplain, SaysWhenAWarpsLastTripRepeatsLoads) {
  CliResult r = run({"explain", "--shape", "32000x4096", "--gpu", kH200Key, "--config",
                     "t128_r1_kw4_v16_u8_sk1_cs_pdl", "--db", db(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["model"]["issued_loads"].get<double>(), 2.0);
  EXPECT_GT(j["costs_us"]["repeated_loads"].get<double>(), 50.0);
  EXPECT_EQ(j["limiter"], "repeated loads");
  r = run({"explain", "--shape", "32000x4096", "--gpu", kH200Key, "--config", "t128_r1_kw4_v16_u8_sk1_cs_pdl", "--db", db()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "the transfer counts 2.00x the row's loads")) << r.out;
  EXPECT_TRUE(contains(r.out, "limited by  repeated loads")) << r.out;
  r = run({"explain", "--shape", "32000x4096", "--gpu", kH200Key, "--config", "t128_r1_kw4_v16_u4_sk1_cs_pdl", "--db", db(),
           "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  j = Json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["model"]["issued_loads"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["costs_us"]["repeated_loads"].get<double>(), 0.0);
}

// --measured-us: a time measured elsewhere is reported as the measured time, with its source,
// and decides the limiter; no GPU needed with --gpu.
TEST_F(CliExplain, MeasuredUsIsReportedWithItsSourceAndDecidesTheLimiter) {
  // 4096x4096 bf16, 33570816 bytes a call: the model says bandwidth (86% of its 8.74 us).
  const std::vector<std::string> base = {"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config",
                                         "t128_r1_kw1_v16_u8_sk1_cs_pdl", "--db", db(), "--json"};
  auto with = [&](const std::string& us) {
    std::vector<std::string> a = base;
    a.insert(a.end(), {"--measured-us", us});
    return a;
  };
  CliResult r = run(with("9.5"));  // 3534 GB/s, 79.1% of 4470
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  ASSERT_TRUE(j["measured"].is_object()) << j.dump(2);
  EXPECT_DOUBLE_EQ(j["measured"]["us"].get<double>(), 9.5);
  EXPECT_NEAR(j["measured"]["gbps"].get<double>(), 33570816 / 9.5e-6 / 1e9, 1e-6);
  EXPECT_NEAR(j["measured"]["share_of_ceiling"].get<double>(), 33570816 / 9.5e-6 / 1e9 / 4470, 1e-9);
  EXPECT_EQ(j["measured"]["source"], "given with --measured-us");
  EXPECT_EQ(j["measured"]["given"], true);
  EXPECT_FALSE(j.contains("measured_skipped"));
  EXPECT_EQ(j["limiter_basis"], "measured");
  EXPECT_EQ(j["model_largest_cost"], "launch and ramp");
  EXPECT_EQ(j["limiter"], "launch and ramp");
  EXPECT_TRUE(contains(j["verdict"].get<std::string>(), "launch and ramp: measured 79.1% of the read ceiling"))
      << j["verdict"];

  r = run(with("7.6"));  // 4417 GB/s, 98.8%: bandwidth
  ASSERT_EQ(r.status, 0) << r.err;
  j = Json::parse(r.out);
  EXPECT_EQ(j["limiter"], "bandwidth");
  EXPECT_EQ(j["limiter_basis"], "measured");
  EXPECT_TRUE(contains(j["verdict"].get<std::string>(), "bandwidth: measured 98.8% of the read ceiling"))
      << j["verdict"];

  // Without it (and no GPU) the model decides.
  r = run(base);
  ASSERT_EQ(r.status, 0) << r.err;
  j = Json::parse(r.out);
  if (!gpu_is_the_named_one()) {
    EXPECT_EQ(j["limiter_basis"], "model");
    EXPECT_EQ(j["limiter"], "bandwidth");
    EXPECT_NEAR(j["model_stream_share"].get<double>(), 0.859, 0.001);
  }

  // The text form: the measured row says where the time came from.
  r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config", "t128_r1_kw1_v16_u8_sk1_cs_pdl", "--db",
           db(), "--measured-us", "9.5"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "measured    9.50 us, 3534 GB/s, 79.1% of the read ceiling\n"
                              "              given with --measured-us\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "limited by  launch and ramp: measured 79.1% of the read ceiling")) << r.out;
  EXPECT_FALSE(contains(r.out, "measured time skipped")) << r.out;
  // One measured row: the given time's, no second one for a measurement not made.
  EXPECT_EQ(r.out.find("  measured "), r.out.rfind("  measured ")) << r.out;
}

// --measured-no-pdl-us: the PDL config's time without PDL, with --measured-us; what PDL saves
// decides launch and ramp, and the text says it.
TEST_F(CliExplain, NoPdlTimeDecidesLaunchAndRamp) {
  const std::vector<std::string> base = {"explain", "--shape", "4096x4096", "--batch", "16", "--gpu", kH200Key,
                                         "--config", "tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m16", "--db", db(),
                                         "--measured-us", "10.12"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  CliResult r = run(with({"--measured-no-pdl-us", "11.54", "--json"}));
  ASSERT_EQ(r.status, 0) << r.err;
  Json j = Json::parse(r.out);
  EXPECT_EQ(j["limiter"], "launch and ramp");
  EXPECT_NEAR(j["measured"]["no_pdl_us"].get<double>(), 11.54, 1e-12);
  EXPECT_NEAR(j["measured"]["pdl_saves_us"].get<double>(), 1.42, 1e-9);
  EXPECT_NEAR(j["measured"]["pdl_saving_share"].get<double>(), 1.42 / 11.54, 1e-9);
  // 6144x4096 at 82.8% of the ceiling: the model's largest cost is its launch term, but PDL
  // saving 8.1% rules launch and ramp out.
  const std::vector<std::string> qkv = {"explain", "--shape", "6144x4096", "--gpu", kH200Key, "--config",
                                        "t256_r1_kw1_v16_u8_sk1_cs_pdl", "--db", db(), "--measured-us", "13.6", "--json"};
  r = run(qkv);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["limiter"], "launch and ramp");
  std::vector<std::string> qkv_twin = qkv;
  qkv_twin.insert(qkv_twin.end(), {"--measured-no-pdl-us", "14.8"});
  r = run(qkv_twin);
  ASSERT_EQ(r.status, 0) << r.err;
  j = Json::parse(r.out);
  EXPECT_NE(j["limiter"], "launch and ramp");
  EXPECT_EQ(j["model_largest_cost"], "launch and ramp");
  EXPECT_TRUE(contains(j["verdict"].get<std::string>(),
                       "not launch and ramp, the model's largest cost: PDL hides 1.20 us (8.1%) of the 14.80 us call"))
      << j["verdict"];
  r = run(with({"--measured-no-pdl-us", "11.54"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "without PDL 11.54 us: PDL hides 1.42 us (12.3%) of launch, ramp and drain")) << r.out;
  EXPECT_TRUE(contains(r.out, "given with --measured-no-pdl-us")) << r.out;
  EXPECT_TRUE(contains(r.out, "limited by  launch and ramp: measured")) << r.out;
  // Refused with the reason: without --measured-us, for a config without PDL, not a time.
  r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config", "t128_r1_kw1_v16_u8_sk1_cs_pdl", "--db",
           db(), "--measured-no-pdl-us", "9.0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--measured-no-pdl-us goes with --measured-us")) << r.err;
  r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config", "t128_r1_kw1_v16_u8_sk1_cs", "--db", db(),
           "--measured-us", "9.0", "--measured-no-pdl-us", "9.5"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "has no PDL to go without")) << r.err;
  for (const char* bad : {"0", "-3", "nan", "x"}) {
    r = run(with({"--measured-no-pdl-us", bad}));
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_TRUE(contains(r.err, "--measured-no-pdl-us '" + std::string(bad) + "'")) << r.err;  // not --measured-us
  }
}

TEST_F(CliExplain, MeasuredUsMustBePositiveAndFinite) {
  const struct {
    std::vector<std::string> value;  // the option and its value, as typed
    const char* says;
  } bad[] = {{{"--measured-us", "0"}, "--measured-us '0' is not > 0"},
             {{"--measured-us=-2.5"}, "--measured-us '-2.5' is not > 0"},
             {{"--measured-us", "nan"}, "--measured-us 'nan' is not finite"},
             {{"--measured-us", "inf"}, "--measured-us 'inf' is not finite"},
             {{"--measured-us", "fast"}, "--measured-us 'fast' is not a number"},
             {{"--measured-us", "9.5us"}, "--measured-us '9.5us' is not a number"}};
  for (const auto& b : bad) {
    std::vector<std::string> args = {"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--config",
                                     "t128_r1_kw1_v16_u8_sk1_cs_pdl", "--db", db(), "--json"};
    args.insert(args.end(), b.value.begin(), b.value.end());
    const CliResult r = run(args);
    EXPECT_EQ(r.status, 2) << b.says;
    EXPECT_TRUE(contains(r.err, b.says)) << r.err;
    EXPECT_TRUE(contains(r.err, "microseconds per call")) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // A negative value as a separate word looks like an option to the parser: still exit 2 with a message.
  const CliResult r = run({"explain", "--shape", "4096x4096", "--gpu", kH200Key, "--db", db(), "--measured-us", "-1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "measured-us")) << r.err;
}

TEST_F(CliExplain, HelpDescribesMeasuredUs) {
  const CliResult r = run({"explain", "--help"});
  ASSERT_EQ(r.status, 0) << r.err;
  // The option descriptions wrap at any space: compare with runs of white space as one.
  std::string help;
  for (char ch : r.out)
    if (!std::isspace(static_cast<unsigned char>(ch)) || (!help.empty() && help.back() != ' '))
      help += std::isspace(static_cast<unsigned char>(ch)) ? ' ' : ch;
  for (const char* part : {"[--measured-us T [--measured-no-pdl-us T]]", "--measured-us arg microseconds per call of this config, measured elsewhere",
                           "a number > 0", "shown as the measured time, with its source, instead of measuring",
                           "it decides the limiter (bandwidth when the call reaches >= 85% of the read ceiling, else "
                           "the model's largest cost)",
                           "Works with --gpu, no GPU needed",
                           "--measured-no-pdl-us arg with --measured-us and a PDL config: microseconds per call of the "
                           "same config without PDL",
                           "named when PDL saves >= 10% of the no-PDL time, ruled out when it saves less",
                           "On a GPU explain times that twin itself"})
    EXPECT_TRUE(contains(help, part)) << part << "\n" << r.out;
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
