// Plan: picking the prepared kernel that the pointers' alignment allows and launching it with
// the plan's own workspace; nothing here allocates device memory, compiles or synchronizes.
#include "runtime/plan.hpp"

#include <algorithm>

#include "jit/driver_api.hpp"

namespace gemvtune {

Plan::Plan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Plan::~Plan() {
  // Module unload and cuMemFree need a current context; a thread that never used CUDA has none.
  // Destructors never throw; the members release what they can.
  impl_->context->make_current_if_none_noexcept();
}

const KernelConfig& Plan::config() const { return impl_->config; }
ConfigSource Plan::source() const { return impl_->source; }
const std::string& Plan::source_text() const { return impl_->source_text; }
const Shape& Plan::shape() const { return impl_->shape; }
DType Plan::dtype() const { return impl_->dtype; }
WeightFormat Plan::weights() const { return impl_->weights; }
int Plan::batch() const { return impl_->batch; }
bool Plan::stream_concurrent() const { return impl_->config.split_k == 1 || impl_->split_k_in_clusters_only; }

KernelConfig launch_config(const Plan::Impl& p, const jit::LoadedGemv& kernel, const Shape& s) {
  KernelConfig c = kernel.config();
  c.split_k = p.config.split_k;
  if (p.split_k_in_clusters_only && jit::cluster_blocks_for(c, p.weights, s, kernel.compiled().arch) != c.split_k)
    c.split_k = 1;  // one pass is valid wherever the split one was
  return c;
}

std::vector<int> Plan::prepared_vec_bytes() const {
  std::vector<int> out;
  for (const auto& v : impl_->variants) out.push_back(v->config().vec_bytes);
  return out;
}

namespace {
// The prepared kernel of config `want` (variants are compiled without split-K), or nullptr.
const jit::LoadedGemv* prepared(const Plan::Impl& p, KernelConfig want) {
  want.split_k = 1;
  for (const auto& v : p.variants)
    if (v->config() == want) return v.get();
  return nullptr;
}

// The prepared kernel for operands that allow `width`-byte loads (misaligned_variant), or nullptr.
const jit::LoadedGemv* prepared_kernel(const Plan::Impl& p, int width) {
  return prepared(p, misaligned_variant(p.config, width));
}

}  // namespace

void Plan::launch(CUdeviceptr w, CUdeviceptr x, CUdeviceptr y, CUstream stream, std::int64_t ld) const {
  Operands op;
  op.w = w;
  op.x = x;
  op.y = y;
  op.ld = ld;
  launch(op, stream);
}

void Plan::launch(const Operands& args, CUstream stream) const {
  const Impl& p = *impl_;
  jit::GemvOperands op;
  op.w = args.w;
  op.x = args.x;
  op.y = args.y;
  op.shape = p.shape;
  op.ld = args.ld == 0 ? p.shape.k : args.ld;
  op.m = args.m == 0 ? p.batch : args.m;
  op.ldx = args.ldx == 0 ? p.shape.k : args.ldx;
  op.ldy = args.ldy == 0 ? p.shape.n : args.ldy;
  if (op.m < 1 || op.m > p.batch)
    throw InvalidArgument("launch of " + std::to_string(op.m) + " rows on a plan for batch 1.." +
                          std::to_string(p.batch));
  if (is_quantized(p.weights)) {  // one prepared kernel; launch_gemv checks the packed layout
    op.weights = p.weights;
    op.scales = args.scales;
    op.zeros = args.zeros;
    p.context->make_current_if_none();
    jit::launch_gemv(*p.variants.front(), launch_config(p, *p.variants.front(), p.shape), op, p.workspace, stream);
    return;
  }
  if (args.scales || args.zeros)
    throw InvalidArgument("scales and zeros are for quantized weights; this plan's W is dense " +
                          std::string(to_string(p.dtype)));
  if (op.ld < p.shape.k || op.ldx < p.shape.k || op.ldy < p.shape.n)
    jit::check_operands(p.config, p.dtype, op);  // throws InvalidArgument naming the stride
  // widest_aligned_vec_bytes never goes below the element size; a pointer not even aligned to
  // the element is reported by check_operands in launch_gemv below.
  // p.config's width is the widest prepared (variants.front()).
  const int width = widest_aligned_vec_bytes(p.config, p.dtype, op.w, op.ld, op.x, op.m > 1 ? op.ldx : 0);
  const jit::LoadedGemv* kernel = prepared_kernel(p, width);
  if (!kernel)
    throw InvalidArgument("plan " + to_string(p.config) + " for " + std::string(to_string(p.dtype)) + " " +
                          to_string(p.shape) + ": the pointers, ld=" + std::to_string(op.ld) + " and ldx=" +
                          std::to_string(op.ldx) + " allow only " + std::to_string(width) +
                          "-byte loads, and no kernel of that width was prepared");
  const KernelConfig c = launch_config(p, *kernel, p.shape);
  p.context->make_current_if_none();  // launching needs a current context
  jit::launch_gemv(*kernel, c, op, p.workspace, stream);
}

void Plan::launch_fused(const FusedSegment* segments, int count, CUdeviceptr x, CUstream stream) const {
  const Impl& p = *impl_;
  if (!segments || count < 1 || count > kMaxFusedSegments)
    throw InvalidArgument("launch_fused takes 1 to " + std::to_string(kMaxFusedSegments) + " segments");
  jit::FusedOperands op;
  op.count = count;
  op.x = x;
  op.k = p.shape.k;
  op.m = p.batch;
  op.ldx = p.shape.k;
  op.weights = p.weights;
  int width = p.config.vec_bytes;
  for (int i = 0; i < count; ++i) {
    const FusedSegment& g = segments[i];
    op.segments[i] = {g.w, g.y, g.rows, g.ld == 0 ? p.shape.k : g.ld, g.rows, g.scales, g.zeros};
    if (is_quantized(p.weights)) continue;  // one 16-byte kernel; its checks name any misalignment
    if (op.segments[i].ld >= p.shape.k)
      width = std::min(width, widest_aligned_vec_bytes(p.config, p.dtype, g.w, op.segments[i].ld, x,
                                                       p.batch > 1 ? op.ldx : 0));
  }
  if (op.stacked_shape() != p.shape)
    throw InvalidArgument("fused segments stack to " + to_string(op.stacked_shape()) + ", but the plan is for " +
                          to_string(p.shape));
  const jit::LoadedGemv* kernel = prepared_kernel(p, width);
  if (!kernel) throw InvalidArgument("no prepared kernel of " + std::to_string(width) + "-byte loads");
  // Segments that start inside a tensor-core al warp's bands: the CUDA-core al kernel where the
  // plan prepared it (misaligned K); otherwise check_fused_operands names the segment.
  if (jit::fused_segment_splitting_bands(kernel->config(), op))
    if (const auto cc = cuda_core_aligned_body_twin(p.config))
      if (const jit::LoadedGemv* fallback = prepared(p, *cc)) kernel = fallback;
  const KernelConfig c = launch_config(p, *kernel, op.stacked_shape());
  p.context->make_current_if_none();  // launching needs a current context
  jit::launch_fused_gemv(*kernel, c, op, p.workspace, stream);  // checks every segment first
}

}  // namespace gemvtune
