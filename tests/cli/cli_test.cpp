// The gemvtune binary: argument errors exit 2 with a message naming the problem, --help exits
// 0 and lists the options, list/export/import/query work on a temporary cache without a GPU,
// and the GPU commands say in one line that there is none. With a GPU: tune then query.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/model.hpp"
#include "gpu_test_support.hpp"

using namespace gemvtune;
using namespace gemvtune::cli_test;
using cache_test::TempDir;
using Json = nlohmann::json;

namespace {

struct Cli : ::testing::Test {
  TempDir dir;
  CliResult run(const std::vector<std::string>& args) { return run_cli(args, dir.path()); }
  std::string db() const { return dir.file("cache.sqlite"); }

  // A cache with two tuned shapes of the current templates and one of old templates.
  void fill_cache() {
    TuningCache cache(db(), CacheMode::read_write);
    const GpuIdentity h200{"NVIDIA H200", 132, 9, 0};
    cache.store(cache_test::make_record(cache_test::make_key(4096, 4096, h200, DType::bf16, 1, template_version()),
                                        "t256_r2_kw2_v16_u2_sk1_cs_pdl", 8.33));
    cache.store(cache_test::make_record(cache_test::make_key(1024, 4096, h200, DType::bf16, 1, template_version()),
                                        "t64_r1_kw1_v16_u8_sk1_nc", 2.37));
    cache.store(cache_test::make_record(cache_test::make_key(4096, 14336, h200, DType::bf16, 1, "0123456789abcdef"),
                                        "t128_r2_kw1_v16_u4_sk1_cs", 26.5));
    PeakRecord p;
    p.gpu = h200;
    p.gbps = 4470;
    p.bytes = std::int64_t{4} << 30;
    cache.store_peak(p);
  }

  // A usage error: exit 2 and the message on stderr.
  void expect_usage_error(const std::vector<std::string>& args, const std::string& message) {
    const CliResult r = run(args);
    EXPECT_EQ(r.status, 2) << "stdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_TRUE(contains(r.err, message)) << "expected '" << message << "' in: " << r.err;
  }

  bool has_gpu() const { return jit::driver_available(); }
};
}  // namespace

TEST_F(Cli, NoCommandAndUnknownCommand) {
  expect_usage_error({}, "usage: gemvtune <command>");
  expect_usage_error({"frobnicate"}, "unknown command 'frobnicate'");
}

TEST_F(Cli, TopLevelHelpListsTheNewCommands) {
  const CliResult r = run({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* c : {"tune", "query", "list", "export", "import", "peak"}) EXPECT_TRUE(contains(r.out, c)) << c;
}

TEST_F(Cli, EveryCommandHasHelp) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> options = {
      {"tune", {"--shape", "--shapes", "--preset", "--list-presets", "--dtype", "--strategy", "--db", "--force",
                "--alone", "--devices", "--json"}},
      {"query", {"--shape", "--dtype", "--weights", "int4g128", "--db", "--device", "--gpu", "--json"}},
      {"list", {"--db", "--json"}},
      {"export", {"--db", "--out"}},
      {"import", {"--db", "FILE"}},
      {"peak", {"--db", "--device"}},
      {"fit", {"--db", "--gpu", "--json"}},
  };
  for (const auto& [command, expected] : options) {
    const CliResult r = run({command, "--help"});
    EXPECT_EQ(r.status, 0) << command;
    EXPECT_TRUE(contains(r.out, "usage: gemvtune " + command)) << r.out;
    for (const std::string& o : expected) EXPECT_TRUE(contains(r.out, o)) << command << " --help lacks " << o << ":\n" << r.out;
  }
}

TEST_F(Cli, TuneArgumentErrors) {
  expect_usage_error({"tune", "--shape", "4096y4096"}, "bad shape '4096y4096'");
  expect_usage_error({"tune", "--shape", "0x4096"}, "bad shape '0x4096'");
  expect_usage_error({"tune", "--shape", "64x64", "--dtype", "fp8"}, "unknown dtype 'fp8'");
  // Quantized problems are checked before any GPU is touched: the format's name and, for int4,
  // K against the group size.
  expect_usage_error({"tune", "--shape", "4096x4000", "--weights", "int4g128"},
                     "cannot tune 4096x4000 bf16 int4g128: int4g128 weights 4096x4000 (bf16 activations): K = 4000 is "
                     "not a multiple of the group size 128 of int4g128");
  expect_usage_error({"tune", "--shape", "4096x4096", "--weights", "int8,int5"}, "unknown weight format 'int5'");
  expect_usage_error({"bench", "--shape", "4096x4000", "--weights", "int4g64"},
                     "cannot bench 4096x4000 bf16 int4g64: int4g64 weights 4096x4000 (bf16 activations): K = 4000 is "
                     "not a multiple of the group size 64 of int4g64");
  expect_usage_error({"run", "--shape", "4096x4096", "--weights", "fp16"}, "dense fp16 but the activations are bf16");
  // query, explain and run check the layout first too: no default config printed for a problem
  // that cannot exist, no GPU asked for (this machine may have none), and run checks its --ld.
  expect_usage_error({"query", "--shape", "4096x4100", "--weights", "int4g128", "--gpu", "NVIDIA H200/132sm/cc9.0"},
                     "cannot query 4096x4100 bf16 int4g128: int4g128 weights 4096x4100 (bf16 activations): K = 4100 is "
                     "not a multiple of the group size 128 of int4g128");
  EXPECT_EQ(run({"query", "--shape", "4096x4100", "--weights", "int4g128", "--gpu", "NVIDIA H200/132sm/cc9.0"}).out, "");
  expect_usage_error({"explain", "--shape", "4096x4100", "--weights", "int4g32", "--gpu", "NVIDIA H200/132sm/cc9.0"},
                     "cannot explain 4096x4100 bf16 int4g32: int4g32 weights 4096x4100 (bf16 activations): K = 4100 is "
                     "not a multiple of the group size 32 of int4g32");
  // run's --config is checked before the GPU too (here, with none, it said "no CUDA driver").
  expect_usage_error({"run", "--shape", "4096x4096", "--config", "garbage"}, "bad config 'garbage'");
  expect_usage_error({"run", "--shape", "4096x4096", "--batch", "1,4", "--config", "t128_r1_kw1_v16_u8_sk1_cs"},
                     "m tile");
  expect_usage_error({"run", "--shape", "4096x4096", "--weights", "int4g128", "--ld", "4097"},
                     "cannot run 4096x4096 bf16 int4g128: int4g128 weights 4096x4096 (bf16 activations): ld = 4097 is odd");
  expect_usage_error({"emit", "tc_t128_r1_kw4_v16_u2_sk1_cs", "--weights", "int4g64"},
                     "the int4 tensor-core family takes int4g128 only");
  expect_usage_error({"emit", "t128_r1_kw4_v16_u2_sk1_cs_ring", "--weights", "int4g128"},
                     "int4g128 weights take no ring on CUDA cores");
  expect_usage_error({"tune", "--shape", "64x64", "--dtype", "bf16,int4"}, "unknown dtype 'int4'");
  expect_usage_error({"tune", "--shape", "64x64", "--strategy", "random"}, "unknown strategy 'random'");
  expect_usage_error({"tune", "--shapes", dir.file("missing.txt")}, "cannot open shape file");
  expect_usage_error({"tune", "--preset", "gpt-5"}, "unknown preset 'gpt-5'");
  expect_usage_error({"tune", "--shape", "64x64", "--devices", "0,x"}, "bad --devices '0,x'");
  expect_usage_error({"tune", "--shape", "64x64", "--devices", "1,1"}, "listed twice");
  expect_usage_error({"tune", "--bogus"}, "unrecognised option '--bogus'");
}

// A --db that cannot even be looked at (a name past NAME_MAX) gets the cache's own message from
// query and explain, as from list; they printed std::filesystem's exception text.
TEST_F(Cli, ACacheThatCannotBeStatedIsNamedByEveryReader) {
  const std::string db = ::testing::TempDir() + std::string(300, 'x') + "/c.sqlite";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"query", "--shape", "4096x4096", "--gpu", "NVIDIA H200/132sm/cc9.0", "--db", db},
        std::vector<std::string>{"explain", "--shape", "4096x4096", "--gpu", "NVIDIA H200/132sm/cc9.0", "--db", db},
        std::vector<std::string>{"list", "--db", db}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.status, 1) << args[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "cannot stat: File name too long")) << args[0] << ": " << r.err;
    EXPECT_FALSE(contains(r.err, "filesystem error")) << args[0] << ": " << r.err;
  }
}

// `fit`: the model refitted to the cache's measured candidates of one GPU, as a table and as
// JSON, without a GPU; what it cannot fit is a usage error naming why.
TEST_F(Cli, FitReportsTheModelAgainstTheCachesMeasurements) {
  expect_usage_error({"fit", "--db", db()}, "no cache at");
  fill_cache();
  const CliResult text = run({"fit", "--db", db()});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "model fit for NVIDIA H200/132sm/cc9.0: 4 measured candidates of 2 problems")) << text.out;
  for (const char* c : {"cuda_core_issue_share", "launch_us", "pdl_launch_us", "whole model", "picks over the best"})
    EXPECT_TRUE(contains(text.out, c)) << c << " missing:\n" << text.out;
  const CliResult js = run({"fit", "--db", db(), "--json"});
  ASSERT_EQ(js.status, 0) << js.err;
  const Json j = Json::parse(js.out);
  EXPECT_EQ(j["gpu"], "NVIDIA H200/132sm/cc9.0");
  EXPECT_EQ(j["rows"], 4);  // make_record: two passed candidates each, at this build's templates
  EXPECT_EQ(j["constants"].size(), 5u);
  EXPECT_TRUE(j["picks_over_best_shipped"].is_number());
  // Another GPU model in the cache: which one is for --gpu to say.
  {
    TuningCache cache(db(), CacheMode::read_write);
    cache.store(cache_test::make_record(
        cache_test::make_key(4096, 4096, GpuIdentity{"NVIDIA H100", 132, 9, 0}, DType::bf16, 1, template_version())));
  }
  expect_usage_error({"fit", "--db", db()}, "choose one with --gpu");
  EXPECT_EQ(run({"fit", "--db", db(), "--gpu", "NVIDIA H100/132sm/cc9.0"}).status, 0);
  expect_usage_error({"fit", "--db", db(), "--gpu", "NVIDIA A100/108sm/cc8.0"}, "no measured candidates of NVIDIA A100");
}

TEST_F(Cli, TuneShapeFileErrorNamesTheLine) {
  cache_test::write_bytes(dir.file("shapes.txt"), "# attention\n4096x4096\n\n4096x\n");
  expect_usage_error({"tune", "--shapes", dir.file("shapes.txt")}, dir.file("shapes.txt") + ":4: bad shape '4096x'");
}

TEST_F(Cli, TuneListsPresets) {
  const CliResult r = run({"tune", "--list-presets"});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "llama-3.1-8b (default)"));
  EXPECT_TRUE(contains(r.out, "128256x4096  lm_head  (after 4096x14336)"));  // the call before it in a decode step
  EXPECT_TRUE(contains(r.out, "6144x4096  qkv_proj (fused)  (after 4096x14336)"));
  EXPECT_TRUE(contains(r.out, "llama-3.1-70b"));
  EXPECT_TRUE(contains(r.out, "qwen2.5-7b"));
}

TEST_F(Cli, TuneWithoutGpuFailsInOneLine) {
  if (has_gpu()) GTEST_SKIP() << "this machine has a GPU";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tune", "--shape", "512x1024", "--db", db()}, {"tune", "--db", db()},
        {"tune", "--devices", "all", "--db", db()}, {"peak", "--db", db()}, {"query", "--shape", "64x64"}}) {
    const CliResult r = run(args);
    EXPECT_EQ(r.status, 1) << args[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "no CUDA driver") || contains(r.err, "no usable GPU")) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line, got:\n" << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db())) << "a failed tune must not create the cache";
}

TEST_F(Cli, ListOnAMissingCacheSaysNothingIsTuned) {
  const CliResult r = run({"list", "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "nothing tuned in " + db()));
  const CliResult j = run({"list", "--db", db(), "--json"});
  EXPECT_EQ(j.status, 0);
  EXPECT_TRUE(Json::parse(j.out)["tuned"].empty());
}

TEST_F(Cli, ListShowsEntriesAndMarksOldTemplates) {
  fill_cache();
  const CliResult r = run({"list", "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "3 tuned entries"));
  EXPECT_TRUE(contains(r.out, "t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  EXPECT_TRUE(contains(r.out, "8.33"));
  EXPECT_TRUE(contains(r.out, "0123456789abcdef (old)"));
  EXPECT_TRUE(contains(r.out, "read ceiling of NVIDIA H200/132sm/cc9.0: 4470 GB/s"));

  const Json j = Json::parse(run({"list", "--db", db(), "--json"}).out);
  ASSERT_EQ(j["tuned"].size(), 3u);
  EXPECT_EQ(j["tuned"][0]["gpu"]["name"], "NVIDIA H200");
  EXPECT_FALSE(j["tuned"][0].contains("candidates"));
  EXPECT_EQ(j["peaks"].size(), 1u);
}

TEST_F(Cli, ExportImportRoundTrip) {
  fill_cache();
  const CliResult exported = run({"export", "--db", db()});
  ASSERT_EQ(exported.status, 0) << exported.err;
  const Json doc = Json::parse(exported.out);
  EXPECT_EQ(doc["tuned"].size(), 3u);
  EXPECT_EQ(doc["tuned"][0]["candidates"].size(), 6u);

  ASSERT_EQ(run({"export", "--db", db(), "--out", dir.file("all.json")}).status, 0);
  EXPECT_EQ(Json::parse(cache_test::read_bytes(dir.file("all.json"))), doc);
  EXPECT_FALSE(std::filesystem::exists(dir.file("all.json.partial")));

  const std::string other = dir.file("other.sqlite");
  CliResult r = run({"import", dir.file("all.json"), "--db", other});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "3 added, 0 replaced, 0 kept; read ceilings: 1 added, 0 raised, 0 kept")) << r.out;
  r = run({"import", dir.file("all.json"), "--db", other});
  EXPECT_TRUE(contains(r.out, "0 added, 0 replaced, 3 kept; read ceilings: 0 added, 0 raised, 1 kept")) << r.out;
  EXPECT_EQ(Json::parse(run({"export", "--db", other}).out), doc);
  // A higher ceiling is merged and said: the summary read "0 added, 0 replaced, 0 kept" while
  // the stored ceiling, which sets every "% of ceiling", moved.
  Json higher = doc;
  higher["tuned"] = Json::array();
  higher["peaks"][0]["gbps"] = doc["peaks"][0]["gbps"].get<double>() + 100;
  cache_test::write_bytes(dir.file("higher.json"), higher.dump());
  r = run({"import", dir.file("higher.json"), "--db", other});
  EXPECT_TRUE(contains(r.out, "0 added, 0 replaced, 0 kept; read ceilings: 0 added, 1 raised, 0 kept")) << r.out;

  // stdin as the file.
  r = run_cli({"import", "-", "--db", dir.file("third.sqlite")}, dir.path(), {}, dir.file("all.json"));
  EXPECT_TRUE(contains(r.out, "3 added")) << r.out << r.err;
}

TEST_F(Cli, ImportAndExportErrors) {
  expect_usage_error({"import", "--db", db()}, "file");
  expect_usage_error({"import", dir.file("nope.json"), "--db", db()}, "cannot open '" + dir.file("nope.json") + "'");
  cache_test::write_bytes(dir.file("bad.json"), "{\"format\": \"gemvtune-cache\", ");
  const CliResult r = run({"import", dir.file("bad.json"), "--db", db()});
  EXPECT_EQ(r.status, 2);  // bad input, as for every other command
  EXPECT_TRUE(contains(r.err, "malformed JSON")) << r.err;
  const CliResult missing = run({"export", "--db", dir.file("none.sqlite")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_TRUE(contains(missing.err, dir.file("none.sqlite"))) << missing.err;
}

TEST_F(Cli, QueryExactNearestAndDefaultWithoutAGpu) {
  fill_cache();
  CliResult r = run({"query", "--shape", "4096x4096", "--gpu", kH200Key, "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "config  t256_r2_kw2_v16_u2_sk1_cs_pdl"));
  EXPECT_TRUE(contains(r.out, "source  exact"));
  EXPECT_TRUE(contains(r.out, "8.33 us"));

  r = run({"query", "--shape", "4096x5000", "--gpu", kH200Key, "--db", db()});
  EXPECT_TRUE(contains(r.out, "source  nearest 4096x4096")) << r.out;

  // Only an old-template entry for this shape, and another GPU: the model's default.
  r = run({"query", "--shape", "4096x14336", "--gpu", "NVIDIA H100 80GB HBM3/132sm/cc9.0", "--db", db()});
  EXPECT_TRUE(contains(r.out, "source  default (analytic model)")) << r.out;

  const Json j = Json::parse(run({"query", "--shape", "4096x4096", "--gpu", kH200Key, "--db", db(), "--json"}).out);
  EXPECT_EQ(j["source"], "exact");
  EXPECT_EQ(j["config"], "t256_r2_kw2_v16_u2_sk1_cs_pdl");
  EXPECT_EQ(j["record"]["time_us"], 8.33);
  EXPECT_EQ(j["template_version"], template_version());

  // No cache file at all: the default, and it says so.
  r = run({"query", "--shape", "4096x4096", "--gpu", kH200Key, "--db", dir.file("none.sqlite")});
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "default (analytic model) (no cache at")) << r.out;
}

// Where the shape's own rows (ld = K) are not 16-byte aligned, query says what the runtime
// launches in place of a 16-byte config: its aligned-body twin (misaligned_variant; the tensor
// cores' own at M > 1), in the text and as JSON's runs_as; null where the config runs as it is.
TEST_F(Cli, QuerySaysWhatRunsOnMisalignedRows) {
  // An entry of a plain tensor-core config for a misaligned shape (imported, or tuned by an
  // older build): it runs as its al twin, the tensor cores' own at M = 2.
  {
    TuningCache cache(db(), CacheMode::read_write);
    cache.store(cache_test::make_record(cache_test::make_key(4097, 4099, cache_test::h200(), DType::bf16, 2, template_version()),
                                        "tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m2", 14.0));
  }
  CliResult r = run({"query", "--shape", "4097x4099", "--batch", "2", "--gpu", kH200Key, "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "config  tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m2")) << r.out;
  EXPECT_TRUE(contains(r.out, "runs as tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m2 on rows of ld = K")) << r.out;
  EXPECT_FALSE(contains(r.out, "CUDA cores")) << r.out;  // its own al kernel, on tensor cores
  Json j = Json::parse(run({"query", "--shape", "4097x4099", "--batch", "2", "--gpu", kH200Key, "--db", db(), "--json"}).out);
  ASSERT_TRUE(j["runs_as"].is_string()) << j.dump();
  const KernelConfig twin = parse_config(j["runs_as"].get<std::string>());
  EXPECT_TRUE(twin.aligned_body);
  EXPECT_EQ(twin.family, Family::tensor_core);
  EXPECT_EQ(twin.m_tile, 2);

  // The default there is an al config itself (the tensor cores' at M > 1), so nothing runs in its place.
  const std::string none = dir.file("none.sqlite");
  j = Json::parse(run({"query", "--shape", "4097x4099", "--batch", "4", "--gpu", kH200Key, "--db", none, "--json"}).out);
  EXPECT_TRUE(j["runs_as"].is_null()) << j.dump();
  EXPECT_EQ(j["config"].get<std::string>().rfind("tc_", 0), 0u) << j.dump();
  EXPECT_TRUE(parse_config(j["config"].get<std::string>()).aligned_body) << j.dump();

  // Aligned rows, and misaligned ones whose default is an aligned-body config already: nothing.
  for (const char* shape : {"4096x4096", "4097x4099"}) {
    r = run({"query", "--shape", shape, "--gpu", kH200Key, "--db", none});
    EXPECT_FALSE(contains(r.out, "runs as")) << r.out;
    j = Json::parse(run({"query", "--shape", shape, "--gpu", kH200Key, "--db", none, "--json"}).out);
    EXPECT_TRUE(j["runs_as"].is_null()) << j.dump();
  }
}

TEST_F(Cli, QueryArgumentErrors) {
  expect_usage_error({"query"}, "--shape");
  expect_usage_error({"query", "--shape", "4096", "--gpu", kH200Key}, "bad shape '4096'");
  expect_usage_error({"query", "--shape", "64x64", "--dtype", "int8", "--gpu", kH200Key}, "unknown dtype 'int8'");
  expect_usage_error({"query", "--shape", "64x64", "--gpu", "H200"}, "bad --gpu 'H200'");
  expect_usage_error({"query", "--shape", "64x64", "--gpu", "H200/132/cc9.0"}, "bad --gpu");
  expect_usage_error({"query", "--shape", "64x64", "--gpu", kH200Key, "--device", "1"}, "not both");
  expect_usage_error({"query", "--shape", "64x64", "--gpu", kH200Key, "--weights", "foo"},
                     "bad --weights: unknown weight format 'foo' (expected one of dense, int8, fp8, fp8t, int4g32, "
                     "int4g64, int4g128, or the activation dtype bf16 for dense weights)");
  expect_usage_error({"query", "--shape", "64x64", "--gpu", kH200Key, "--weights", "fp16"},
                     "weights 'fp16' are dense fp16 but the activations are bf16");
  expect_usage_error({"query", "--shape", "64x64", "--gpu", kH200Key, "--weights", ""}, "unknown weight format ''");
}

// The weight format is part of the problem: a cache of dense entries answers a quantized query
// with the model's default (and says so), never with a dense entry; an entry of the format is
// used exactly.
TEST_F(Cli, QueryWeightsUsesOnlyEntriesOfThatFormat) {
  fill_cache();  // dense entries only
  CliResult r = run({"query", "--shape", "4096x4096", "--weights", "int4g128", "--gpu", kH200Key, "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "4096x4096 bf16 int4g128 on NVIDIA H200/132sm/cc9.0")) << r.out;
  EXPECT_TRUE(contains(r.out, "source  default (analytic model)\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "nothing tuned for int4g128 weights")) << r.out;
  EXPECT_FALSE(contains(r.out, "t256_r2_kw2_v16_u2_sk1_cs_pdl")) << "the dense entry was served:\n" << r.out;
  GpuModelParams model;
  model.sm_count = 132;
  model.read_ceiling_gbps = 4470;  // fill_cache's peak
  const std::string model_default =
      to_string(default_config(DType::bf16, {4096, 4096}, model, 1, WeightFormat::int4_g128));
  EXPECT_TRUE(contains(r.out, "config  " + model_default + "\n")) << r.out;

  Json j = Json::parse(run({"query", "--shape", "4096x4096", "--weights", "int4g128", "--gpu", kH200Key, "--db", db(),
                            "--json"}).out);
  EXPECT_EQ(j["weights"], "int4g128");
  EXPECT_EQ(j["source"], "default");
  EXPECT_EQ(j["source_text"], "default (analytic model)");
  EXPECT_EQ(j["config"], model_default);
  EXPECT_TRUE(j["record"].is_null());
  ASSERT_TRUE(j.contains("declined"));  // no nearest entry was declined: null
  EXPECT_TRUE(j["declined"].is_null());

  // Dense, by default or by name (or the activation dtype's name), still finds the dense entry.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{}, {"--weights", "dense"}, {"--weights", "bf16"}}) {
    std::vector<std::string> args = {"query", "--shape", "4096x4096", "--gpu", kH200Key, "--db", db(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    j = Json::parse(run(args).out);
    EXPECT_EQ(j["weights"], "dense");
    EXPECT_EQ(j["source"], "exact");
    EXPECT_EQ(j["config"], "t256_r2_kw2_v16_u2_sk1_cs_pdl");
    EXPECT_EQ(j["record"]["weights"], "dense");
  }

  // Once the format has an entry, it is used; the dense answer does not change.
  {
    TuningCache cache(db(), CacheMode::read_write);
    cache.store(cache_test::make_record(cache_test::make_key(4096, 4096, cache_test::h200(), DType::bf16, 1,
                                                             template_version(), WeightFormat::int4_g128),
                                        "t64_r1_kw1_v16_u8_sk1_nc", 3.25));
  }
  r = run({"query", "--shape", "4096x4096", "--weights", "int4g128", "--gpu", kH200Key, "--db", db()});
  EXPECT_TRUE(contains(r.out, "config  t64_r1_kw1_v16_u8_sk1_nc")) << r.out;
  EXPECT_TRUE(contains(r.out, "source  exact")) << r.out;
  EXPECT_TRUE(contains(r.out, "3.25 us")) << r.out;
  j = Json::parse(run({"query", "--shape", "4096x4096", "--gpu", kH200Key, "--db", db(), "--json"}).out);
  EXPECT_EQ(j["config"], "t256_r2_kw2_v16_u2_sk1_cs_pdl");
}

TEST_F(Cli, ListShowsTheWeightFormat) {
  fill_cache();
  {
    TuningCache cache(db(), CacheMode::read_write);
    cache.store(cache_test::make_record(cache_test::make_key(4096, 4096, cache_test::h200(), DType::bf16, 1,
                                                             template_version(), WeightFormat::int4_g128),
                                        "t64_r1_kw1_v16_u8_sk1_nc", 3.25));
  }
  const CliResult r = run({"list", "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "4 tuned entries")) << r.out;
  EXPECT_TRUE(contains(r.out, "dtype  weights")) << r.out;
  EXPECT_TRUE(contains(r.out, "bf16   int4g128")) << r.out;
  EXPECT_TRUE(contains(r.out, "bf16   dense")) << r.out;

  const Json j = Json::parse(run({"list", "--db", db(), "--json"}).out);
  ASSERT_EQ(j["tuned"].size(), 4u);
  int int4 = 0;
  for (const Json& e : j["tuned"]) {
    ASSERT_TRUE(e.contains("weights")) << e.dump();
    int4 += e["weights"] == "int4g128";
  }
  EXPECT_EQ(int4, 1);
}

// With a GPU: tune a small shape end to end into a temporary cache, then query it back.
TEST_F(Cli, TuneThenQueryOnAGpu) {
  GEMVTUNE_REQUIRE_GPU();
  CliResult r = run({"tune", "--shape", "512x1024", "--db", db(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Json tuned = Json::parse(r.out);
  ASSERT_EQ(tuned["shapes"].size(), 1u);
  const Json& shape = tuned["shapes"][0];
  EXPECT_EQ(shape["status"], "tuned");
  EXPECT_EQ(shape["strategy"], "model");
  EXPECT_LE(shape["measured"].get<double>(), 0.15 * shape["space"].get<double>());
  const std::string winner = shape["config"];

  r = run({"query", "--shape", "512x1024", "--db", db(), "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const Json q = Json::parse(r.out);
  EXPECT_EQ(q["source"], "exact");
  EXPECT_EQ(q["config"], winner);

  r = run({"tune", "--shape", "512x1024", "--db", db()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "512x1024 bf16: already tuned (" + winner)) << r.out;
  EXPECT_TRUE(contains(r.out, "nothing to do: all 1 shapes already tuned in " + db())) << r.out;
}
