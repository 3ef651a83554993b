// Loading and launching GEMV kernels (see gemv_launch.hpp).
#include "jit/gemv_launch.hpp"

#include <algorithm>
#include <cctype>
#include <string>

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::jit {

LoadedGemv::LoadedGemv(std::shared_ptr<const CompiledKernel> compiled, const KernelConfig& c, DType t,
                       WeightFormat w)
    : compiled_(std::move(compiled)), config_(c), dtype_(t), weights_(w), module_(compiled_->cubin),
      fn_(module_.function(compiled_->name)) {
  config_.split_k = 1;
}

unsigned row_blocks(const KernelConfig& c, const Shape& s) {
  return static_cast<unsigned>(c.row_blocks(s.n));
}

bool SplitKWorkspace::fits(const KernelConfig& c, const Shape& s) const {
  if (c.split_k == 1) return true;
  return partials_.bytes() >= static_cast<std::size_t>(c.split_k) * c.m_tile * s.n * sizeof(float) &&
         tickets_.bytes() >= row_blocks(c, s) * sizeof(unsigned);
}

void SplitKWorkspace::reserve(const KernelConfig& c, const Shape& s) {
  if (fits(c, s)) return;
  const std::size_t partial_bytes = static_cast<std::size_t>(c.split_k) * c.m_tile * s.n * sizeof(float);
  const std::size_t ticket_bytes = row_blocks(c, s) * sizeof(unsigned);
  if (partials_.bytes() < partial_bytes) partials_ = DeviceBuffer(partial_bytes);
  if (tickets_.bytes() < ticket_bytes) {
    tickets_ = DeviceBuffer(ticket_bytes);
    tickets_.fill_bytes(0);
  }
}

namespace {
// Quantized W: the packed layout and what the quantized family's 16-byte loads need.
void check_quantized_operands(DType t, const GemvOperands& op, std::int64_t ldx) {
  // Checked on every launch, like why_misaligned: no string is built unless something is wrong.
  // check_operands has already checked N, K, ld >= K and (through check_config) K against an
  // int4 group; what is left is what the packed layout and 16-byte loads need.
  const auto f = [&] { return std::string(to_string(op.weights)); };
  if (!op.scales) throw InvalidArgument(f() + " weights need their scales (a non-null device pointer)");
  if (is_int4(op.weights) && !op.zeros) throw InvalidArgument(f() + " weights need their zeros (a non-null device pointer)");
  // int8 and fp8 are symmetric: a zeros pointer given for them would be ignored, and the caller
  // who passed it expects zero points to be applied.
  if (!is_int4(op.weights) && op.zeros)
    throw InvalidArgument(f() + " weights have no zero points (they are symmetric): pass null zeros");
  const std::uintptr_t factor = is_int4(op.weights) ? dtype_size(t) : 4;
  if (op.scales % factor || op.zeros % factor)
    throw InvalidArgument(f() + " scales and zeros must be aligned to their " + std::to_string(factor) + "-byte elements");
  // 16 bytes of packed weights: 16 int8/fp8 or 32 int4 (which also keeps int4 rows whole bytes).
  const std::int64_t per_load = 128 / weight_bits(op.weights, t);
  if (op.w % 16 || op.ld % per_load)
    throw InvalidArgument(f() + " weights are read with 16-byte loads: W must be 16-byte aligned and ld=" +
                          std::to_string(op.ld) + " a multiple of " + std::to_string(per_load) +
                          " weights (16 bytes); pad ld when packing (make_packed_weights)");
  const std::uintptr_t x_row_bytes = op.m > 1 ? static_cast<std::uintptr_t>(ldx) * dtype_size(t) : 0;
  if (op.x % 16 || x_row_bytes % 16)
    throw InvalidArgument(f() + " weights: x is read with 16-byte loads, so x must be 16-byte aligned" +
                          std::string(op.m > 1 ? " and its row stride ldx a multiple of 16 bytes" : ""));
}
}  // namespace

void check_operands(const KernelConfig& c, DType t, const GemvOperands& op) {
  check_shape(op.shape);
  check_batch(op.m);
  check_config(c, t, op.shape, op.m, op.weights);
  const std::int64_t ldx = op.ldx ? op.ldx : op.shape.k, ldy = op.ldy ? op.ldy : op.shape.n;
  // One row of X and Y is read without its stride, so ldx < K and ldy < N only matter when m > 1;
  // a negative stride is wrong whatever m is.
  if (op.ldx < 0 || op.ldy < 0)
    throw InvalidArgument("row strides ldx=" + std::to_string(op.ldx) + " and ldy=" + std::to_string(op.ldy) +
                          " must not be negative (0 means K and N)");
  if (op.m > 1 && (ldx < op.shape.k || ldx > kMaxDim))
    throw InvalidArgument("row stride of X ldx=" + std::to_string(ldx) + " is outside K=" +
                          std::to_string(op.shape.k) + ".." + std::to_string(kMaxDim));
  if (op.m > 1 && (ldy < op.shape.n || ldy > kMaxDim))
    throw InvalidArgument("row stride of Y ldy=" + std::to_string(ldy) + " is outside N=" +
                          std::to_string(op.shape.n) + ".." + std::to_string(kMaxDim));
  if (op.ld < op.shape.k)
    throw InvalidArgument("row stride ld=" + std::to_string(op.ld) + " is smaller than K=" +
                          std::to_string(op.shape.k));
  if (op.ld > kMaxDim) throw InvalidArgument("row stride ld=" + std::to_string(op.ld) + " is too large");
  if (!op.w || !op.x || !op.y) throw InvalidArgument("W, x and y must be non-null device pointers");
  const auto esize = dtype_size(t);
  if (is_quantized(op.weights)) {
    if (op.y % esize)
      throw InvalidArgument("y must be aligned to the " + std::to_string(esize) + "-byte element size of " +
                            std::string(to_string(t)));
    check_quantized_operands(t, op, ldx);
    return;
  }
  if (op.w % esize || op.x % esize || op.y % esize)
    throw InvalidArgument("W, x and y must be aligned to the " + std::to_string(esize) +
                          "-byte element size of " + std::string(to_string(t)));
  if (auto why = why_misaligned(c, t, op.w, op.ld, op.x, op.m > 1 ? ldx : 0))
    throw InvalidArgument("config " + to_string(c) + ": " + *why);
}

namespace {
// Mirror of GemvSegments in templates/gemv.cu, passed by value as the first kernel parameter.
struct KernelSegments {
  CUdeviceptr w[kMaxFusedSegments];
  CUdeviceptr y[kMaxFusedSegments];
  long long ld[kMaxFusedSegments];
  long long ldy[kMaxFusedSegments];
  CUdeviceptr scales[kMaxFusedSegments];
  CUdeviceptr zeros[kMaxFusedSegments];
  int row_begin[kMaxFusedSegments];
  int count;
};
static_assert(sizeof(KernelSegments) == 216, "must match GemvSegments in templates/prelude.cu");
}  // namespace

Shape FusedOperands::stacked_shape() const {
  Shape s{0, k};
  for (int i = 0; i < count && i < kMaxFusedSegments; ++i) s.n += segments[i].rows;
  return s;
}

FusedOperands FusedOperands::single(const GemvOperands& op) {
  FusedOperands f;
  f.segments[0] = {op.w, op.y, op.shape.n, op.ld, op.ldy, op.scales, op.zeros};
  f.count = 1;
  f.weights = op.weights;
  f.x = op.x;
  f.k = op.shape.k;
  f.m = op.m;
  f.ldx = op.ldx;
  return f;
}

void check_fused_operands(const KernelConfig& c, DType t, const FusedOperands& op) {
  if (op.count < 1 || op.count > kMaxFusedSegments)
    throw InvalidArgument("a fused launch takes 1 to " + std::to_string(kMaxFusedSegments) + " segments, not " +
                          std::to_string(op.count));
  for (int i = 0; i < op.count; ++i) {
    const GemvSegment& g = op.segments[i];
    try {
      check_operands(c, t, GemvOperands{g.w, op.x, g.y, Shape{g.rows, op.k}, g.ld, op.m, op.ldx, g.ldy,
                                        op.weights, g.scales, g.zeros});
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(op.count > 1 ? "segment " + std::to_string(i) + ": " + e.what() : e.what());
    }
  }
  const Shape stacked = op.stacked_shape();
  check_shape(stacked);
  check_config(c, t, stacked, op.m, op.weights);
  // A warp of the tensor cores' aligned body takes rows 8 apart from R 128-row bands and reads
  // them all at one offset from 16 bytes (templates/gemv_tcal.cu): its bands must not straddle
  // two segments, whose bases and strides place rows differently.
  if (const int i = fused_segment_splitting_bands(c, op)) {
    std::int64_t begin = 0;
    for (int j = 0; j < i; ++j) begin += op.segments[j].rows;
    throw InvalidArgument("config " + to_string(c) + ": tensor cores on rows that are not 16-byte aligned (al) " +
                          "need fused segments that start on multiples of " + std::to_string(128LL * c.rows_per_warp) +
                          " rows (128 x tiles a warp); segment " + std::to_string(i) + " starts at row " +
                          std::to_string(begin));
  }
}

int fused_segment_splitting_bands(const KernelConfig& c, const FusedOperands& op) {
  if (c.family != Family::tensor_core || !c.aligned_body) return 0;
  const std::int64_t bands = 128LL * c.rows_per_warp;
  std::int64_t begin = 0;
  for (int i = 0; i + 1 < op.count && i + 1 < kMaxFusedSegments; ++i)
    if ((begin += op.segments[i].rows) % bands != 0) return i + 1;
  return 0;
}

int cluster_blocks_for(const KernelConfig& c, WeightFormat w, const Shape& s, const std::string& arch) {
  constexpr int kPortableClusterBlocks = 8;
  constexpr long long kClusterGridBlocks = 512;
  if (c.split_k <= 1 || c.split_k > kPortableClusterBlocks || is_int4(w)) return 1;
  if (c.block_rows() * c.m_tile > kClusterSplitOutputs) return 1;
  if (static_cast<long long>(row_blocks(c, s)) * c.split_k > kClusterGridBlocks) return 1;
  if (arch.rfind("sm_", 0) != 0) return 1;
  int sm = 0;
  for (std::size_t i = 3; i < arch.size() && std::isdigit(static_cast<unsigned char>(arch[i])); ++i)
    sm = sm * 10 + (arch[i] - '0');
  return sm >= 90 ? c.split_k : 1;
}

int spread_shared_bytes(int cap, int resident, int smem_per_sm, int smem_per_block_max, int static_smem,
                        int reserved_per_block) {
  if (cap < 1 || cap >= resident) return 0;
  // The most a block may take so that `cap` of them fit: cap + 1 then do not, since
  // (cap + 1) * (smem_per_sm / cap) > smem_per_sm. Rounding down to 128 bytes (the allocation
  // unit) could let cap + 1 fit only if smem_per_sm / (cap * (cap + 1)) < 128, far past any cap
  // a grid of one wave needs.
  const int per_block = std::min(smem_per_sm / cap - reserved_per_block, smem_per_block_max) - static_smem;
  const int dynamic = per_block / 128 * 128;
  if (dynamic <= 0) return 0;
  const int total = dynamic + static_smem + reserved_per_block;
  return smem_per_sm / total > cap ? 0 : dynamic;
}

namespace {
// Placement::spread on a launch of blocks blocks of `kernel` (see gemv_launch.hpp): the dynamic
// shared memory it takes, with the function's attributes set for it; 0 leaves the launch as it was.
unsigned spread_launch(const LoadedGemv& kernel, unsigned threads, long long blocks) {
  CUdevice dev = 0;
  GEMVTUNE_CU(cuCtxGetDevice, &dev);
  const auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    GEMVTUNE_CU(cuDeviceGetAttribute, &v, a, dev);
    return v;
  };
  const int sms = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  int resident = 0, static_smem = 0;
  GEMVTUNE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &resident, kernel.function(), static_cast<int>(threads), 0);
  if (blocks > static_cast<long long>(resident) * sms) return 0;  // more than a wave: nothing to spread
  GEMVTUNE_CU(cuFuncGetAttribute, &static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, kernel.function());
  const int cap = static_cast<int>((blocks + sms - 1) / sms);
  const int dynamic = spread_shared_bytes(cap, resident, attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
                                          attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), static_smem,
                                          attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK));
  if (dynamic == 0) return 0;
  GEMVTUNE_CU(cuFuncSetAttribute, kernel.function(), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic);
  // The cap holds only if the SM's carveout gives shared memory all it can take.
  GEMVTUNE_CU(cuFuncSetAttribute, kernel.function(), CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
              static_cast<int>(CU_SHAREDMEM_CARVEOUT_MAX_SHARED));
  return static_cast<unsigned>(dynamic);
}
}  // namespace

void launch_fused_gemv(const LoadedGemv& kernel, const KernelConfig& c, const FusedOperands& op,
                       const SplitKWorkspace& ws, CUstream stream, SplitKFinish finish, Placement placement) {
  KernelConfig code = c;
  code.split_k = 1;
  if (code != kernel.config())
    throw InvalidArgument("config " + to_string(c) + " does not match the loaded kernel " +
                          kernel.compiled().name);
  if (op.weights != kernel.weights())
    throw InvalidArgument("operands with " + std::string(to_string(op.weights)) + " weights do not match the loaded kernel " +
                          kernel.compiled().name);
  check_fused_operands(c, kernel.dtype(), op);  // never launch what could fault or be wrong
  const Shape stacked = op.stacked_shape();
  const int cluster =
      finish == SplitKFinish::workspace ? 1 : cluster_blocks_for(c, kernel.weights(), stacked, kernel.compiled().arch);
  if (cluster == 1 && !ws.fits(c, stacked))  // split-K in a cluster never touches the workspace
    throw InvalidArgument("split-K workspace not reserved for " + to_string(c) + " on " + to_string(stacked));
  KernelSegments seg{};
  long long begin = 0;
  for (int i = 0; i < kMaxFusedSegments; ++i) {
    const GemvSegment& g = op.segments[i < op.count ? i : op.count - 1];
    seg.w[i] = g.w;
    seg.y[i] = g.y;
    seg.ld[i] = g.ld;
    seg.ldy[i] = g.ldy ? g.ldy : g.rows;
    seg.scales[i] = g.scales;
    seg.zeros[i] = g.zeros;
    seg.row_begin[i] = static_cast<int>(begin);
    if (i < op.count) begin += g.rows;
  }
  seg.count = op.count;
  CUdeviceptr x = op.x;
  long long ldx = op.ldx ? op.ldx : op.k;
  int m = op.m, n = static_cast<int>(stacked.n), k = static_cast<int>(stacked.k);
  CUdeviceptr partials = ws.partials(), tickets = ws.tickets();
  void* args[] = {&seg, &x, &ldx, &m, &n, &k, &partials, &tickets};

  CUlaunchConfig cfg{};
  cfg.gridDimX = row_blocks(c, stacked);
  cfg.gridDimY = static_cast<unsigned>(c.split_k);
  cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(c.threads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = stream;
  CUlaunchAttribute attrs[2]{};
  unsigned count = 0;
  if (c.pdl) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[count++].value.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster > 1) {
    attrs[count].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[count].value.clusterDim.x = 1;
    attrs[count].value.clusterDim.y = static_cast<unsigned>(cluster);
    attrs[count++].value.clusterDim.z = 1;
  }
  cfg.attrs = count ? attrs : nullptr;
  cfg.numAttrs = count;
  // Clusters are placed by GPC, not block by block: spreading is for plain grids.
  if (placement == Placement::spread && cluster == 1)
    cfg.sharedMemBytes = spread_launch(kernel, cfg.blockDimX, static_cast<long long>(cfg.gridDimX) * cfg.gridDimY);
  GEMVTUNE_CU(cuLaunchKernelEx, &cfg, kernel.function(), args, nullptr);
}

void launch_gemv(const LoadedGemv& kernel, const KernelConfig& c, const GemvOperands& op,
                 const SplitKWorkspace& ws, CUstream stream, SplitKFinish finish, Placement placement) {
  launch_fused_gemv(kernel, c, FusedOperands::single(op), ws, stream, finish, placement);
}

}  // namespace gemvtune::jit
