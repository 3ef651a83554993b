// Model presets, shape files (comments, blank lines, errors naming the line) and strategy names.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "cache/cache_test_util.hpp"
#include "gemvtune/presets.hpp"
#include "gemvtune/tuner.hpp"
#include "gemvtune/weights.hpp"

using namespace gemvtune;

namespace {
std::vector<std::string> shape_texts(const Preset& p) {
  std::vector<std::string> out;
  for (const PresetShape& s : p.shapes) out.push_back(to_string(s.shape));
  return out;
}

std::string error_of(const std::string& text) {
  std::istringstream in(text);
  try {
    parse_shape_list(in, "shapes.txt");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST(Presets, Llama31_8B) {
  const Preset& p = find_preset("llama-3.1-8b");
  EXPECT_EQ(shape_texts(p), (std::vector<std::string>{"4096x4096", "1024x4096", "6144x4096", "14336x4096",
                                                        "28672x4096", "4096x14336", "128256x4096"}));
  EXPECT_EQ(p.shapes[0].layers, "q_proj, o_proj");
}

// Each decoder preset shape names the GEMV before it in one decode step, a shape of the same
// preset: the fused chain qkv -> o -> gate_up -> down -> (next layer's) qkv, lm_head after down;
// unfused k/v after q and gate/up after o. tune ranks finalists right after it (TuneJob::after).
TEST(Presets, DecoderShapesNameTheCallBeforeThemInADecodeStep) {
  const Preset& p = find_preset("llama-3.1-8b");
  std::vector<std::string> after;
  for (const PresetShape& s : p.shapes) after.push_back(s.after ? to_string(*s.after) : "-");
  // q_proj and o_proj share 4096x4096: o_proj's place in the fused chain (after qkv) wins.
  EXPECT_EQ(after, (std::vector<std::string>{"6144x4096", "4096x4096", "4096x14336", "4096x4096", "4096x4096",
                                              "28672x4096", "4096x14336"}));
  for (const char* name : {"llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b"}) {
    const Preset& q = find_preset(name);
    for (const PresetShape& s : q.shapes) {
      ASSERT_TRUE(s.after) << name << " " << to_string(s.shape);
      EXPECT_TRUE(std::any_of(q.shapes.begin(), q.shapes.end(), [&](const PresetShape& o) { return o.shape == *s.after; }))
          << name << ": " << to_string(s.shape) << " runs after " << to_string(*s.after) << ", not a shape of the preset";
    }
  }
  for (const PresetShape& s : find_preset("families").shapes) EXPECT_FALSE(s.after) << to_string(s.shape);
}

// tune_order: the largest free job first, a job after the job of the call before it, except where a
// decode step's cycle has to start somewhere (the largest shape of the cycle).
TEST(Presets, TuneOrderPutsEachJobAfterTheCallBeforeIt) {
  const Preset& p = find_preset("llama-3.1-8b");
  std::vector<TuneJob> jobs;
  for (const PresetShape& s : p.shapes)
    for (int m : {1, 8}) jobs.push_back(TuneJob{s.shape, DType::bf16, m, WeightFormat::dense, s.after});
  jobs.push_back(TuneJob{Shape{4096, 4096}, DType::f16});  // no `after`: only its size places it
  std::vector<std::size_t> all(jobs.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<std::size_t> order = tune_order(jobs, all);
  ASSERT_EQ(order.size(), jobs.size());
  EXPECT_TRUE(std::is_permutation(order.begin(), order.end(), all.begin()));
  std::vector<std::string> seq;
  for (std::size_t j : order) seq.push_back(to_string(jobs[j]));
  // The job without `after` is free from the start; then every job waits for another, and the
  // decode step's 4-cycle starts at its largest shape (28672x4096); the rest follow their
  // neighbours, the largest free one first, and a shape's M stay together (one problem,
  // re-batched).
  EXPECT_EQ(seq, (std::vector<std::string>{
                     "4096x4096 fp16", "28672x4096 bf16", "8x28672x4096 bf16", "4096x14336 bf16",
                     "8x4096x14336 bf16", "128256x4096 bf16", "8x128256x4096 bf16", "6144x4096 bf16",
                     "8x6144x4096 bf16", "4096x4096 bf16", "8x4096x4096 bf16", "14336x4096 bf16",
                     "8x14336x4096 bf16", "1024x4096 bf16", "8x1024x4096 bf16"}));
  // Without `after` the order is the size order.
  for (TuneJob& j : jobs) j.after.reset();
  const std::vector<std::size_t> plain = tune_order(jobs, all);
  for (std::size_t i = 1; i < plain.size(); ++i)
    EXPECT_GE(jobs[plain[i - 1]].shape.n * jobs[plain[i - 1]].shape.k * dtype_size(jobs[plain[i - 1]].dtype),
              jobs[plain[i]].shape.n * jobs[plain[i]].shape.k * dtype_size(jobs[plain[i]].dtype));
}

// jobs_to_compile_ahead: a sole device queues every job left with its first take and nothing
// later; devices sharing a queue queue the next job at each take.
TEST(Presets, JobsToCompileAheadAllOnASoleDeviceTheNextWhenShared) {
  const std::vector<std::size_t> left{4, 2, 7};
  EXPECT_EQ(jobs_to_compile_ahead(left, 1, true), left);
  EXPECT_TRUE(jobs_to_compile_ahead(left, 1, false).empty());
  EXPECT_EQ(jobs_to_compile_ahead(left, 2, true), (std::vector<std::size_t>{4}));
  EXPECT_EQ(jobs_to_compile_ahead(left, 3, false), (std::vector<std::size_t>{4}));
  EXPECT_TRUE(jobs_to_compile_ahead({}, 2, false).empty());
  EXPECT_TRUE(jobs_to_compile_ahead({}, 1, true).empty());
}

TEST(Presets, Llama31_70B) {
  EXPECT_EQ(shape_texts(find_preset("llama-3.1-70b")),
            (std::vector<std::string>{"8192x8192", "1024x8192", "10240x8192", "28672x8192", "57344x8192",
                                      "8192x28672", "128256x8192"}));
}

TEST(Presets, Qwen25_7B) {
  // 28 heads x 128 = 3584 = hidden, so q and o share a shape again.
  EXPECT_EQ(shape_texts(find_preset("qwen2.5-7b")),
            (std::vector<std::string>{"3584x3584", "512x3584", "4608x3584", "18944x3584", "37888x3584",
                                      "3584x18944", "152064x3584"}));
}

TEST(Presets, FamiliesSweepsOtherModelsAndTails) {
  const Preset& p = find_preset("families");
  EXPECT_EQ(shape_texts(p),
            (std::vector<std::string>{"4608x3584", "512x3584", "3584x18944", "11008x4096", "4096x11008",
                                      "32000x4096", "1280x8192", "8192x1024", "7168x8192", "8192x3584",
                                      "32x8192", "4096x4093", "4097x4099", "50257x768", "3x4096", "256x2048",
                                      "14336x3584", "3584x4096", "256000x3584", "9216x3072", "3072x8192",
                                      "16x14336", "8x4096", "11008x4095", "128x896"}));
  // What the bars need: K not a multiple of 8 (one of about 33 MB with K = 3 mod 8),
  // few rows with K about 8192, shapes of at most 1 MiB in bf16 and a wide range of N and K.
  int misaligned = 0, few_rows_long_k = 0, small = 0;
  bool k3_33mb = false;
  std::int64_t min_n = p.shapes[0].shape.n, max_n = 0, min_k = p.shapes[0].shape.k, max_k = 0;
  for (const PresetShape& s : p.shapes) {
    const auto [n, k] = s.shape;
    const std::int64_t bytes = n * k * 2;
    misaligned += k % 8 != 0;
    k3_33mb |= k % 8 == 3 && bytes > 30'000'000 && bytes < 36'000'000;
    few_rows_long_k += n < 64 && k >= 8192;
    small += bytes <= (1 << 20);
    min_n = std::min(min_n, n), max_n = std::max(max_n, n), min_k = std::min(min_k, k), max_k = std::max(max_k, k);
    EXPECT_FALSE(s.layers.empty()) << to_string(s.shape);
    // Valid as bf16 weights for tune and bench (the dense layout accepts any K).
    EXPECT_NO_THROW(check_weight_layout(WeightFormat::dense, DType::bf16, n, k, k)) << to_string(s.shape);
  }
  EXPECT_GE(misaligned, 3);
  EXPECT_TRUE(k3_33mb);
  EXPECT_GE(few_rows_long_k, 2);
  EXPECT_GE(small, 4);
  EXPECT_LE(min_n, 8);
  EXPECT_GE(max_n, 100000);
  EXPECT_LE(min_k, 1024);
  EXPECT_GE(max_k, 16384);
  EXPECT_GE(p.shapes.size(), 16u);  // gpu_session.sh familysweep times the first 16 on their own
}

TEST(Presets, EveryPresetHasDistinctValidShapes) {
  for (const Preset& p : presets()) {
    std::set<std::string> seen;
    for (const PresetShape& s : p.shapes) {
      EXPECT_NO_THROW(check_shape(s.shape)) << p.name;
      EXPECT_TRUE(seen.insert(to_string(s.shape)).second) << p.name << " lists " << to_string(s.shape) << " twice";
    }
  }
}

TEST(Presets, UnknownPresetListsTheKnownOnes) {
  try {
    find_preset("llama-9");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'llama-9'"), std::string::npos) << what;
    EXPECT_NE(what.find("llama-3.1-8b"), std::string::npos) << what;
  }
}

TEST(ShapeFile, CommentsBlankLinesAndSpaces) {
  std::istringstream in("# Llama attention\n4096x4096\n\n  1024x4096   # k and v\r\n\t\n128256X4096\n#end");
  const std::vector<Shape> shapes = parse_shape_list(in, "f");
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0], (Shape{4096, 4096}));
  EXPECT_EQ(shapes[1], (Shape{1024, 4096}));
  EXPECT_EQ(shapes[2], (Shape{128256, 4096}));
}

// A byte order mark opens the file as Windows editors save it (CRLF was taken, the BOM made
// line 1 a bad shape that looked valid); a BOM or control byte elsewhere is named as \xNN.
TEST(ShapeFile, ALeadingByteOrderMarkIsSkippedAndStrayBytesAreShown) {
  std::istringstream in("\xEF\xBB\xBF" "4096x14336\r\n1024x4096\r\n");
  EXPECT_EQ(parse_shape_list(in, "f"), (std::vector<Shape>{{4096, 14336}, {1024, 4096}}));
  EXPECT_NE(error_of("4096x4096\n\xEF\xBB\xBF" "1024x4096\n").find("shapes.txt:2: bad shape '\\xEF\\xBB\\xBF1024x4096'"),
            std::string::npos)
      << error_of("4096x4096\n\xEF\xBB\xBF" "1024x4096\n");
  EXPECT_NE(error_of(std::string("40\x01" "96x4096\n")).find("bad shape '40\\x0196x4096'"), std::string::npos)
      << error_of("40\x01" "96x4096\n");
}

TEST(ShapeFile, EmptyFileGivesNoShapes) {
  std::istringstream in("# nothing yet\n\n");
  EXPECT_TRUE(parse_shape_list(in, "f").empty());
}

TEST(ShapeFile, MalformedLinesNameTheLine) {
  EXPECT_NE(error_of("4096x4096\n# ok\n4096x\n").find("shapes.txt:3: bad shape '4096x'"), std::string::npos)
      << error_of("4096x4096\n# ok\n4096x\n");
  EXPECT_NE(error_of("4096 4096\n").find("shapes.txt:1:"), std::string::npos);
  EXPECT_NE(error_of("1x1\n0x5\n").find("shapes.txt:2:"), std::string::npos);
  EXPECT_NE(error_of("4096x4096 1024x4096\n").find("shapes.txt:1:"), std::string::npos);
}

TEST(ShapeFile, MissingFileIsNamed) {
  try {
    read_shape_file("/nonexistent/shapes.txt");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/shapes.txt"), std::string::npos);
  }
}

TEST(ShapeFile, ReadsAFile) {
  cache_test::TempDir dir;
  cache_test::write_bytes(dir.file("s.txt"), "4096x14336\n2x3 # tiny\n");
  EXPECT_EQ(read_shape_file(dir.file("s.txt")), (std::vector<Shape>{{4096, 14336}, {2, 3}}));
}

TEST(StrategyNames, RoundTripAndRefusal) {
  EXPECT_EQ(parse_strategy("model"), Strategy::model);
  EXPECT_EQ(parse_strategy("exhaustive"), Strategy::exhaustive);
  EXPECT_EQ(to_string(Strategy::model), "model");
  EXPECT_EQ(to_string(Strategy::exhaustive), "exhaustive");
  EXPECT_THROW(parse_strategy("Model"), InvalidArgument);
  EXPECT_THROW(parse_strategy("random"), InvalidArgument);
}

TEST(PlannedMeasurements, ModelIsFifteenPercentExhaustiveIsAll) {
  const TuneJob job{{4096, 4096}, DType::bf16};
  const std::size_t space = planned_measurements(Strategy::exhaustive, job);
  EXPECT_GT(space, 500u);
  EXPECT_EQ(planned_measurements(Strategy::model, job), space * 15 / 100);
}
