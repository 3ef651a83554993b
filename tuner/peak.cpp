// The read ceiling: a streaming read kernel over a buffer far larger than L2, timed with events.
// Every "% of ceiling" the tuner reports is of this figure, so it is the best a read-only
// kernel achieves here, not the datasheet number.
#include <algorithm>
#include <chrono>
#include <vector>

#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/nvrtc_compiler.hpp"

namespace gemvtune {

namespace {
constexpr const char* kPeakKernel = "gemvtune_peak_read";

// Grid-stride over 16-byte words with four independent loads per trip (bytes in flight hide
// the memory latency), evict-first like the GEMV's weight loads. The words are XOR-folded and
// each warp adds its fold to one global word, so the compiler must perform every load.
constexpr const char* kPeakSource = R"cuda(
extern "C" __global__ void __launch_bounds__(256)
gemvtune_peak_read(const uint4* __restrict__ src, unsigned long long count, unsigned* __restrict__ sink) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned fold = 0;
  for (; i + 3 * stride < count; i += 4 * stride) {
    const uint4 a = __ldcs(src + i);
    const uint4 b = __ldcs(src + i + stride);
    const uint4 c = __ldcs(src + i + 2 * stride);
    const uint4 d = __ldcs(src + i + 3 * stride);
    fold ^= (a.x ^ a.y ^ a.z ^ a.w) ^ (b.x ^ b.y ^ b.z ^ b.w) ^ (c.x ^ c.y ^ c.z ^ c.w) ^
            (d.x ^ d.y ^ d.z ^ d.w);
  }
  for (; i < count; i += stride) {
    const uint4 a = __ldcs(src + i);
    fold ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  for (int offset = 16; offset > 0; offset >>= 1) fold ^= __shfl_xor_sync(0xffffffffu, fold, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(sink, fold);
}
)cuda";

constexpr int kThreads = 256;

// Bytes to stream: what was asked for, less when free memory is short (a 16 GB card with
// other work on it), in whole 16-byte words.
std::int64_t bytes_to_stream(std::int64_t wanted) {
  std::size_t free_bytes = 0, total_bytes = 0;
  GEMVTUNE_CU(cuMemGetInfo, &free_bytes, &total_bytes);
  const auto usable = static_cast<std::int64_t>(free_bytes) / 10 * 8;
  const std::int64_t bytes = std::min(wanted, usable) / 16 * 16;
  if (bytes < (std::int64_t{256} << 20))
    throw Error("too little free GPU memory to measure the read ceiling (" +
                std::to_string(free_bytes >> 20) + " MiB free)");
  return bytes;
}
}  // namespace

PeakRecord measure_peak(const jit::Context& ctx, const PeakOptions& options) {
  if (options.bytes < 16 || options.runs < 1) throw InvalidArgument("peak needs bytes >= 16 and runs >= 1");
  ctx.make_current();
  const GpuInfo& info = ctx.info();
  const jit::CompiledKernel compiled = jit::compile_kernel(kPeakSource, kPeakKernel, info.arch);
  const jit::Module module(compiled.cubin);
  const CUfunction fn = module.function(kPeakKernel);

  const std::int64_t bytes = bytes_to_stream(options.bytes);
  jit::DeviceBuffer buffer(static_cast<std::size_t>(bytes));
  buffer.fill_bytes(0x5a);  // touch every page before timing
  jit::DeviceBuffer sink(sizeof(unsigned));
  sink.fill_bytes(0);

  int blocks_per_sm = 0;
  GEMVTUNE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &blocks_per_sm, fn, kThreads, 0);
  const unsigned blocks = static_cast<unsigned>(std::max(1, blocks_per_sm) * info.id.sm_count);
  CUdeviceptr src = buffer.get(), out = sink.get();
  unsigned long long count = static_cast<unsigned long long>(bytes) / 16;
  void* args[] = {&src, &count, &out};

  jit::Stream stream;
  jit::Event start, stop;
  auto launch = [&] {
    GEMVTUNE_CU(cuLaunchKernel, fn, blocks, 1, 1, kThreads, 1, 1, 0, stream.get(), args, nullptr);
  };
  launch();  // warm-up: first launch loads the module's code
  stream.synchronize();
  std::vector<double> ms;
  for (int r = 0; r < options.runs; ++r) {
    start.record(stream.get());
    launch();
    stop.record(stream.get());
    ms.push_back(stop.elapsed_ms_since(start));
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());

  PeakRecord p;
  p.gpu = info.id;
  p.gbps = static_cast<double>(bytes) / (ms[ms.size() / 2] * 1e-3) / 1e9;
  p.bytes = bytes;
  p.driver_version = info.driver_version;
  p.timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  return p;
}

}  // namespace gemvtune
