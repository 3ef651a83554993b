// KernelCache keeps an NVRTC compile error as the answer (the same source fails the same way)
// but not a failure that says nothing about the source: NVRTC out of memory. That one reached
// every later request for the kernel in the process, so a server's plan stayed broken after a
// transient failure although Runtime::plan promises a retry on the next call. Its own binary:
// it stands in for nvrtcCompileProgram (the real one through dlsym), which would touch every
// other test in a shared one.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <atomic>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "jit/kernel_cache.hpp"

namespace {
std::atomic<int> fail_next{0};  // calls still to fail with NVRTC_ERROR_OUT_OF_MEMORY
std::atomic<int> calls{0};
}  // namespace

extern "C" nvrtcResult nvrtcCompileProgram(nvrtcProgram program, int count, const char* const* options) {
  using Real = nvrtcResult (*)(nvrtcProgram, int, const char* const*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "nvrtcCompileProgram"));
  ++calls;
  if (fail_next > 0) {
    --fail_next;
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  return real(program, count, options);
}

namespace gemvtune {
namespace {

TEST(KernelCacheRetry, OutOfMemoryIsNotKeptACompileErrorIs) {
  auto& cache = jit::KernelCache::instance();
  const KernelConfig c = parse_config("t128_r2_kw4_v16_u4_sk1_cs_pdl");
  fail_next = 1;
  EXPECT_THROW(cache.get(c, DType::bf16, "sm_90"), Error);
  const auto kernel = cache.get(c, DType::bf16, "sm_90");  // compiled afresh
  EXPECT_FALSE(kernel->cubin.empty());
  EXPECT_EQ(calls.load(), 2);

  // An architecture NVRTC does not know: a CompileError, kept.
  EXPECT_THROW(cache.get(c, DType::bf16, "sm_1"), CompileError);
  EXPECT_THROW(cache.get(c, DType::bf16, "sm_1"), CompileError);
  EXPECT_EQ(calls.load(), 3) << "a CompileError is not compiled again";
}

}  // namespace
}  // namespace gemvtune
