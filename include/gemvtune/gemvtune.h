/* gemvtune C API: the runtime (include/gemvtune/runtime.hpp) and the tuning cache's offline
 * side (tune, query, list, export, import, peak) for servers written in C or reached through
 * an FFI (the Python package binds it with ctypes; libgemvtune.so exports exactly these
 * functions). No exception crosses it: every function returns a status and leaves the reason
 * in gemvtune_last_error(). See docs/runtime.md and docs/python.md. */
#ifndef GEMVTUNE_GEMVTUNE_H
#define GEMVTUNE_GEMVTUNE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define GEMVTUNE_API __attribute__((visibility("default")))
#else
#define GEMVTUNE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gemvtune_status {
  GEMVTUNE_OK = 0,
  GEMVTUNE_ERROR_INVALID_ARGUMENT = 1, /* bad shape, dtype text, pointer, null out pointer, an
                                          output path that cannot be written */
  GEMVTUNE_ERROR_NO_GPU = 2,           /* no CUDA driver or no GPU */
  GEMVTUNE_ERROR_CUDA = 3,             /* a CUDA driver call failed */
  GEMVTUNE_ERROR_COMPILE = 4,          /* NVRTC failed; the message carries its log */
  GEMVTUNE_ERROR_CACHE = 5,            /* the tuning cache file exists but cannot be used */
  GEMVTUNE_ERROR_INTERNAL = 6          /* anything else (out of memory, a full disk, a bug) */
} gemvtune_status;

typedef struct gemvtune_runtime gemvtune_runtime;
typedef struct gemvtune_plan gemvtune_plan;

/* ---- the runtime: plans and launches --------------------------------------------------- */

/* cache_path NULL or "": the default cache path; a missing file means default configs.
 * Opens the cache read-only; compiled kernels are kept in "<cache path>.kernels/". */
GEMVTUNE_API gemvtune_status gemvtune_runtime_create(const char* cache_path, int device,
                                                     gemvtune_runtime** out);
/* NULL is ignored. Plans created from it stay valid. */
GEMVTUNE_API void gemvtune_runtime_destroy(gemvtune_runtime* rt);

/* dtype: "bf16", "fp16", "fp32" (and the aliases of parse_dtype). Thread-safe; compiles on
 * first use of (n, k, dtype), then is a cheap lookup. Each call returns a new handle (the
 * plan behind it is shared) to be released with gemvtune_plan_destroy. Same as
 * gemvtune_plan_create_ex with m = 1 and weights of the dtype. */
GEMVTUNE_API gemvtune_status gemvtune_plan_create(gemvtune_runtime* rt, int64_t n, int64_t k,
                                                  const char* dtype, gemvtune_plan** out);
GEMVTUNE_API void gemvtune_plan_destroy(gemvtune_plan* plan);

/* y = W x on stream; ld: row stride of W in elements, 0 means k. No allocation, no
 * synchronization: may be captured into a CUDA graph. Split-K plans must not run concurrently
 * on two streams (see runtime.hpp). The fastest call for m = 1 with plain weights. */
GEMVTUNE_API gemvtune_status gemvtune_plan_launch(const gemvtune_plan* plan, CUdeviceptr w,
                                                  CUdeviceptr x, CUdeviceptr y, int64_t ld,
                                                  CUstream stream);

/* The plan's config text ("t128_r2_kw1_v16_u4_sk1_cs"), valid while the plan handle lives;
 * "" for NULL. */
GEMVTUNE_API const char* gemvtune_plan_config(const gemvtune_plan* plan);
/* Where the config came from: "exact", "nearest 4096x4096" or "default (...)"; valid while
 * the plan handle lives; "" for NULL. */
GEMVTUNE_API const char* gemvtune_plan_source(const gemvtune_plan* plan);
/* The plan's batch m (the most rows of x one launch takes); 0 for NULL. */
GEMVTUNE_API int64_t gemvtune_plan_batch(const gemvtune_plan* plan);
/* 1 when launches of the plan may overlap in time on several streams (no split-K
 * workspace), 0 otherwise or for NULL. */
GEMVTUNE_API int gemvtune_plan_stream_concurrent(const gemvtune_plan* plan);

/* ---- struct-based entry points ---------------------------------------------------------
 * Each struct starts with struct_size, which the caller sets to sizeof(the struct) as it was
 * compiled, so the structs can grow without breaking callers: fields are only ever added at
 * the end; a caller built against an older header passes a smaller struct and the fields it
 * lacks take their defaults; a caller built against a newer header passes a larger one, which
 * is accepted when every byte this build does not know is zero. Zero-filled fields mean the
 * defaults. */

/* What to compute: y[m x n] = x[m x k] W^T, W row-major n x k, as in nn.Linear. */
typedef struct gemvtune_problem {
  size_t struct_size; /* sizeof(gemvtune_problem) */
  int64_t m;          /* rows of x and y (decode batch), 1..16; 0 means 1 */
  int64_t n, k;       /* W is n x k */
  const char* dtype;  /* of x and y (and of W unless weights says otherwise): "bf16", ... */
  /* Weight format: NULL or "" means the dtype; quantized formats ("int8", "fp8",
   * "int4g128", ...) where the build supports them. */
  const char* weights;
  /* gemvtune_tune only (plans ignore it): the shape of the GEMV just before this one in a
   * decode step, 0 x 0 for none. The finalists are then also timed right after a call of it,
   * and the fastest there wins, as `gemvtune tune --preset` does with a preset's "after". A
   * struct_size that ends before after_n (an older caller) means none. */
  int64_t after_n, after_k;
} gemvtune_problem;

/* The device operands of one launch. Strides are in elements; 0 means dense. */
typedef struct gemvtune_operands {
  size_t struct_size;  /* sizeof(gemvtune_operands) */
  CUdeviceptr w;       /* n rows of k, row stride ld */
  CUdeviceptr scales;  /* quantized weights only (per-group scales); 0 otherwise */
  CUdeviceptr zeros;   /* int4 weights only (per-group zeros); 0 otherwise (int8/fp8 refuse one) */
  CUdeviceptr x;       /* m rows of k, row stride ldx (0: k) */
  int64_t ldx;
  CUdeviceptr y;       /* m rows of n, row stride ldy (0: n) */
  int64_t ldy;
  int64_t ld;          /* row stride of W (0: k) */
  int64_t m;           /* rows of x and y this launch, 1..the plan's m; 0: the plan's m */
} gemvtune_operands;

/* Flags of gemvtune_runtime_options. */
#define GEMVTUNE_NO_SPLIT_K 1u /* no split-K workspace (split-K only in thread block clusters):
                                 launches may overlap on any streams */
#define GEMVTUNE_NO_PDL 2u     /* no programmatic dependent launch */

typedef struct gemvtune_runtime_options {
  size_t struct_size;           /* sizeof(gemvtune_runtime_options) */
  const char* cache_path;       /* NULL or "": the default cache path */
  const char* kernel_store_dir; /* NULL: "<cache path>.kernels"; "": no kernel store */
  int device;                   /* CUDA device ordinal */
  unsigned flags;               /* GEMVTUNE_NO_SPLIT_K | GEMVTUNE_NO_PDL */
} gemvtune_runtime_options;

/* options NULL: every default (as gemvtune_runtime_create(NULL, 0, out)). */
GEMVTUNE_API gemvtune_status gemvtune_runtime_create_ex(const gemvtune_runtime_options* options,
                                                        gemvtune_runtime** out);

/* GEMVTUNE_OK when this build can plan the problem, else GEMVTUNE_ERROR_INVALID_ARGUMENT with
 * the reason (a bad size, dtype or batch; "weight format 'int8' is not supported by this
 * build"). Needs no GPU; gemvtune_plan_create_ex checks the same first. */
GEMVTUNE_API gemvtune_status gemvtune_problem_check(const gemvtune_problem* problem);

/* The plan of a problem (see gemvtune_plan_create). */
GEMVTUNE_API gemvtune_status gemvtune_plan_create_ex(gemvtune_runtime* rt,
                                                     const gemvtune_problem* problem,
                                                     gemvtune_plan** out);

/* Enqueues the plan's problem on stream with these operands; same guarantees as
 * gemvtune_plan_launch. */
GEMVTUNE_API gemvtune_status gemvtune_plan_launch_ex(const gemvtune_plan* plan,
                                                     const gemvtune_operands* operands,
                                                     CUstream stream);

/* ---- the offline side: the CLI's cache commands -----------------------------------------
 * Each answers with a JSON document in *json_out (the same document as the CLI command with
 * --json), allocated by the library: release it with gemvtune_free. On failure *json_out is
 * NULL and the message is the one the CLI prints. db NULL or "": the default cache path
 * ($GEMVTUNE_CACHE, else $XDG_CACHE_HOME/gemvtune/gemvtune.sqlite, else
 * ~/.cache/gemvtune/gemvtune.sqlite). */

/* Releases a string the library returned; NULL is ignored. */
GEMVTUNE_API void gemvtune_free(char* text);

/* The cache path db NULL would use. */
GEMVTUNE_API gemvtune_status gemvtune_default_cache_path(char** out);

/* Number of CUDA devices; GEMVTUNE_ERROR_NO_GPU where there is no driver or GPU. */
GEMVTUNE_API gemvtune_status gemvtune_device_count(int* out);

/* `gemvtune list --json`: {"db", "template_version", "tuned": [...], "peaks": [...],
 * "skipped": [...]}, skipped naming the rows this build cannot use (the CLI warns of them on
 * stderr). A missing file lists nothing. */
GEMVTUNE_API gemvtune_status gemvtune_cache_list(const char* db, char** json_out);

/* `gemvtune export`: out_path NULL or "": the document itself in *json_out; otherwise the
 * document is written to out_path as `export --out` writes it (a regular file or a new path
 * replaced atomically, keeping the old file's mode; a symlink, FIFO or device written through)
 * and *json_out is {"db", "out", "tuned", "peaks", "skipped"} (entries written, rows left out).
 * JSON answers hold paths as text: bytes of a path that are not UTF-8 read as U+FFFD. */
GEMVTUNE_API gemvtune_status gemvtune_cache_export(const char* db, const char* out_path,
                                                   char** json_out);

/* `gemvtune import FILE`: merges an export into the cache (created when missing); for a key
 * in both the faster entry stays. The file is read and checked before the cache is opened.
 * *json_out: {"db", "file", "added", "replaced", "kept", "peaks_added", "peaks_raised",
 * "peaks_kept"} (tuned entries, then read ceilings). */
GEMVTUNE_API gemvtune_status gemvtune_cache_import(const char* db, const char* path,
                                                   char** json_out);

/* `gemvtune query --json`: the config the runtime would use for the problem (its m is the
 * batch; an untuned m is answered by a tuned one that covers it). gpu_key NULL or
 * "": the GPU at `device` (needs the driver); otherwise a GPU model as `list` shows it,
 * "NVIDIA H200/132sm/cc9.0" (needs no GPU). */
GEMVTUNE_API gemvtune_status gemvtune_query(const char* db, const gemvtune_problem* problem,
                                            int device, const char* gpu_key, char** json_out);

/* `gemvtune peak`: measures the read ceiling of `device` and stores it in the cache.
 * *json_out: {"db", "gpu", "gbps", "bytes", "runs", "previous_gbps", "peak": {...}}. */
GEMVTUNE_API gemvtune_status gemvtune_peak(const char* db, int device, char** json_out);

/* `gemvtune fit --json`: the model's constants refitted to one GPU's measured candidates in the
 * cache, beside the shipped ones (needs no GPU, changes nothing). gpu_key NULL or "": the cache's
 * only GPU model with entries of this build's templates; otherwise one as `list` shows it.
 * *json_out: {"db", "gpu", "template_version", "rows", "problems", "constants": [{"name",
 * "shipped", "fitted", "rows", "rms_log_error_shipped", "rms_log_error_fitted"}],
 * "rms_log_error_shipped", "rms_log_error_fitted", "picks_over_best_shipped",
 * "picks_over_best_fitted"}. GEMVTUNE_ERROR_INVALID_ARGUMENT when there is nothing to fit. */
GEMVTUNE_API gemvtune_status gemvtune_fit(const char* db, const char* gpu_key, char** json_out);

/* The model presets `tune --preset` knows: [{"name", "description", "shapes":
 * [{"n", "k", "layers", "after"}]}]; "after" is the shape ("NxK") of the GEMV just before
 * this one in a decode step, which `gemvtune tune` ranks finalists after (null outside one);
 * gemvtune_tune does so for a problem given after_n x after_k. */
GEMVTUNE_API gemvtune_status gemvtune_presets(char** json_out);

/* One preset by name, as an element of gemvtune_presets; unknown names are
 * GEMVTUNE_ERROR_INVALID_ARGUMENT listing the known ones. */
GEMVTUNE_API gemvtune_status gemvtune_find_preset(const char* name, char** json_out);

/* "4096x14336" into n and k; malformed text, zero, negative or too large sizes are
 * GEMVTUNE_ERROR_INVALID_ARGUMENT with the CLI's message. */
GEMVTUNE_API gemvtune_status gemvtune_parse_shape(const char* text, int64_t* n, int64_t* k);

/* The shapes of a shape file (`tune --shapes FILE`: one NxK per line, '#' comments):
 * [{"n", "k"}, ...]. */
GEMVTUNE_API gemvtune_status gemvtune_read_shape_file(const char* path, char** json_out);

/* Called during gemvtune_tune with one JSON event: {"event": "start", "jobs", "planned"},
 * {"event": "progress", "device", "shape", "dtype", "measured", "planned", "budget",
 * "best_config", "best_us"} after every measured candidate, {"event": "outcome", ...} with an
 * element of the result's "shapes" for every job. Calls are serialized but may come from any
 * thread; the text is valid during the call only. */
typedef void (*gemvtune_tune_callback)(const char* event_json, void* user);

typedef struct gemvtune_tune_options {
  size_t struct_size;       /* sizeof(gemvtune_tune_options) */
  const char* db;           /* NULL or "": the default cache path */
  const char* strategy;     /* NULL or "": "model"; or "exhaustive" */
  const int* devices;       /* GPU ordinals to spread the jobs over; NULL: device 0 */
  size_t device_count;
  gemvtune_tune_callback on_event; /* may be NULL */
  void* user;                      /* passed to on_event */
  int force;                       /* nonzero: re-tune what the cache already holds */
  int reserved;                    /* 0 */
} gemvtune_tune_options;

/* `gemvtune tune --json`: tunes every problem (plain weights) and stores each result
 * as soon as it is done; a problem with after_n x after_k has its finalists ranked right after
 * a call of that shape (its shape's "after" in *json_out gives both times of each). Arguments are checked before any GPU or file is touched. Returns OK
 * when the jobs ran, even if some failed: *json_out is {"db", "strategy", "template_version",
 * "tuned", "skipped", "failed", "seconds", "shapes": [{"shape", "n", "k", "dtype", "gpu",
 * "device", "status": "tuned"|"skipped"|"failed", "error"?, "config"?, ...}]}. */
GEMVTUNE_API gemvtune_status gemvtune_tune(const gemvtune_problem* problems, size_t count,
                                           const gemvtune_tune_options* options, char** json_out);

/* ---- errors ------------------------------------------------------------------------------ */

/* The message of the last failed call on this thread ("" if none failed yet). Valid until the
 * next failing call on this thread. */
GEMVTUNE_API const char* gemvtune_last_error(void);

/* "GEMVTUNE_OK", "GEMVTUNE_ERROR_NO_GPU", ...; "unknown status" otherwise. */
GEMVTUNE_API const char* gemvtune_status_name(gemvtune_status status);

/* The library's version, "0.1.0". */
GEMVTUNE_API const char* gemvtune_version(void);

#ifdef __cplusplus
}
#endif

#endif /* GEMVTUNE_GEMVTUNE_H */
