// The steps of a row set's warps along K in the dense tensor-core kernels (tuner/warp_steps.hpp).
#include "tuner/warp_steps.hpp"

#include <algorithm>
#include <vector>

#include "gemvtune/model.hpp"

namespace gemvtune {
namespace {

constexpr long long kChunk = 32;       // K positions a warp-wide 16-byte load covers in a row (2-byte types)
constexpr long long kSplitAlign = 64;  // split_k_slice<128 / 2>: splits start on 128-byte lines

// Of `runs` items taken in turn by k_warps warps from warp 0 (runs of U chunks, or single chunks
// from the warp whose place in the turns is kw): warp kw's count.
long long runs_of(long long runs, int kw, int k_warps) { return runs > kw ? (runs - kw + k_warps - 1) / k_warps : 0; }

// One slice of one row set: gemv_tc.cu's loop, or gemv_tcal.cu's at row offset o.
WarpSteps slice_steps(const KernelConfig& c, long long kb, long long ke, long long k, int o) {
  const int KW = c.k_warps, U = c.unroll;
  WarpSteps st;
  std::vector<long long> per_warp(static_cast<std::size_t>(KW), 0);
  if (!c.aligned_body) {
    st.chunks = (ke - kb) / kChunk;
    st.runs = st.chunks / U;
    st.leftover = st.chunks - st.runs * U;
    st.partial = (ke - kb - st.chunks * kChunk) > 0 ? 1 : 0;
    for (int kw = 0; kw < KW; ++kw) {
      long long& n = per_warp[static_cast<std::size_t>(kw)];
      // ptxas issues kDenseTcChunksIssued chunks together: that many / U of a warp's runs a step.
      n = (runs_of(st.runs, kw, KW) * U + kDenseTcChunksIssued - 1) / kDenseTcChunksIssued;
      if (U > 1 && st.runs * U + kw < st.chunks) ++n;  // its leftover chunks, one predicated step
      if (st.partial && kw == KW - 1) ++n;
    }
  } else if (kb < ke) {
    const bool last_slice = ke == k;
    const long long inner_end = last_slice ? (k + o) / 8 : ke / 8;
    const long long blocks_end = last_slice ? (k + o + 7) / 8 : ke / 8;
    const long long j0 = kb == 0 && o > 0 ? 1 : 0;
    const long long j1 = std::max(j0, (inner_end - kb / 8) / 4);
    const long long jn = (blocks_end - kb / 8 + 3) / 4;
    st.chunks = j1 - j0;
    st.runs = st.chunks / U;
    st.leftover = st.chunks - st.runs * U;
    st.edges = j0 + std::max(0LL, jn - j1);
    // Leftover chunks, then edges, one step each, in turn from warp runs % KW (the first with
    // a run fewer).
    for (int kw = 0; kw < KW; ++kw) {
      const int turn = static_cast<int>((kw - st.runs % KW + KW) % KW);
      per_warp[static_cast<std::size_t>(kw)] = runs_of(st.runs, kw, KW) + runs_of(st.leftover + st.edges, turn, KW);
    }
  }
  st.slowest = *std::max_element(per_warp.begin(), per_warp.end());
  st.fastest = *std::min_element(per_warp.begin(), per_warp.end());
  return st;
}

}  // namespace

std::optional<WarpSteps> warp_steps(const KernelConfig& c, DType t, WeightFormat w, const Shape& s) {
  if (!is_dense_tensor_core(c, w) || t == DType::f32) return std::nullopt;
  const long long k = s.k;
  long long per_split = (k + c.split_k - 1) / c.split_k;
  per_split = (per_split + kSplitAlign - 1) / kSplitAlign * kSplitAlign;
  // Row offsets from 16 bytes (elements) of rows c, c + 1, ..., c + 7 with ld = K: rows 8
  // apart share one. Aligned rows (K a multiple of 8) have only 0.
  std::vector<int> offsets;
  for (long long r = 0; r < std::min<long long>(8, s.n); ++r) offsets.push_back(static_cast<int>(r * k % 8));
  // The slowest warp's steps decide; on a tie, the row set with more work beyond the runs (a
  // misaligned row's edges rather than an aligned row's partial chunk).
  const auto extra = [](const WarpSteps& x) { return x.leftover + x.partial + x.edges; };
  std::optional<WarpSteps> worst;
  for (int y = 0; y < c.split_k; ++y) {
    const long long kb = std::min(k, y * per_split), ke = std::min(k, kb + per_split);
    for (int o : offsets) {
      const WarpSteps st = slice_steps(c, kb, ke, k, c.aligned_body ? o : 0);
      if (!worst || st.slowest > worst->slowest || (st.slowest == worst->slowest && extra(st) > extra(*worst)))
        worst = st;
    }
  }
  return worst;
}

std::string describe(const WarpSteps& st, const KernelConfig& c) {
  const auto plural = [](long long n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::string text = (st.slowest == st.fastest ? plural(st.slowest, "step", "steps") + " for every warp"
                                                : plural(st.slowest, "step", "steps") + " for the slowest warp, " +
                                                      std::to_string(st.fastest) + " for the fastest") +
                     ": " + plural(st.runs, "run", "runs") + " of " + plural(c.unroll, "chunk", "chunks") + " over " +
                     plural(c.k_warps, "warp", "warps") +
                     (!c.aligned_body && c.unroll < kDenseTcChunksIssued
                          ? " (" + std::to_string(kDenseTcChunksIssued / c.unroll) + " a step, as ptxas issues them)"
                          : "");
  std::vector<std::string> then;
  if (st.leftover)
    then.push_back(plural(st.leftover, "chunk", "chunks") +
                   (c.aligned_body ? " left (one step each)" : " left (in one step a warp)"));
  if (st.partial) then.push_back("a partial chunk (the last warp)");
  if (st.edges) then.push_back(plural(st.edges, "edge chunk", "edge chunks") + " (one step each)");
  for (std::size_t i = 0; i < then.size(); ++i) text += (i == 0 ? ", then " : i + 1 == then.size() ? " and " : ", ") + then[i];
  return text;
}

}  // namespace gemvtune
