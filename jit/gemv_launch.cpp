// Loading and launching GEMV kernels (see gemv_launch.hpp).
#include "jit/gemv_launch.hpp"

#include "gemvtune/error.hpp"
#include "gemvtune/generator.hpp"

namespace gemvtune::jit {

LoadedGemv::LoadedGemv(std::shared_ptr<const CompiledKernel> compiled, const KernelConfig& c, DType t)
    : compiled_(std::move(compiled)), config_(c), dtype_(t), module_(compiled_->cubin),
      fn_(module_.function(compiled_->name)) {
  config_.split_k = 1;
}

unsigned row_blocks(const KernelConfig& c, const Shape& s) {
  return static_cast<unsigned>((s.n + c.block_rows() - 1) / c.block_rows());
}

bool SplitKWorkspace::fits(const KernelConfig& c, const Shape& s) const {
  if (c.split_k == 1) return true;
  return partials_.bytes() >= static_cast<std::size_t>(c.split_k) * s.n * sizeof(float) &&
         tickets_.bytes() >= row_blocks(c, s) * sizeof(unsigned);
}

void SplitKWorkspace::reserve(const KernelConfig& c, const Shape& s) {
  if (fits(c, s)) return;
  const std::size_t partial_bytes = static_cast<std::size_t>(c.split_k) * s.n * sizeof(float);
  const std::size_t ticket_bytes = row_blocks(c, s) * sizeof(unsigned);
  if (partials_.bytes() < partial_bytes) partials_ = DeviceBuffer(partial_bytes);
  if (tickets_.bytes() < ticket_bytes) {
    tickets_ = DeviceBuffer(ticket_bytes);
    tickets_.fill_bytes(0);
  }
}

void check_operands(const KernelConfig& c, DType t, const GemvOperands& op) {
  check_shape(op.shape);
  check_config(c, t, op.shape);
  if (op.ld < op.shape.k)
    throw InvalidArgument("row stride ld=" + std::to_string(op.ld) + " is smaller than K=" +
                          std::to_string(op.shape.k));
  if (op.ld > kMaxDim) throw InvalidArgument("row stride ld=" + std::to_string(op.ld) + " is too large");
  if (!op.w || !op.x || !op.y) throw InvalidArgument("W, x and y must be non-null device pointers");
  const auto esize = dtype_size(t);
  if (op.w % esize || op.x % esize || op.y % esize)
    throw InvalidArgument("W, x and y must be aligned to the " + std::to_string(esize) +
                          "-byte element size of " + std::string(to_string(t)));
  if (auto why = why_misaligned(c, t, op.w, op.ld, op.x))
    throw InvalidArgument("config " + to_string(c) + ": " + *why);
}

void launch_gemv(const LoadedGemv& kernel, const KernelConfig& c, const GemvOperands& op,
                 const SplitKWorkspace& ws, CUstream stream) {
  KernelConfig code = c;
  code.split_k = 1;
  if (code != kernel.config())
    throw InvalidArgument("config " + to_string(c) + " does not match the loaded kernel " +
                          kernel.compiled().name);
  check_operands(c, kernel.dtype(), op);  // never launch what could fault or be wrong
  if (!ws.fits(c, op.shape))
    throw InvalidArgument("split-K workspace not reserved for " + to_string(c) + " on " +
                          to_string(op.shape));
  int n = static_cast<int>(op.shape.n), k = static_cast<int>(op.shape.k);
  long long ld = op.ld;
  CUdeviceptr partials = ws.partials(), tickets = ws.tickets();
  CUdeviceptr w = op.w, x = op.x, y = op.y;
  void* args[] = {&w, &x, &y, &n, &k, &ld, &partials, &tickets};

  CUlaunchConfig cfg{};
  cfg.gridDimX = row_blocks(c, op.shape);
  cfg.gridDimY = static_cast<unsigned>(c.split_k);
  cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(c.threads);
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = stream;
  CUlaunchAttribute attr{};
  if (c.pdl) {
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
  }
  GEMVTUNE_CU(cuLaunchKernelEx, &cfg, kernel.function(), args, nullptr);
}

}  // namespace gemvtune::jit
