// Dependent launches with PDL: each GEMV reads the previous one's output while, with PDL, the
// two kernels overlap. 40 back-to-back products y_{i+1} = W y_i in one CUDA graph must equal the
// same products launched one at a time with a synchronization between them (no overlap), bit
// for bit: the kernel is deterministic, so any difference means x was read too early.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gpu_test_support.hpp"
#include "jit/loaded_kernels.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

TEST(GemvChainGpu, PdlChainReadsEachInputAfterItIsWritten) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::LoadedKernels kernels(ctx);
  jit::Stream stream;
  const Shape s{4096, 4096};
  const int steps = 40;
  for (DType t : kAllDTypes) {
    GemvInputs in = random_inputs(t, s, s.k, 8);
    for (std::size_t j = 0; j < in.w.size(); ++j) in.w.set(j, in.w.get(j) * 0.027);  // ~sqrt(3/K)
    jit::DeviceBuffer w(in.w.bytes.size()), a(s.n * dtype_size(t)), b(s.n * dtype_size(t));
    w.upload(in.w.bytes.data(), in.w.bytes.size());
    for (const char* text : {"t128_r2_kw2_v16_u2_sk1_cs_pdl", "t256_r1_kw4_v16_u8_sk1_nc_pdl", "t64_r2_kw1_v16_u4_sk2_cs_pdl"}) {
      const KernelConfig c = parse_config(text);
      auto k = kernels.get(c, t);
      jit::SplitKWorkspace ws;
      ws.reserve(c, s);
      auto run = [&](bool graph) {
        a.upload(in.x.bytes.data(), in.x.bytes.size());
        if (graph) jit::CapturedGraph::begin_capture(stream.get());
        for (int i = 0; i < steps; ++i) {
          const bool even = i % 2 == 0;
          jit::launch_gemv(*k, c, {w.get(), even ? a.get() : b.get(), even ? b.get() : a.get(), s, s.k}, ws,
                           stream.get());
          if (!graph) stream.synchronize();
        }
        if (graph) {
          jit::CapturedGraph g = jit::CapturedGraph::end_capture(stream.get());
          g.replay(stream.get());
        }
        stream.synchronize();
        std::vector<unsigned char> out(a.bytes());
        a.download(out.data(), out.size());  // an even number of steps ends in a
        return out;
      };
      const auto serial = run(false), chained = run(true);
      EXPECT_EQ(std::memcmp(serial.data(), chained.data(), serial.size()), 0) << to_string(t) << " " << text;
      HostArray check(t, s.n);
      check.bytes.assign(chained.begin(), chained.end());
      for (std::size_t j = 0; j < check.size(); ++j) ASSERT_TRUE(std::isfinite(check.get(j))) << j;
    }
  }
}
