// The C API without a GPU: errors come back as statuses with a message, never as a crash.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cache/cache_test_util.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/gemvtune.h"
#include "gemvtune/generator.hpp"
#include "gpu_test_support.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/driver_api.hpp"
#include "tuner/device_problem.hpp"

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

gemvtune_problem problem(int64_t m, int64_t n, int64_t k, const char* dtype, const char* weights = nullptr) {
  gemvtune_problem p{};
  p.struct_size = sizeof p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.dtype = dtype;
  p.weights = weights;
  return p;
}

std::string last_error() { return gemvtune_last_error(); }

TEST(CApi, ProblemCheckAcceptsWhatThisBuildRuns) {
  gemvtune_problem p = problem(1, 4096, 4096, "bf16");
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
  p.m = 0;  // zero-filled means 1
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
  p.weights = "";
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
  p.weights = "bfloat16";  // an alias of the activation dtype is plain weights too
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
}

// Batch M is 1..16; quantized weight formats are accepted by name, an unknown format or a K
// that is not a multiple of an int4 group is refused with a message naming it.
TEST(CApi, BatchRangeAndQuantizedWeights) {
  gemvtune_problem p = problem(16, 4096, 4096, "bf16");
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
  p.m = 17;
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("outside 1..16"), std::string::npos) << last_error();
  p.m = -1;
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  for (const char* format : {"int8", "fp8", "fp8t", "int4g32", "int4g64", "int4g128"}) {
    p = problem(1, 4096, 4096, "bf16", format);
    EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << format << ": " << last_error();
  }
  p = problem(1, 4096, 4096, "bf16", "fp16");  // dense weights must be the activation dtype
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  p = problem(1, 4096, 4096, "bf16", "int3");
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("int4g128"), std::string::npos) << last_error();  // lists the names
  p = problem(1, 4096, 4000, "bf16", "int4g128");
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("multiple of the group size 128"), std::string::npos) << last_error();
  gemvtune_plan* plan = reinterpret_cast<gemvtune_plan*>(0x1);
  p = problem(17, 4096, 4096, "bf16");
  EXPECT_EQ(gemvtune_plan_create_ex(nullptr, &p, &plan), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(last_error().find("outside 1..16"), std::string::npos) << last_error();
  EXPECT_EQ(gemvtune_plan_batch(nullptr), 0);
}

TEST(CApi, StructSizeIsChecked) {
  gemvtune_problem p = problem(1, 8, 8, "bf16");
  p.struct_size = sizeof(size_t);
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("struct_size"), std::string::npos) << last_error();
  // A newer caller's larger struct: accepted when the fields this build does not know are zero.
  struct Newer {
    gemvtune_problem base;
    int64_t group_size;
  } newer{};
  newer.base = problem(1, 8, 8, "bf16");
  newer.base.struct_size = sizeof newer;
  EXPECT_EQ(gemvtune_problem_check(&newer.base), GEMVTUNE_OK) << last_error();
  newer.group_size = 128;
  EXPECT_EQ(gemvtune_problem_check(&newer.base), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("does not know"), std::string::npos) << last_error();
  EXPECT_EQ(gemvtune_problem_check(nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
}

// after_n x after_k (the call before, for gemvtune_tune): 0 x 0 is none, a shape is checked as
// a shape, and a caller built before the field (struct_size ending before it) still works.
TEST(CApi, ProblemAfterIsAShapeOrNothing) {
  gemvtune_problem p = problem(1, 6144, 4096, "bf16");
  p.after_n = 4096;
  p.after_k = 14336;
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
  p.after_k = 0;
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("after_n x after_k"), std::string::npos) << last_error();
  p.after_n = -1;
  p.after_k = 4096;
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  p.after_n = 7;  // whatever follows is no longer read
  p.struct_size = offsetof(gemvtune_problem, after_n);
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_OK) << last_error();
  p.struct_size = offsetof(gemvtune_problem, after_n) - 1;
  EXPECT_EQ(gemvtune_problem_check(&p), GEMVTUNE_ERROR_INVALID_ARGUMENT);
}

TEST(CApi, StructEntryPointsReportArgumentErrorsWithoutAGpu) {
  gemvtune_plan* plan = nullptr;
  gemvtune_problem p = problem(1, 8, 8, "bf16");
  EXPECT_EQ(gemvtune_plan_create_ex(nullptr, &p, nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemvtune_plan_create_ex(nullptr, &p, &plan), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("runtime is NULL"), std::string::npos) << last_error();
  gemvtune_operands o{};
  o.struct_size = sizeof o;
  EXPECT_EQ(gemvtune_plan_launch_ex(nullptr, &o, nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  gemvtune_runtime_options options{};
  options.struct_size = sizeof options;
  options.flags = 64;
  gemvtune_runtime* rt = nullptr;
  EXPECT_EQ(gemvtune_runtime_create_ex(&options, &rt), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("unknown flags"), std::string::npos) << last_error();
  options.flags = 0;
  options.device = -2;
  EXPECT_EQ(gemvtune_runtime_create_ex(&options, &rt), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  if (!gemvtune::jit::driver_available()) {
    options.device = 0;
    EXPECT_EQ(gemvtune_runtime_create_ex(&options, &rt), GEMVTUNE_ERROR_NO_GPU);
    EXPECT_EQ(gemvtune_runtime_create_ex(nullptr, &rt), GEMVTUNE_ERROR_NO_GPU);
    EXPECT_EQ(rt, nullptr);
  }
  EXPECT_STREQ(gemvtune_plan_source(nullptr), "");
  EXPECT_EQ(gemvtune_plan_stream_concurrent(nullptr), 0);
  EXPECT_STRNE(gemvtune_version(), "");
}

// The cache commands without a GPU: list, import, export and query (for a named GPU model)
// through the C API on a temporary cache; errors carry the CLI's messages.
TEST(CApi, CacheCommandsWithoutAGpu) {
  const std::string dir = ::testing::TempDir() + "gemvtune_c_api_cache";
  std::remove((dir + "/c.sqlite").c_str());
  std::string cmd = "mkdir -p '" + dir + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string db = dir + "/c.sqlite", doc_path = dir + "/in.json";
  char* json = reinterpret_cast<char*>(0x1);
  ASSERT_EQ(gemvtune_cache_list(db.c_str(), &json), GEMVTUNE_OK) << last_error();
  EXPECT_NE(std::string(json).find("\"tuned\": []"), std::string::npos) << json;
  gemvtune_free(json);

  EXPECT_EQ(gemvtune_cache_export(db.c_str(), nullptr, &json), GEMVTUNE_ERROR_CACHE);
  EXPECT_EQ(json, nullptr);
  EXPECT_NE(last_error().find("does not exist"), std::string::npos) << last_error();

  EXPECT_EQ(gemvtune_cache_import(db.c_str(), (dir + "/missing.json").c_str(), &json),
            GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("cannot open"), std::string::npos) << last_error();

  {
    FILE* f = std::fopen(doc_path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("{\"format\": \"gemvtune-cache\", \"format_version\": 1, \"tuned\": [], \"peaks\": []}", f);
    std::fclose(f);
  }
  ASSERT_EQ(gemvtune_cache_import(db.c_str(), doc_path.c_str(), &json), GEMVTUNE_OK) << last_error();
  EXPECT_NE(std::string(json).find("\"added\": 0"), std::string::npos) << json;
  gemvtune_free(json);
  ASSERT_EQ(gemvtune_cache_export(db.c_str(), nullptr, &json), GEMVTUNE_OK) << last_error();
  EXPECT_NE(std::string(json).find("gemvtune-cache"), std::string::npos) << json;
  gemvtune_free(json);

  gemvtune_problem p = problem(1, 4096, 4096, "bf16");
  ASSERT_EQ(gemvtune_query(db.c_str(), &p, 0, "NVIDIA H200/132sm/cc9.0", &json), GEMVTUNE_OK) << last_error();
  EXPECT_NE(std::string(json).find("\"source\": \"default\""), std::string::npos) << json;
  gemvtune_free(json);
  gemvtune_problem batch = problem(8, 4096, 4096, "bf16");
  ASSERT_EQ(gemvtune_query(db.c_str(), &batch, 0, "NVIDIA H200/132sm/cc9.0", &json), GEMVTUNE_OK) << last_error();
  EXPECT_NE(std::string(json).find("\"batch\": 8"), std::string::npos) << json;
  gemvtune_free(json);
  EXPECT_EQ(gemvtune_query(db.c_str(), &p, 0, "H200", &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("bad GPU 'H200'"), std::string::npos) << last_error();

  int64_t n = 0, k = 0;
  EXPECT_EQ(gemvtune_parse_shape("4096x14336", &n, &k), GEMVTUNE_OK);
  EXPECT_EQ(n, 4096);
  EXPECT_EQ(k, 14336);
  EXPECT_EQ(gemvtune_parse_shape("4096", &n, &k), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemvtune_find_preset("nope", &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("unknown preset 'nope'"), std::string::npos) << last_error();
  ASSERT_EQ(gemvtune_presets(&json), GEMVTUNE_OK);
  EXPECT_NE(std::string(json).find("llama-3.1-8b"), std::string::npos);
  gemvtune_free(json);

  gemvtune_tune_options options{};
  options.struct_size = sizeof options;
  options.db = db.c_str();
  options.strategy = "fast";
  EXPECT_EQ(gemvtune_tune(&p, 1, &options, &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("unknown strategy 'fast'"), std::string::npos) << last_error();
  options.strategy = nullptr;
  gemvtune_problem quantized = problem(1, 4096, 4000, "bf16", "int4g128");  // K not a multiple of 128
  EXPECT_EQ(gemvtune_tune(&quantized, 1, &options, &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(gemvtune_tune(&p, 0, &options, &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  if (!gemvtune::jit::driver_available()) {
    EXPECT_EQ(gemvtune_tune(&p, 1, &options, &json), GEMVTUNE_ERROR_NO_GPU);
    EXPECT_EQ(gemvtune_peak(db.c_str(), 0, &json), GEMVTUNE_ERROR_NO_GPU);
    int count = -1;
    EXPECT_EQ(gemvtune_device_count(&count), GEMVTUNE_ERROR_NO_GPU);
  }
  EXPECT_EQ(gemvtune_cache_list(db.c_str(), nullptr), GEMVTUNE_ERROR_INVALID_ARGUMENT);
}

std::string read_text(const std::string& path) {
  std::string text;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, got);
    std::fclose(f);
  }
  return text;
}

void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// gemvtune_cache_export writes as `gemvtune export --out` does (one writer): a symlink stays a
// symlink and its target gets the document, a regular file keeps its mode, a file the user
// named <out>.partial is not touched, and an out path in a missing directory is the caller's
// InvalidArgument, not an internal error. It renamed a fixed <out>.partial over anything.
// A cache path that is not UTF-8 (Linux paths are bytes) is answered, not failed after the
// import it reports on was done.
TEST(CApi, ExportWritesThroughSymlinksKeepsModesAndNonUtf8PathsAnswer) {
  const std::string dir = ::testing::TempDir() + "gemvtune_c_api_export";
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  const std::string db = dir + "/c.sqlite", doc = dir + "/in.json";
  write_text(doc, "{\"format\": \"gemvtune-cache\", \"format_version\": 1, \"tuned\": [], \"peaks\": []}");
  char* json = nullptr;
  ASSERT_EQ(gemvtune_cache_import(db.c_str(), doc.c_str(), &json), GEMVTUNE_OK) << last_error();
  gemvtune_free(json);
  ASSERT_EQ(gemvtune_cache_export(db.c_str(), nullptr, &json), GEMVTUNE_OK) << last_error();
  const std::string document = json;
  gemvtune_free(json);

  const std::string target = dir + "/target.json", link = dir + "/link.json";
  write_text(target, "keep me");
  ASSERT_EQ(::symlink("target.json", link.c_str()), 0);
  ASSERT_EQ(gemvtune_cache_export(db.c_str(), link.c_str(), &json), GEMVTUNE_OK) << last_error();
  gemvtune_free(json);
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the symlink became a plain file";
  EXPECT_EQ(read_text(target), document);

  const std::string private_file = dir + "/private.json", partial = private_file + ".partial";
  write_text(private_file, "secret");
  ASSERT_EQ(::chmod(private_file.c_str(), 0600), 0);
  write_text(partial, "the user's own file");
  ASSERT_EQ(gemvtune_cache_export(db.c_str(), private_file.c_str(), &json), GEMVTUNE_OK) << last_error();
  gemvtune_free(json);
  ASSERT_EQ(::stat(private_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(read_text(private_file), document);
  EXPECT_EQ(read_text(partial), "the user's own file");

  EXPECT_EQ(gemvtune_cache_export(db.c_str(), (dir + "/missing/x.json").c_str(), &json),
            GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("missing/x.json"), std::string::npos) << last_error();

  const std::string latin1 = dir + "/caf\xe9.sqlite";
  ASSERT_EQ(gemvtune_cache_import(latin1.c_str(), doc.c_str(), &json), GEMVTUNE_OK) << last_error();
  EXPECT_NE(std::string(json).find("caf\xef\xbf\xbd.sqlite"), std::string::npos) << json;  // U+FFFD
  gemvtune_free(json);
  ASSERT_EQ(gemvtune_cache_list(latin1.c_str(), &json), GEMVTUNE_OK) << last_error();
  gemvtune_free(json);
}

// gemvtune_fit: `fit --json` through the C API, without a GPU: nothing to fit is an invalid
// argument naming why; a cache with one GPU's measured candidates answers with its fit.
TEST(CApi, FitAnswersAsTheCliDoes) {
  const std::string dir = ::testing::TempDir() + "gemvtune_c_api_fit";
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  const std::string db = dir + "/c.sqlite";
  char* json = nullptr;
  EXPECT_EQ(gemvtune_fit(db.c_str(), nullptr, &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("no cache at"), std::string::npos) << last_error();
  {
    gemvtune::TuningCache cache(db, gemvtune::CacheMode::read_write);
    cache.store(gemvtune::cache_test::make_record(gemvtune::cache_test::make_key(
        4096, 4096, gemvtune::cache_test::h200(), gemvtune::DType::bf16, 1, gemvtune::template_version())));
  }
  ASSERT_EQ(gemvtune_fit(db.c_str(), nullptr, &json), GEMVTUNE_OK) << last_error();
  const std::string answer = json;
  gemvtune_free(json);
  EXPECT_NE(answer.find("\"gpu\": \"NVIDIA H200/132sm/cc9.0\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"constants\": ["), std::string::npos) << answer;
  EXPECT_EQ(gemvtune_fit(db.c_str(), "NVIDIA A100/108sm/cc8.0", &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("no measured candidates of NVIDIA A100"), std::string::npos) << last_error();
  EXPECT_EQ(gemvtune_fit(db.c_str(), "H200", &json), GEMVTUNE_ERROR_INVALID_ARGUMENT);
}

// The struct entry points on a GPU: a batch-4 plan from gemvtune_plan_create_ex launched
// through gemvtune_plan_launch_ex with padded strides of W, x and y, then 3 of its 4 rows,
// against the float64 reference.
TEST(CApiGpu, StructPlanAndLaunchAtBatch) {
  GEMVTUNE_REQUIRE_GPU();
  gemvtune::jit::Context hold(0);  // our buffers and stream live in the primary context
  const std::string dir = ::testing::TempDir() + "gemvtune_c_api_gpu";
  gemvtune_runtime_options options{};
  options.struct_size = sizeof options;
  const std::string cache = dir + "/none.sqlite";
  options.cache_path = cache.c_str();
  options.kernel_store_dir = "";  // no store: nothing written
  options.flags = GEMVTUNE_NO_SPLIT_K;
  gemvtune_runtime* rt = nullptr;
  ASSERT_EQ(gemvtune_runtime_create_ex(&options, &rt), GEMVTUNE_OK) << last_error();
  const int64_t n = 1000, k = 2048, ld = k + 8, ldx = k + 16, ldy = n + 4;
  gemvtune_problem p = problem(4, n, k, "bf16");
  gemvtune_plan* plan = nullptr;
  ASSERT_EQ(gemvtune_plan_create_ex(rt, &p, &plan), GEMVTUNE_OK) << last_error();
  EXPECT_EQ(gemvtune_plan_batch(plan), 4);
  EXPECT_EQ(gemvtune_plan_stream_concurrent(plan), 1);
  EXPECT_STRNE(gemvtune_plan_source(plan), "");
  gemvtune_runtime_destroy(rt);

  for (int rows : {4, 3}) {
    gemvtune::DeviceProblem dp(gemvtune::DType::bf16, {n, k}, ld, 5 + rows, 0, rows, ldx, ldy);
    gemvtune::jit::Stream stream;
    dp.poison_y();
    const auto op = dp.operands(0);
    gemvtune_operands o{};
    o.struct_size = sizeof o;
    o.w = op.w;
    o.x = op.x;
    o.y = op.y;
    o.ld = ld;
    o.ldx = ldx;
    o.ldy = ldy;
    o.m = rows == 4 ? 0 : rows;  // 0: the plan's batch
    ASSERT_EQ(gemvtune_plan_launch_ex(plan, &o, stream.get()), GEMVTUNE_OK) << last_error();
    stream.synchronize();
    const gemvtune::Comparison cmp = gemvtune::compare_output(dp.read_y(), dp.reference());
    EXPECT_TRUE(cmp.ok) << rows << " rows: " << cmp.describe();
    o.m = 5;
    EXPECT_EQ(gemvtune_plan_launch_ex(plan, &o, stream.get()), GEMVTUNE_ERROR_INVALID_ARGUMENT);
    o.m = rows;
    o.scales = op.w;
    EXPECT_EQ(gemvtune_plan_launch_ex(plan, &o, stream.get()), GEMVTUNE_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("scales and zeros"), std::string::npos) << last_error();
  }
  gemvtune_plan_destroy(plan);
}

}  // namespace
