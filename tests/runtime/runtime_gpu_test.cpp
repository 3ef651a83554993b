// The runtime on a GPU: plans launched against the float64 reference (odd shapes, ld > K,
// ld that forces narrower loads), inside a CUDA graph, created once under 16 threads, reloaded
// from a warm kernel store with zero compiles, and the cost of a repeated plan() lookup.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "cache/cache_test_util.hpp"
#include "gemvtune/cache.hpp"
#include "gemvtune/gemvtune.h"
#include "gemvtune/generator.hpp"
#include "gemvtune/runtime.hpp"
#include "gpu_test_support.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/elf_image.hpp"
#include "runtime/kernel_store.hpp"
#include "tuner/device_problem.hpp"

namespace gemvtune {
namespace {
namespace fs = std::filesystem;

using cache_test::TempDir;

// A runtime over a cache file that does not exist (default configs) and its own kernel store.
RuntimeOptions fresh_options(const TempDir& tmp) {
  RuntimeOptions o;
  o.cache_path = (fs::path(tmp.path()) / "missing.sqlite").string();
  o.kernel_store_dir = (fs::path(tmp.path()) / "kernels").string();
  return o;
}

Comparison run_and_compare(const Plan& plan, std::int64_t ld, std::uint64_t seed) {
  DeviceProblem problem(plan.dtype(), plan.shape(), ld, seed, 0);
  jit::Stream stream;
  return verify_calls(
      [&](int copy, CUstream s) {
        const auto op = problem.operands(copy);
        plan.launch(op.w, op.x, op.y, s, op.ld);
      },
      problem, stream);
}

// Quantized plans (the model's default config of each format's space) launched through
// Plan::launch with packed weights, scales and zeros, at M = 1 and 3, against float64; a dense
// plan refuses scales, a quantized one refuses missing scales.
TEST(RuntimeGpu, QuantizedPlansMatchTheReference) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  jit::Stream stream;
  std::uint64_t seed = 500;
  for (WeightFormat w : kAllWeightFormats) {
    if (!is_quantized(w)) continue;
    for (int m : {1, 3}) {
      const Shape shape{300, 1024};
      auto plan = rt.plan(shape, DType::bf16, m, w);
      EXPECT_EQ(plan->weights(), w);
      DeviceProblem problem(DType::bf16, shape, shape.k, ++seed, 0, m, 0, 0, w);
      const Comparison cmp = verify_calls(
          [&](int copy, CUstream s) {
            const auto op = problem.operands(copy);
            Operands o;
            o.w = op.w;
            o.x = op.x;
            o.y = op.y;
            o.ld = op.ld;
            o.ldx = op.ldx;
            o.m = m;
            o.scales = op.scales;
            o.zeros = op.zeros;
            plan->launch(o, s);
          },
          problem, stream);
      EXPECT_TRUE(cmp.ok) << to_string(w) << " M=" << m << " " << to_string(plan->config()) << ": " << cmp.describe();
      Operands missing;
      missing.w = problem.operands(0).w;
      missing.x = problem.operands(0).x;
      missing.y = problem.operands(0).y;
      missing.ld = problem.operands(0).ld;
      missing.m = 1;
      EXPECT_THROW(plan->launch(missing, stream.get()), InvalidArgument) << to_string(w);
    }
  }
  auto dense = rt.plan({300, 1024}, DType::bf16);
  DeviceProblem problem(DType::bf16, {300, 1024}, 1024, 9, 0);
  Operands o;
  o.w = problem.operands(0).w;
  o.x = problem.operands(0).x;
  o.y = problem.operands(0).y;
  o.scales = problem.operands(0).w;
  EXPECT_THROW(dense->launch(o, stream.get()), InvalidArgument);
}

TEST(RuntimeGpu, PlansMatchTheReference) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  EXPECT_FALSE(rt.has_cache());
  struct Case {
    Shape shape;
    std::int64_t ld;
  };
  const Case cases[] = {{{1, 1}, 1},          {{7, 129}, 129},      {{1024, 4096}, 4096},
                        {{4097, 4099}, 4099}, {{300, 1000}, 1024},  // a slice of a wider matrix
                        {{513, 2048}, 2049}};  // odd ld: only element-wide loads are aligned
  std::uint64_t seed = 1;
  for (DType t : kAllDTypes)
    for (const Case& c : cases) {
      auto plan = rt.plan(c.shape, t);
      EXPECT_EQ(plan->source(), ConfigSource::model_default);
      // Misaligned operands never compile at launch: a 16-byte config's aligned-body variant
      // (al, 16-byte loads again) or every narrower width down to the element is prepared. An al
      // config (the default where rows are misaligned, 4097x4099) is its own variant.
      const std::vector<int> widths = plan->prepared_vec_bytes();
      ASSERT_FALSE(widths.empty());
      if (plan->config().aligned_body) EXPECT_EQ(widths, (std::vector<int>{16})) << to_string(plan->config());
      else if (plan->config().vec_bytes == 16) EXPECT_EQ(widths, (std::vector<int>{16, 16})) << to_string(plan->config());
      else EXPECT_EQ(widths.back(), static_cast<int>(dtype_size(t)));
      const Comparison cmp = run_and_compare(*plan, c.ld, ++seed);
      EXPECT_TRUE(cmp.ok) << to_string(t) << " " << to_string(c.shape) << " ld=" << c.ld << " "
                          << to_string(plan->config()) << ": " << cmp.describe();
    }
}

TEST(RuntimeGpu, BatchedPlansMatchTheReference) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  struct Case {
    Shape shape;
    int m;
    std::int64_t ld, ldx, ldy;
  };
  // Aligned strides (tensor cores for bf16/fp16 at M >= 8), padded ones, and ldx/ld that only
  // allow narrow loads (the plan's CUDA-core fallback).
  const Case cases[] = {{{1024, 4096}, 8, 4096, 4096, 1024}, {{300, 1000}, 3, 1024, 1032, 320},
                        {{4097, 4099}, 16, 4104, 4112, 4100}, {{513, 2048}, 13, 2049, 2051, 513},
                        {{64, 256}, 2, 256, 256, 64}};
  std::uint64_t seed = 50;
  for (DType t : kAllDTypes)
    for (const Case& c : cases) {
      auto plan = rt.plan(c.shape, t, c.m);
      EXPECT_EQ(plan->batch(), c.m);
      EXPECT_GE(plan->config().m_tile, c.m);
      for (int m : {c.m, 1}) {  // a plan runs any m up to its batch
        DeviceProblem problem(t, c.shape, c.ld, ++seed, 0, m, c.ldx, c.ldy);
        jit::Stream stream;
        const Comparison cmp = verify_calls(
            [&](int copy, CUstream s) {
              const auto op = problem.operands(copy);
              Operands args;
              args.w = op.w;
              args.x = op.x;
              args.y = op.y;
              args.ld = op.ld;
              args.ldx = op.ldx;
              args.ldy = op.ldy;
              args.m = m;
              plan->launch(args, s);
            },
            problem, stream);
        EXPECT_TRUE(cmp.ok) << to_string(t) << " M=" << m << " " << to_string(c.shape) << " "
                            << to_string(plan->config()) << ": " << cmp.describe();
      }
    }
  auto plan = rt.plan({1024, 4096}, DType::bf16, 4);
  Operands bad;
  bad.w = bad.x = bad.y = 256;
  bad.m = 5;
  EXPECT_THROW(plan->launch(bad, nullptr), InvalidArgument);  // more rows than the plan's batch
  bad.m = 2;
  bad.ldx = 100;  // below K
  EXPECT_THROW(plan->launch(bad, nullptr), InvalidArgument);
  EXPECT_THROW(rt.plan({1024, 4096}, DType::bf16, 17), InvalidArgument);
  EXPECT_THROW(rt.plan({1024, 4096}, DType::bf16, 0), InvalidArgument);
}

TEST(RuntimeGpu, BadOperandsThrowBeforeLaunching) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  auto plan = rt.plan({64, 256}, DType::bf16);
  DeviceProblem problem(DType::bf16, {64, 256}, 256, 7, 0);
  const auto op = problem.operands(0);
  EXPECT_THROW(plan->launch(op.w, op.x, op.y, nullptr, 255), InvalidArgument);  // ld < K
  EXPECT_THROW(plan->launch(0, op.x, op.y, nullptr), InvalidArgument);
  EXPECT_THROW(plan->launch(op.w, op.x + 1, op.y, nullptr), InvalidArgument);  // not element aligned
  EXPECT_THROW(rt.plan({0, 5}, DType::bf16), InvalidArgument);
}

TEST(RuntimeGpu, LaunchCapturedIntoAGraph) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  for (Shape s : {Shape{4096, 4096}, Shape{64, 14336}}) {  // the second likely splits K
    auto plan = rt.plan(s, DType::bf16);
    DeviceProblem problem(DType::bf16, s, s.k, 99, 0);
    jit::Stream stream;
    const auto op = problem.operands(0);
    jit::CapturedGraph::begin_capture(stream.get());
    plan->launch(op.w, op.x, op.y, stream.get());
    plan->launch(op.w, op.x, op.y, stream.get());  // twice: split-K tickets must reset
    jit::CapturedGraph graph = jit::CapturedGraph::end_capture(stream.get());
    for (int replay = 0; replay < 3; ++replay) {
      problem.poison_y();
      graph.replay(stream.get());
      stream.synchronize();
      const Comparison cmp = compare_output(problem.read_y(), problem.reference());
      EXPECT_TRUE(cmp.ok) << to_string(s) << " " << to_string(plan->config()) << " replay " << replay
                          << ": " << cmp.describe();
    }
  }
}

// An exact cache entry with a config nothing else in this process uses, so the KernelCache
// counter shows exactly the compiles of this one plan.
TEST(RuntimeGpu, SixteenThreadsCreateOnePlanOnce) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  const Shape shape{2048, 3072};
  const std::string config_text = "t256_r2_kw4_v8_u1_sk1_nc";
  RuntimeOptions options = fresh_options(tmp);
  options.cache_path = (fs::path(tmp.path()) / "tuned.sqlite").string();
  {
    TuningCache cache(options.cache_path, CacheMode::read_write);
    TuneRecord r;
    r.key.gpu = jit::read_gpu_info(0).id;
    r.key.shape = shape;
    r.key.dtype = DType::f16;
    r.key.template_version = template_version();
    r.config = config_text;
    r.time_us = 10;
    r.strategy = "exhaustive";
    cache.store(r);
  }
  Runtime rt(options);
  ASSERT_TRUE(rt.has_cache());
  const std::size_t compiles_before = jit::KernelCache::instance().compiles();
  std::atomic<bool> go{false};
  std::vector<std::shared_ptr<const Plan>> plans(16);
  std::vector<std::string> errors(16);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      while (!go.load()) std::this_thread::yield();
      try {
        plans[i] = rt.plan(shape, DType::f16);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  go = true;
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) {
    ASSERT_EQ(errors[i], "") << "thread " << i;
    EXPECT_EQ(plans[i], plans[0]) << "every thread gets the one plan";
  }
  EXPECT_EQ(plans[0]->source(), ConfigSource::exact);
  EXPECT_EQ(to_string(plans[0]->config()), config_text);
  EXPECT_EQ(plans[0]->prepared_vec_bytes(), (std::vector<int>{8, 4, 2}));
  EXPECT_EQ(rt.stats().plans_created, 1u);
  EXPECT_EQ(jit::KernelCache::instance().compiles() - compiles_before, 3u)
      << "one NVRTC compile per prepared width, not per thread";
  const Comparison cmp = run_and_compare(*plans[0], shape.k, 5);
  EXPECT_TRUE(cmp.ok) << cmp.describe();
}

TEST(RuntimeGpu, WarmKernelStoreMeansZeroCompiles) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  const Shape shapes[] = {{1000, 3000}, {77, 5000}, {8192, 128}};
  std::size_t kernels = 0;
  {
    Runtime first(fresh_options(tmp));
    for (Shape s : shapes) first.plan(s, DType::f32);
    EXPECT_EQ(first.stats().store_writes_failed, 0u);
    kernels = first.stats().kernels_from_store + first.stats().kernels_from_nvrtc + first.stats().kernels_from_process;
  }
  const std::size_t compiles_before = jit::KernelCache::instance().compiles();
  Runtime second(fresh_options(tmp));
  for (Shape s : shapes) {
    auto plan = second.plan(s, DType::f32);
    const Comparison cmp = run_and_compare(*plan, s.k, 11);
    EXPECT_TRUE(cmp.ok) << to_string(s) << ": " << cmp.describe();
  }
  EXPECT_EQ(jit::KernelCache::instance().compiles(), compiles_before);
  EXPECT_EQ(second.stats().kernels_from_nvrtc, 0u);
  EXPECT_EQ(second.stats().kernels_from_process, 0u);  // the store answers before the process cache
  EXPECT_EQ(second.stats().kernels_from_store, kernels);
}

TEST(RuntimeGpu, TruncatedStoreFileIsRecompiled) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  const Shape s{640, 2560};
  std::string path;
  {
    Runtime first(fresh_options(tmp));
    auto plan = first.plan(s, DType::bf16);
    runtime::KernelStore store(first.kernel_store_dir());
    path = store.path_of(kernel_name(plan->config(), DType::bf16), first.gpu().arch);
  }
  ASSERT_TRUE(fs::exists(path));
  fs::resize_file(path, fs::file_size(path) / 2);
  Runtime second(fresh_options(tmp));
  auto plan = second.plan(s, DType::bf16);
  EXPECT_EQ(second.stats().store_files_rejected, 1u);
  // Not from the store: compiled again, or found compiled by the first runtime in this process.
  EXPECT_GE(second.stats().kernels_from_nvrtc + second.stats().kernels_from_process, 1u);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(jit::is_complete_elf(bytes)) << "the recompiled cubin replaced the bad file";
  const Comparison cmp = run_and_compare(*plan, s.k, 3);
  EXPECT_TRUE(cmp.ok) << cmp.describe();
}

TEST(RuntimeGpu, RepeatedPlanLookupIsCheap) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  for (Shape s : {Shape{4096, 4096}, Shape{4096, 14336}, Shape{14336, 4096}}) rt.plan(s, DType::bf16);
  constexpr int kLookups = 100000;
  const auto start = std::chrono::steady_clock::now();
  std::size_t sink = 0;
  for (int i = 0; i < kLookups; ++i) sink += rt.plan({4096, 14336}, DType::bf16)->shape().n;
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                    kLookups;
  std::printf("repeated plan() lookup: %.1f ns\n", ns);
  EXPECT_EQ(sink, std::size_t{4096} * kLookups);
  EXPECT_LT(ns, 1000.0);
}

TEST(RuntimeGpu, CApiPlansAndLaunches) {
  GEMVTUNE_REQUIRE_GPU();
  // The test's own buffers and stream live in the primary context. Destroying the last plan
  // releases the runtime's hold on it; without a hold of our own the context would be
  // destroyed under the stream and buffers, whose destructors then touch freed driver state.
  jit::Context hold(0);
  TempDir tmp;
  const std::string cache = (fs::path(tmp.path()) / "c_api.sqlite").string();
  gemvtune_runtime* rt = nullptr;
  ASSERT_EQ(gemvtune_runtime_create(cache.c_str(), 0, &rt), GEMVTUNE_OK) << gemvtune_last_error();
  gemvtune_plan* plan = nullptr;
  ASSERT_EQ(gemvtune_plan_create(rt, 333, 1234, "fp16", &plan), GEMVTUNE_OK) << gemvtune_last_error();
  EXPECT_STRNE(gemvtune_plan_config(plan), "");
  gemvtune_plan* bad = nullptr;
  EXPECT_EQ(gemvtune_plan_create(rt, 333, 1234, "fp8", &bad), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  gemvtune_runtime_destroy(rt);  // the plan keeps what it needs
  DeviceProblem problem(DType::f16, {333, 1234}, 1234, 21, 0);
  jit::Stream stream;
  problem.poison_y();
  const auto op = problem.operands(0);
  EXPECT_EQ(gemvtune_plan_launch(plan, op.w, op.x, op.y, 0, stream.get()), GEMVTUNE_OK) << gemvtune_last_error();
  stream.synchronize();
  const Comparison cmp = compare_output(problem.read_y(), problem.reference());
  EXPECT_TRUE(cmp.ok) << cmp.describe();
  EXPECT_EQ(gemvtune_plan_launch(plan, op.w, op.x, op.y, 1, stream.get()), GEMVTUNE_ERROR_INVALID_ARGUMENT);
  gemvtune_plan_destroy(plan);
  EXPECT_FALSE(fs::exists(cache)) << "read-only runtime never creates the cache file";
  EXPECT_TRUE(fs::exists(cache + ".kernels")) << "default kernel store beside the cache path";
}

}  // namespace
}  // namespace gemvtune

namespace gemvtune {
namespace {

// Fused projections through the public API: a plan of the stacked shape launched over three
// segments (separate weights and outputs, one padded stride) equals three separate references;
// segments that do not stack to the plan's shape are refused.
TEST(RuntimeGpu, FusedLaunchMatchesSeparateReferences) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  RuntimeOptions options = fresh_options(tmp);
  for (bool pdl : {true, false}) {
    options.allow_pdl = pdl;
    Runtime rt(options);
    const std::int64_t k = 2048, rows[3] = {1024, 256, 256}, ld[3] = {2048, 2112, 2048};
    for (DType t : kAllDTypes) {
      std::vector<GemvInputs> in;
      std::vector<jit::DeviceBuffer> w, y;
      for (int i = 0; i < 3; ++i) {
        in.push_back(random_inputs(t, {rows[i], k}, ld[i], 50 + i));
        in[i].x = in[0].x;
        w.emplace_back(in[i].w.bytes.size());
        w[i].upload(in[i].w.bytes.data(), in[i].w.bytes.size());
        y.emplace_back(rows[i] * dtype_size(t));
        y[i].fill_bytes(0xff);
      }
      jit::DeviceBuffer x(in[0].x.bytes.size());
      x.upload(in[0].x.bytes.data(), in[0].x.bytes.size());
      auto plan = rt.plan({1536, k}, t);
      EXPECT_EQ(plan->config().pdl && !pdl, false);
      FusedSegment seg[3];
      for (int i = 0; i < 3; ++i) seg[i] = {w[i].get(), y[i].get(), rows[i], ld[i]};
      jit::Stream stream;
      plan->launch_fused(seg, 3, x.get(), stream.get());
      stream.synchronize();
      for (int i = 0; i < 3; ++i) {
        HostArray out(t, rows[i]);
        y[i].download(out.bytes.data(), out.bytes.size());
        const Comparison cmp = compare_output(out, reference_gemv(in[i]));
        EXPECT_TRUE(cmp.ok) << to_string(t) << " segment " << i << " " << to_string(plan->config()) << ": "
                            << cmp.describe();
      }
      seg[2].rows = 255;
      EXPECT_THROW(plan->launch_fused(seg, 3, x.get(), stream.get()), InvalidArgument);
    }
  }
}

// Fused segments of misaligned rows (K = 1001) at M = 4: the plan's default is the tensor cores'
// al kernel, whose warps read rows 128 R apart at one offset; segments that start on whole bands
// run it, and segments that start inside them (100 + 200 + 37 rows) run the CUDA-core al kernel
// the plan prepared for them. Both against separate references.
TEST(RuntimeGpu, FusedMisalignedSegmentsRunWhicheverAlignedBodyFits) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  Runtime rt(fresh_options(tmp));
  const std::int64_t k = 1001;
  const int m = 4;
  const DType t = DType::bf16;
  for (const std::vector<std::int64_t>& rows : {std::vector<std::int64_t>{512, 256, 37}, std::vector<std::int64_t>{100, 200, 37}}) {
    std::vector<GemvInputs> in;
    std::vector<jit::DeviceBuffer> w, y;
    std::int64_t n = 0;
    for (int i = 0; i < 3; ++i) {
      in.push_back(random_inputs(t, {rows[i], k}, k, 70 + i, m, k));
      if (i > 0) in[i].x = in[0].x;
      w.emplace_back(in[i].w.bytes.size());
      w[i].upload(in[i].w.bytes.data(), in[i].w.bytes.size());
      y.emplace_back(rows[i] * m * dtype_size(t));
      y[i].fill_bytes(0xff);
      n += rows[i];
    }
    jit::DeviceBuffer x(in[0].x.bytes.size());
    x.upload(in[0].x.bytes.data(), in[0].x.bytes.size());
    auto plan = rt.plan({n, k}, t, m);
    EXPECT_EQ(plan->config().family, Family::tensor_core) << to_string(plan->config());
    EXPECT_TRUE(plan->config().aligned_body) << to_string(plan->config());
    FusedSegment seg[3];
    for (int i = 0; i < 3; ++i) seg[i] = {w[i].get(), y[i].get(), rows[i], k};
    jit::Stream stream;
    plan->launch_fused(seg, 3, x.get(), stream.get());
    stream.synchronize();
    for (int i = 0; i < 3; ++i) {
      HostArray out(t, rows[i] * m);
      y[i].download(out.bytes.data(), out.bytes.size());
      const Comparison cmp = compare_output(out, reference_gemv(in[i]));
      EXPECT_TRUE(cmp.ok) << "rows " << rows[0] << "+" << rows[1] << "+" << rows[2] << " segment " << i << " "
                          << to_string(plan->config()) << ": " << cmp.describe();
    }
  }
}

// RuntimeOptions::allow_split_k = false: a tuned split-K config whose splits finish in a thread
// block cluster (sm_90) keeps its split and reserves no workspace, so the plan is safe on
// concurrent streams; one the cluster rules do not cover (a grid past 512 blocks) runs as one
// pass. Both match float64 when launched on two streams at once; a launch that needed the
// missing workspace would throw instead.
TEST(RuntimeGpu, WithoutSplitKWorkspaceClusterSplitsStay) {
  GEMVTUNE_REQUIRE_GPU();
  TempDir tmp;
  const std::string db = (fs::path(tmp.path()) / "tuned.sqlite").string();
  GpuInfo info;
  {
    jit::Context ctx(0);
    info = ctx.info();
  }
  struct Case {
    Shape shape;
    int m;
    const char* config;
    bool keeps_split;  // on sm_90 or later
  };
  const Case cases[] = {
      {{4096, 4096}, 8, "tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_m8", true},  // 128 row blocks x 2
      {{2048, 4096}, 1, "t128_r1_kw1_v16_u4_sk4_cs_pdl", false},       // 512 row blocks x 4
  };
  {
    TuningCache cache(db, CacheMode::read_write);
    for (const Case& c : cases)
      cache.store(cache_test::make_record(
          cache_test::make_key(c.shape.n, c.shape.k, info.id, DType::bf16, c.m, template_version()), c.config));
  }
  RuntimeOptions o;
  o.cache_path = db;
  o.kernel_store_dir = "";
  o.allow_split_k = false;
  Runtime rt(o);
  const bool clusters = info.id.cc_major >= 9;
  std::uint64_t seed = 300;
  for (const Case& c : cases) {
    auto plan = rt.plan(c.shape, DType::bf16, c.m);
    const bool split = c.keeps_split && clusters;
    EXPECT_EQ(plan->config().split_k > 1, split) << c.config << ": " << plan->source_text();
    EXPECT_NE(plan->source_text().find(split ? "split-K in clusters only" : "split-K disabled"), std::string::npos)
        << plan->source_text();
    EXPECT_TRUE(plan->stream_concurrent()) << c.config;
    DeviceProblem problem(DType::bf16, c.shape, c.shape.k, ++seed, 0, c.m);
    const auto op = problem.operands(0);
    jit::DeviceBuffer y2(static_cast<std::size_t>(c.m * c.shape.n) * 2);
    problem.poison_y();
    y2.fill_bytes(0xff);
    Operands args;
    args.w = op.w;
    args.x = op.x;
    args.y = op.y;
    args.m = c.m;
    Operands args2 = args;
    args2.y = y2.get();
    jit::Stream one, two;  // no order between them: the launches overlap
    for (int i = 0; i < 20; ++i) {
      plan->launch(args, one.get());
      plan->launch(args2, two.get());
    }
    one.synchronize();
    two.synchronize();
    HostArray out2(DType::bf16, c.m * c.shape.n);
    y2.download(out2.bytes.data(), out2.bytes.size());
    const Comparison cmp = compare_output(problem.read_y(), problem.reference());
    const Comparison cmp2 = compare_output(out2, problem.reference());
    EXPECT_TRUE(cmp2.ok) << c.config << " (second stream): " << cmp2.describe();
    EXPECT_TRUE(cmp.ok) << c.config << ": " << cmp.describe();
  }
}

}  // namespace
}  // namespace gemvtune
