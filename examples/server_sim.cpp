// server_sim: a server-like load on one gemvtune Runtime. N worker threads, each with its own
// stream, serve random requests over the tuned shapes of a preset for a fixed time: plan
// (a memoized lookup after the first), poison y, launch, copy y back and check it against the
// float64 reference of that shape. Reports requests per second and any wrong result.
// First it reports the start-up: the first plan + launch of each shape, and how many kernels
// came from the on-disk kernel store against NVRTC (run it twice to compare a cold store
// with a warm one; --no-store disables the store).
// Usage: server_sim [--db PATH] [--threads 16] [--seconds 60] [--preset llama-3.1-8b] [--no-store 0|1]
// Exits 77 (skipped, for ctest) with a message where there is no GPU; 1 on any wrong result or error.
// Built against gemvtune's public headers only, with the CUDA driver API through example_cuda.hpp.
#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "example_cuda.hpp"
#include "example_options.hpp"
#include "gemvtune/presets.hpp"
#include "gemvtune/runtime.hpp"

using namespace gemvtune;
using example::DeviceBuffer;
using example::Stream;

namespace {
struct ShapeData {
  Shape shape;
  DeviceBuffer w, x;
  std::vector<double> reference;
};

// y = W x in float64 from the bf16 inputs (W row-major N x K).
std::vector<double> reference_gemv(const std::vector<std::uint16_t>& w, const std::vector<std::uint16_t>& x,
                                   const Shape& s) {
  std::vector<double> xd(static_cast<std::size_t>(s.k)), y(static_cast<std::size_t>(s.n));
  for (std::int64_t c = 0; c < s.k; ++c) xd[c] = example::bf16_to_float(x[c]);
  example::parallel_for(s.n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      double acc = 0;
      for (std::int64_t c = 0; c < s.k; ++c) acc += example::bf16_to_float(w[r * s.k + c]) * xd[c];
      y[r] = acc;
    }
  });
  return y;
}

// A kernel's bf16 y against the reference: per element |y - ref| within 2^-7 |ref| (one bf16
// ulp) + 1e-4 rms(ref) (fp32 accumulation order); NaN never passes (y is poisoned with NaN
// first, so an unwritten element fails).
struct Comparison {
  bool ok = false;
  double max_abs_error = 0, rel_l2_error = 0;
  std::int64_t first_bad = -1;
  std::string describe() const {
    std::string s = ok ? "ok" : "WRONG";
    s += ": relative L2 error " + std::to_string(rel_l2_error) + ", max abs error " + std::to_string(max_abs_error);
    if (first_bad >= 0) s += ", first bad element " + std::to_string(first_bad);
    return s;
  }
};

Comparison compare_output(const std::vector<std::uint16_t>& y, const std::vector<double>& ref) {
  Comparison c;
  double ref_sq = 0, err_sq = 0;
  for (double v : ref) ref_sq += v * v;
  const double rms = ref.empty() ? 0 : std::sqrt(ref_sq / ref.size());
  const double tol_rel = std::ldexp(1.0, -7), tol_abs = 1e-4 * rms + 1e-30;
  c.ok = y.size() == ref.size();
  for (std::size_t i = 0; i < ref.size() && i < y.size(); ++i) {
    const double v = example::bf16_to_float(y[i]), err = std::fabs(v - ref[i]);
    const bool good = !std::isnan(v) && err <= tol_rel * std::fabs(ref[i]) + tol_abs;
    if (!good && c.first_bad < 0) c.first_bad = static_cast<std::int64_t>(i);
    c.ok = c.ok && good;
    if (std::isnan(v)) err_sq = std::numeric_limits<double>::infinity();
    else err_sq += err * err;
    c.max_abs_error = std::isnan(v) ? std::numeric_limits<double>::infinity() : std::max(c.max_abs_error, err);
  }
  c.rel_l2_error = ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq);
  return c;
}
}  // namespace

constexpr const char* kUsage =
    "usage: server_sim [--db PATH] [--threads 16] [--seconds 60] [--preset llama-3.1-8b] [--no-store 0|1]\n";

int main(int argc, char** argv) try {
  const example::Options args(argc, argv, {"db", "threads", "seconds", "preset", "no-store"});
  if (args.help()) {
    std::printf("%s", kUsage);
    return 0;
  }
  const std::string db = args.text("db", "");
  const int threads = static_cast<int>(args.integer("threads", 16, 1, 1024));
  const double seconds = args.number("seconds", 60, 0.001, 86400);
  const std::string preset = args.text("preset", "llama-3.1-8b");
  const bool no_store = args.integer("no-store", 0, 0, 1) != 0;
  try {
    find_preset(preset);  // before the GPU: a misspelt preset is a usage error
  } catch (const InvalidArgument& e) {
    throw example::UsageError(std::string("--preset: ") + e.what());
  }
  std::string why;
  if (!example::driver_available(&why)) {
    std::printf("server_sim: skipped, no GPU: %s\n", why.c_str());
    return 77;  // ctest: skipped
  }
  RuntimeOptions options;
  options.cache_path = db;
  options.allow_split_k = false;  // plans are shared by all streams at once
  if (no_store) options.kernel_store_dir = "";
  // Our own hold on the primary context the runtime uses, made current for our buffers and
  // streams (docs/runtime.md, "The primary context"); each worker thread makes it current too.
  example::PrimaryContext ctx(options.device);
  const auto created = std::chrono::steady_clock::now();
  Runtime rt(options);
  const double create_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - created).count();
  const DType t = DType::bf16;
  std::vector<ShapeData> shapes;
  for (const auto& p : find_preset(preset).shapes) {
    const std::uint64_t seed = 7 + shapes.size();
    const std::vector<std::uint16_t> w = example::random_weights(p.shape.n, p.shape.k, seed),
                                     x = example::random_activations(1, p.shape.k, seed);
    ShapeData d{p.shape, DeviceBuffer(w.size() * 2), DeviceBuffer(x.size() * 2), reference_gemv(w, x, p.shape)};
    d.w.upload(w.data(), w.size() * 2);
    d.x.upload(x.data(), x.size() * 2);
    shapes.push_back(std::move(d));
  }

  // Start-up: what a restarted server pays before its first answer for each shape.
  {
    Stream stream;
    std::string per_shape;
    double total_ms = 0;
    for (const ShapeData& s : shapes) {
      DeviceBuffer y(s.shape.n * dtype_size(t));
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
      Stream stream;
      std::mt19937 rng(id);
      std::vector<DeviceBuffer> ys;
      for (const auto& s : shapes) ys.emplace_back(s.shape.n * dtype_size(t));
      while (std::chrono::steady_clock::now() < deadline) {
        const std::size_t i = rng() % shapes.size();
        const ShapeData& s = shapes[i];
        auto plan = rt.plan(s.shape, t);
        EXAMPLE_CU(cuMemsetD8Async, ys[i].get(), 0xff, ys[i].bytes(), stream.get());
        plan->launch(s.w.get(), s.x.get(), ys[i].get(), stream.get());
        std::vector<std::uint16_t> y(static_cast<std::size_t>(s.shape.n));
        EXAMPLE_CU(cuMemcpyDtoHAsync, y.data(), ys[i].get(), y.size() * 2, stream.get());
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
} catch (const example::UsageError& e) {
  std::fprintf(stderr, "server_sim: %s\n%s", e.what(), kUsage);
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "server_sim: %s\n", e.what());
  return 1;
}
