// The steps each warp of a row set takes along K in the dense tensor-core kernels
// (templates/gemv_tc.cu, templates/gemv_tcal.cu), for `gemvtune explain`.
//
// Why: the KW warps of a row set take runs of U chunks in turn, and the chunks a row has
// beyond whole rounds (chunks left after the runs, a partial chunk, the al kernel's edge
// chunks) are more steps for some warps, each waiting its own round trip to memory, while the
// block's finish waits for its slowest warp. On an H100 (bench/results/h200.md, 2026-12-06
// 14:14 UTC) 4097x4099 at kw8 u4 m8 gave warp 0 six steps where the others had three to five,
// and took 1.1-1.5 us longer than 4096x4096 with four steps a warp.
#pragma once

#include <optional>
#include <string>

#include "gemvtune/config.hpp"
#include "gemvtune/dtype.hpp"
#include "gemvtune/shape.hpp"

namespace gemvtune {

struct WarpSteps {
  long long chunks = 0;       // whole chunks of a row in the split (the al kernel: between its edges)
  long long runs = 0;         // runs of U chunks, the warps taking them in turn from warp 0
  long long leftover = 0;     // whole chunks after the runs: gemv_tc.cu's in one predicated step a
                              // warp, gemv_tcal.cu's one step each, in turn from the first warp
                              // with a run fewer (its edges after them)
  long long partial = 0;      // gemv_tc.cu: a last partial chunk (warp KW - 1)
  long long edges = 0;        // gemv_tcal.cu: chunks holding a row's first or last block
  long long slowest = 0, fastest = 0;  // steps of the slowest and the fastest warp
};

// The steps of the row set (and split) whose slowest warp takes most, over the row offsets
// that W contiguous from a 16-byte boundary with ld = K gives; nullopt for the other families.
std::optional<WarpSteps> warp_steps(const KernelConfig& c, DType t, WeightFormat w, const Shape& s);

// One line for explain: "5 steps for the slowest warp, 4 for the fastest: 31 runs of 4 chunks
// over 8 warps, then 3 chunks left (one step each) and 2 edge chunks (one step each)".
std::string describe(const WarpSteps& steps, const KernelConfig& c);

}  // namespace gemvtune
