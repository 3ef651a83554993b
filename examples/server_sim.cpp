// server_sim: a server-like load on one gemvtune Runtime. N worker threads, each with its own
// stream, serve random requests over the tuned shapes of a preset for a fixed time: plan
// (a memoized lookup after the first), poison y, launch, copy y back and check it against the
// float64 reference of that shape. Reports requests per second and any wrong result.
// First it reports the start-up: the first plan + launch of each shape, and how many kernels
// came from the on-disk kernel store against NVRTC (run it twice to compare a cold store
// with a warm one; --no-store disables the store).
// Usage: server_sim [--db PATH] [--threads 16] [--seconds 60] [--preset llama-3.1-8b] [--no-store 1]
// Exits 77 (skipped, for ctest) with a message where there is no GPU; 1 on any wrong result or error.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gemvtune/presets.hpp"
#include "gemvtune/runtime.hpp"
#include "jit/cuda_handles.hpp"
#include "tuner/host_data.hpp"

using namespace gemvtune;

namespace {
struct ShapeData {
  Shape shape;
  jit::DeviceBuffer w, x;
  std::vector<double> reference;
};
}  // namespace

int main(int argc, char** argv) try {
  std::string db, preset = "llama-3.1-8b";
  int threads = 16;
  double seconds = 60;
  bool no_store = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--db")) db = argv[i + 1];
    else if (!std::strcmp(argv[i], "--threads")) threads = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--preset")) preset = argv[i + 1];
    else if (!std::strcmp(argv[i], "--no-store")) no_store = std::atoi(argv[i + 1]) != 0;
  }
  std::string why;
  if (!jit::driver_available(&why)) {
    std::printf("server_sim: skipped, no GPU: %s\n", why.c_str());
    return 77;  // ctest: skipped
  }
  RuntimeOptions options;
  options.cache_path = db;
  options.allow_split_k = false;  // plans are shared by all streams at once
  if (no_store) options.kernel_store_dir = "";
  jit::Context ctx(0);
  const auto created = std::chrono::steady_clock::now();
  Runtime rt(options);
  const double create_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - created).count();
  const DType t = DType::bf16;
  std::vector<ShapeData> shapes;
  for (const auto& p : find_preset(preset).shapes) {
    GemvInputs in = random_inputs(t, p.shape, p.shape.k, 7 + shapes.size());
    ShapeData d{p.shape, jit::DeviceBuffer(in.w.bytes.size()), jit::DeviceBuffer(in.x.bytes.size()), reference_gemv(in)};
    d.w.upload(in.w.bytes.data(), in.w.bytes.size());
    d.x.upload(in.x.bytes.data(), in.x.bytes.size());
    shapes.push_back(std::move(d));
  }

  // Start-up: what a restarted server pays before its first answer for each shape.
  {
    jit::Stream stream;
    std::string per_shape;
    double total_ms = 0;
    for (const ShapeData& s : shapes) {
      jit::DeviceBuffer y(s.shape.n * dtype_size(t));
      const auto t0 = std::chrono::steady_clock::now();
      rt.plan(s.shape, t)->launch(s.w.get(), s.x.get(), y.get(), stream.get());
      stream.synchronize();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      total_ms += ms;
      char buf[64];
      std::snprintf(buf, sizeof buf, "%s%s %.1f", per_shape.empty() ? "" : ", ", to_string(s.shape).c_str(), ms);
      per_shape += buf;
    }
    const RuntimeStats st = rt.stats();
    std::printf("start-up: Runtime opened in %.1f ms; first plan + launch per shape (ms): %s; total %.1f ms; "
                "kernels: %zu from the store (%s), %zu from NVRTC\n",
                create_ms, per_shape.c_str(), total_ms, st.kernels_from_store,
                rt.kernel_store_dir().empty() ? "disabled" : rt.kernel_store_dir().c_str(), st.kernels_from_nvrtc);
    std::fflush(stdout);
  }
  std::atomic<long> requests{0}, wrong{0}, errors{0};
  std::atomic<double> bytes{0};
  std::mutex print;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto worker = [&](int id) {
    try {
      ctx.make_current();
      jit::Stream stream;
      std::mt19937 rng(id);
      std::vector<jit::DeviceBuffer> ys;
      for (const auto& s : shapes) ys.emplace_back(s.shape.n * dtype_size(t));
      while (std::chrono::steady_clock::now() < deadline) {
        const std::size_t i = rng() % shapes.size();
        const ShapeData& s = shapes[i];
        auto plan = rt.plan(s.shape, t);
        GEMVTUNE_CU(cuMemsetD8Async, ys[i].get(), 0xff, ys[i].bytes(), stream.get());
        plan->launch(s.w.get(), s.x.get(), ys[i].get(), stream.get());
        HostArray y(t, s.shape.n);
        GEMVTUNE_CU(cuMemcpyDtoHAsync, y.bytes.data(), ys[i].get(), y.bytes.size(), stream.get());
        stream.synchronize();
        const Comparison cmp = compare_output(y, s.reference);
        ++requests;
        bytes = bytes + static_cast<double>(s.w.bytes());
        if (!cmp.ok) {
          ++wrong;
          std::lock_guard<std::mutex> lock(print);
          std::printf("WRONG: thread %d %s %s: %s\n", id, to_string(s.shape).c_str(),
                      to_string(plan->config()).c_str(), cmp.describe().c_str());
        }
      }
    } catch (const std::exception& e) {
      ++errors;
      std::lock_guard<std::mutex> lock(print);
      std::printf("ERROR: thread %d: %s\n", id, e.what());
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) pool.emplace_back(worker, i);
  for (auto& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("server_sim: %d threads, %.1f s, %ld requests (%.0f per s, %.0f GB/s of weights incl. checks), "
              "%ld wrong, %ld errors, %zu plans\n",
              threads, elapsed, requests.load(), requests / elapsed, bytes / elapsed / 1e9, wrong.load(),
              errors.load(), rt.stats().plans_created);
  return wrong == 0 && errors == 0 && requests > 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "server_sim: %s\n", e.what());
  return 1;
}
