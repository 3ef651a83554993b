// Uses the installed public headers only: plans a GEMV when there is a GPU, and otherwise
// shows that the library reports the missing GPU as an exception rather than failing to load.
#include <cstdio>

#include "gemvtune/gemvtune.h"
#include "gemvtune/runtime.hpp"

int main() {
  const gemvtune::KernelConfig c = gemvtune::parse_config("t128_r2_kw4_v16_u4_sk1_cs_pdl");
  if (gemvtune::to_string(c) != "t128_r2_kw4_v16_u4_sk1_cs_pdl") return 1;
  try {
    gemvtune::Runtime rt;
    auto plan = rt.plan({4096, 4096}, gemvtune::DType::bf16);
    std::printf("consumer: planned 4096x4096 bf16 with %s (%s)\n", gemvtune::to_string(plan->config()).c_str(),
                plan->source_text().c_str());
  } catch (const gemvtune::NoGpu& e) {
    std::printf("consumer: no GPU here (%s)\n", e.what());
  }
  gemvtune_runtime* rt = nullptr;
  const gemvtune_status s = gemvtune_runtime_create(nullptr, 0, &rt);
  std::printf("consumer: C API runtime_create -> %s\n", gemvtune_status_name(s));
  gemvtune_runtime_destroy(rt);
  return s == GEMVTUNE_OK || s == GEMVTUNE_ERROR_NO_GPU ? 0 : 1;
}
