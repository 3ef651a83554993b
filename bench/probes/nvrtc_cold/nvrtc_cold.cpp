// Probe: what a cold page cache costs NVRTC's first compiles, and whether asking the kernel to
// read NVRTC's library files ahead (posix_fadvise WILLNEED) wins it back.
//   nvrtc_cold evict                 drop libnvrtc's and its builtins' pages from the page cache
//   nvrtc_cold run [prefetch] SRC... compile every source on 16 threads (like the tune's pool),
//                                    after a WILLNEED on both files with `prefetch`; prints the
//                                    time to the first finished compile and to the last
// Build: g++ -O2 -std=c++17 nvrtc_cold.cpp -I$CUDA/include -L$CUDA/lib64 -lnvrtc -ldl -lpthread
#include <dlfcn.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

static std::vector<std::string> nvrtc_files() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&nvrtcCompileProgram), &info) || !info.dli_fname) return {};
  const std::string lib = info.dli_fname;
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  const std::string dir = lib.substr(0, lib.rfind('/') + 1);
  return {lib, dir + "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor)};
}

static void advise(int advice) {
  for (const std::string& f : nvrtc_files()) {
    const int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) { std::printf("cannot open %s\n", f.c_str()); continue; }
    const int r = posix_fadvise(fd, 0, 0, advice);
    std::printf("%s %s: %s\n", advice == POSIX_FADV_DONTNEED ? "evict" : "prefetch", f.c_str(), r ? std::strerror(r) : "ok");
    close(fd);
  }
}

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (argc >= 2 && std::strcmp(argv[1], "evict") == 0) { advise(POSIX_FADV_DONTNEED); return 0; }
  if (argc < 3 || std::strcmp(argv[1], "run") != 0) { std::fprintf(stderr, "usage: see the file\n"); return 2; }
  int first = 2;
  if (std::strcmp(argv[2], "prefetch") == 0) { advise(POSIX_FADV_WILLNEED); first = 3; }
  const double advised = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<std::string> sources;
  for (int i = first; i < argc; ++i) { std::ifstream f(argv[i]); std::stringstream s; s << f.rdbuf(); sources.push_back(s.str()); }
  std::atomic<std::size_t> next{0};
  std::atomic<long long> first_done_ns{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t)
    threads.emplace_back([&] {
      for (std::size_t i; (i = next++) < sources.size();) {
        nvrtcProgram p;
        nvrtcCreateProgram(&p, sources[i].c_str(), "k.cu", 0, nullptr, nullptr);
        const char* opts[] = {"--gpu-architecture=sm_90", "--std=c++17"};
        if (nvrtcCompileProgram(p, 2, opts) != NVRTC_SUCCESS) ++failed;
        nvrtcDestroyProgram(&p);
        long long expected = 0;
        first_done_ns.compare_exchange_strong(expected, std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
      }
    });
  for (auto& th : threads) th.join();
  std::printf("%s: %zu compiles on 16 threads, advice %.3f s, first done %.3f s, all done %.3f s, %d failed\n",
              first == 3 ? "prefetch" : "plain", sources.size(), advised, first_done_ns.load() * 1e-9,
              std::chrono::duration<double>(Clock::now() - t0).count(), failed.load());
}
