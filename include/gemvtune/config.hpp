// A GEMV kernel configuration: every parameter the generator and the launcher need: the
// kernel family and its knobs. What is computed (batch M, N, K, dtype) is the problem, not
// the config; the config only says the most batch rows its kernel takes (m tile).
//
// Text form (used in kernel names, logs, the CLI and the cache), fields in this order:
//   [tc_]t128_r2_kw1_v16_u4_sk3_cs[_pdl[_pf]][_ring][_al][_ln8][_w8][_m8]
//   tc  the tensor-core family (mma.sync, bf16/fp16); absent: the CUDA-core family
//   t   threads per block            kw  warps that share one row set along K
//   r   rows per warp (tensor cores: tiles of 16 rows, or 8 with w8, per warp: 1, 2 or 4)
//   v   bytes per weight load (2, 4, 8, 16; tensor cores: 16)
//   u   loads in flight per row before first use (unroll depth)
//   sk  split-K: blocks along K whose partial sums are combined in fixed order
//   cs|nc  weight load cache hint: cs = streaming (evict first), nc = read-only path
//   pdl programmatic dependent launch (Hopper): weights prefetched before waiting on
//       the previous kernel in the stream
//   pf  (with pdl) also asks L2 for the rest of the warp's weights before waiting, so HBM stays
//       busy while the previous kernel drains
//   ring weights go global -> shared memory by cp.async, unroll stages ahead of the one being
//       consumed, in a per-warp ring of unroll + 1 slots: bytes in flight that hold no
//       registers. 8-bit quantized weights on CUDA cores (rows x 512-byte slots,
//       templates/gemv_q.cu) and int4g128 on tensor cores (two-chunk stages of each tile,
//       templates/gemv_qtc.cu; without ring int4g128 loads into registers: whole lines at m tile 1,
//       templates/gemv_q4l.cu, and rows g and g + 8 a lane at m > 1, templates/gemv_tc.cu)
//   al  aligned body (CUDA cores, 16-byte loads only): each row's elements before its first
//       16-byte boundary (head) and after its last whole 16-byte load (tail) are read one by one,
//       the rest with 16-byte loads from aligned addresses, and x without any alignment; so
//       any element-aligned W, ld and x run with 16-byte weight loads (odd K, slices)
//   ln  lanes per row (CUDA cores, 16 or 8; absent means 32): 32 / ln rows side by side in
//       each warp-wide load, so lanes of different rows share their x loads (at M > 1 the x
//       loads' L1 cost falls by 32 / ln); the warp owns r x 32 / ln rows
//   w8  8-row tiles (dense tensor cores): W is the mma's B operand and X its A operand, so a
//       tile is 8 rows of W, not 16, and a small N makes twice the tiles (templates/gemv_tc.cu)
//   m   the m tile: the kernel computes up to this many rows of X (batch); absent means 1
// Parsing is strict: to_string(parse_config(s)) == s for every accepted s.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gemvtune/dtype.hpp"
#include "gemvtune/shape.hpp"
#include "gemvtune/weights.hpp"

namespace gemvtune {

enum class LoadHint { streaming, readonly };  // "cs", "nc"
enum class Family { cuda_core, tensor_core };   // templates/gemv.cu, templates/gemv_tc.cu

// Most rows of X (tokens of a decode batch) one launch computes.
inline constexpr int kMaxBatch = 16;
// The most outputs (block rows x m tile) whose split-K sums a block keeps in shared memory to
// finish as a thread block cluster: the prelude's GEMV_CLUSTER_OUTPUTS (test_gemv_launch checks
// that they agree); larger blocks finish through global memory (jit::cluster_blocks_for).
inline constexpr int kClusterSplitOutputs = 2048;

struct KernelConfig {
  Family family = Family::cuda_core;
  int threads = 128;
  int rows_per_warp = 1;
  int k_warps = 1;
  int vec_bytes = 16;
  int unroll = 2;
  int split_k = 1;
  LoadHint hint = LoadHint::streaming;
  bool pdl = false;
  bool prefetch_l2 = false;  // only with pdl
  int m_tile = 1;            // the kernel computes m <= m_tile rows of X
  bool aligned_body = false;  // "al": 16-byte loads whatever the alignment of W's rows and x
  int lanes_per_row = 32;     // "ln": lanes along one row; 32 / lanes_per_row rows per warp load
  bool ring = false;          // "ring": weights through a shared-memory ring (8-bit CUDA cores, int4 tensor cores)
  int tile_rows = 16;         // "w8": rows of W per tensor-core tile, 16 or 8 (dense tensor cores)
  // "rc" / "rcN": the launch bounds hold a thread to this many registers (0: no cap). On the
  // tensor cores' quantized register loads at m tile > 1, kRegCap ("rc"); on the CUDA-core
  // register loads, the register count that lets one more block onto an SM ("rc80":
  // occupancy_step_cap).
  int reg_cap = 0;

  int warps() const { return threads / 32; }
  // Weight rows one warp owns: rows_per_warp (times the rows side by side in one load, 32 /
  // lanes_per_row), or rows_per_warp tiles of tile_rows rows on tensor cores.
  int warp_rows() const {
    return family == Family::tensor_core ? tile_rows * rows_per_warp : rows_per_warp * (32 / lanes_per_row);
  }
  // Rows one block produces: warps are grouped k_warps at a time onto one row set.
  int block_rows() const { return warps() / k_warps * warp_rows(); }
  // Blocks along N for n rows: ceil(n / block_rows()), but on tensor cores with al
  // (templates/gemv_tcal.cu), whose row sets take rows 8 apart from 128-row bands: 8 row sets
  // for each R bands, ceil(n / 128 R) x 8 / (warps / k_warps) blocks.
  long long row_blocks(long long n) const {
    if (family == Family::tensor_core && aligned_body) {
      const long long sets = (n + 128LL * rows_per_warp - 1) / (128LL * rows_per_warp) * 8, per_block = warps() / k_warps;
      return (sets + per_block - 1) / per_block;
    }
    return (n + block_rows() - 1) / block_rows();
  }

  bool operator==(const KernelConfig& o) const;
  bool operator!=(const KernelConfig& o) const { return !(*this == o); }
};

// The register cap of "rc" configs, per thread: the launch bounds ask ptxas for
// 65536 / (kRegCap x threads) blocks an SM (templates/gemv_tc.cu, GEMV_TC_REG_CAP). A CUDA-core
// config's cap is written out ("rc80"; templates/gemv.cu, GEMV_REG_CAP): a multiple of 8 from
// 32 to 248 that leaves a block of `threads` at most 32 blocks an SM.
constexpr int kRegCap = 128;

std::string to_string(const KernelConfig& c);
// Throws InvalidArgument naming the text and the field when malformed.
KernelConfig parse_config(std::string_view text);

// The validity rules, all in one place. Each returns the reason a config cannot be used,
// or nothing when it can.
//   why_invalid: rules that hold for any shape (ranges, divisibility, register budget).
//   why_invalid_for: also the rules of this dtype, shape and batch m (vector narrower than an
//     element, split-K with splits that would get less than one warp's load, m above the
//     config's m tile, tensor cores for fp32).
std::optional<std::string> why_invalid(const KernelConfig& c);
//   With quantized weights (weights != dense) the kernel is the quantized family
//   (templates/gemv_q.cu), which takes the CUDA-core knobs: 16-byte loads, no L2 prefetch,
//   and for int4 a K that is a multiple of the group.
//   why_invalid_weights: the rules of a weight format and activation dtype that hold for any
//   shape (which family runs it, load width, the int4 tensor-core kernel's shared memory, the
//   CUDA cores' accumulator budget: 64 for dense fp32, 32 otherwise); part of why_invalid_for.
std::optional<std::string> why_invalid_weights(const KernelConfig& c, DType t, WeightFormat weights);
// Whether a config's text contains every '+'-separated part of pattern ("tc_+_ring"): the
// filters of the GPU test suites and gemvtune-sweep.
bool config_text_matches(std::string_view config_text, std::string_view pattern);
// Whether the aligned body (al) of c is compiled once per byte offset of x in its 16-byte blocks
// (templates/gemv.cu, aligned_body_loops): at m tile 1 with one row per warp and 4 loads a trip,
// where picking x's elements at run time cost 14% on 4097x4099 (H200). The copies make such a
// kernel's NVRTC compile 2-4x as long, which a small problem's tune pays (tune() leaves them out
// there). The generator passes this to the template as GEMV_AL_X_OFFSETS.
bool compiles_per_x_offset(const KernelConfig& c);
// Whether c with these weights runs templates/gemv_q4l.cu: int4 on tensor cores (int4g128 only)
// without the ring at m tile 1 (whole-line register loads). The generator's template, the rules
// and the model's registers and shared memory all ask this one question.
bool runs_int4_line_loads(const KernelConfig& c, WeightFormat weights);
// Static shared memory of one block of c with these weights, in bytes, as ptxas reports it
// ("bytes smem"; the cubin's count adds the 1 KB that sm_90 reserves per block), within 16 bytes
// (alignment): what its template declares (templates/prelude.cu and the family's own file).
//   ring    the 8-bit CUDA-core ring (templates/gemv_q.cu): warps x (unroll + 1) slots x rows x
//           512 bytes; int4g128's tensor-core ring (templates/gemv_qtc.cu): warps x tiles x
//           (unroll + 1) stages x 2 KB (two chunks of 16 rows)
//   x       int4g128 on tensor cores at m tile 1 stage x with each chunk's sum: 32 chunks
//           (templates/gemv_q4l.cu, 10368 bytes) or 16 with the ring (5184 bytes)
//   finish  the block's end (prelude.cu): a float a row of each warp and batch row on CUDA cores
//           (finish_cc_rows), 512 bytes a tile and 8 batch rows on tensor cores
//           (finish_tc_tiles), the cluster split-K's sums (a float an output, up to
//           GEMV_CLUSTER_OUTPUTS, not for int4) and the last-block flag
// A block can declare at most 48 KB; why_invalid_weights refuses more, with these parts named.
// The model's blocks per SM count it too.
struct SharedBytes {
  int ring = 0, x = 0, finish = 0;
  int total() const { return ring + x + finish; }
};
// The most static shared memory one block may declare (more needs dynamic shared memory and an
// opt-in).
inline constexpr int kMaxStaticSharedBytes = 48 * 1024;
SharedBytes static_shared_bytes(const KernelConfig& c, WeightFormat weights);
std::optional<std::string> why_invalid_for(const KernelConfig& c, DType t, const Shape& s, int m = 1,
                                           WeightFormat weights = WeightFormat::dense);

// Alignment rule for vector loads: W's base, each row (ld * element size), x and each row of
// X (ldx * element size, when m > 1) must be vec_bytes aligned. Returns the reason when not.
// An aligned-body config (al) needs only W and x aligned to the element.
std::optional<std::string> why_misaligned(const KernelConfig& c, DType t, std::uintptr_t w,
                                          std::int64_t ld, std::uintptr_t x, std::int64_t ldx = 0);

// Widest vector width (<= c.vec_bytes) that the pointers allow; element size at worst.
int widest_aligned_vec_bytes(const KernelConfig& c, DType t, std::uintptr_t w, std::int64_t ld,
                             std::uintptr_t x, std::int64_t ldx = 0);

// The config with `width`-byte loads, for operands that do not allow c.vec_bytes. Tensor cores
// need 16-byte loads, so a narrower tensor-core config becomes the CUDA-core kernel of the same
// m tile (one row per warp, 4 loads in flight). Drops al (16-byte loads only), and the ring
// (register trips of the same knobs, unroll halved to the register budget). What the tuner
// runs; the runtime, `run` and bench use misaligned_variant below.
KernelConfig with_vec_bytes(KernelConfig c, int width);

// The config to run when the operands allow only `width`-byte loads (widest_aligned_vec_bytes
// of c): c itself when width is c's; for a 16-byte config its aligned-body variant (al), which
// any element-aligned operands allow: a tensor-core config at m tile > 1 its own
// (tensor_core_aligned_body_twin), at m tile 1 with_vec_bytes' CUDA-core kernel with 16-byte
// loads and al; otherwise with_vec_bytes(c, width). The one rule for the runtime, `run` and bench.
KernelConfig misaligned_variant(const KernelConfig& c, int width);

// A tensor-core config's twin on rows that are not 16-byte aligned (templates/gemv_tcal.cu):
// the same knobs with al, 16-row tiles, no register cap or L2 prefetch; c itself when it is
// one; none at m tile 1 or for the ring.
std::optional<KernelConfig> tensor_core_aligned_body_twin(const KernelConfig& c);

// A 16-byte config's aligned-body twin on CUDA cores (templates/gemv.cu): c itself when it is one;
// a tensor-core config's the CUDA-core kernel of the same m tile (what misaligned_variant gives at
// m tile 1, and the runtime's fallback for fused segments that split a tensor-core al warp's
// bands); none for the ring or narrower loads.
std::optional<KernelConfig> cuda_core_aligned_body_twin(const KernelConfig& c);

// Throws InvalidArgument with the reason when why_invalid_for says so.
void check_config(const KernelConfig& c, DType t, const Shape& s, int m = 1,
                  WeightFormat weights = WeightFormat::dense);

// Throws InvalidArgument unless 1 <= m <= kMaxBatch.
void check_batch(std::int64_t m);

}  // namespace gemvtune
