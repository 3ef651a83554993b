// The search space the tuner explores, and the rules that trim it for one shape.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "gemvtune/config.hpp"

namespace gemvtune {

// Split-K counts the default space tries for every kernel: at M = 1 with dense weights, and in
// powers of two at M > 1 and for quantized weights.
inline constexpr int kSplitKChoices[] = {1, 2, 3, 4, 6, 8};
inline constexpr int kBatchedSplitK[] = {1, 2, 4, 8};
// The split-K counts of the default space of (batch M, weight format).
std::vector<int> split_k_choices(int m, WeightFormat weights);

// Every config of the default search space for a dtype and batch M (1..kMaxBatch), valid by
// why_invalid (any shape). M = 1: the CUDA-core family; M > 1: m tile M, tensor cores for
// bf16/fp16, CUDA cores for fp32 and for M <= 4.
// With quantized weights: the quantized CUDA-core family (16-byte loads, streaming, PDL on or
// off, split-K in powers of two), m tile M.
std::vector<KernelConfig> default_search_space(DType t, int m = 1, WeightFormat weights = WeightFormat::dense);

// Whether a config is a wide block: more than 4 warps along K or more than 256 threads. The
// dense tensor-core space holds such blocks for small grids (8 warps along K of 256 threads, 16
// of 512; search_space.cpp), and so does int4g128's with register loads at every m tile
// (gemv_q4l.cu at m tile 1, gemv_tc.cu above; no split-K); no other family does.
bool wide_k_block(const KernelConfig& c);

// The distinct kernels (one per source) of a list of configs: split_k is a launch parameter,
// so configs that differ only in it share one compiled kernel. Returned with split_k = 1.
std::vector<KernelConfig> distinct_kernels(const std::vector<KernelConfig>& configs);

// The most rows of W for which the space holds 8-row tensor-core tiles (w8): 128 tiles of 16
// rows, fewer than the SMs of a large GPU (search_space.cpp says why).
inline constexpr std::int64_t kMaxRowsForEightRowTiles = 2048;

// The configs of the default space that can run this dtype, shape and batch (why_invalid_for;
// 8-row tiles only up to kMaxRowsForEightRowTiles rows).
std::vector<KernelConfig> search_space_for(DType t, const Shape& s, int m = 1,
                                           WeightFormat weights = WeightFormat::dense);

// Grids fitted to the SMs: the tensor-core config c (register loads; not the ring) with other
// block sizes, for shape s on a GPU of sm_count SMs. The space's blocks are 64 to 512 threads in
// powers of two, so a grid of one or two waves often leaves SMs with less work than others
// (28672x4096 int4g128 at M = 1 in 256-thread blocks: 224 blocks on 132 SMs, 92 of them with
// two, 40 with one). A twin keeps every knob but the threads: 32 x k_warps x G, with G the row
// groups a block needs so that the grid fits b blocks an SM for b = 1 to 4, at most 512
// threads (past 256 only with one tile a warp), valid for (t, s, m, weights), the threads
// differing from c's. Some spill, which the tuner finds in ptxas' report and skips. The tuner
// measures the twins of its leader (tuner.cpp); on the H200 (bench/results/h200.md, 2026-12-04)
// they made 28672x4096 int4g128 at M = 1 3% and 16x6144x4096 bf16 5% faster. Empty for other
// configs.
std::vector<KernelConfig> balanced_twins(const KernelConfig& c, DType t, const Shape& s, int m, WeightFormat weights,
                                         int sm_count);

// The register-capped twin of c: the same knobs with "rc" (at most kRegCap registers a thread,
// templates/gemv_tc.cu), where that is a valid config for (t, s, m, weights): quantized weights
// on the tensor-core register loads at m tile > 1. 8-bit configs at m tile 16 take 105-255
// registers, many over 150; capped, some spill a few bytes and run up to 27% faster, others spill hundreds and
// lose, so the tuner measures the twins of the candidates whose kernels hold more than kRegCap
// registers and spill at most kMaxCappedStackBytes when capped (tuner.cpp). Outside the space,
// like the balanced twins. Empty where not valid, or where c is capped already.
std::optional<KernelConfig> register_capped_twin(const KernelConfig& c, DType t, const Shape& s, int m,
                                                 WeightFormat weights);
// The register cap that lets one more block of `threads` onto an SM than `registers` a thread
// do, on GPUs of 65536 registers an SM allocated 8 a thread at a time, at most 32 blocks and
// 2048 threads an SM (sm_80 to sm_90): a multiple of 8, or nothing where no further block fits
// by threads or block slots or the cap would fall under 32.
std::optional<int> occupancy_step_cap(int registers, int threads);

// The CUDA-core twin of c capped at occupancy_step_cap (c's kernel took `registers` a thread):
// "rcN" on the CUDA-core register loads (templates/gemv.cu, and gemv_q.cu for quantized weights;
// not the ring or al), where the cap is at most kMaxCapSqueeze registers below and the twin is
// valid for (t, s, m, weights). Since the batch loops came in, ptxas gives some M = 1
// kernels a few registers more than the round-1 kernel had (t256_r2_kw1_u4: 80 -> 88 registers,
// 3 -> 2 blocks an SM, which took 6144x4096's 384 blocks from one wave to 1.45), and whether
// squeezing them back pays depends on the shape, so the tuner measures the twins of its fastest
// CUDA-core candidates (tuner.cpp) and drops those ptxas spills. Outside the space, like the
// other twins. Empty for other configs, or where c is capped already.
std::optional<KernelConfig> cuda_core_capped_twin(const KernelConfig& c, DType t, const Shape& s, int m, int registers,
                                                  WeightFormat weights = WeightFormat::dense);
constexpr int kMaxCapSqueeze = 16;

// The stack frame (spilled registers) a capped twin may take: the twins that won on the H200
// spilled 16-40 bytes (8-24 bytes of frame); four tiles a warp spilled 400-600 and lost.
constexpr int kMaxCappedStackBytes = 64;

}  // namespace gemvtune
