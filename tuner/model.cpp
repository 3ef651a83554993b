// The analytic model (see include/gemvtune/model.hpp for the reasoning).
#include "gemvtune/model.hpp"

#include <algorithm>
#include <cmath>

#include "gemvtune/search_space.hpp"

namespace gemvtune {

Residency resident_blocks_per_sm(int threads, double registers, const GpuModelParams& gpu, double shared_bytes) {
  Residency r;
  r.by_threads = static_cast<int>(std::floor(double(gpu.max_threads_per_sm) / threads));
  r.by_blocks = gpu.max_blocks_per_sm;
  r.by_registers = static_cast<int>(
      std::max(1.0, std::floor(65536.0 / (std::ceil(std::min(255.0, registers) / 8) * 8 * threads))));
  if (shared_bytes > 0)
    r.by_shared = static_cast<int>(std::max(1.0, std::floor(gpu.shared_bytes_per_sm / shared_bytes)));
  const int by_shared = r.by_shared > 0 ? r.by_shared : r.by_blocks;
  r.blocks = std::max(1, std::min({r.by_threads, r.by_blocks, r.by_registers, by_shared}));
  r.limit = r.blocks == r.by_threads    ? "threads"
            : r.blocks == r.by_blocks    ? "blocks"
            : r.blocks == r.by_registers ? "registers"
                                         : "shared memory";
  r.occupancy = std::min(1.0, double(r.blocks) * threads / gpu.max_threads_per_sm);
  return r;
}

bool is_dense_tensor_core(const KernelConfig& c, WeightFormat w) {
  return c.family == Family::tensor_core && !is_quantized(w);
}

namespace {
// The chunks (one load of a warp's lanes each) along a row of one split of K in the dense
// CUDA-core loop: what estimate's issued loads and the default's short-warp rule count.
long long dense_cuda_core_row_chunks(const KernelConfig& c, DType t, const Shape& s) {
  const double chunk_elems = c.lanes_per_row * (c.vec_bytes / static_cast<double>(dtype_size(t)));
  return static_cast<long long>(std::ceil(std::ceil(static_cast<double>(s.k) / c.split_k) / chunk_elems));
}
}  // namespace

ModelEstimate estimate(const KernelConfig& c, DType t, const Shape& s, const GpuModelParams& gpu, WeightFormat w) {
  const bool tc = c.family == Family::tensor_core;
  const bool quantized = is_quantized(w);
  const double m = c.m_tile;  // batch rows the kernel is built for (the problem's M or more)
  // Bytes per weight element as the loads see them (the chunk arithmetic below): the packed
  // width for quantized weights.
  const double esize = quantized ? weight_bits(w, t) / 8.0 : static_cast<double>(dtype_size(t));
  const double bytes = quantized ? static_cast<double>(weight_bytes(w, t, s.n, s.k).total())
                                 : esize * static_cast<double>(s.n) * static_cast<double>(s.k);
  const double row_blocks = static_cast<double>(c.row_blocks(s.n));
  const double blocks = row_blocks * c.split_k;
  const double sms = gpu.sm_count;

  // Resident blocks per SM: thread slots, block slots, and a register estimate (weights in
  // flight plus x plus accumulators plus bookkeeping, 4 bytes per register).
  const double n_tiles = std::ceil(m / 8);
  double regs = 40 + (c.rows_per_warp + 1) * c.unroll * c.vec_bytes / 4.0 +
                (m > 1 ? c.rows_per_warp * (m + c.vec_bytes / esize) : 0);
  // The quantized families: least-squares fits to the registers NVRTC 13.0 reports for every
  // kernel of the bf16 M = 1 space at sm_90 (templates of 5b5fbfb; QuantModel tests in
  // tests/tuner/quant_model_test.cpp hold the numbers). CUDA cores keep each row's loads and its
  // dequantized values in registers: int8/fp8 46-242 (RMS error of the fit 19), int4 88-255
  // (25); the old estimate gave 48-76. Int4 on tensor cores keeps its chunks in a shared-memory
  // ring: 56-76 registers with 1 tile per warp, 93-108 with 2, 159-168 with 4, whatever the
  // unroll (templates of b9473e7, whole-line copies: four row pointers a tile; the dense
  // tensor-core estimate gave 52-200). At M > 1, the accumulators of the extra batch rows on top.
  const double rows = c.rows_per_warp;
  const bool int4_tc = quantized && tc && is_int4(w);  // 8-bit tensor cores: the dense kernel's loads
  const bool line_loads = runs_int4_line_loads(c, w);
  if (line_loads) {
    // templates/gemv_q4l.cu: two trips of whole-line loads, 16 registers per tile and stage each
    // (NVRTC 13.0: 94, 130 and 162 at 1 tile x 1 stage, 1 x 2 and 2 x 1; 1 x 2 with one warp
    // along K and at most 128 threads held at 128 by its launch bounds, GEMV_Q4L_MIN_BLOCKS).
    regs = 26 + 32 * rows + 36 * rows * c.unroll;
    if (rows == 1 && c.unroll == 2 && c.k_warps == 1 && c.threads <= 128) regs = 128;
  } else if (int4_tc) {
    regs = 36 + 32 * rows + (n_tiles - 1) * rows * 4;
  } else if (tc) {
    // Dense and 8-bit tensor cores: least-squares fits to the registers NVRTC 13.0 reports for
    // every 3rd PDL kernel of the bf16 spaces at M = 1, 2, 8, 16 (templates of a4898b5, 64 dense
    // and 165 int8/fp8 kernels; tests/tuner/model_registers_test.cpp checks a sample). Dense:
    // 88-254, little dependence on the unroll (ptxas unrolls the run loop to about four chunks
    // whatever it is), RMS error 19; the estimate before, 40 + (2 rows + n-tiles) x unroll x 4 +
    // rows x n-tiles x 4, gave 56-152 for them (a tile of 16 rows at M = 16 took 124 registers,
    // the estimate 80). 8-bit: each chunk in flight also holds its converted halves, RMS error 9.
    const double u = c.unroll;
    // 8-row tiles (w8) hold one row's loads a tile where 16-row tiles hold two: 92 registers
    // for tc_t128_r1_kw1_u2 at m tile 16 (NVRTC 13.0, sm_90) against 122 with 16-row tiles.
    const double tile_share = c.tile_rows / 16.0;
    if (quantized) {
      regs = 12 + 2.8 * rows * u + 43 * rows + 13 * n_tiles * u;
    } else if (!c.aligned_body) {
      regs = 43 + 39 * rows * tile_share + 20 * n_tiles;
    } else {
      // templates/gemv_tcal.cu holds a run's W and x blocks for the shift, so its registers
      // follow the unroll and the batch tiles where gemv_tc.cu's do not: what NVRTC 13.0 gives
      // its 450 bf16 kernels at M = 2, 3, 8, 9, 13, 16 (sm_90, templates of ed7a852), the
      // typical count of each (rows a warp, unroll, batch tiles), most within 6 of it but for the two
      // cases below. tc_t256_r1_kw8_u4_al_m16 takes 154 (one block of 256 threads an SM), where
      // the dense fit said 122 (two): the model made it 4097x4099's M = 16 default, 18.1 us on
      // an H100 against 14.8 for its u2 twin (120 registers, two blocks).
      static constexpr double kAlRegs[3][3][2] = {{{82, 88}, {86, 121}, {121, 156}},    // 1 row a warp: u1, u2, u4
                                                  {{124, 128}, {127, 171}, {176, 220}}, // 2 rows
                                                  {{193, 203}, {195, 251}, {255, 255}}};
      const auto log2_index = [](int v) { return v >= 4 ? 2 : v >= 2 ? 1 : 0; };
      regs = kAlRegs[log2_index(c.rows_per_warp)][log2_index(c.unroll)][n_tiles > 1 ? 1 : 0];
      // Where ptxas takes more at two batch tiles: one warp a row set along K at M >= 13 (r1:
      // 126-150, 186-213 with eight row sets a block), two rows a warp in four or more row sets
      // (213). With these, the estimate gives the compiled kernel's blocks an SM for 421 of the
      // 450 (the dense fit: 236), RMS error 11 registers.
      const int row_sets = c.warps() / c.k_warps;
      if (n_tiles > 1 && ((c.k_warps == 1 && m >= 13) || (c.rows_per_warp >= 2 && row_sets >= 4)))
        regs = std::max(regs, c.rows_per_warp >= 2 || row_sets >= 8 ? 213.0 : 150.0);
    }
  } else if (quantized && c.ring) {
    // The ring keeps the weights in flight in shared memory: 52-55 registers at 1 row, 76-80 at
    // 2, 111-116 at 4, whatever the unroll (int8 and fp8, NVRTC 13.0, sm_90).
    regs = 36 + 20 * rows + (m > 1 ? rows * (m - 1) : 0);
  } else if (quantized) {
    regs = (is_int4(w) ? 91 + 21 * rows + 9 * rows * (c.unroll - 1) : 36 + 22 * rows + 7 * rows * (c.unroll - 1)) +
           (m > 1 ? rows * (m - 1) : 0);
  }
  regs = std::min(regs, c.reg_cap ? static_cast<double>(c.reg_cap) : 255.0);  // rc: the launch bounds' cap (spills not modelled)
  // The block's static shared memory (static_shared_bytes: rings, staged x, the finish) and the
  // 1 KB the system reserves per block limit blocks per SM too.
  const double shared = static_shared_bytes(c, w).total() + 1024.0;
  double per_sm = resident_blocks_per_sm(c.threads, regs, gpu, shared).blocks;
  const double waves = blocks / (per_sm * sms);

  // Loads a warp keeps in flight: limited by the chunks its K range holds. On tensor cores a
  // lane loads 16 bytes of each of two rows per 16-row tile (one row per 8-row tile), and 4
  // lanes cover 32 elements;
  // int4 on tensor cores keeps `unroll` ring stages of two 128-element chunks in flight, the
  // 8-bit ring `unroll` stages of one chunk per row.
  const double elems_per_vec = c.vec_bytes / esize;
  const double k_per_warp = static_cast<double>(s.k) / c.split_k / c.k_warps;
  const double stage_chunks = int4_tc ? 2.0 : 1.0;
  const double chunk_elems = tc ? (int4_tc ? 128 * stage_chunks : 4 * elems_per_vec) : c.lanes_per_row * elems_per_vec;
  const double chunks = std::max(1.0, k_per_warp / chunk_elems);
  // Dense tensor cores: the kernel's own loads in flight do not follow the unroll knob (ptxas
  // unrolls the run loop to about four chunks a trip at unroll 1, 2 and 4; SASS of 098a33f),
  // so a warp keeps four chunks in flight whatever the unroll, against a latency of its own
  // (GpuModelParams::dense_tc_latency_ns), and each halving of the unroll below 4 costs
  // dense_tc_unroll_cost of the stream (u2 ran 1.028x and u1 1.049x u4's time over the sweep's
  // triples with the other knobs equal; u1 splits 128-byte lines between warps). Fitted on the
  // whole-space sweep of today's kernel (sweeps/h200_batch_4852aee_pdl.csv, 8280 tensor-core
  // rows): RMS log error 0.279 against 0.484 for the unroll credit at 800 ns this replaced, whose
  // u1 and u2 estimates ran 1.7x and 1.2x slow, and the untuned defaults 1.032x the best against
  // 1.112x (docs/tuning.md, "The dense tensor-core default").
  const bool dense_tc = is_dense_tensor_core(c, w);
  const double loads = std::min<double>(dense_tc ? kDenseTcChunksIssued : c.unroll, chunks);
  const double warp_bytes =
      32.0 * c.vec_bytes * (tc ? c.tile_rows / 8.0 * c.rows_per_warp : c.rows_per_warp) * stage_chunks * loads;

  // Per SM: the blocks it holds at once, and Little's law on their loads. The busiest SM sets
  // the time: with few blocks per SM, ceil(blocks / SMs) against the average (an SM with 2
  // blocks while others have 1 runs twice as long); with many waves the scheduler balances
  // them and only the last partial wave costs.
  const double blocks_per_sm = blocks / sms;
  const double resident_per_sm = std::min(blocks_per_sm, per_sm);
  const double in_flight_per_sm = std::max(1.0, resident_per_sm) * c.warps() * warp_bytes;
  const double sm_share = gpu.read_ceiling_gbps * 1e9 / sms;
  // A GPU with a lower ceiling (the H100's 3.1 TB/s) needs about the H200's bytes in flight:
  // GpuModelParams::latency_ceiling_gbps. The data: sets of the H100's and the H200's measured
  // candidates of --preset families (bench/results/h200.md, "Session of 2026-12-05 17:36 UTC").
  const double slow_memory = std::clamp(gpu.latency_ceiling_gbps / gpu.read_ceiling_gbps, 1.0, 1.5);
  // The tensor cores' al kernel does more between its loads (x shifted to W's blocks): on an
  // H100 sweep of every al config of 4097x4099, 4096x4093 and 11008x4095 at M = 2-16
  // (sweeps/h100_tcal_al_ed7a852.csv) those with 32 KB in flight an SM ran 1.05-1.13x the best
  // at their best, those with 62-64 KB 1.00-1.05x, where 1000 ns asks for 33 KB. At 1100-1500
  // ns the default at the H100's ceiling (3219 GB/s) comes to 1.011x the best on the mean (1.023x
  // at 1000; 16x4097x4099 1.154x -> 1.000x); at 4470 and 4650 GB/s it picks the same configs.
  const double tc_latency_ns = c.aligned_body ? gpu.aligned_body_tc_latency_ns : gpu.dense_tc_latency_ns;
  const double latency_ns = (dense_tc ? tc_latency_ns : gpu.latency_ns) * slow_memory;
  const double sm_bw = std::min(sm_share, in_flight_per_sm / (latency_ns * 1e-9));
  double balance = 1.0;
  if (waves <= 1) balance = blocks_per_sm / std::ceil(blocks_per_sm);
  else balance = 0.85 + 0.15 * waves / std::ceil(waves);
  // Block turnover (dense tensor cores): past one wave, each block slot alternates between streaming
  // a block's weights, at its share of the SM's rate, and block_turnover_us while one block ends
  // (barrier, shared-memory reduction, writes) and the next starts and waits for its first
  // loads. With one resident block per SM nothing else streams meanwhile; with R of them the
  // others cover part of the gap, fitted as 1 / R^2 of it (1 / R moved the defaults of the
  // recorded batched sweeps to 64-thread blocks, 1.07 -> 1.13x the best there). On the H200
  // 16x14336x4096 ran 38.7 us with tc_t512_r1_kw16 (one block per SM, 6.8 waves) against 30.5
  // for the best config, which 1.5 us per turn accounts for (bench/results/h200.md, "Wide
  // tensor-core blocks"). The CUDA-core family's constants (launch_us, pdl_launch_us, the issue shares)
  // and the quantized tensor-core families' issue fits were made without this term and absorb
  // what it would add there (with it, 22 int8/fp8 defaults of the preset moved to 64-thread
  // blocks no sweep supports).
  // Int4 on tensor cores at M > 1 turns over too (its ring fills again and x's first chunk is
  // loaded anew), int4_tc_block_turnover_us a turn, and gemv_q4l.cu at M = 1 (it stages x first),
  // int4_line_block_turnover_us; the int4 ring at M = 1 has the fitted issue terms absorb it.
  const bool int4_tc_batched = int4_tc && m > 1;
  double turnover = 1.0;
  if ((dense_tc || int4_tc_batched || line_loads) && waves > 1) {
    const double block_us = resident_per_sm * bytes / blocks / sm_bw * 1e6;
    const double turn_us = line_loads       ? gpu.int4_line_block_turnover_us
                           : int4_tc_batched ? gpu.int4_tc_block_turnover_us
                                             : gpu.block_turnover_us;
    turnover = block_us / (block_us + turn_us / (resident_per_sm * resident_per_sm));
  }
  // The plain CUDA-core loop issues a warp's loads U at a time, and its last trip all U of them
  // (a load past the warp's end repeats one in flight and is zeroed: templates/gemv.cu,
  // plain_body_trip). Where a row's chunks do not fill each warp's trips, the repeats cost about
  // what real loads do: on the H200 (bf16 M = 1, every split-free PDL config,
  // sweeps/h200_bf16_trips_pdl.csv) kw4 u8 ran 32000x4096 (4 chunks a warp, half of them
  // repeats) 2.1x slower than the best, kw2 u8 256000x3584 (7 of 8) 1.27x, and with this term
  // the model's error there fell from 0.19-0.31 to 0.14-0.22 (RMS in log time) and its picks on
  // the three K = 3584 shapes from 1.08-1.18x the best to 1.00-1.12x; on three shapes swept after
  // (K = 18944, 11008, 3072) from 1.20-1.35x to 1.07-1.09x.
  double issued_loads = 1.0;
  bool short_trip = false;
  // The aligned body (al) issues only the loads a row has (its last trip is partial) and pays
  // its own work on each warp's share of a row: GpuModelParams::aligned_body_trips of a trip
  // where x's offset is compiled in, aligned_body_runtime_offset_trips where it is picked at run
  // time. On the H200's sweep of every PDL `_al` config of 4097x4099 against the plain kernel's
  // same knobs on 4096x4096 (raw/86c2d50_h200_sweep_al_4097x4099_plain_4096x4096.csv) the ratio
  // was 1.15 at one warp along K and u4 (16 loads a warp-row), 1.34 at two, 1.6 at four: about
  // 2.5 loads a warp-row whatever its share; u8 (offset at run time) 1.40-1.52x, two rows a
  // warp at u4 1.52-2.18x. The shipped 0.9 and 2.0 are least-squares fits of the model's own
  // error over that sweep's and 0dc0765's `_al` rows (RMS log 0.21-0.22 and 0.26-0.30;
  // docs/tuning.md, "The aligned body's default").
  if (!tc && !quantized) {
    const long long row_chunks = dense_cuda_core_row_chunks(c, t, s);
    const double body_trips =
        compiles_per_x_offset(c) ? gpu.aligned_body_trips : gpu.aligned_body_runtime_offset_trips;
    double issued = 0;
    for (int kw = 0; kw < c.k_warps; ++kw) {
      const long long own = row_chunks > kw ? (row_chunks - kw + c.k_warps - 1) / c.k_warps : 0;
      if (c.aligned_body) {
        if (own > 0) issued += static_cast<double>(own) + body_trips * c.unroll;
      } else {
        issued += static_cast<double>((own + c.unroll - 1) / c.unroll * c.unroll);
        short_trip = short_trip || own < c.unroll;
      }
    }
    if (row_chunks > 0) issued_loads = issued / static_cast<double>(row_chunks);
  }
  const double unroll_cost =
      dense_tc && c.unroll < 4 ? 1.0 + gpu.dense_tc_unroll_cost * std::log2(4.0 / c.unroll) : 1.0;
  const double transfer_us = bytes * issued_loads * unroll_cost / (sm_bw * sms * balance * turnover) * 1e6;
  double stream_us = transfer_us;
  // int4 register loads at M > 1: the trips of a block slot's warps, one after another
  // (GpuModelParams::int4_tc_trip_us).
  if (int4_tc_batched && !c.ring) {
    const double trips = std::ceil(k_per_warp / 128.0 / c.unroll) * std::ceil(waves);
    stream_us = std::max(stream_us, trips * gpu.int4_tc_trip_us);
  }
  double issue_us = 0;
  // ops at `share` of the fp32 issue rate (128 lanes x clock per SM), scaled down by resident
  // warps / issue_warps where fewer warps are resident (0: no warp term); the call takes at
  // least that long.
  const auto add_issue = [&](double ops, double share, double issue_warps) {
    const double warps = std::max(1.0, resident_per_sm) * c.warps();
    const double latency_hidden = issue_warps > 0 ? std::min(1.0, warps / issue_warps) : 1.0;
    // A block slot turning over issues nothing either (int4 on tensor cores at M > 1, where
    // the issue term sets the time).
    const double busy = int4_tc_batched ? turnover : 1.0;
    const double compute_us = ops / (sms * 128 * gpu.clock_ghz * 1e9 * share * latency_hidden * balance * busy) * 1e6;
    issue_us = std::max(issue_us, compute_us);
    stream_us = std::max(stream_us, compute_us);
  };
  // CUDA cores at M > 1, fp32 issue at cuda_core_issue_share of 128 lanes x clock per SM. Per
  // weight element a conversion and m FMAs; per x element of each batch row a load and a
  // conversion, shared by the thread's rows_per_warp rows and, with ln < 32 lanes per row, by the
  // 32 / ln rows whose lanes read the same x (one L1 wavefront serves them): 2 ln / 32 / r per
  // weight and batch row (1 at r = 2, ln = 32, the term before the ln knob; on the H200 at fp32
  // M = 16 ln8 ran 1.28-1.37x faster than ln32 on 4096x4096, 28672x4096 and 4096x14336).
  // The share (0.34; 0.26 with the term 1 + 2m, 0.60 before any fit) is the least-squares fit in
  // log time (tuner/model_fit.hpp, fit_cuda_core_issue_share) over every CUDA-core candidate
  // measured at M > 1 in bench/results/raw/0135af0_h200_bench_batch_{bf16,fp16,fp32}.json and
  // 83ba666_bench_batch_bf16.json (134 rows; RMS log error 0.233, 0.26 with the old term, 0.43 at
  // 0.60, all with the launch terms fitted below); tests/tuner/defaults_test.cpp refits it and
  // checks the shipped value. With 0.60 the default at M = 2 and 4 was a CUDA-core config 1.16
  // to 2.52x slower than the tuned winner. Past m ~ 4 this, not the weight stream, sets the
  // time; tensor cores do the products in a few mma.
  if (!tc && m > 1 && !quantized) {
    const double x_cost = 2.0 * c.lanes_per_row / 32.0 / c.rows_per_warp;
    const double ops = static_cast<double>(s.n) * static_cast<double>(s.k) * (1 + m + m * x_cost);
    // Each batch row's x load is waited for before its FMAs: with fewer than
    // cuda_core_issue_warps warps on an SM too little else is ready to issue (fp32 M = 16 on the
    // H200, 4096x14336: 2 warps along K, one 4-warp block per SM, 158 us; 4 along K, two blocks
    // per SM, 87 us; same registers).
    add_issue(ops, gpu.cuda_core_issue_share, gpu.cuda_core_issue_warps);
  }
  // The quantized family: per weight and batch row a byte permute and an FMA (int8 also a
  // subtract, fp8 conversions instead), per x element a conversion and (int4) a sum, shared by
  // the warp's rows. On tensor cores (int4g128) a shift and a LOP3 per pair of weights, the
  // products in mma, and the fragments' addressing: 1.5 per weight whatever the rows per warp
  // (the b9473e7 kernel's sweeps run one 16-row tile per warp as fast as two or faster; the
  // 1 + 1 / rows of 2df8805 ranked one tile last and missed 28672x4096's best by 7%). The issue
  // rate is quantized_issue_share of the fp32 rate, scaled down by resident warps /
  // quantized_issue_warps where fewer warps are resident (too few to hide the dequantizing
  // chains' latency). Both are the least-squares fit in log time (fit_quantized_issue,
  // tuner/model_fit.hpp) over the 2112 candidates of the H200 sweeps
  // bench/results/raw/q-run2_h200_sweep_{int8,fp8,int4g128_cudacore}.csv,
  // q-run3_h200_sweep_int4g128_{28672x4096,4096x4096}.csv (CUDA-core rows; their tensor-core
  // rows are of the kernel before 5b5fbfb) and 8b65322_h200_sweep_int4_tc.csv (today's
  // tensor-core kernel; the sweeps of earlier ones are checked, no longer fitted), with the
  // register and shared-memory estimates above: 0.28 and 8 warps, RMS log error 0.285 (0.30 and
  // 0.256 with 2df8805's term on f4d6825's sweep, 0.35 and no warp term before);
  // tests/tuner/quant_model_test.cpp refits them and checks the shipped values.
  if (quantized) {
    // 8-bit weights on tensor cores: their conversion to the activation dtype, 0.5 (fp8 to
    // fp16) to 2.5 (fp8 to bf16, through fp32; int8 to bf16 takes 2) instructions a weight; 2 here.
    const double per_weight = int4_tc ? 1.5
                              : tc    ? 2.0
                                      : (is_int4(w) ? 2.4 : 3.2) + (is_int4(w) ? 3.0 : 2.0) / c.rows_per_warp;
    // The conversions of 8-bit weights on tensor cores are per weight, whatever M (the mma does
    // the batch rows); the CUDA-core families count per weight and batch row.
    // Int4 on tensor cores at M > 1: the mma does the batch rows too, but x is no longer staged
    // once per block (M = 1): each warp loads and permutes x and sums it with a second mma, per
    // n-tile of 8 batch rows, shared by its tiles. Hence a base above M = 1's and a term per
    // n-tile over tiles per warp (int4_tc_batch_issue, int4_tc_batch_tile_issue). Counted per
    // batch row as the CUDA-core families are, this term made the model's defaults on the
    // recorded int4g128 sweeps at M = 16 run 1.27x the best (16x14336x4096: 41.6 us, 0.78x
    // bf16 cuBLAS; sweeps/h200_int4g128_m16_6223e09_pdl.csv); with it (and the turnover and
    // split-K terms), 1.15x the best over M = 4, 8, 16, none below 1.05x cuBLAS (docs/tuning.md).
    const double batch = int4_tc ? (m > 1 ? gpu.int4_tc_batch_issue + gpu.int4_tc_batch_tile_issue * n_tiles / rows : 1.0)
                         : tc   ? 1.0
                                : m;
    const double ops = static_cast<double>(s.n) * static_cast<double>(s.k) * per_weight * batch;
    add_issue(ops, gpu.quantized_issue_share, gpu.quantized_issue_warps);
  }

  // Split-K (measured on the H200: +1.3 us at 2 splits on small shapes, ~4% of the streaming
  // time per extra split on large ones): partials written and re-read, more blocks, a serial
  // fix-up by the last block of each row block. Int4 on tensor cores at M > 1 pays more per
  // split (each split's blocks fill their ring and load x again; int4_tc_batch_split_share).
  double split_us = 0;
  const double split_share = int4_tc_batched ? gpu.int4_tc_batch_split_share : 0.04;
  if (c.split_k > 1) split_us = 0.8 + 0.5 * (c.split_k - 1) + split_share * (c.split_k - 1) * stream_us;
  // A block of k_warps > 1 ends with a barrier and a shared-memory reduction.
  const double reduce_us = 0.05 * (c.k_warps > 1 ? 1 : 0);

  // Launch, ramp and drain (GpuModelParams::launch_us, pdl_launch_us): the median of what the
  // recorded H200 winners take beyond the other terms at M = 1, 28 runs each without and with
  // PDL (fit_launch, tests/tuner/defaults_test.cpp): 2.8 and 1.2 us (2.2 and 0.8 before).
  ModelEstimate e;
  e.time_us = (c.pdl ? gpu.pdl_launch_us : gpu.launch_us) + stream_us + split_us + reduce_us;
  e.bytes_in_flight = in_flight_per_sm * std::min(blocks, sms);
  e.waves = waves;
  e.row_blocks = row_blocks;
  e.blocks = blocks;
  e.registers = regs;
  e.shared_bytes = shared;
  e.resident_per_sm = per_sm;
  e.warp_bytes = warp_bytes;
  e.in_flight_per_sm = in_flight_per_sm;
  e.needed_per_sm = sm_share * latency_ns * 1e-9;
  e.latency_ns = latency_ns;
  e.sm_gbps = sm_bw / 1e9;
  e.balance = balance;
  e.turnover = turnover;
  e.issued_loads = issued_loads;
  e.short_trip = short_trip;
  e.transfer_us = transfer_us;
  e.compute_us = issue_us;
  e.stream_us = stream_us;
  e.split_us = split_us;
  e.reduce_us = reduce_us;
  e.launch_us = c.pdl ? gpu.pdl_launch_us : gpu.launch_us;
  return e;
}

std::vector<KernelConfig> rank_by_model(std::vector<KernelConfig> configs, DType t, const Shape& s,
                                        const GpuModelParams& gpu, WeightFormat w) {
  std::vector<std::pair<double, std::size_t>> order;
  for (std::size_t i = 0; i < configs.size(); ++i) order.emplace_back(estimate(configs[i], t, s, gpu, w).time_us, i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<KernelConfig> out;
  out.reserve(configs.size());
  for (const auto& [time, i] : order) out.push_back(configs[i]);
  return out;
}

bool prefetch_fits_l2(const KernelConfig& c, DType t, const Shape& s, const GpuModelParams& gpu) {
  if (!c.prefetch_l2) return true;
  const double esize = static_cast<double>(dtype_size(t));
  const double slice = esize * std::ceil(static_cast<double>(s.k) / c.split_k / c.k_warps) * c.rows_per_warp;
  const double warp_slots = double(gpu.max_threads_per_sm) / 32 * gpu.sm_count;
  const double call = esize * static_cast<double>(s.n) * static_cast<double>(s.k);
  return std::min(call, slice * warp_slots) <= gpu.l2_bytes;
}

namespace {
// A CUDA-core block of four or more warps along K whose warps issue fewer than 8 loads along a
// row (kShortWarpLoads): each warp's share of K is a few trips. The model takes these for as
// fast as the rest, and on the recorded M = 1 sweeps they run slower than it says, more so the
// fewer loads a warp and the more warps a block holds (measured over predicted on the H200's
// families candidates: four along K, one load a trip, 1.08-1.33 with 3-4 loads a warp-row
// against 1.10-1.18 with 8-19; one warp along K 1.07-1.13), the look of a block whose slot waits
// for its slowest warp. As the untuned default, 14336x3584's `t256_r2_kw4_v16_u1` ran 0.88x
// cuBLAS on the H200 in three leases (1.245x the best measured; 1.109x on the H100).
constexpr long long kShortWarpLoads = 8;
bool short_warp_k_block(const KernelConfig& c, DType t, const Shape& s) {
  if (c.family != Family::cuda_core || c.k_warps < 4) return false;
  const long long row_chunks = dense_cuda_core_row_chunks(c, t, s);
  const long long own = (row_chunks + c.k_warps - 1) / c.k_warps;  // the first warp's, the most
  return (own + c.unroll - 1) / c.unroll * c.unroll < kShortWarpLoads;
}
}  // namespace

KernelConfig default_config(DType t, const Shape& s, const GpuModelParams& gpu, int m, WeightFormat w) {
  std::vector<KernelConfig> space = search_space_for(t, s, m, w);
  // Dense at M = 1: not the short-warp blocks above, where the space has anything else. Left out
  // of the default alone (the tuner still measures them), over the five recorded M = 1 sweeps
  // the defaults come nearer the best or stay: the H200's families candidates 1.1205 ->
  // 1.1010x the best (14336x3584 1.245 -> 1.001x, 4608x3584 1.137 -> 1.068x), the H100's
  // 1.0879 -> 1.0793x, `h200_bf16_trips_pdl.csv` 1.0756 -> 1.0673x, the other two unchanged
  // (`Defaults.ShortWarpBlocksAreNotTheDefault`); on the H200 at b869777 14336x3584's default
  // was the tuned config itself (1.16x cuBLAS, 0.88x before).
  // Where rows are not 16-byte aligned (K x element size; the tuner's W has ld = K), a 16-byte
  // config runs as its aligned-body twin (misaligned_variant), and the default is taken among
  // the twins whose body is compiled once per x offset (compiles_per_x_offset: one row a warp,
  // 4 loads), the aligned body's winners wherever it was tuned on the H200 (4097x4099, 4096x4093,
  // 11008x4095: `t128_r1_kw1_v16_u4_al`). The model's charge for the others (aligned_body_trips)
  // is a fit of wide spread (RMS log error 0.26-0.30), and among them it ranked u8 and two or
  // four rows a warp first, 1.17-1.54x the best measured; among the per-offset twins its pick
  // runs within 1.06x the best on the three shapes' tunes and the two sweeps of 4097x4099.
  const bool misaligned_rows = s.k * static_cast<std::int64_t>(dtype_size(t)) % 16 != 0;
  if (m == 1 && w == WeightFormat::dense) {
    std::vector<KernelConfig> kept;
    for (const KernelConfig& c : space) {
      const bool runs_aligned_body = misaligned_rows && c.vec_bytes == 16;
      const bool per_offset_body = c.aligned_body && compiles_per_x_offset(c);
      if (!short_warp_k_block(c, t, s) && (!runs_aligned_body || per_offset_body)) kept.push_back(c);
    }
    if (!kept.empty()) space = std::move(kept);
  }
  // Dense bf16/fp16 at M > 1: the tensor-core family's best. The space holds CUDA-core configs
  // there too (M = 2; the tuner measures both), but the model ranks them too well: in the H200
  // sweeps of every preset shape at M = 2 (bench/results/sweeps/h200_batch_da60bb8.csv)
  // its CUDA-core pick ran 1.09-1.48x the best config (2x4096x4096: 15.1 us, cuBLAS 12.5), its
  // tensor-core pick 1.01-1.12x; tensor cores won 6 of the 7 shapes (1024x4096 by 2.5%). With
  // x loaded first at m tile 2 (ab4aa0a) the CUDA cores' best won 1024x4096, 4096x4096 and
  // 4096x14336, but not the model's CUDA-core pick (2x4096x4096: 13.1 us against this default's
  // 11.2, raw/xf2probe_h200_sweeps_bf16_m2.tar.gz).
  // The wide blocks (wide_k_block) are among its candidates since 2026-12-05: with four chunks
  // in flight a warp at the family's latency the model picks them where they win on today's
  // kernel (4096x4096, 4096x14336; the w8 ones on 1024x4096); it left them out before, when it
  // undervalued their few blocks on older kernels (docs/tuning.md, "The dense tensor-core default").
  // On rows that are not 16-byte aligned a tensor-core config runs as its al twin
  // (templates/gemv_tcal.cu), which the space holds: the default is taken among those, so that
  // the config named is the kernel that runs (as at M = 1).
  if (m > 1 && w == WeightFormat::dense && t != DType::f32) {
    std::vector<KernelConfig> tc;
    for (const KernelConfig& c : space)
      if (c.family == Family::tensor_core && (!misaligned_rows || c.aligned_body)) tc.push_back(c);
    if (!tc.empty()) space = std::move(tc);
  }
  auto ranked = rank_by_model(std::move(space), t, s, gpu, w);
  if (!ranked.empty()) return ranked.front();
  KernelConfig c;  // tiny K: no config of the space is valid; fall back to a plain kernel
  c.vec_bytes = static_cast<int>(dtype_size(t));
  c.m_tile = m;
  c.rows_per_warp = 1;
  return c;
}

}  // namespace gemvtune
