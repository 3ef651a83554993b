// The read ceiling: a streaming read kernel over a buffer far larger than L2, timed with events.
// Every "% of ceiling" the tuner reports is of this figure, so it is the best a read-only
// kernel achieves here, not the datasheet number.
#include <algorithm>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <vector>

#include "gemvtune/tuner.hpp"
#include "jit/cuda_handles.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "tuner/peak.hpp"

namespace gemvtune {

namespace {
// Variants of one streaming read: 4 or 8 loads in flight per thread, evict-first (as the GEMV's
// weight loads) or read-only-path loads. The ceiling is the best variant's median, so it is
// the most a read-only kernel gets here, whichever flavour the GPU prefers.
//
// Each block reads whole tiles of blockDim x U contiguous 16-byte words (thread t takes words
// t, t + blockDim, ...), tiles dealt out grid-stride: every warp load is one coalesced 512-byte
// line run, as in the GEMV. The words are XOR-folded and each warp adds its fold to one global
// word, so the compiler must perform every load.
constexpr const char* kPeakSource = R"cuda(
template <int U, bool STREAMING>
__device__ __forceinline__ void read_all(const uint4* __restrict__ src, unsigned long long count,
                                         unsigned* __restrict__ sink) {
  const unsigned long long tile = static_cast<unsigned long long>(blockDim.x) * U;
  unsigned fold = 0;
  for (unsigned long long base = blockIdx.x * tile; base < count; base += gridDim.x * tile) {
    uint4 v[U];
    if (base + tile <= count) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        v[u] = STREAMING ? __ldcs(src + base + threadIdx.x + u * blockDim.x)
                         : __ldg(src + base + threadIdx.x + u * blockDim.x);
    } else {  // the last, partial tile
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const unsigned long long i = base + threadIdx.x + u * blockDim.x;
        v[u] = i < count ? __ldcs(src + i) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) fold ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (int offset = 16; offset > 0; offset >>= 1) fold ^= __shfl_xor_sync(0xffffffffu, fold, offset);
  if ((threadIdx.x & 31) == 0) atomicXor(sink, fold);
}

extern "C" __global__ void __launch_bounds__(256) gemvtune_peak_u4_cs(const uint4* s, unsigned long long n, unsigned* o) { read_all<4, true>(s, n, o); }
extern "C" __global__ void __launch_bounds__(256) gemvtune_peak_u8_cs(const uint4* s, unsigned long long n, unsigned* o) { read_all<8, true>(s, n, o); }
extern "C" __global__ void __launch_bounds__(256) gemvtune_peak_u4_nc(const uint4* s, unsigned long long n, unsigned* o) { read_all<4, false>(s, n, o); }
extern "C" __global__ void __launch_bounds__(256) gemvtune_peak_u8_nc(const uint4* s, unsigned long long n, unsigned* o) { read_all<8, false>(s, n, o); }
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

const std::string& peak_kernel_source() {
  static const std::string source = kPeakSource;
  return source;
}

namespace {
// The process's peak programs by arch, compiling or compiled. A future's last copy, in this map
// at exit, waits for a compile still running.
std::shared_future<std::shared_ptr<const jit::CompiledKernel>> peak_program_future(const std::string& arch) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_future<std::shared_ptr<const jit::CompiledKernel>>> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = programs.find(arch);
  if (it == programs.end()) {
    auto compile = [arch] {
      return std::make_shared<const jit::CompiledKernel>(jit::compile_kernel(peak_kernel_source(), "gemvtune_peak", arch));
    };
    it = programs.emplace(arch, std::async(std::launch::async, compile).share()).first;
  }
  return it->second;
}
}  // namespace

std::shared_ptr<const jit::CompiledKernel> peak_program(const std::string& arch) { return peak_program_future(arch).get(); }

void start_peak_program(const std::string& arch) {
  try {
    peak_program_future(arch);
  } catch (const std::exception&) {
    // No thread to start it on: measure_peak compiles it when it needs it, and says why if
    // that fails too.
  }
}

const std::vector<PeakKernel>& peak_kernels() {
  static const std::vector<PeakKernel> kernels = {
      {"gemvtune_peak_u4_cs", 4}, {"gemvtune_peak_u8_cs", 8}, {"gemvtune_peak_u4_nc", 4}, {"gemvtune_peak_u8_nc", 8}};
  return kernels;
}

PeakRecord measure_peak(const jit::Context& ctx, const PeakOptions& options) {
  if (options.bytes < 16 || options.runs < 1) throw InvalidArgument("peak needs bytes >= 16 and runs >= 1");
  ctx.make_current();
  const GpuInfo& info = ctx.info();
  const jit::Module module(peak_program(info.arch)->cubin);

  const std::int64_t bytes = bytes_to_stream(options.bytes);
  jit::DeviceBuffer buffer(static_cast<std::size_t>(bytes));
  buffer.fill_bytes(0x5a);  // touch every page before timing
  jit::DeviceBuffer sink(sizeof(unsigned));
  sink.fill_bytes(0);
  CUdeviceptr src = buffer.get(), out = sink.get();
  unsigned long long count = static_cast<unsigned long long>(bytes) / 16;
  void* args[] = {&src, &count, &out};

  jit::Stream stream;
  jit::Event start, stop;
  double best_ms = 0;
  // Each variant runs with a grid of resident blocks (each loops over many tiles) and with one
  // block per tile (as the GEMV's many short blocks): the memory system favours one or the
  // other depending on the GPU.
  for (const PeakKernel& kernel : peak_kernels()) {
    const CUfunction fn = module.function(kernel.name);
    int blocks_per_sm = 0;
    GEMVTUNE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &blocks_per_sm, fn, kThreads, 0);
    const unsigned long long tile = static_cast<unsigned long long>(kThreads) * kernel.loads_per_thread;
    const unsigned resident = static_cast<unsigned>(std::max(1, blocks_per_sm) * info.id.sm_count);
    const auto one_per_tile = static_cast<unsigned>(std::min<unsigned long long>((count + tile - 1) / tile, 0x7fffffffu));
    for (const unsigned blocks : {resident, one_per_tile}) {
      auto launch = [&] {
        GEMVTUNE_CU(cuLaunchKernel, fn, blocks, 1, 1, kThreads, 1, 1, 0, stream.get(), args, nullptr);
      };
      launch();  // warm-up: the first launch loads the code
      stream.synchronize();
      std::vector<double> ms;
      for (int r = 0; r < options.runs; ++r) {
        start.record(stream.get());
        launch();
        stop.record(stream.get());
        ms.push_back(stop.elapsed_ms_since(start));
      }
      std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
      if (best_ms == 0 || ms[ms.size() / 2] < best_ms) best_ms = ms[ms.size() / 2];
    }
  }

  PeakRecord p;
  p.gpu = info.id;
  p.gbps = static_cast<double>(bytes) / (best_ms * 1e-3) / 1e9;
  p.bytes = bytes;
  p.driver_version = info.driver_version;
  p.timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  return p;
}

}  // namespace gemvtune
