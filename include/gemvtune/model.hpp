// The analytic performance model: ranks configs for a shape without running them, and gives
// the untuned default config.
//
// Little's law for memory: a GEMV streams at min(ceiling, bytes in flight / latency). Bytes in
// flight come from the warps resident at once (limited by the grid, by threads and registers
// per SM) times the loads each keeps outstanding (rows x unroll x vector x 32 lanes, fewer when
// a warp's K range is shorter). Added to the streaming time: a fixed launch and ramp cost, the
// last partial wave, and split-K's partial-sum traffic and fix-up. At batch M > 1 on CUDA
// cores, the conversions and FMAs per weight can cost more than the stream (tensor cores not).
// Batch M is taken from the config's m tile.
#pragma once
#include <vector>

#include "gemvtune/config.hpp"

namespace gemvtune {

struct GpuModelParams {
  int sm_count = 132;
  double read_ceiling_gbps = 4470;   // measured by `gemvtune peak`
  double latency_ns = 800;           // loaded memory latency
  // The dense tensor-core family: the latency its loads see in the model, each warp holding four
  // chunks in flight, and what each halving of the unroll below 4 costs its stream
  // (tuner/model.cpp, fitted on the whole-space sweep of 4852aee).
  double dense_tc_latency_ns = 1000;
  // Its aligned body (templates/gemv_tcal.cu: x shifted to W's blocks, more work a chunk): the
  // latency that ranks an H100 sweep of every al config best (tuner/model.cpp).
  double aligned_body_tc_latency_ns = 1100;
  double dense_tc_unroll_cost = 0.025;  // of the stream, per halving of the unroll below 4
  // The aligned body (al, rows not 16-byte aligned): what each warp's share of a row costs over
  // the plain kernel's, in trips (unroll loads of the warp) issued beside its own loads: set-up,
  // heads and tails, the last partial trip; more where x's offset is picked at run time
  // (compiles_per_x_offset false). Fitted in tuner/model.cpp on the H200's sweep of every `_al`
  // config of 4097x4099 against the plain kernel's same knobs on 4096x4096.
  double aligned_body_trips = 0.9;
  double aligned_body_runtime_offset_trips = 2.0;
  // Below this read ceiling both latencies above grow by latency_ceiling_gbps / ceiling (at
  // most 1.5x): a GPU with slower memory is taken to need about the bytes in flight the H200
  // needs, not fewer in proportion. Fitted to none of the H200's data (whose ceilings measure
  // 4539-4661 GB/s, so nothing there changes): on the H100 (3132 GB/s) the model's defaults at
  // 800 ns ran 1.17-1.26x the best measured config on six of 18 families shapes (9216x3072 0.93x
  // cuBLAS untuned), and at 1000-1200 ns 1.01-1.11x, no shape worse (tuner/model.cpp).
  double latency_ceiling_gbps = 4400;
  double launch_us = 2.8;            // launch + ramp + drain of one kernel in a graph (2.2 before the fit)
  double pdl_launch_us = 1.2;        // the same when it overlaps the previous kernel (PDL; 0.8 before)
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  double shared_bytes_per_sm = 228 * 1024;  // shared memory per SM (sm_90)
  double l2_bytes = 60.0 * 1024 * 1024;     // L2 (H200: 60 MiB), for the L2 prefetch (pf)
  // Past one wave, the gap between a block's end and its successor's first weights on the same
  // SM (the ending block's reduction and writes, the new block's set-up and first loaded
  // latency); tuner/model.cpp, "block turnover".
  double block_turnover_us = 1.5;
  // Issue-rate terms: arithmetic per second on one SM is 128 fp32 lanes x clock x share. The
  // shares are fitted to recorded H200 measurements (tuner/model_fit.hpp; the data files are
  // named in tuner/model.cpp and docs/tuning.md, "Fitting the model's constants").
  double clock_ghz = 1.98;
  double cuda_core_issue_share = 0.34;  // dense CUDA-core family at M > 1 (0.60 before the fit)
  // The quantized families: 0.28 of the issue rate with at least 8 warps resident per SM,
  // proportionally less with fewer (0.35 and no warp term before the fit of the quantized
  // sweeps, fit_quantized_issue; tuner/model.cpp names the data).
  double quantized_issue_share = 0.28;
  double quantized_issue_warps = 8;  // 0: no warp term
  // Dense CUDA cores at M > 1: the issue share holds with at least this many warps resident per
  // SM, proportionally less with fewer (0: no warp term; tuner/model.cpp).
  double cuda_core_issue_warps = 8;
  // Int4 on tensor cores at M > 1 (tuner/model.cpp, "int4 on tensor cores at M > 1"): issue per
  // weight against M = 1's, int4_tc_batch_issue + int4_tc_batch_tile_issue x n-tiles / tiles per
  // warp; the turnover of a block slot past one wave; split-K's cost per extra split as a share
  // of the stream (0.04 for every other family; splitting int4 at M > 1 where the unsplit grid
  // already fills a wave cost a median 27% of the call on the recorded sweeps). A point of the
  // grid fit to the model's picks on the recorded int4g128 sweeps at M = 4, 8, 16
  // (fit_int4_tc_batch, tuner/model_fit.hpp): within 1% of its best picks, and the one of those
  // that keeps the tuner's walk and the borrowing near the best (tests/tuner/quant_model_test.cpp).
  double int4_tc_batch_issue = 1.75;
  double int4_tc_batch_tile_issue = 0.375;
  double int4_tc_block_turnover_us = 1.0;
  double int4_tc_batch_split_share = 0.1;  // split-K's cost per extra split, of the stream (0.04 elsewhere)
  // templates/gemv_q4l.cu (int4 on tensor cores at M = 1) turns over too past one wave: a block
  // stages its slice of x (a round trip to L2 and two barriers) before its first mma. On the
  // recorded sweep of every PDL tensor-core config of the preset's 7 shapes
  // (sweeps/h200_int4g128_m1_q4l_t256_pdl.csv) the model's untuned default came within 1.236x
  // the best (geometric mean) for any value from 2 to 4 us, 1.296x without the term.
  double int4_line_block_turnover_us = 3.0;
  // int4 register loads at M > 1 (templates/gemv_tc.cu): a warp's trips (unroll chunks each)
  // follow one another, each waiting for its loads, so a call takes at least its warps' trips
  // one after another, this much each. It tells the unrolls of a small grid apart, where the
  // issue term ties them: on the H200 8x1024x4096 with tc_t256_r1_kw8 (64 blocks, four chunks a
  // warp) ran 6.62, 5.39 and 2.89 us at unroll 1, 2 and 4 (sweeps/h200_int4g128_m8_wide_pdl.csv).
  double int4_tc_trip_us = 2.0;
};

struct ModelEstimate {
  double time_us = 0;
  double bytes_in_flight = 0;  // across the GPU, at steady state
  double waves = 0;            // blocks over resident block slots
  // The terms behind time_us, for `gemvtune explain` (tuner/explain.hpp); none changes it.
  double row_blocks = 0;         // ceil(N / block_rows)
  double blocks = 0;             // row_blocks x split_k
  double registers = 0;          // the model's per-thread register estimate
  double shared_bytes = 0;       // the model's shared memory per block, 1 KB reserve included (int4 tensor cores)
  double resident_per_sm = 0;    // block slots per SM: resident_blocks_per_sm(threads, registers, shared)
  double warp_bytes = 0;         // bytes one warp keeps in flight
  double in_flight_per_sm = 0;   // bytes in flight on a busy SM
  double needed_per_sm = 0;      // Little's law at the ceiling: ceiling / SMs x latency
  double latency_ns = 0;         // the loaded latency it used (dense tensor cores: their own)
  double sm_gbps = 0;            // min(SM's share of the ceiling, in flight / latency)
  double balance = 1;            // grid balance factor (busiest SM, last wave), 1 = none lost
  double turnover = 1;           // share of a block slot's time spent streaming past one wave, 1 = none lost
  double issued_loads = 1;       // loads the plain CUDA-core loop issues over the row's chunks, 1 = none wasted
  bool short_trip = false;       // a warp's chunks of a row do not fill one trip of `unroll` loads
  double transfer_us = 0;        // the weight stream alone (bytes x issued_loads / (SM rate x SMs x balance))
  double compute_us = 0;         // issue-rate term (CUDA cores at M > 1, quantized), else 0
  double stream_us = 0;          // max(transfer_us, compute_us)
  double split_us = 0;           // split-K partials and fix-up
  double reduce_us = 0;          // k_warps' shared-memory reduction
  double launch_us = 0;          // launch + ramp (pdl_launch_us with PDL)
};

// Blocks of `threads` threads resident on one SM at `registers` per thread and `shared_bytes`
// of shared memory per block (static, with the 1 KB the system reserves for each block on
// sm_90): the least of the thread slots, the block slots, the register file (65536 registers,
// allocated 8 per thread at a time, at most 255) and the SM's shared memory
// (shared_bytes_per_sm; no limit when shared_bytes is 0), at least 1. What estimate() uses with
// its estimates; give it a cubin's registers and shared memory (CubinResources) for the
// occupancy the compiled kernel allows.
struct Residency {
  int by_threads = 0, by_blocks = 0, by_registers = 0;
  int by_shared = 0;          // 0: the block uses no static shared memory worth a limit
  int blocks = 1;             // the least of them, at least 1
  double occupancy = 0;       // resident warps over the SM's warp slots
  const char* limit = "";     // "threads", "blocks", "registers" or "shared memory": which binds
};
Residency resident_blocks_per_sm(int threads, double registers, const GpuModelParams& gpu = {},
                                 double shared_bytes = 0);

// Whether a config's L2 prefetch (pf) stays within L2 on this shape: each resident warp asks L2
// for the rest of its K slice before waiting on the previous kernel, so at most the least of
// the call's weight bytes and (its slice's bytes x every warp slot of the GPU) is prefetched.
// Past the L2's size the prefetch evicts its own lines and the weights cross HBM twice (H200,
// bf16 4096x14336: t128_r1_kw2_u4_pf 38.0 us, 0.85x cuBLAS; without pf 27.9 us). True without pf.
bool prefetch_fits_l2(const KernelConfig& c, DType t, const Shape& s, const GpuModelParams& gpu = {});

// The dense tensor-core family (tensor cores on weights in the activation dtype): the model
// counts four chunks in flight a warp at any unroll against the family's own latency
// (GpuModelParams::dense_tc_latency_ns) and charges its block turnover past one wave.
bool is_dense_tensor_core(const KernelConfig& c, WeightFormat w);
// The chunks a warp of that family issues together whatever the unroll knob: ptxas unrolls its
// run loop to about four chunks at unroll 1, 2 and 4 (SASS of 098a33f).
inline constexpr int kDenseTcChunksIssued = 4;

// Quantized weights (w != dense): the packed bytes (weight_bytes) stream, and an issue-rate term
// for the dequantizing arithmetic of the quantized family (see model.cpp).
ModelEstimate estimate(const KernelConfig& c, DType t, const Shape& s, const GpuModelParams& gpu,
                       WeightFormat w = WeightFormat::dense);

// Configs sorted by estimated time, fastest first.
std::vector<KernelConfig> rank_by_model(std::vector<KernelConfig> configs, DType t, const Shape& s,
                                        const GpuModelParams& gpu, WeightFormat w = WeightFormat::dense);

// The untuned default: the model's best config of the default search space for this shape
// and batch M; for dense bf16/fp16 at M > 1, of its tensor-core configs where it has any (the
// model's CUDA-core estimate at M = 2 is optimistic there: see model.cpp); for dense weights at
// M = 1, not of the CUDA-core blocks of four or more warps along K whose warps issue fewer than
// 8 loads along a row, where it has others (the model is optimistic about those too), and on
// rows that are not 16-byte aligned (K x element size) only of the aligned-body configs whose
// body is compiled once per x offset (compiles_per_x_offset), which run those rows fastest.
KernelConfig default_config(DType t, const Shape& s, const GpuModelParams& gpu = {}, int m = 1,
                            WeightFormat w = WeightFormat::dense);

}  // namespace gemvtune
