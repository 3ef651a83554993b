// `gemvtune explain`'s numbers (tuner/explain.hpp) against hand calculations: grid, residency
// from a given register count, waves and the last wave, bytes in flight against Little's law,
// split-K's partials, and the verdict. No GPU; the cubin is given, not compiled.
#include <gtest/gtest.h>

#include "gemvtune/error.hpp"
#include "tuner/explain.hpp"

namespace gemvtune {
namespace {

const Shape k4096x4096{4096, 4096};
const Shape k1024x4096{1024, 4096};

KernelConfig cfg(const char* text) {
  const KernelConfig c = parse_config(text);
  EXPECT_FALSE(why_invalid(c).has_value()) << text << ": " << why_invalid(c).value_or("");
  return c;
}

// Little's law at the default ceiling and latency: 4470 GB/s / 132 SMs x 800 ns.
const double kNeededPerSm = 4470e9 / 132 * 800e-9;  // 27091 bytes

TEST(ExplainResidency, FromRegistersThreadsAndBlockSlots) {
  const GpuModelParams gpu;  // 2048 threads, 32 blocks per SM
  Residency r = resident_blocks_per_sm(128, 104, gpu);  // 104 x 128 = 13312 registers a block
  EXPECT_EQ(r.by_threads, 16);
  EXPECT_EQ(r.by_blocks, 32);
  EXPECT_EQ(r.by_registers, 4);  // 65536 / 13312 = 4.9
  EXPECT_EQ(r.blocks, 4);
  EXPECT_STREQ(r.limit, "registers");
  EXPECT_DOUBLE_EQ(r.occupancy, 0.25);

  r = resident_blocks_per_sm(128, 41, gpu);  // rounded up to 48 a thread: 65536 / 6144 = 10.7
  EXPECT_EQ(r.by_registers, 10);
  EXPECT_EQ(r.blocks, 10);
  EXPECT_DOUBLE_EQ(r.occupancy, 10 * 128 / 2048.0);

  r = resident_blocks_per_sm(256, 32, gpu);  // registers allow 8, threads 8
  EXPECT_EQ(r.blocks, 8);
  EXPECT_STREQ(r.limit, "threads");
  EXPECT_DOUBLE_EQ(r.occupancy, 1.0);

  r = resident_blocks_per_sm(32, 16, gpu);  // threads allow 64, block slots 32
  EXPECT_EQ(r.blocks, 32);
  EXPECT_STREQ(r.limit, "blocks");

  r = resident_blocks_per_sm(1024, 300, gpu);  // capped at 255 (256 allocated): a quarter block, still 1
  EXPECT_EQ(r.by_registers, 1);
  EXPECT_EQ(r.blocks, 1);
}

TEST(Explain, BandwidthBoundConfigAgainstHandNumbers) {
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl");
  const Explanation x = explain(c, DType::bf16, k4096x4096, 1, WeightFormat::dense, GpuModelParams{});
  // 4 warps of 1 row: 4 rows a block, 1024 row blocks, no split.
  EXPECT_EQ(x.block_rows, 4);
  EXPECT_EQ(x.row_blocks, 1024);
  EXPECT_EQ(x.blocks, 1024);
  // Model's registers: 40 + (1 + 1) x 8 loads x 16 bytes / 4 = 104 -> 4 blocks per SM.
  EXPECT_DOUBLE_EQ(x.model.registers, 104);
  EXPECT_EQ(x.model_residency.blocks, 4);
  EXPECT_EQ(x.resident_per_sm, 4);
  EXPECT_EQ(x.wave_slots, 528);
  EXPECT_DOUBLE_EQ(x.waves, 1024.0 / 528);
  EXPECT_EQ(x.wave_count, 2);
  EXPECT_EQ(x.last_wave_blocks, 1024 - 528);
  EXPECT_DOUBLE_EQ(x.last_wave_fill, 496.0 / 528);
  EXPECT_DOUBLE_EQ(x.model.waves, x.waves);
  // A warp: 32 lanes x 16 bytes x 1 row x 8 loads = 4096 bytes; 4 blocks x 4 warps per SM.
  EXPECT_DOUBLE_EQ(x.model.warp_bytes, 4096);
  EXPECT_DOUBLE_EQ(x.in_flight_per_sm, 65536);
  EXPECT_NEAR(x.needed_per_sm, kNeededPerSm, 1e-6);
  EXPECT_EQ(x.split_partial_bytes, 0);
  EXPECT_EQ(x.split_us, 0);
  // Time: PDL launch 1.2 us + 32 MiB at the ceiling, balance 0.85 + 0.15 x 1.94 / 2.
  const double balance = 0.85 + 0.15 * (1024.0 / 528) / 2;
  const double transfer = 2.0 * 4096 * 4096 / (4470e9 * balance) * 1e6;
  EXPECT_NEAR(x.model.transfer_us, transfer, 1e-9);
  EXPECT_NEAR(x.predicted_us, 1.2 + transfer, 1e-9);
  // The stream at the ceiling, 7.51 us, is 86% of the 8.74 us predicted: bandwidth (>= 85%).
  const double ideal = 2.0 * 4096 * 4096 / 4470e9 * 1e6;
  EXPECT_NEAR(ideal / x.predicted_us, 0.859, 0.001);
  EXPECT_NE(x.verdict.find("86% of the 8.74 us"), std::string::npos) << x.verdict;
  EXPECT_NEAR(x.predicted_us, estimate(c, DType::bf16, k4096x4096, GpuModelParams{}).time_us, 1e-12);
  EXPECT_NEAR(x.moved_bytes, 2.0 * 4096 * 4096 + 2.0 * (4096 + 4096), 1e-6);
  EXPECT_EQ(x.limiter, Limiter::bandwidth) << x.verdict;
  EXPECT_NE(x.verdict.find("bandwidth"), std::string::npos);
  EXPECT_FALSE(x.cubin_residency.has_value());
}

TEST(Explain, CubinRegistersSetTheResidencyAndWaves) {
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl");
  KernelResources k;
  k.registers = 40;  // 40 x 128 = 5120 a block: 12 blocks per SM
  const Explanation x = explain(c, DType::bf16, k4096x4096, 1, WeightFormat::dense, GpuModelParams{}, k);
  ASSERT_TRUE(x.cubin_residency.has_value());
  EXPECT_EQ(x.cubin_residency->blocks, 12);
  EXPECT_EQ(x.resident_per_sm, 12);
  EXPECT_EQ(x.wave_slots, 12 * 132);
  EXPECT_EQ(x.wave_count, 1);
  EXPECT_EQ(x.last_wave_blocks, 1024);
  EXPECT_DOUBLE_EQ(x.last_wave_fill, 1024.0 / 1584);
  // All 1024 / 132 = 7.76 blocks of an SM resident at once: 7.76 x 4 warps x 4096 bytes.
  ASSERT_TRUE(x.cubin_in_flight_per_sm.has_value());
  EXPECT_NEAR(*x.cubin_in_flight_per_sm, 1024.0 / 132 * 4 * 4096, 1e-6);
  // The model's own numbers do not change with the cubin.
  EXPECT_DOUBLE_EQ(x.in_flight_per_sm, 65536);
  EXPECT_EQ(x.model_residency.blocks, 4);
}

TEST(Explain, TooFewBlocksIsTheGrid) {
  // 8 warps of 4 rows: 32 rows a block, 1024 rows -> 32 blocks on 132 SMs.
  const KernelConfig c = cfg("t256_r4_kw1_v16_u2_sk1_cs");
  const Explanation x = explain(c, DType::bf16, k1024x4096, 1, WeightFormat::dense, GpuModelParams{});
  EXPECT_EQ(x.block_rows, 32);
  EXPECT_EQ(x.blocks, 32);
  // Registers 40 + 5 x 2 x 16 / 4 = 80: 3 blocks of 256 threads per SM.
  EXPECT_EQ(x.model_residency.blocks, 3);
  EXPECT_DOUBLE_EQ(x.waves, 32.0 / (3 * 132));
  EXPECT_EQ(x.wave_count, 1);
  EXPECT_EQ(x.last_wave_blocks, 32);
  EXPECT_DOUBLE_EQ(x.model.balance, 32.0 / 132);
  // Less than one block per SM counts as one: 8 warps x (32 x 16 x 4 rows x 2 loads).
  EXPECT_DOUBLE_EQ(x.in_flight_per_sm, 8 * 4096.0);
  EXPECT_EQ(x.limiter, Limiter::grid) << x.verdict;
  EXPECT_NE(x.verdict.find("32 blocks on 132 SMs leave 100 SMs idle"), std::string::npos) << x.verdict;
}

TEST(Explain, OneLoadPerWarpMissesLittlesLaw) {
  const KernelConfig c = cfg("t128_r1_kw1_v16_u1_sk1_cs_pdl");
  const Explanation x = explain(c, DType::bf16, k4096x4096, 1, WeightFormat::dense, GpuModelParams{});
  // Registers 40 + 2 x 1 x 4 = 48: 10 blocks per SM, all 7.76 of an SM's blocks resident.
  EXPECT_EQ(x.model_residency.blocks, 10);
  EXPECT_DOUBLE_EQ(x.model.warp_bytes, 512);
  EXPECT_NEAR(x.in_flight_per_sm, 1024.0 / 132 * 4 * 512, 1e-6);  // 15.9 KB of 27.1 KB
  EXPECT_EQ(x.limiter, Limiter::bytes_in_flight) << x.verdict;
  EXPECT_NE(x.verdict.find("15.5 KB per SM of the 26.5 KB"), std::string::npos) << x.verdict;
  // The model's rate: in flight / latency per SM.
  EXPECT_NEAR(x.model.sm_gbps, x.in_flight_per_sm / 800e-9 / 1e9, 1e-9);
}

TEST(Explain, SmallShapeWithoutPdlIsLaunchAndRamp) {
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs");
  const Explanation x = explain(c, DType::bf16, k1024x4096, 1, WeightFormat::dense, GpuModelParams{});
  EXPECT_EQ(x.blocks, 256);
  EXPECT_DOUBLE_EQ(x.model.launch_us, 2.8);
  EXPECT_DOUBLE_EQ(x.model.balance, (256.0 / 132) / 2);
  EXPECT_NEAR(x.model.transfer_us, 2.0 * 1024 * 4096 / (4470e9 * x.model.balance) * 1e6, 1e-9);
  EXPECT_EQ(x.limiter, Limiter::launch) << x.verdict;
}

TEST(Explain, WithPdlTheLaunchStillLimitsASmallShape) {
  // 1024x4096 bf16 is 8.4 MB: 1.88 us at the ceiling, 1.94 us with 256 blocks' balance, plus
  // 1.2 us of launch with PDL: the stream is 60% of the time and the launch the largest loss.
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl");
  const Explanation x = explain(c, DType::bf16, k1024x4096, 1, WeightFormat::dense, GpuModelParams{});
  const double ideal = 2.0 * 1024 * 4096 / 4470e9 * 1e6;
  EXPECT_NEAR(x.predicted_us, 1.2 + ideal / ((256.0 / 132) / 2), 1e-9);
  EXPECT_LT(ideal / x.predicted_us, 0.85);
  EXPECT_EQ(x.limiter, Limiter::launch) << x.verdict;
}

TEST(Explain, SplitKPartialsAndFixUpAsTheModelCountsThem) {
  const KernelConfig c = cfg("t128_r1_kw1_v16_u4_sk4_cs_pdl");
  const Shape s{4096, 14336};
  const Explanation x = explain(c, DType::bf16, s, 1, WeightFormat::dense, GpuModelParams{});
  EXPECT_EQ(x.row_blocks, 1024);
  EXPECT_EQ(x.blocks, 4096);
  EXPECT_DOUBLE_EQ(x.split_partial_bytes, 4.0 * 4 * 4096);  // fp32, 4 splits, M 1
  EXPECT_NEAR(x.split_us, 0.8 + 0.5 * 3 + 0.04 * 3 * x.model.stream_us, 1e-12);
  EXPECT_NEAR(x.predicted_us, 1.2 + x.model.stream_us + x.split_us, 1e-12);
  // 0.8 + 1.5 + 12% of the stream: the largest of the losses, and the call is under 85% of the
  // stream at the ceiling.
  EXPECT_GT(x.split_us, 1.2);
  EXPECT_LT(2.0 * 4096 * 14336 / 4470e9 * 1e6 / x.predicted_us, 0.85);
  EXPECT_EQ(x.limiter, Limiter::split_k) << x.verdict;
}

TEST(Explain, RefusesAConfigInvalidForTheShape) {
  // m tile 1 at M = 4.
  EXPECT_THROW(explain(cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl"), DType::bf16, k4096x4096, 4, WeightFormat::dense,
                       GpuModelParams{}),
               InvalidArgument);
}

}  // namespace
}  // namespace gemvtune
