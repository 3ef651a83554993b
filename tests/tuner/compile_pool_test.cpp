// CompilePool without a GPU (NVRTC only): kernels come back compiled, one compile per kernel
// however often it is asked for, failures reach the caller, and a pool with work still queued
// shuts down without hanging; idle requests too. Also the read-ceiling kernels compile, and the
// first round tune_on_devices queues before a context exists is the one the tune asks for.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/search_space.hpp"
#include "tuner/compile_pool.hpp"
#include "tuner/first_round.hpp"
#include "tuner/peak.hpp"

using namespace gemvtune;

TEST(CompilePool, CompilesWhatIsAskedFor) {
  CompilePool pool(2);
  const KernelConfig a = parse_config("t128_r1_kw1_v16_u2_sk1_cs");
  const KernelConfig b = parse_config("t256_r2_kw2_v16_u2_sk1_nc_pdl");
  auto fa = pool.request(a, DType::bf16, "sm_90");
  auto fb = pool.request(b, DType::f16, "sm_90");
  EXPECT_EQ(fa.get()->name, kernel_name(a, DType::bf16));
  EXPECT_EQ(fb.get()->name, kernel_name(b, DType::f16));
  EXPECT_FALSE(fa.get()->cubin.empty());
}

TEST(CompilePool, SplitKVariantsShareOneCompile) {
  CompilePool pool(1);
  auto f1 = pool.request(parse_config("t64_r1_kw1_v16_u1_sk1_cs"), DType::bf16, "sm_90");
  auto f3 = pool.request(parse_config("t64_r1_kw1_v16_u1_sk3_cs"), DType::bf16, "sm_90");
  EXPECT_EQ(f1.get().get(), f3.get().get());
}

TEST(CompilePool, FailuresReachTheCaller) {
  CompilePool pool(1);
  KernelConfig bad;
  bad.rows_per_warp = 3;  // not 1, 2, 4 or 8: the generator refuses it
  auto f = pool.request(bad, DType::bf16, "sm_90");
  EXPECT_THROW(f.get(), InvalidArgument);
  // An architecture NVRTC does not know: a CompileError with the log.
  auto g = pool.request(parse_config("t128_r1_kw1_v16_u2_sk1_cs"), DType::bf16, "sm_1");
  EXPECT_THROW(g.get(), CompileError);
}

// A CompileError is the answer for good (the same source fails the same way), so a config that
// does not compile is compiled once for all the jobs that ask; any other failure (NVRTC out of
// memory) is handed to those waiting and forgotten, so a later request compiles afresh instead
// of the config failing in every job that follows.
TEST(CompilePool, OnlyCompileErrorsAreKeptAsTheAnswer) {
  std::atomic<int> calls{0};
  const auto compile = [&](const KernelConfig& c, DType, WeightFormat, const std::string&) {
    const int call = calls++;
    if (c.unroll == 1) throw CompileError("NVRTC could not compile it", "log", "options");
    if (call == 0) throw std::bad_alloc();
    return std::make_shared<const jit::CompiledKernel>();
  };
  CompilePool pool(1, compile);
  const KernelConfig flaky = parse_config("t64_r1_kw1_v16_u2_sk1_cs");
  EXPECT_THROW(pool.request(flaky, DType::bf16, "sm_90").get(), std::bad_alloc);
  EXPECT_NO_THROW(pool.request(flaky, DType::bf16, "sm_90").get());
  EXPECT_EQ(calls.load(), 2);
  const KernelConfig broken = parse_config("t64_r1_kw1_v16_u1_sk1_cs");
  EXPECT_THROW(pool.request(broken, DType::bf16, "sm_90").get(), CompileError);
  EXPECT_THROW(pool.request(broken, DType::bf16, "sm_90").get(), CompileError);
  EXPECT_EQ(calls.load(), 3) << "a CompileError is not compiled again";
}

TEST(CompilePool, ShutsDownWithWorkQueued) {
  std::vector<CompilePool::Future> futures;
  {
    CompilePool pool(1);
    for (int unroll : {1, 2, 4, 8})
      for (int threads : {64, 128, 256}) {
        KernelConfig c;
        c.threads = threads;
        c.unroll = unroll;
        futures.push_back(pool.request(c, DType::f32, "sm_80"));
      }
  }  // must not wait for all twelve compiles
  int cancelled = 0;
  for (auto& f : futures) {
    try {
      f.get();
    } catch (const Error&) {
      ++cancelled;
    }
  }
  EXPECT_GT(cancelled, 0);
}

// request_when_idle: compiled when no request() waits; a request() of it later gets the same
// compile (promoted, not compiled twice), and a pool with such work queued shuts down.
TEST(CompilePool, IdleRequestsCompileAndArePromotedWhenAskedFor) {
  const KernelConfig a = parse_config("t64_r2_kw2_v16_u2_sk1_cs");
  const KernelConfig b = parse_config("t64_r4_kw1_v16_u1_sk2_cs");
  {
    CompilePool pool(1);
    pool.request_when_idle(a, DType::f16, "sm_90");
    pool.request_when_idle(b, DType::f16, "sm_90");
    pool.request_when_idle(a, DType::f16, "sm_90");  // once only
    auto fb = pool.request(b, DType::f16, "sm_90");
    auto fa = pool.request(a, DType::f16, "sm_90");
    EXPECT_EQ(fa.get()->name, kernel_name(a, DType::f16));
    EXPECT_EQ(fb.get()->name, kernel_name(b, DType::f16));
    EXPECT_EQ(pool.request(a, DType::f16, "sm_90").get().get(), fa.get().get());
  }
  {
    CompilePool pool(1);
    for (int unroll : {1, 2, 4, 8}) {
      KernelConfig c;
      c.unroll = unroll;
      pool.request_when_idle(c, DType::f32, "sm_80");
    }
  }  // must not wait for the four compiles, nor hang
}

// IdleOrder::first: ahead of the idle requests already queued (the leader's twins before the
// next job's first round), also for one queued before with IdleOrder::last; requested kernels
// still come before both. One thread, held on its first task until all are queued, with a
// stand-in compile that records the order.
TEST(CompilePool, IdleRequestsFirstGoAheadOfTheOtherIdleOnes) {
  std::mutex mutex;
  std::condition_variable queued_cv;
  bool queued = false;
  std::vector<std::string> order;
  const auto compile = [&](const KernelConfig& c, DType, WeightFormat, const std::string&) {
    std::unique_lock<std::mutex> lock(mutex);
    queued_cv.wait(lock, [&] { return queued; });
    order.push_back(to_string(c));
    return std::make_shared<const jit::CompiledKernel>();
  };
  const char* names[] = {"t64_r1_kw1_v16_u1_sk1_cs", "t64_r1_kw1_v16_u2_sk1_cs", "t64_r1_kw1_v16_u4_sk1_cs",
                         "t64_r1_kw1_v16_u8_sk1_cs", "t128_r1_kw1_v16_u1_sk1_cs", "t128_r1_kw1_v16_u2_sk1_cs"};
  std::vector<KernelConfig> k;
  for (const char* n : names) k.push_back(parse_config(n));
  using Order = CompilePool::IdleOrder;
  std::vector<CompilePool::Future> futures;
  {
    CompilePool pool(1, compile);
    futures.push_back(pool.request(k[0], DType::bf16, "sm_90"));  // the thread holds it
    futures.push_back(pool.request_when_idle(k[1], DType::bf16, "sm_90"));
    futures.push_back(pool.request_when_idle(k[2], DType::bf16, "sm_90"));
    futures.push_back(pool.request_when_idle(k[3], DType::bf16, "sm_90", WeightFormat::dense, Order::first));
    futures.push_back(pool.request_when_idle(k[2], DType::bf16, "sm_90", WeightFormat::dense, Order::first));
    futures.push_back(pool.request(k[4], DType::bf16, "sm_90"));
    futures.push_back(pool.request_when_idle(k[5], DType::bf16, "sm_90", WeightFormat::dense, Order::last));
    {
      std::lock_guard<std::mutex> lock(mutex);
      queued = true;
    }
    queued_cv.notify_all();
    for (auto& f : futures) f.get();
  }
  EXPECT_EQ(order, (std::vector<std::string>{names[0], names[4], names[2], names[3], names[1], names[5]}));
}

// The read-ceiling kernels are compiled at run time too: check they build and keep every entry
// point, without spilling.
TEST(PeakKernels, CompileForHopper) {
  const jit::CompiledKernel k = jit::compile_kernel(peak_kernel_source(), "gemvtune_peak", "sm_90");
  EXPECT_FALSE(k.cubin.empty());
  EXPECT_EQ(k.spill_store_bytes, 0) << k.log;
  EXPECT_EQ(k.stack_frame_bytes, 0) << k.log;  // from the cubin when the log lacks ptxas' report
  // Entry points are named in the cubin's symbol table (the log may lack ptxas' report).
  const std::string image(k.cubin.begin(), k.cubin.end());
  for (const PeakKernel& p : peak_kernels()) EXPECT_NE(image.find(p.name), std::string::npos) << p.name;
}

// The process compiles the peak program once an arch, whoever starts it (tune_on_devices early,
// measure_peak when it needs it): the same cubin comes back to every caller.
TEST(PeakKernels, ProgramCompiledOnceAProcess) {
  start_peak_program("sm_90");
  const auto a = peak_program("sm_90");
  const auto b = peak_program("sm_90");
  ASSERT_TRUE(a);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_FALSE(a->cubin.empty());
  EXPECT_THROW(peak_program("sm_1"), CompileError);  // no such arch: NVRTC's error, to each caller
  EXPECT_THROW(peak_program("sm_1"), CompileError);
}

// tune_on_devices queues the first job's first round before the device's context exists, from
// the GPU's identity and the cache's stored ceiling alone; Tuner::tune then asks the same pool
// for its first round, built by the same function from the same model, so nothing compiles
// twice. What the early round must be: the model strategy's first round of a small shape (16
// configs up to 1.5 MB), kernels of the job's space, none twice; nothing for a job that cannot
// run (its tune reports why).
TEST(FirstRound, KnownWithoutAContext) {
  const GpuIdentity h200{"NVIDIA H200", 132, 9, 0};
  TuneJob job;
  job.shape = {256, 2048};
  job.dtype = DType::bf16;
  const std::vector<KernelConfig> first = first_round_of(job, tuning_model(h200, std::nullopt));
  ASSERT_EQ(first.size(), 16u);
  const std::vector<KernelConfig> space = search_space_for(job.dtype, job.shape, 1);
  std::vector<std::string> names;
  for (const KernelConfig& c : first) {
    names.push_back(to_string(c));
    EXPECT_TRUE(std::any_of(space.begin(), space.end(), [&](const KernelConfig& s) { return to_string(s) == names.back(); }))
        << names.back();
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());

  // A stored ceiling changes the model the tune ranks with, and the early round follows it.
  EXPECT_EQ(tuning_model(h200, 4555.0).read_ceiling_gbps, 4555.0);
  EXPECT_EQ(tuning_model(h200, std::nullopt).sm_count, 132);
  EXPECT_FALSE(first_round_of(job, tuning_model(h200, 4555.0)).empty());

  TuneJob int4 = job;
  int4.shape = {256, 2000};  // K not a multiple of the group of 128
  int4.weights = WeightFormat::int4_g128;
  EXPECT_TRUE(first_round_of(int4, tuning_model(h200, std::nullopt)).empty());
}
