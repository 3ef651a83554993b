// KernelConfig: its text form and every validity rule, in one place.
#include <charconv>
#include <vector>

#include "gemvtune/config.hpp"
#include "gemvtune/error.hpp"
#include "gemvtune/search_space.hpp"  // wide_k_block

namespace gemvtune {

namespace {
constexpr int kMaxThreads = 1024;
constexpr int kMaxSplitK = 64;
// Weight bytes each thread holds in registers per loop trip (rows x unroll x vector). 128 B per
// thread is 4 KB per warp: a few warps per SM already cover Little's law (about 27 KB per SM
// on an H200), while 256 B made ptxas spill (r2 u8 with 16-byte loads; the compile test reads
// ptxas' report).
constexpr int kMaxBytesInFlightPerThread = 128;
// Tensor cores: each lane holds two rows (g and g+8) of every 16-row tile, so twice the CUDA
// cores' budget: r2 u4 (256 B) compiled to ~178 registers without spilling.
constexpr int kMaxBytesInFlightPerThreadTc = 256;
// CUDA cores at m > 1: one fp32 accumulator per (row, batch row) held through the loop: 32, and
// 64 for dense fp32 without the aligned body (why_invalid_weights), so that fp32 at m tile
// 9..16 can hold 4 rows per warp and each x load feeds 4 rows instead of 2 (fp32 at M = 16 is
// bound by issue, not bytes: 0.62-0.85x cuBLAS with 2 rows on the H200, run of 6148431).
// t128_r4_kw2 u1/u2 at m tile 16 first compiled to 144/163 registers; with x's loads of a trip
// all ahead of the FMAs (gemv.cu, plain_body_trip) r4 at m tile 14-16 takes 238-255, and 6 of
// the 12 t128 r4 u2 kernels without PDL there spill 4-48 bytes, outside the main loop (the
// compile test's known_small_spill; NVRTC 13.0, sm_90, 2026-12-06). The same in bf16 with the
// aligned body spilled 156 bytes at 255 registers, and the quantized family holds dequantized
// values too (int4 r8 took up to 255 registers at m = 1).
constexpr int kMaxAccumulators = 64;
constexpr int kMaxAccumulators16 = 32;
constexpr int kMaxXBytesPerTrip = 512;

bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }
}  // namespace

SharedBytes static_shared_bytes(const KernelConfig& c, WeightFormat weights) {
  SharedBytes b;
  const bool tc = c.family == Family::tensor_core;
  const int batch_tiles = (c.m_tile + 7) / 8;
  if (c.ring && tc) b.ring = c.warps() * c.rows_per_warp * (c.unroll + 1) * 2048;  // gemv_qtc.cu
  else if (c.ring) b.ring = c.warps() * (c.unroll + 1) * c.rows_per_warp * 512;   // gemv_q.cu
  if (tc && is_int4(weights) && c.m_tile == 1) b.x = (c.ring ? 16 : 32) * (4 * 80 + 4);
  // The finish: finish_tc_tiles' fragments (one batch tile at m tile 1, where gemv_q4l.cu moves
  // its sums into the mma layout; one with 8-row tiles, whose batch rows are the A operand) or
  // finish_cc_rows' warp sums, then finish_block's cluster sums and its flag.
  const int tiles = c.tile_rows == 8 ? 1 : batch_tiles;
  b.finish = tc ? c.warps() * c.rows_per_warp * tiles * 512 : c.warps() * c.warp_rows() * c.m_tile * 4;
  const int outputs = c.block_rows() * c.m_tile;
  if (!is_int4(weights) && outputs <= kClusterSplitOutputs) b.finish += outputs * 4;
  b.finish += 4;
  return b;
}

namespace {
// Why c's shared memory (static_shared_bytes) cannot be declared, or nothing when it fits.
std::optional<std::string> why_shared_exceeds(const KernelConfig& c, WeightFormat weights) {
  const SharedBytes b = static_shared_bytes(c, weights);
  if (b.total() <= kMaxStaticSharedBytes) return std::nullopt;
  std::string parts;
  if (b.ring) parts += "ring " + std::to_string(b.ring) + ", ";
  if (b.x) parts += "staged x " + std::to_string(b.x) + ", ";
  parts += "finish " + std::to_string(b.finish);
  return "a block of " + std::to_string(c.threads) + " threads declares " + std::to_string(b.total()) +
         " bytes of shared memory (" + parts + "), more than the " + std::to_string(kMaxStaticSharedBytes) +
         " (48 KB) a kernel may declare";
}
}  // namespace

bool KernelConfig::operator==(const KernelConfig& o) const {
  return threads == o.threads && rows_per_warp == o.rows_per_warp && k_warps == o.k_warps &&
         vec_bytes == o.vec_bytes && unroll == o.unroll && split_k == o.split_k &&
         hint == o.hint && pdl == o.pdl && prefetch_l2 == o.prefetch_l2 && family == o.family &&
         m_tile == o.m_tile && aligned_body == o.aligned_body && lanes_per_row == o.lanes_per_row && ring == o.ring &&
         tile_rows == o.tile_rows && reg_cap == o.reg_cap;
}

std::string to_string(const KernelConfig& c) {
  std::string s = std::string(c.family == Family::tensor_core ? "tc_" : "") + "t" + std::to_string(c.threads) + "_r" + std::to_string(c.rows_per_warp) +
                  "_kw" + std::to_string(c.k_warps) + "_v" + std::to_string(c.vec_bytes) + "_u" +
                  std::to_string(c.unroll) + "_sk" + std::to_string(c.split_k) +
                  (c.hint == LoadHint::streaming ? "_cs" : "_nc");
  if (c.pdl) s += "_pdl";
  if (c.prefetch_l2) s += "_pf";
  if (c.ring) s += "_ring";
  if (c.aligned_body) s += "_al";
  if (c.lanes_per_row != 32) s += "_ln" + std::to_string(c.lanes_per_row);
  if (c.tile_rows != 16) s += "_w" + std::to_string(c.tile_rows);
  if (c.reg_cap) s += "_rc" + (c.reg_cap == kRegCap ? std::string() : std::to_string(c.reg_cap));
  if (c.m_tile != 1) s += "_m" + std::to_string(c.m_tile);
  return s;
}

KernelConfig parse_config(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("bad config '" + std::string(text) + "': " + why +
                           " (expected e.g. t128_r2_kw1_v16_u4_sk1_cs, ..._cs_pdl, ..._cs_pdl_pf, ..._cs_pdl_al, ..._cs_pdl_ring, ..._cs_m8, ..._cs_ln8_m16, "
                           "tc_t128_r1_kw4_v16_u2_sk1_cs_pdl_m16, tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_w8_m16 or tc_t128_r1_kw1_v16_u4_sk1_cs_pdl_rc_m16)");
  };
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    auto end = text.find('_', start);
    fields.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  KernelConfig c;
  if (!fields.empty() && fields.front() == "tc") {
    c.family = Family::tensor_core;
    fields.erase(fields.begin());
  }
  // Optional trailing m tile; "m1" is never written, so it is refused (one text per config).
  auto positive = [&](std::string_view f, std::string_view field, int* out) {
    if (f.empty() || f[0] == '0' || f[0] == '+' || f[0] == '-')
      throw bad("field '" + std::string(field) + "' needs a positive number without leading zeros");
    auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
    if (ec != std::errc() || end != f.data() + f.size())
      throw bad("field '" + std::string(field) + "' is not a number");
  };
  if (fields.size() >= 8 && !fields.back().empty() && fields.back()[0] == 'm') {
    const std::string_view f = fields.back();
    positive(f.substr(1), f, &c.m_tile);
    if (c.m_tile == 1) throw bad("an m tile of 1 is written by leaving the field out");
    fields.pop_back();
  }
  if (fields.size() < 7 || fields.size() > 12) throw bad("expected 7 to 12 fields separated by '_'");
  struct Num { const char* prefix; int* out; };
  const Num nums[] = {{"t", &c.threads}, {"r", &c.rows_per_warp}, {"kw", &c.k_warps},
                      {"v", &c.vec_bytes}, {"u", &c.unroll}, {"sk", &c.split_k}};
  for (std::size_t i = 0; i < 6; ++i) {
    std::string_view f = fields[i], p = nums[i].prefix;
    if (f.substr(0, p.size()) != p) throw bad("field " + std::to_string(i + 1) + " must start with '" + std::string(p) + "'");
    f.remove_prefix(p.size());
    positive(f, fields[i], nums[i].out);
  }
  if (fields[6] == "cs") c.hint = LoadHint::streaming;
  else if (fields[6] == "nc") c.hint = LoadHint::readonly;
  else throw bad("load hint '" + std::string(fields[6]) + "' must be cs or nc");
  // After the load hint, in this order and each at most once: pdl, pf (only after pdl), ring, al,
  // ln, w, rc.
  std::size_t i = 7;
  if (i < fields.size() && fields[i] == "pdl") c.pdl = true, ++i;
  if (i < fields.size() && fields[i] == "pf") {
    if (!c.pdl) throw bad("field 'pf' must follow pdl");
    c.prefetch_l2 = true, ++i;
  }
  if (i < fields.size() && fields[i] == "ring") c.ring = true, ++i;
  if (i < fields.size() && fields[i] == "al") c.aligned_body = true, ++i;
  if (i < fields.size() && fields[i].substr(0, 2) == "ln") {
    positive(fields[i].substr(2), fields[i], &c.lanes_per_row);
    if (c.lanes_per_row == 32) throw bad("32 lanes per row is written by leaving the field out");
    ++i;
  }
  if (i < fields.size() && fields[i].substr(0, 1) == "w") {
    positive(fields[i].substr(1), fields[i], &c.tile_rows);
    if (c.tile_rows == 16) throw bad("16-row tiles are written by leaving the field out");
    ++i;
  }
  if (i < fields.size() && fields[i].substr(0, 2) == "rc") {
    if (fields[i] == "rc") {
      c.reg_cap = kRegCap;
    } else {
      positive(fields[i].substr(2), fields[i], &c.reg_cap);
      if (c.reg_cap <= 0) throw bad("a register cap must be positive");
      if (c.reg_cap == kRegCap) throw bad("a cap of " + std::to_string(kRegCap) + " registers is written rc");
    }
    ++i;
  }
  if (i < fields.size())
    throw bad("field '" + std::string(fields[i]) +
              "' after the load hint must be pdl, pf (after pdl), ring, al, ln, w or rc, in that order");
  return c;
}

std::optional<std::string> why_invalid(const KernelConfig& c) {
  using std::to_string;
  if (c.threads < 32 || c.threads > kMaxThreads)
    return "threads " + to_string(c.threads) + " is outside 32.." + to_string(kMaxThreads);
  if (c.threads % 32 != 0) return "threads " + to_string(c.threads) + " is not a multiple of 32";
  if (c.rows_per_warp != 1 && c.rows_per_warp != 2 && c.rows_per_warp != 4 && c.rows_per_warp != 8)
    return "rows per warp " + to_string(c.rows_per_warp) + " is not 1, 2, 4 or 8";
  if (!is_pow2(c.k_warps) || c.k_warps > c.warps())
    return "k_warps " + to_string(c.k_warps) + " is not a power of two dividing the " +
           to_string(c.warps()) + " warps of the block";
  if (c.vec_bytes != 2 && c.vec_bytes != 4 && c.vec_bytes != 8 && c.vec_bytes != 16)
    return "vector width " + to_string(c.vec_bytes) + " bytes is not 2, 4, 8 or 16";
  if (c.unroll != 1 && c.unroll != 2 && c.unroll != 4 && c.unroll != 8)
    return "unroll " + to_string(c.unroll) + " is not 1, 2, 4 or 8";
  if (c.split_k < 1 || c.split_k > kMaxSplitK)
    return "split_k " + to_string(c.split_k) + " is outside 1.." + to_string(kMaxSplitK);
  if (c.prefetch_l2 && !c.pdl)
    return "L2 prefetch (pf) is issued while waiting on the previous kernel, so it needs pdl";
  if (c.m_tile < 1 || c.m_tile > kMaxBatch)
    return "m tile " + to_string(c.m_tile) + " is outside 1.." + to_string(kMaxBatch);
  if (c.aligned_body && c.vec_bytes != 16) return "the aligned body (al) is a knob of 16-byte loads";
  // Tensor cores on misaligned rows (templates/gemv_tcal.cu): 16-row tiles of rows 8 apart, at
  // m tile > 1 (at 1 the CUDA-core aligned body runs them).
  if (c.aligned_body && c.family == Family::tensor_core &&
      (c.m_tile == 1 || c.tile_rows != 16 || c.ring || c.prefetch_l2 || c.reg_cap))
    return "the tensor cores' aligned body (al) runs m tile > 1 on 16-row tiles, without w8, ring, pf or rc";
  if (c.lanes_per_row != 32 && c.lanes_per_row != 16 && c.lanes_per_row != 8)
    return "lanes per row " + to_string(c.lanes_per_row) + " is not 8, 16 or 32";
  if (c.lanes_per_row != 32 && (c.family != Family::cuda_core || c.aligned_body || c.prefetch_l2))
    return "lanes per row (ln) below 32 is a knob of the plain CUDA-core kernel, without al or pf";
  if (c.tile_rows != 16 && c.tile_rows != 8) return "tensor-core tiles of " + to_string(c.tile_rows) + " rows: 16 or 8";
  if (c.tile_rows != 16 && (c.family != Family::tensor_core || c.ring))
    return "8-row tiles (w8) are a knob of the tensor-core family's register loads, not of CUDA cores or the ring";
  if (c.reg_cap && (c.reg_cap < 32 || c.reg_cap > 248 || c.reg_cap % 8))
    return "register cap " + to_string(c.reg_cap) + " is not a multiple of 8 from 32 to 248";
  if (c.reg_cap && c.family == Family::tensor_core && (c.ring || c.m_tile == 1 || c.reg_cap != kRegCap))
    return "the tensor cores' register cap (rc, " + to_string(kRegCap) +
           " registers) is a knob of their register loads at m tile > 1 (templates/gemv_tc.cu), not of the ring or m tile 1";
  if (c.reg_cap && c.family == Family::cuda_core && (c.ring || c.aligned_body))
    return "the CUDA-core register cap (rcN) is a knob of the register loads, without the ring or al";
  if (c.reg_cap && c.family == Family::cuda_core && c.reg_cap * c.threads < 2048)
    return "a cap of " + to_string(c.reg_cap) + " registers would ask for more than 32 blocks of " + to_string(c.threads) +
           " threads an SM";
  if (c.family == Family::tensor_core) {
    if (c.vec_bytes != 16) return "the tensor-core family loads 16 bytes per lane, not " + to_string(c.vec_bytes);
    if (c.rows_per_warp != 1 && c.rows_per_warp != 2 && c.rows_per_warp != 4)
      return "tensor cores take 1, 2 or 4 tiles per warp, not " + to_string(c.rows_per_warp);
    if (c.unroll == 8) return "unroll 8 is outside the tensor-core family's 1, 2 or 4";
    const int lane_rows = c.tile_rows / 8;  // rows a lane loads per tile: g and g + 8, or g
    const int in_flight = lane_rows * c.rows_per_warp * c.unroll * c.vec_bytes;
    if (in_flight > kMaxBytesInFlightPerThreadTc)
      return to_string(lane_rows) + " rows x tiles x unroll x 16 = " + to_string(in_flight) + " bytes per thread exceeds the " +
             to_string(kMaxBytesInFlightPerThreadTc) + "-byte register budget";
    return std::nullopt;
  }
  if (c.ring) {
    // The ring holds the bytes in flight in shared memory, not registers, and consumes one
    // stage (one 16-byte load per row) at a time, so the register and x-per-trip budgets below
    // do not apply; its static shared memory does.
    if (c.vec_bytes != 16 || c.aligned_body || c.prefetch_l2 || c.lanes_per_row != 32)
      return "the ring is a knob of the quantized CUDA-core family: 16-byte loads, 32 lanes a row, no al or pf";
    // Its shared memory: a ring config is 8-bit (why_invalid_weights refuses int4 and dense).
    if (auto why = why_shared_exceeds(c, WeightFormat::int8)) return why;
  }
  const int in_flight = c.rows_per_warp * c.unroll * c.vec_bytes;
  if (!c.ring && in_flight > kMaxBytesInFlightPerThread)
    return "rows x unroll x vector = " + to_string(in_flight) + " bytes per thread exceeds the " +
           to_string(kMaxBytesInFlightPerThread) + "-byte register budget";
  // The plain kernel at m tile > 1 loads all x vectors of a trip before its FMAs, and ptxas
  // holds the whole trip's: at 16-byte loads, m tile 13 or 16 with unroll 4 spilled (fp32, r1
  // and r2) while m tile x unroll x vector <= 512 bytes stayed within 255 registers.
  if (!c.ring && !c.aligned_body && c.m_tile > 1 && c.m_tile * c.unroll * c.vec_bytes > kMaxXBytesPerTrip)
    return "m tile x unroll x vector = " + to_string(c.m_tile * c.unroll * c.vec_bytes) +
           " bytes of x per trip exceeds " + to_string(kMaxXBytesPerTrip);
  if (c.rows_per_warp * c.m_tile > kMaxAccumulators)
    return "rows x m tile = " + to_string(c.rows_per_warp * c.m_tile) + " accumulators per thread exceeds " +
           to_string(kMaxAccumulators);
  return std::nullopt;
}

void check_batch(std::int64_t m) {
  if (m < 1 || m > kMaxBatch)
    throw InvalidArgument("batch M=" + std::to_string(m) + " is outside 1.." + std::to_string(kMaxBatch));
}

std::optional<std::string> why_invalid_weights(const KernelConfig& c, DType t, WeightFormat weights) {
  // The accumulator budget (kMaxAccumulators): 64 for dense fp32 CUDA cores, 32 for the rest.
  const bool wide = !is_quantized(weights) && t == DType::f32 && !c.aligned_body;
  if (c.family == Family::cuda_core && !wide && c.rows_per_warp * c.m_tile > kMaxAccumulators16)
    return "rows x m tile = " + std::to_string(c.rows_per_warp * c.m_tile) + " accumulators per thread exceeds " +
           std::to_string(kMaxAccumulators16) + " (64 only for dense fp32 without al)";
  // Dense weights keep every register: capped at 128, the best dense configs of 16x6144x4096,
  // 16x14336x4096 and 8x6144x4096 ran level or 2% slower on the H200 (bench/results/h200.md,
  // 2026-12-04 14:30), where 8-bit ones ran up to 8% faster.
  if (c.reg_cap && c.family == Family::tensor_core && !is_quantized(weights))
    return "the register cap (rc) is a knob of quantized weights on tensor cores, not of dense " + std::string(to_string(t)) + " weights";
  if (c.ring && !is_quantized(weights))
    return "the ring is a knob of quantized weights (int8, fp8, fp8t on CUDA cores, int4g128 on tensor cores), "
           "not of dense " + std::string(to_string(t)) + " weights";
  if (auto why = why_shared_exceeds(c, weights)) return why;
  if (!is_quantized(weights)) return std::nullopt;
  const std::string f(to_string(weights));
  if (c.tile_rows != 16) return f + " weights: 8-row tiles (w8) take dense weights";
  const bool tc = c.family == Family::tensor_core;
  if (c.ring && is_int4(weights) && !tc)
    return f + " weights take no ring on CUDA cores (int4g128's ring is the tensor-core family's)";
  if (c.ring && tc && !is_int4(weights))
    return f + " weights on tensor cores are loaded into registers: the tensor-core ring is int4g128's";
  if (tc && is_int4(weights) && weights != WeightFormat::int4_g128)
    return f + " weights run on CUDA cores: the int4 tensor-core family takes int4g128 only";
  if (tc && t == DType::f32) return "the quantized tensor-core families take bf16 or fp16 activations, not fp32";
  // Without the ring, int4 and 8-bit weights on tensor cores run the dense tensor-core
  // kernel's register loads (templates/gemv_tc.cu): for int4 each tile's chunks in flight, their
  // pairs and the accumulators of each batch tile are registers: 4 tiles x 2 chunks at m tile 16
  // spilled 112 bytes (NVRTC 13.0, sm_90), 2 tiles x 4 chunks there took 254 registers.
  const int batch_tiles = (c.m_tile + 7) / 8;
  // At m tile 1 they run templates/gemv_q4l.cu, whose lanes hold two trips of whole-line loads
  // (16 registers per tile and stage each): 94, 130 and 162 registers at 1 tile x 1 stage,
  // 1 x 2 and 2 x 1, 2 x 2 spilled (NVRTC 13.0, sm_90); and a trip never straddles two of its
  // x slices of 16 stages, so unroll x k_warps divides 16.
  if (runs_int4_line_loads(c, weights)) {
    if (c.rows_per_warp * c.unroll > 2)
      return "int4 on tensor cores at m tile 1 without the ring: " + std::to_string(c.rows_per_warp) +
             " tiles x unroll " + std::to_string(c.unroll) + " exceeds the register budget of 2 (two trips in flight)";
    if (16 % (c.unroll * c.k_warps) != 0)
      return "int4 on tensor cores at m tile 1 without the ring: unroll x k_warps = " +
             std::to_string(c.unroll * c.k_warps) + " does not divide the 16 stages of an x slice";
  }
  // Wide int4g128 blocks (wide_k_block: more than 4 warps along K or more than 256 threads)
  // split K among their warps only: with split-K across blocks on top they ran 1.3-2.2x the best
  // wide config of the pair on 26 of the 28 pairs of their H200 sweeps (M = 1, 4, 8, 16) and won
  // none by more than 3% (sweeps/h200_int4g128_m*_wide_pdl.csv); the model and the borrowing,
  // which re-picks a lent config's split, favoured them on small N.
  if (tc && is_int4(weights) && wide_k_block(c) && c.split_k > 1)
    return "int4 on tensor cores: a block of " + std::to_string(c.k_warps) + " warps along K and " +
           std::to_string(c.threads) + " threads takes no split-K (split " + std::to_string(c.split_k) + ")";
  // Past 256 threads the launch bounds leave 128 registers a thread, half the budget: the wide
  // block tc_t512_r1_kw16_u4 (4 chunks x 2 batch tiles) spilled 40 bytes at m tile 9-16 and none
  // at 8 (NVRTC 13.0, sm_90).
  const int register_budget = c.threads > 256 ? 4 : 8;
  if (tc && is_int4(weights) && !c.ring && c.rows_per_warp * c.unroll * batch_tiles > register_budget)
    return "int4 on tensor cores without the ring: " + std::to_string(c.rows_per_warp) + " tiles x unroll " +
           std::to_string(c.unroll) + " x " + std::to_string(batch_tiles) + " batch tiles exceeds the register budget of " +
           std::to_string(register_budget) + (c.threads > 256 ? " (128 registers a thread past 256 threads)" : "");
  // With the ring (templates/gemv_qtc.cu) a lane still holds each tile's fragments and
  // accumulators: 4 tiles a warp at m tile 9-16 took 255 registers and spilled 476-612 bytes,
  // and with one warp along K ptxas held 4 tiles at 168 registers and spilled 4-24 bytes from
  // m tile 3 (NVRTC 13.0, sm_90; every int4g128 ring kernel of the space compiled, 2026-12-05).
  // On the H200 that kw1 config ran 8x28672x4096 in 44.0 us, its kw2 twin in 26.2.
  if (tc && is_int4(weights) && c.ring && (c.rows_per_warp * batch_tiles > 4 || (c.rows_per_warp == 4 && c.k_warps == 1 && c.m_tile > 2)))
    return "int4 on tensor cores with the ring: " + std::to_string(c.rows_per_warp) + " tiles a warp with " +
           std::to_string(c.k_warps) + " warp" + (c.k_warps > 1 ? "s" : "") + " along K at m tile " +
           std::to_string(c.m_tile) + " exceed the registers (4 tiles: m tile 1-8 with warps along K, 1-2 without)";
  if (c.vec_bytes != 16) return f + " weights are read with 16-byte loads, not " + std::to_string(c.vec_bytes);
  if (c.prefetch_l2) return f + " weights: the quantized families have no L2 prefetch (pf)";
  if (c.lanes_per_row != 32) return f + " weights: the quantized families put 32 lanes on a row (no ln)";
  if (c.aligned_body) return f + " weights: the quantized families have no aligned body (al)";
  return std::nullopt;
}

bool compiles_per_x_offset(const KernelConfig& c) {
  return c.aligned_body && c.m_tile == 1 && c.rows_per_warp == 1 && c.unroll == 4;
}

bool config_text_matches(std::string_view config_text, std::string_view pattern) {
  for (;;) {
    const std::size_t plus = pattern.find('+');
    if (config_text.find(pattern.substr(0, plus)) == std::string_view::npos) return false;
    if (plus == std::string_view::npos) return true;
    pattern.remove_prefix(plus + 1);
  }
}

bool runs_int4_line_loads(const KernelConfig& c, WeightFormat weights) {
  return c.family == Family::tensor_core && is_int4(weights) && !c.ring && c.m_tile == 1;
}

std::optional<std::string> why_invalid_for(const KernelConfig& c, DType t, const Shape& s, int m,
                                           WeightFormat weights) {
  if (auto why = why_invalid(c)) return why;
  if (m < 1 || m > c.m_tile)
    return "batch M=" + std::to_string(m) + " is outside the config's m tile 1.." + std::to_string(c.m_tile);
  if (is_quantized(weights)) {
    if (auto why = why_invalid_weights(c, t, weights)) return why;
    const std::string f(to_string(weights));
    const bool tc = c.family == Family::tensor_core;
    if (is_int4(weights) && s.k % group_size(weights) != 0)
      return "K=" + std::to_string(s.k) + " is not a multiple of the group size " +
             std::to_string(group_size(weights)) + " of " + f;
    // Every split gets at least one warp-wide load (16 bytes per lane; on tensor cores 4 lanes
    // a row: one 128-element int4 group, or 64 one-byte weights).
    const std::int64_t warp_chunk = tc ? (is_int4(weights) ? 128 : 64) : 32LL * (is_int4(weights) ? 32 : 16);
    const std::int64_t chunks = (s.k + warp_chunk - 1) / warp_chunk;
    if (c.split_k > 1 && c.split_k > chunks)
      return "split_k " + std::to_string(c.split_k) + " exceeds the " + std::to_string(chunks) +
             " warp-wide loads along K=" + std::to_string(s.k);
    return std::nullopt;
  }
  if (c.family == Family::tensor_core && t == DType::f32)
    return "the tensor-core family takes bf16 or fp16, not fp32";
  if (auto why = why_invalid_weights(c, t, weights)) return why;
  const int esize = static_cast<int>(dtype_size(t));
  if (c.vec_bytes < esize)
    return "vector width " + std::to_string(c.vec_bytes) + " bytes is narrower than one " +
           std::string(to_string(t)) + " element";
  // Every split must get at least one full warp-wide load along K, or the extra blocks only
  // add partial sums to combine.
  const std::int64_t warp_chunk = c.family == Family::tensor_core ? 32 : 32LL * (c.vec_bytes / esize);
  const std::int64_t chunks = (s.k + warp_chunk - 1) / warp_chunk;
  if (c.split_k > 1 && c.split_k > chunks)
    return "split_k " + std::to_string(c.split_k) + " exceeds the " + std::to_string(chunks) +
           " warp-wide loads along K=" + std::to_string(s.k);
  return std::nullopt;
}

std::optional<std::string> why_misaligned(const KernelConfig& c, DType t, std::uintptr_t w,
                                          std::int64_t ld, std::uintptr_t x, std::int64_t ldx) {
  // Checked on every launch: build no string unless something is wrong.
  if (c.aligned_body) {  // rows' heads and tails are read element by element, x without alignment
    const auto esize = static_cast<std::uintptr_t>(dtype_size(t));
    if (w % esize == 0 && x % esize == 0) return std::nullopt;
    return "the aligned body (al) needs W and x aligned to the " + std::to_string(esize) + "-byte element";
  }
  const auto vb = static_cast<std::uintptr_t>(c.vec_bytes);
  const auto row_bytes = static_cast<std::uintptr_t>(ld) * dtype_size(t);
  const auto x_row_bytes = static_cast<std::uintptr_t>(ldx) * dtype_size(t);
  if (w % vb == 0 && row_bytes % vb == 0 && x % vb == 0 && x_row_bytes % vb == 0) return std::nullopt;
  const std::string v = std::to_string(c.vec_bytes) + "-byte loads need ";
  if (w % vb) return v + "W aligned to " + std::to_string(vb) + " bytes";
  if (row_bytes % vb)
    return v + "a row stride (ld=" + std::to_string(ld) + " elements) that is a multiple of " +
           std::to_string(vb) + " bytes";
  if (x % vb) return v + "x aligned to " + std::to_string(vb) + " bytes";
  return v + "a row stride of X (ldx=" + std::to_string(ldx) + " elements) that is a multiple of " +
         std::to_string(vb) + " bytes";
}

int widest_aligned_vec_bytes(const KernelConfig& c, DType t, std::uintptr_t w, std::int64_t ld,
                             std::uintptr_t x, std::int64_t ldx) {
  KernelConfig probe = c;
  const int esize = static_cast<int>(dtype_size(t));
  for (; probe.vec_bytes > esize; probe.vec_bytes /= 2)
    if (!why_misaligned(probe, t, w, ld, x, ldx)) break;
  return probe.vec_bytes;
}

std::optional<KernelConfig> tensor_core_aligned_body_twin(const KernelConfig& c) {
  if (c.family != Family::tensor_core || c.m_tile == 1 || c.ring) return std::nullopt;
  KernelConfig al = c;
  al.aligned_body = true;
  al.tile_rows = 16;  // w8 is a layout of aligned rows (two of its tiles load as one 16-row tile)
  al.reg_cap = 0;     // the cap budgets quantized weights' conversions (why_invalid_weights)
  al.prefetch_l2 = false;
  if (why_invalid(al)) return std::nullopt;
  return al;
}

std::optional<KernelConfig> cuda_core_aligned_body_twin(const KernelConfig& c) {
  if (c.vec_bytes != 16 || c.ring) return std::nullopt;
  if (c.family == Family::cuda_core && c.aligned_body) return c;
  KernelConfig al = with_vec_bytes(c, 8);  // tensor cores: the CUDA-core kernel of the same m tile
  al.vec_bytes = 16;
  al.aligned_body = true;
  // A register cap was fitted to the plain kernel's count (cuda_core_capped_twin), and al takes
  // none: kept, it made al invalid and the variant fell back to 2-byte loads (H200: 11008x4096's
  // t128_r1_kw2_v16_u4_sk1_cs_pdl_pf_rc56 lent to 11008x4095 ran as v2 at 41.8 us, 0.95x cuBLAS,
  // where the shape's al configs ran 24.9-25.1).
  al.reg_cap = 0;
  // The aligned body keeps 32 accumulators whatever the dtype (why_invalid_weights): an fp32
  // config with 4 rows per warp at m tile 16 runs it with 2.
  while (al.rows_per_warp > 1 && al.rows_per_warp * al.m_tile > kMaxAccumulators16) al.rows_per_warp /= 2;
  if (why_invalid(al)) return std::nullopt;
  return al;
}

KernelConfig misaligned_variant(const KernelConfig& c, int width) {
  if (width >= c.vec_bytes || c.vec_bytes != 16) return with_vec_bytes(c, width);
  // Tensor cores at m tile > 1: their own aligned body (templates/gemv_tcal.cu). On an H100 the
  // CUDA-core one ran 4097x4099 at 0.65x cuBLAS at M = 8 and 0.39x at M = 16 (docs/batch.md).
  if (auto tc = tensor_core_aligned_body_twin(c)) return *tc;
  if (auto cc = cuda_core_aligned_body_twin(c)) return *cc;
  return with_vec_bytes(c, width);
}

KernelConfig with_vec_bytes(KernelConfig c, int width) {
  if (width == c.vec_bytes) return c;
  c.vec_bytes = width;
  c.aligned_body = false;  // 16-byte loads only
  c.lanes_per_row = 32;    // narrow loads: each row's lanes as wide as they can be
  if (c.ring) {            // the ring copies 16 bytes a lane: register trips of the same knobs
    c.ring = false;
    while (c.rows_per_warp * c.unroll * c.vec_bytes > kMaxBytesInFlightPerThread && c.unroll > 1) c.unroll /= 2;
  }
  if (c.family == Family::tensor_core) {
    c.family = Family::cuda_core;
    c.rows_per_warp = 1;
    c.unroll = 4;
    c.tile_rows = 16;  // the tensor-core tile's knob: none on CUDA cores
    c.reg_cap = 0;     // the tensor cores' rc budgets their fragments, not this kernel's registers
  }
  return c;
}

void check_config(const KernelConfig& c, DType t, const Shape& s, int m, WeightFormat weights) {
  if (auto why = why_invalid_for(c, t, s, m, weights))
    throw InvalidArgument("config " + to_string(c) + " cannot run " + std::string(to_string(t)) +
                          " " + to_string(s) + (m > 1 ? " at M=" + std::to_string(m) : "") +
                          (is_quantized(weights) ? " with " + std::string(to_string(weights)) + " weights" : "") +
                          ": " + *why);
}

}  // namespace gemvtune
