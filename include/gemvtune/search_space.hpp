// The search space the tuner explores, and the rules that trim it for one shape.
#pragma once
#include <cstdint>
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

}  // namespace gemvtune
