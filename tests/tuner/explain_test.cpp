// `gemvtune explain`'s numbers (tuner/explain.hpp) against hand calculations: grid, residency
// from a given register count, waves and the last wave, bytes in flight against Little's law,
// split-K's partials, the verdict, and the limiter rule with a measured time (choose_limiter,
// --measured-us's parsing). No GPU; the cubin is given, not compiled.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

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

TEST(ExplainResidency, FromSharedMemory) {
  const GpuModelParams gpu;  // 228 KB of shared memory per SM
  // The int4 tensor-core config tc_t64_r2_kw2_u2 at m = 1: its cubin's .nv.shared section is
  // 32848 bytes (31824 of variables, as ptxas reports them, and the 1 KB sm_90 reserves).
  Residency r = resident_blocks_per_sm(64, 108, gpu, 32848);
  EXPECT_EQ(r.by_registers, 9);  // 65536 / (112 x 64)
  EXPECT_EQ(r.by_shared, 7);     // 233472 / 32848 = 7.1
  EXPECT_EQ(r.blocks, 7);
  EXPECT_STREQ(r.limit, "shared memory");
  EXPECT_DOUBLE_EQ(r.occupancy, 7 * 64 / 2048.0);
  // Without shared memory the registers bind, and by_shared says there is no such limit.
  r = resident_blocks_per_sm(64, 108, gpu);
  EXPECT_EQ(r.by_shared, 0);
  EXPECT_EQ(r.blocks, 9);
  EXPECT_STREQ(r.limit, "registers");
  // The model charges the same ring: 2 warps x 2 tiles x (3 stages x 2 KB + 512) + x staged for
  // 16 chunks (5184) + the finish's flag + the 1 KB reserve (static_shared_bytes).
  const Explanation x = explain(cfg("tc_t64_r2_kw2_v16_u2_sk1_cs_pdl_ring"), DType::bf16, Shape{28672, 4096}, 1,
                                WeightFormat::int4_g128, gpu);
  EXPECT_DOUBLE_EQ(x.model.shared_bytes, 2 * 2 * (3 * 2048 + 512) + 5184 + 4 + 1024);
  EXPECT_EQ(x.model_residency.by_shared, 7);
  EXPECT_EQ(x.model_residency.blocks, 7);
  EXPECT_DOUBLE_EQ(x.model.resident_per_sm, 7);
  // Its register-load twin (no ring) at m = 2 (templates/gemv_tc.cu) holds only the finish's
  // fragments (2 warps x 2 tiles x 512 bytes) and flag: 75 such blocks would fit, so registers
  // bind.
  const Explanation y = explain(cfg("tc_t64_r2_kw2_v16_u2_sk1_cs_pdl_m2"), DType::bf16, Shape{28672, 4096}, 2,
                                WeightFormat::int4_g128, gpu);
  EXPECT_DOUBLE_EQ(y.model.shared_bytes, 2 * 2 * 512 + 4 + 1024);
  EXPECT_EQ(y.model_residency.by_shared, 75);
  EXPECT_EQ(y.model_residency.blocks, y.model_residency.by_registers);
  // At m = 1 the register loads are templates/gemv_q4l.cu's, which stages x for 32 chunks
  // (32 x 324 bytes) and keeps 512 bytes a warp and tile for the finish, its flag, plus the 1 KB
  // reserve.
  const Explanation z = explain(cfg("tc_t64_r1_kw2_v16_u2_sk1_cs_pdl"), DType::bf16, Shape{28672, 4096}, 1,
                                WeightFormat::int4_g128, gpu);
  EXPECT_DOUBLE_EQ(z.model.shared_bytes, 32 * 324 + 512 * 2 + 4 + 1024);
  EXPECT_EQ(z.model.registers, 26 + 32 + 36 * 2);
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

TEST(Explain, OneWaveWithUnevenSMsIsTheGridNotPastAWave) {
  // Two 16-row tiles a warp, 4 warps along K: 32 rows a block, 6144 rows -> 192 blocks, every
  // one resident at once (3 an SM by the model's registers): 60 SMs hold two, 72 one. The H200
  // ran this grid in 14.03 us at M = 8 (sweeps/h200_batch_4852aee_pdl.csv); the verdict must not
  // speak of a wave it does not have.
  const KernelConfig c = cfg("tc_t128_r2_kw4_v16_u4_sk1_cs_pdl_m8");
  const Explanation x = explain(c, DType::bf16, Shape{6144, 4096}, 8, WeightFormat::dense, GpuModelParams{});
  EXPECT_EQ(x.blocks, 192);
  EXPECT_EQ(x.wave_count, 1);
  EXPECT_LT(x.waves, 1.0);
  EXPECT_EQ(x.limiter, Limiter::grid) << x.verdict;
  EXPECT_NE(x.verdict.find("192 blocks in one wave: the busiest SMs hold 2 of them against 1.45 an SM on average"),
            std::string::npos)
      << x.verdict;
  EXPECT_EQ(x.verdict.find("past one wave"), std::string::npos) << x.verdict;
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

// kw4 u8 on K = 4096: 16 chunks of 256 elements a row, 4 a warp, one trip of 8 loads: half the
// loads repeat (2.1x the best on the H200, 32000x4096). The model counts them as loads, and
// explain names them as the cost, apart from the stream at the ceiling.
TEST(Explain, ATripLongerThanTheWarpsShareOfARowRepeatsLoads) {
  const Shape s{32000, 4096};
  const Explanation half = explain(cfg("t128_r1_kw4_v16_u8_sk1_cs_pdl"), DType::bf16, s, 1, WeightFormat::dense, GpuModelParams{});
  EXPECT_DOUBLE_EQ(half.model.issued_loads, 2.0);
  EXPECT_TRUE(half.model.short_trip);
  EXPECT_NEAR(half.costs.repeated_loads, half.model.transfer_us / 2, 1e-9);
  EXPECT_EQ(half.limiter, Limiter::repeated_loads) << half.verdict;
  EXPECT_NE(half.verdict.find("100% more loads"), std::string::npos) << half.verdict;
  // The same knobs at unroll 4 fill the trip: nothing repeats.
  const Explanation whole = explain(cfg("t128_r1_kw4_v16_u4_sk1_cs_pdl"), DType::bf16, s, 1, WeightFormat::dense, GpuModelParams{});
  EXPECT_DOUBLE_EQ(whole.model.issued_loads, 1.0);
  EXPECT_DOUBLE_EQ(whole.costs.repeated_loads, 0.0);
  EXPECT_NE(whole.limiter, Limiter::repeated_loads);
}

// The limiter rule alone (choose_limiter): a measured time, when there is one, decides whether
// the call is bandwidth-bound; otherwise the model's time does. Below 85% the limiter is the
// model's largest cost either way.
TEST(ChooseLimiter, AMeasurementBelow85PercentNamesTheModelsLargestCost) {
  LimiterCosts costs;
  costs.grid = 0.3;
  costs.bytes_in_flight = 0.1;
  costs.launch = 1.2;
  // The model alone says bandwidth (90%), the measurement reaches 84%: the largest cost.
  EXPECT_EQ(choose_limiter(costs, 0.90, std::nullopt), Limiter::bandwidth);
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.84), Limiter::launch);
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.8499), Limiter::launch);
  costs.grid = 2.0;
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.84), Limiter::grid);
  costs.grid = 0;
  costs.split_k = 3.0;
  EXPECT_EQ(choose_limiter(costs, 0.95, 0.50), Limiter::split_k);
  costs.issue = 4.0;
  EXPECT_EQ(choose_limiter(costs, 0.95, 0.50), Limiter::issue);
}

// Measured below 85% by more than the model's largest cost explains (H200, bf16 14336x4096 at
// M = 8: 30.68 us against the model's 27.82, 2.86 us beyond it, where the largest cost is the
// 1.2 us PDL launch term and PDL saved 5.6%): the model cannot say what binds.
TEST(ChooseLimiter, AnExcessBeyondEveryModelledCostIsNotModelled) {
  LimiterCosts costs;
  costs.launch = 1.2;
  costs.grid = 0.3;
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.842, 2.86), Limiter::unmodelled);
  EXPECT_STREQ(to_string(Limiter::unmodelled), "not modelled");
  // An excess the largest cost covers keeps that cost (6144x4096 at M = 1: 0.53 us beyond).
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.842, 0.53), Limiter::launch);
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.842, 1.2), Limiter::launch);
  // At 85% or more it is bandwidth whatever the excess; without a measurement never unmodelled.
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.86, 5.0), Limiter::bandwidth);
  EXPECT_EQ(choose_limiter(costs, 0.70, std::nullopt, 5.0), Limiter::launch);
}

// What PDL saves, measured against the config's twin without PDL, decides launch and ramp (H200,
// dfa7419's bench): 16x4096x4096 10.12 us, 11.54 without PDL (12.3%): launch and ramp though the
// excess is past the model's costs; 6144x4096 at M = 1 13.07 and 14.25 (8.3%): not launch and
// ramp though the model's launch term is its largest cost.
TEST(ChooseLimiter, WhatPdlSavesDecidesLaunchAndRamp) {
  LimiterCosts costs;
  costs.launch = 1.2;
  costs.grid = 0.3;
  costs.bytes_in_flight = 0.2;
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.72, 1.57), Limiter::unmodelled);
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.72, 1.57, 0.123, 1.42), Limiter::launch);
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.72, 0.1, 0.10, 1.0), Limiter::launch);   // at the threshold
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.83, 0.1, 0.083, 1.18), Limiter::grid);   // the next largest cost
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.83, 0.98, 0.083, 1.18), Limiter::unmodelled);  // beyond it
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.83, 0.1, -0.02, -0.3), Limiter::grid);   // PDL slower: no overlap
  // At 85% or more bandwidth, whatever PDL saves; a saving past kPdlOverlapMaxUs is other code,
  // not the overlap, and decides nothing (the model's largest cost stands).
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.86, 0.1, 0.30, 4.0), Limiter::bandwidth);
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.60, 0.1, 0.30, 6.0), Limiter::launch);
  costs.launch = 0.1;
  EXPECT_EQ(choose_limiter(costs, 0.90, 0.60, 0.1, 0.30, 6.0), Limiter::grid);
  // Without a measured time the saving is not used.
  EXPECT_EQ(choose_limiter(costs, 0.70, std::nullopt, 0, 0.30, 1.0), Limiter::grid);
}

// explain() takes the no-PDL time with the measured one, for a PDL config only, > 0 and finite.
TEST(Explain, TheNoPdlTimeBelongsToAPdlConfig) {
  const GpuModelParams h200;
  const KernelConfig pdl = parse_config("tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m16");
  const Explanation x =
      explain(pdl, DType::bf16, {4096, 4096}, 16, WeightFormat::dense, h200, std::nullopt, MeasuredTime{10.12, "t", 11.54});
  ASSERT_TRUE(x.pdl_saving);
  EXPECT_NEAR(*x.pdl_saving, (11.54 - 10.12) / 11.54, 1e-12);
  EXPECT_EQ(x.limiter, Limiter::launch);
  EXPECT_NE(x.verdict.find("PDL hides 1.42 us (12.3%) of the 11.54 us call without PDL"), std::string::npos) << x.verdict;
  const Explanation without =
      explain(pdl, DType::bf16, {4096, 4096}, 16, WeightFormat::dense, h200, std::nullopt, MeasuredTime{10.12, "t", std::nullopt});
  EXPECT_FALSE(without.pdl_saving);
  EXPECT_EQ(without.verdict.find("PDL hides"), std::string::npos) << without.verdict;
  const KernelConfig plain = parse_config("tc_t256_r1_kw8_v16_u2_sk1_cs_m16");
  EXPECT_THROW(explain(plain, DType::bf16, {4096, 4096}, 16, WeightFormat::dense, h200, std::nullopt,
                       MeasuredTime{11.54, "t", 12.0}),
               InvalidArgument);
  for (double bad : {0.0, -1.0, std::nan("")})
    EXPECT_THROW(explain(pdl, DType::bf16, {4096, 4096}, 16, WeightFormat::dense, h200, std::nullopt,
                         MeasuredTime{10.12, "t", bad}),
                 InvalidArgument);
}

TEST(ChooseLimiter, AMeasurementAt85PercentOrMoreIsBandwidth) {
  LimiterCosts costs;
  costs.launch = 1.2;
  costs.grid = 0.4;
  // The model alone names the launch (70%); the measurement reaches 85% or more: bandwidth.
  EXPECT_EQ(choose_limiter(costs, 0.70, std::nullopt), Limiter::launch);
  EXPECT_EQ(choose_limiter(costs, 0.70, 0.85), Limiter::bandwidth);
  EXPECT_EQ(choose_limiter(costs, 0.70, 0.97), Limiter::bandwidth);
  EXPECT_EQ(choose_limiter(costs, 0.95, 0.85), Limiter::bandwidth);
  // Without a measurement, today's rule at its threshold.
  EXPECT_EQ(choose_limiter(costs, 0.85, std::nullopt), Limiter::bandwidth);
  EXPECT_EQ(choose_limiter(costs, 0.8499, std::nullopt), Limiter::launch);
}

TEST(ChooseLimiter, LargestCostTiesGoToTheFirstCause) {
  LimiterCosts costs;
  EXPECT_EQ(largest_cost(costs), Limiter::grid);  // all zero
  costs.launch = 1.0;
  costs.split_k = 1.0;
  EXPECT_EQ(largest_cost(costs), Limiter::launch);
  costs.bytes_in_flight = 1.0;
  EXPECT_EQ(largest_cost(costs), Limiter::bytes_in_flight);
}

TEST(Explain, AMeasuredTimeBelow85PercentOverridesTheModelsBandwidth) {
  // The model says bandwidth for this config (the stream is 86% of its 8.74 us); measured at 84%
  // of the read ceiling, the limiter is the model's largest cost beyond the stream, the launch.
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl");
  const double moved = 2.0 * 4096 * 4096 + 2.0 * (4096 + 4096);
  const double us = moved / (0.84 * 4470e9) * 1e6;  // 8.94 us
  const Explanation x = explain(c, DType::bf16, k4096x4096, 1, WeightFormat::dense, GpuModelParams{}, std::nullopt,
                                MeasuredTime{us, "given with --measured-us", std::nullopt});
  ASSERT_TRUE(x.measured.has_value());
  EXPECT_EQ(x.measured->source, "given with --measured-us");
  EXPECT_DOUBLE_EQ(x.measured->us, us);
  EXPECT_NEAR(x.measured_gbps, 0.84 * 4470, 1e-6);
  ASSERT_TRUE(x.measured_share.has_value());
  EXPECT_NEAR(*x.measured_share, 0.84, 1e-12);
  EXPECT_NEAR(x.model_share, 0.859, 0.001);
  EXPECT_EQ(x.largest, Limiter::launch);
  EXPECT_EQ(x.limiter, Limiter::launch) << x.verdict;
  EXPECT_EQ(x.verdict.rfind("launch and ramp: measured 84.0% of the read ceiling (8.94 us, 3755 GB/s of 4470); "
                            "the model's largest cost beyond the stream is launch and ramp: the model's 1.20 us",
                            0),
            0u)
      << x.verdict;
  // The same config without a measurement keeps the model's verdict.
  const Explanation model_only = explain(c, DType::bf16, k4096x4096, 1, WeightFormat::dense, GpuModelParams{});
  EXPECT_EQ(model_only.limiter, Limiter::bandwidth);
  EXPECT_FALSE(model_only.measured_share.has_value());
  EXPECT_EQ(model_only.largest, Limiter::launch);
}

TEST(Explain, AMeasuredTimeAt85PercentOrMoreIsBandwidthWhateverTheModelSays) {
  // The model names the launch for 1024x4096 with PDL (the stream 60% of its time); measured at
  // 90% of the read ceiling the call is bandwidth-bound, and the verdict says the model differed.
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl");
  const double moved = 2.0 * 1024 * 4096 + 2.0 * (1024 + 4096);
  const double us = moved / (0.90 * 4470e9) * 1e6;
  const Explanation x = explain(c, DType::bf16, k1024x4096, 1, WeightFormat::dense, GpuModelParams{}, std::nullopt,
                                MeasuredTime{us, "measured on device 0 in graph mode", std::nullopt});
  EXPECT_EQ(x.limiter, Limiter::bandwidth) << x.verdict;
  EXPECT_EQ(x.largest, Limiter::launch);
  EXPECT_NE(x.verdict.find("bandwidth: measured 90.0% of the read ceiling"), std::string::npos) << x.verdict;
  EXPECT_NE(x.verdict.find("the model predicted 60%"), std::string::npos) << x.verdict;
  EXPECT_NE(x.verdict.find("its largest cost launch and ramp"), std::string::npos) << x.verdict;
  // A slower measurement of the same call: below 85%, the launch again.
  const Explanation slow = explain(c, DType::bf16, k1024x4096, 1, WeightFormat::dense, GpuModelParams{}, std::nullopt,
                                   MeasuredTime{moved / (0.80 * 4470e9) * 1e6, "x", std::nullopt});
  EXPECT_EQ(slow.limiter, Limiter::launch) << slow.verdict;
}

TEST(Explain, RefusesAMeasuredTimeThatIsNotPositiveAndFinite) {
  const KernelConfig c = cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl");
  for (double us : {0.0, -1.0, std::nan(""), HUGE_VAL})
    EXPECT_THROW(explain(c, DType::bf16, k4096x4096, 1, WeightFormat::dense, GpuModelParams{}, std::nullopt,
                         MeasuredTime{us, "x", std::nullopt}),
                 InvalidArgument)
        << us;
}

TEST(ParseMeasuredUs, TakesAPositiveFiniteNumber) {
  EXPECT_DOUBLE_EQ(parse_measured_us("27.97"), 27.97);
  EXPECT_DOUBLE_EQ(parse_measured_us("1e3"), 1000);
  EXPECT_DOUBLE_EQ(parse_measured_us("0.5"), 0.5);
}

TEST(ParseMeasuredUs, RefusesZeroNegativeNanAndTextWithAClearMessage) {
  auto message = [](const std::string& text) -> std::string {
    try {
      parse_measured_us(text);
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "(accepted)";
  };
  const struct {
    const char* text;
    const char* says;
  } bad[] = {{"0", "--measured-us '0' is not > 0"},         {"-0", "--measured-us '-0' is not > 0"},
             {"-3.5", "--measured-us '-3.5' is not > 0"},   {"nan", "--measured-us 'nan' is not finite"},
             {"NaN", "--measured-us 'NaN' is not finite"},  {"inf", "--measured-us 'inf' is not finite"},
             {"1e999", "--measured-us '1e999' is not finite"}, {"abc", "--measured-us 'abc' is not a number"},
             {"", "--measured-us '' is not a number"},      {"12us", "--measured-us '12us' is not a number"},
             {"12 ", "--measured-us '12 ' is not a number"}};
  for (const auto& b : bad) {
    const std::string m = message(b.text);
    EXPECT_NE(m.find(b.says), std::string::npos) << b.text << ": " << m;
    EXPECT_NE(m.find("microseconds per call"), std::string::npos) << m;
  }
  // The other option that takes a time is named in its own errors.
  try {
    parse_measured_us("0", "--measured-no-pdl-us");
    ADD_FAILURE() << "0 accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("--measured-no-pdl-us '0' is not > 0"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("--measured-us"), std::string::npos) << e.what();
  }
}

TEST(Explain, RefusesAConfigInvalidForTheShape) {
  // m tile 1 at M = 4.
  EXPECT_THROW(explain(cfg("t128_r1_kw1_v16_u8_sk1_cs_pdl"), DType::bf16, k4096x4096, 4, WeightFormat::dense,
                       GpuModelParams{}),
               InvalidArgument);
}

}  // namespace
}  // namespace gemvtune
