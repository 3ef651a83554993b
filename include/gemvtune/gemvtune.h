/* gemvtune C API: the runtime (include/gemvtune/runtime.hpp) for servers written in C or
 * reached through an FFI. No exception crosses it: every function returns a status and leaves
 * the reason in gemvtune_last_error(). See docs/runtime.md. */
#ifndef GEMVTUNE_GEMVTUNE_H
#define GEMVTUNE_GEMVTUNE_H

#include <cuda.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gemvtune_status {
  GEMVTUNE_OK = 0,
  GEMVTUNE_ERROR_INVALID_ARGUMENT = 1, /* bad shape, dtype text, pointer, null out pointer */
  GEMVTUNE_ERROR_NO_GPU = 2,           /* no CUDA driver or no GPU */
  GEMVTUNE_ERROR_CUDA = 3,             /* a CUDA driver call failed */
  GEMVTUNE_ERROR_COMPILE = 4,          /* NVRTC failed; the message carries its log */
  GEMVTUNE_ERROR_CACHE = 5,            /* the tuning cache file exists but cannot be used */
  GEMVTUNE_ERROR_INTERNAL = 6          /* anything else (out of memory, a bug) */
} gemvtune_status;

typedef struct gemvtune_runtime gemvtune_runtime;
typedef struct gemvtune_plan gemvtune_plan;

/* cache_path NULL or "": the default cache path; a missing file means default configs.
 * Opens the cache read-only; compiled kernels are kept in "<cache path>.kernels/". */
gemvtune_status gemvtune_runtime_create(const char* cache_path, int device, gemvtune_runtime** out);
/* NULL is ignored. Plans created from it stay valid. */
void gemvtune_runtime_destroy(gemvtune_runtime* rt);

/* dtype: "bf16", "fp16", "fp32" (and the aliases of parse_dtype). Thread-safe; compiles on
 * first use of (n, k, dtype), then is a cheap lookup. Each call returns a new handle (the
 * plan behind it is shared) to be released with gemvtune_plan_destroy. */
gemvtune_status gemvtune_plan_create(gemvtune_runtime* rt, int64_t n, int64_t k, const char* dtype,
                                     gemvtune_plan** out);
void gemvtune_plan_destroy(gemvtune_plan* plan);

/* y = W x on stream; ld: row stride of W in elements, 0 means k. No allocation, no
 * synchronization: may be captured into a CUDA graph. Split-K plans must not run concurrently
 * on two streams (see runtime.hpp). */
gemvtune_status gemvtune_plan_launch(const gemvtune_plan* plan, CUdeviceptr w, CUdeviceptr x,
                                     CUdeviceptr y, int64_t ld, CUstream stream);

/* The plan's config text ("t128_r2_kw1_v16_u4_sk1_cs"), valid while the plan handle lives;
 * "" for NULL. */
const char* gemvtune_plan_config(const gemvtune_plan* plan);

/* The message of the last failed call on this thread ("" if none failed yet). Valid until the
 * next failing call on this thread. */
const char* gemvtune_last_error(void);

/* "GEMVTUNE_OK", "GEMVTUNE_ERROR_NO_GPU", ...; "unknown status" otherwise. */
const char* gemvtune_status_name(gemvtune_status status);

#ifdef __cplusplus
}
#endif

#endif /* GEMVTUNE_GEMVTUNE_H */
