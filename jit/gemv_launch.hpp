// Loading a compiled GEMV kernel into a context and launching it, with the split-K workspace.
#pragma once
#include <cuda.h>

#include <array>
#include <memory>
#include <string>

#include "gemvtune/config.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune::jit {

// Device pointers and geometry of one Y = X W^T (y = W x at m = 1): W is N x K, X is m x K,
// Y is m x N, all row-major.
struct GemvOperands {
  CUdeviceptr w = 0, x = 0, y = 0;
  Shape shape;
  std::int64_t ld = 0;   // row stride of W in elements, >= K
  int m = 1;             // rows of X and Y (batch), 1..kMaxBatch
  std::int64_t ldx = 0;  // row stride of X in elements, >= K (0 means K)
  std::int64_t ldy = 0;  // row stride of Y in elements, >= N (0 means N)
  // Quantized W (docs/weights.md): w holds the packed weights (ld counts weights), scales and
  // zeros their factors (zeros for int4 only). Dense: both 0.
  WeightFormat weights = WeightFormat::dense;
  CUdeviceptr scales = 0, zeros = 0;
};

// Fused projections: up to kMaxFusedSegments (shape.hpp) GEMVs that share x, each with its own weights (rows x K,
// row stride ld) and output, computed by one launch over their stacked rows (Q, K and V;
// gate and up). A plain GEMV is one segment.
struct GemvSegment {
  CUdeviceptr w = 0, y = 0;
  std::int64_t rows = 0;
  std::int64_t ld = 0;   // row stride of this segment's W in elements, >= K
  std::int64_t ldy = 0;  // row stride of this segment's Y in elements, >= rows (0 means rows)
  CUdeviceptr scales = 0, zeros = 0;  // quantized W only
};
struct FusedOperands {
  std::array<GemvSegment, kMaxFusedSegments> segments{};
  int count = 0;
  CUdeviceptr x = 0;
  std::int64_t k = 0;
  int m = 1;             // rows of X and of every segment's Y
  std::int64_t ldx = 0;  // row stride of X in elements (0 means K)
  WeightFormat weights = WeightFormat::dense;  // of every segment
  Shape stacked_shape() const;  // (sum of rows, K): the shape the config is tuned for
  static FusedOperands single(const GemvOperands& op);
};

// The thread block cluster a launch of c on shape s (the stacked shape of fused segments) uses:
// its split-K blocks of one row block (gridDim.y of them) as one cluster, so finish_block
// (templates/prelude.cu) adds the splits in distributed shared memory rather than through
// global partials and a ticket. 1 (no cluster) without split-K; for int4 weights (the
// prelude's GEMV_CLUSTER_SPLIT_K: slower for the int4 tensor-core family on the H200); for
// blocks of more than kClusterSplitOutputs outputs (block rows x m tile, config.hpp: what fits
// their shared memory); for grids of more than 512 blocks (on the H200, dense M = 1
// split-K configs of 1024 blocks or more got slower as clusters, median 1.14x to 1.32x, and
// those of fewer than 256 faster, median 0.87x: bench/results/h200.md); before sm_90 (arch is
// the kernel's, "sm_90"); or past the 8 blocks every sm_90 part can co-schedule.
int cluster_blocks_for(const KernelConfig& c, WeightFormat w, const Shape& s, const std::string& arch);
// config.hpp's, under the name templates/prelude.cu gives it.
using gemvtune::kClusterSplitOutputs;

// A kernel loaded into the current context. config.split_k is ignored (launch parameter).
class LoadedGemv {
 public:
  LoadedGemv(std::shared_ptr<const CompiledKernel> compiled, const KernelConfig& c, DType t,
             WeightFormat w = WeightFormat::dense);
  const KernelConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  WeightFormat weights() const { return weights_; }
  const CompiledKernel& compiled() const { return *compiled_; }
  CUfunction function() const { return fn_; }

 private:
  std::shared_ptr<const CompiledKernel> compiled_;
  KernelConfig config_;
  DType dtype_;
  WeightFormat weights_;
  Module module_;
  CUfunction fn_ = nullptr;
};

// Split-K scratch: per-split partial sums (m tile x N each) and one ticket per row block. Tickets start at zero
// (zeroed when allocated) and every launch leaves them at zero, so no per-call memset.
// reserve() allocates; call it before capturing launches into a graph.
class SplitKWorkspace {
 public:
  void reserve(const KernelConfig& c, const Shape& s);
  bool fits(const KernelConfig& c, const Shape& s) const;
  CUdeviceptr partials() const { return partials_.get(); }
  CUdeviceptr tickets() const { return tickets_.get(); }

 private:
  DeviceBuffer partials_, tickets_;
};

// Grid of a launch: (row blocks, split_k).
unsigned row_blocks(const KernelConfig& c, const Shape& s);

// Checks the operands against the config (shape, ld, alignment) and throws InvalidArgument
// naming the problem; nothing is launched then.
void check_operands(const KernelConfig& c, DType t, const GemvOperands& op);

// check_operands for every segment of a fused launch, and 1 <= count <= kMaxFusedSegments.
void check_fused_operands(const KernelConfig& c, DType t, const FusedOperands& op);

// The first segment (1..count - 1) that starts inside the bands of one warp of c, a tensor-core
// al config (templates/gemv_tcal.cu reads a warp's rows, 128 R apart and 8 apart, at one offset),
// or 0 where none does or c is not one; check_fused_operands refuses such a launch.
int fused_segment_splitting_bands(const KernelConfig& c, const FusedOperands& op);

// How split-K blocks combine: as a cluster where cluster_blocks_for says so (what every caller
// wants), or always through the workspace (tests comparing the two paths' bits).
enum class SplitKFinish { cluster_where_chosen, workspace };

// Where a grid of less than one wave may put its blocks. `as_scheduled` leaves it to the block
// scheduler, which may stack several blocks on some SMs and leave others idle (one-wave grids of
// the same bytes a block ran up to 1.3x apart on the H200: docs/tuning.md, "The dense
// tensor-core default"). `spread` gives such a grid the dynamic shared memory that lets an SM
// hold no more than ceil(blocks / SMs) of its blocks, and asks for the largest shared memory
// carveout so that the cap is exact. An experiment of gemvtune-sweep (GEMVTUNE_SWEEP_SPREAD):
// the tuner and the runtime do not use it until a GPU run shows it pays. It sets attributes of
// the kernel's function, so a kernel launched both ways needs two LoadedGemv.
enum class Placement { as_scheduled, spread };

// The dynamic shared memory (bytes, a multiple of 128) that keeps an SM at `cap` blocks or fewer
// where it would hold `resident` (cuOccupancyMaxActiveBlocksPerMultiprocessor without it): 0
// when cap >= resident, or when no such amount fits a block (smem_per_block_max, the opt-in
// limit, less the kernel's static shared memory). Each block also takes reserved_per_block.
int spread_shared_bytes(int cap, int resident, int smem_per_sm, int smem_per_block_max, int static_smem,
                        int reserved_per_block);

// One launch computing every segment's y = W x (see FusedOperands), after
// check_fused_operands. The workspace must fit c on stacked_shape() unless the launch finishes
// split-K in a cluster (then it is not touched, and may be empty).
void launch_fused_gemv(const LoadedGemv& kernel, const KernelConfig& c, const FusedOperands& op,
                       const SplitKWorkspace& ws, CUstream stream,
                       SplitKFinish finish = SplitKFinish::cluster_where_chosen,
                       Placement placement = Placement::as_scheduled);

// Enqueues y = W x on `stream` with c.split_k blocks along K, after check_operands. No allocation, no
// synchronization (the workspace must already fit), so it can be captured into a graph.
void launch_gemv(const LoadedGemv& kernel, const KernelConfig& c, const GemvOperands& op,
                 const SplitKWorkspace& ws, CUstream stream,
                 SplitKFinish finish = SplitKFinish::cluster_where_chosen,
                 Placement placement = Placement::as_scheduled);

}  // namespace gemvtune::jit
