// Every 8-bit code through the tensor-core kernel's conversion (templates/gemv_tc.cu, tc8_half):
// int8, fp8 and fp8t weights into bf16 and fp16, bit for bit against the host's decoding. The
// float64 suites cannot see a conversion that is wrong only on rare codes (a subnormal e4m3
// flushed to zero moves a result by far less than their tolerance); this can. The probe kernel
// is appended to the generated source of a tensor-core config, so it converts with the code
// the GEMV compiles. NVRTC needs no GPU: the probes compile everywhere; they run where a GPU is.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/generator.hpp"
#include "gemvtune/weights.hpp"
#include "gpu_test_support.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/driver_api.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

namespace {
// Thread t converts codes 16 t .. 16 t + 15 (one lane's 16 bytes) into out[8 t .. 8 t + 7]: the
// two 8-element halves, element e of half s being code 16 t + 8 s + e.
const char* const kProbe = R"(
extern "C" __global__ void tc8_codes(unsigned* out) {
  const unsigned t = threadIdx.x;
  unsigned w[4];
  for (int q = 0; q < 4; ++q) {
    unsigned v = 0;
    for (int b = 0; b < 4; ++b) v |= (16 * t + 4 * q + b) << (8 * b);
    w[q] = v;
  }
  const uint4 v = make_uint4(w[0], w[1], w[2], w[3]);
  for (int s = 0; s < 2; ++s) {
    const uint4 h = tc8_half(v, s);
    out[8 * t + 4 * s] = h.x;
    out[8 * t + 4 * s + 1] = h.y;
    out[8 * t + 4 * s + 2] = h.z;
    out[8 * t + 4 * s + 3] = h.w;
  }
}
)";

struct Combo {
  DType dtype;
  WeightFormat weights;
};
const Combo kCombos[] = {{DType::bf16, WeightFormat::int8},       {DType::f16, WeightFormat::int8},
                         {DType::bf16, WeightFormat::fp8},        {DType::f16, WeightFormat::fp8},
                         {DType::bf16, WeightFormat::fp8_tensor}, {DType::f16, WeightFormat::fp8_tensor}};

std::string probe_source(const Combo& c) {
  return generate_source(parse_config("tc_t128_r1_kw4_v16_u2_sk1_cs_pdl"), c.dtype, c.weights) + kProbe;
}

std::string name(const Combo& c) { return std::string(to_string(c.weights)) + " -> " + std::string(to_string(c.dtype)); }

// The value of code c in the format (int8 two's complement, or e4m3; NaN for e4m3's 0x7F, 0xFF).
double code_value(WeightFormat w, int code) {
  return w == WeightFormat::int8 ? static_cast<double>(static_cast<std::int8_t>(code))
                                 : e4m3_to_double(static_cast<std::uint8_t>(code));
}

bool is_nan_bits(DType t, std::uint16_t bits) {
  return t == DType::bf16 ? (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) : (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF);
}
}  // namespace

TEST(TensorCoreConversion, ProbesCompileForEveryFormatAndDtype) {
  for (const Combo& c : kCombos)
    EXPECT_NO_THROW(jit::compile_kernel(probe_source(c), "tc8_codes", "sm_90")) << name(c);
}

TEST(TensorCoreConversionGpu, EveryEightBitCodeBitForBit) {
  GEMVTUNE_REQUIRE_GPU();
  jit::Context ctx(0);
  jit::Stream stream;
  for (const Combo& c : kCombos) {
    const jit::CompiledKernel k = jit::compile_kernel(probe_source(c), "tc8_codes", ctx.info().arch);
    const jit::Module module(k.cubin);
    const CUfunction f = module.function("tc8_codes");
    jit::DeviceBuffer out(256 * sizeof(std::uint16_t));
    out.fill_bytes(0xFF);  // NaN in both dtypes: an element never written fails below
    CUdeviceptr p = out.get();
    void* params[] = {&p};
    jit::cu_check(jit::driver().cuLaunchKernel(f, 1, 1, 1, 16, 1, 1, 0, stream.get(), params, nullptr),
                  "cuLaunchKernel");
    stream.synchronize();
    std::vector<std::uint16_t> bits(256);
    out.download(bits.data(), bits.size() * sizeof(std::uint16_t));
    int wrong = 0;
    for (int code = 0; code < 256; ++code) {
      const double v = code_value(c.weights, code);
      if (std::isnan(v)) {
        EXPECT_TRUE(is_nan_bits(c.dtype, bits[code])) << name(c) << " code " << code << ": not NaN";
        continue;
      }
      const std::uint16_t want = c.dtype == DType::bf16 ? float_to_bf16_bits(static_cast<float>(v))
                                                        : float_to_fp16_bits(static_cast<float>(v));
      if (bits[code] != want && ++wrong <= 4)
        ADD_FAILURE() << name(c) << " code 0x" << std::hex << code << ": got 0x" << bits[code] << ", want 0x"
                      << want << std::dec << " (" << v << ")";
    }
    EXPECT_EQ(wrong, 0) << name(c);
  }
}
