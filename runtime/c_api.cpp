// The C API (include/gemvtune/gemvtune.h) over gemvtune::Runtime: every body is wrapped in
// try/catch so no exception crosses into C; each error type maps to one status. The cache
// commands (tune, query, ...) are in c_api_offline.cpp.
#include "gemvtune/gemvtune.h"

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include "gemvtune/config.hpp"
#include "gemvtune/runtime.hpp"
#include "runtime/c_api_internal.hpp"

#ifndef GEMVTUNE_VERSION_STRING
#define GEMVTUNE_VERSION_STRING "unknown"
#endif

struct gemvtune_runtime {
  gemvtune::Runtime runtime;
};

struct gemvtune_plan {
  std::shared_ptr<const gemvtune::Plan> plan;
  // Owned here so gemvtune_plan_config and gemvtune_plan_source can return stable pointers.
  std::string config_text, source_text;
};

namespace gemvtune::capi {

namespace {
thread_local std::string last_error;
}  // namespace

gemvtune_status fail(gemvtune_status status, const std::string& what) {
  try {
    last_error = what;
  } catch (...) {
    // Out of memory while recording the message: the status still says what happened.
  }
  return status;
}

gemvtune_status status_of_current_exception() {
  try {
    throw;
  } catch (const InvalidArgument& e) {
    return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const NoGpu& e) {
    return fail(GEMVTUNE_ERROR_NO_GPU, e.what());
  } catch (const CudaError& e) {
    return fail(GEMVTUNE_ERROR_CUDA, e.what());
  } catch (const CompileError& e) {
    return fail(GEMVTUNE_ERROR_COMPILE, e.what());
  } catch (const CacheError& e) {
    return fail(GEMVTUNE_ERROR_CACHE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(GEMVTUNE_ERROR_INTERNAL, "out of host memory");
  } catch (const std::exception& e) {
    return fail(GEMVTUNE_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(GEMVTUNE_ERROR_INTERNAL, "unknown exception");
  }
}

CheckedProblem check_problem(const gemvtune_problem* p, const char* function) {
  // Callers built before after_n existed pass the shorter struct: no call before.
  const gemvtune_problem problem = read_struct(p, offsetof(gemvtune_problem, after_n), function, "gemvtune_problem");
  if (!problem.dtype) throw InvalidArgument(std::string(function) + ": dtype is NULL");
  CheckedProblem out;
  out.dtype = parse_dtype(problem.dtype);
  out.shape = Shape{problem.n, problem.k};
  check_shape(out.shape);
  out.m = problem.m == 0 ? 1 : problem.m;
  check_batch(out.m);
  if (problem.weights && *problem.weights) {
    out.weights = parse_weights_option(problem.weights, out.dtype);  // names the accepted formats
    check_weight_layout(out.weights, out.dtype, out.shape.n, out.shape.k, out.shape.k);  // K vs group
  }
  if (problem.after_n != 0 || problem.after_k != 0) {
    out.after = Shape{problem.after_n, problem.after_k};
    try {
      check_shape(*out.after);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string(function) + ": after_n x after_k: " + e.what());
    }
  }
  return out;
}

char* copy_out(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (!out) throw std::bad_alloc();
  std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace gemvtune::capi

using gemvtune::capi::fail;
using gemvtune::capi::status_of_current_exception;

namespace {

gemvtune_status create_runtime(gemvtune::RuntimeOptions options, gemvtune_runtime** out) {
  *out = new gemvtune_runtime{gemvtune::Runtime(std::move(options))};
  return GEMVTUNE_OK;
}

gemvtune_status create_plan(gemvtune_runtime* rt, const gemvtune::capi::CheckedProblem& problem,
                            const char* function, gemvtune_plan** out) {
  if (!rt) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, std::string(function) + ": runtime is NULL");
  auto handle = std::make_unique<gemvtune_plan>();
  handle->plan = rt->runtime.plan(problem.shape, problem.dtype, static_cast<int>(problem.m), problem.weights);
  handle->config_text = gemvtune::to_string(handle->plan->config());
  handle->source_text = handle->plan->source_text();
  *out = handle.release();
  return GEMVTUNE_OK;
}

}  // namespace

extern "C" {

gemvtune_status gemvtune_runtime_create(const char* cache_path, int device, gemvtune_runtime** out) {
  try {
    if (!out) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_runtime_create: out is NULL");
    *out = nullptr;
    if (device < 0)
      return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT,
                  "gemvtune_runtime_create: device " + std::to_string(device) + " is negative");
    gemvtune::RuntimeOptions options;
    if (cache_path) options.cache_path = cache_path;
    options.device = device;
    return create_runtime(std::move(options), out);
  } catch (...) {
    return status_of_current_exception();
  }
}

gemvtune_status gemvtune_runtime_create_ex(const gemvtune_runtime_options* options, gemvtune_runtime** out) {
  try {
    if (!out) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_runtime_create_ex: out is NULL");
    *out = nullptr;
    gemvtune_runtime_options given{};
    given.struct_size = sizeof given;
    if (options)
      given = gemvtune::capi::read_struct(options, sizeof(gemvtune_runtime_options), "gemvtune_runtime_create_ex",
                                          "gemvtune_runtime_options");
    if (given.device < 0)
      return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT,
                  "gemvtune_runtime_create_ex: device " + std::to_string(given.device) + " is negative");
    const unsigned known = GEMVTUNE_NO_SPLIT_K | GEMVTUNE_NO_PDL;
    if (given.flags & ~known)
      return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT,
                  "gemvtune_runtime_create_ex: unknown flags " + std::to_string(given.flags & ~known));
    gemvtune::RuntimeOptions o;
    if (given.cache_path) o.cache_path = given.cache_path;
    if (given.kernel_store_dir) o.kernel_store_dir = std::string(given.kernel_store_dir);
    o.device = given.device;
    o.allow_split_k = !(given.flags & GEMVTUNE_NO_SPLIT_K);
    o.allow_pdl = !(given.flags & GEMVTUNE_NO_PDL);
    return create_runtime(std::move(o), out);
  } catch (...) {
    return status_of_current_exception();
  }
}

void gemvtune_runtime_destroy(gemvtune_runtime* rt) {
  try {
    delete rt;
  } catch (...) {
    // ~Runtime does not throw; nothing can be reported from a void function anyway.
  }
}

gemvtune_status gemvtune_plan_create(gemvtune_runtime* rt, int64_t n, int64_t k, const char* dtype,
                                     gemvtune_plan** out) {
  try {
    if (!out) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_plan_create: out is NULL");
    *out = nullptr;
    // Checked before rt so argument errors are reported the same with or without a GPU.
    gemvtune_problem problem{};
    problem.struct_size = sizeof problem;
    problem.m = 1;
    problem.n = n;
    problem.k = k;
    problem.dtype = dtype;
    const auto checked = gemvtune::capi::check_problem(&problem, "gemvtune_plan_create");
    return create_plan(rt, checked, "gemvtune_plan_create", out);
  } catch (...) {
    return status_of_current_exception();
  }
}

gemvtune_status gemvtune_problem_check(const gemvtune_problem* problem) {
  try {
    gemvtune::capi::check_problem(problem, "gemvtune_problem_check");
    return GEMVTUNE_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

gemvtune_status gemvtune_plan_create_ex(gemvtune_runtime* rt, const gemvtune_problem* problem, gemvtune_plan** out) {
  try {
    if (!out) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_plan_create_ex: out is NULL");
    *out = nullptr;
    const auto checked = gemvtune::capi::check_problem(problem, "gemvtune_plan_create_ex");
    return create_plan(rt, checked, "gemvtune_plan_create_ex", out);
  } catch (...) {
    return status_of_current_exception();
  }
}

void gemvtune_plan_destroy(gemvtune_plan* plan) {
  try {
    delete plan;
  } catch (...) {
  }
}

gemvtune_status gemvtune_plan_launch(const gemvtune_plan* plan, CUdeviceptr w, CUdeviceptr x,
                                     CUdeviceptr y, int64_t ld, CUstream stream) {
  try {
    if (!plan) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_plan_launch: plan is NULL");
    plan->plan->launch(w, x, y, stream, ld);
    return GEMVTUNE_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

gemvtune_status gemvtune_plan_launch_ex(const gemvtune_plan* plan, const gemvtune_operands* operands,
                                        CUstream stream) {
  try {
    const char* fn = "gemvtune_plan_launch_ex";
    if (!plan) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": plan is NULL");
    const gemvtune_operands o =
        gemvtune::capi::read_struct(operands, sizeof(gemvtune_operands), fn, "gemvtune_operands");
    if ((o.scales || o.zeros) && !gemvtune::is_quantized(plan->plan->weights()))
      return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT,
                  std::string(fn) + ": scales and zeros are for quantized weight formats; this plan's weights are " +
                      std::string(gemvtune::to_string(plan->plan->dtype())));
    if (o.m < 0 || o.m > plan->plan->batch())
      return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, std::string(fn) + ": m = " + std::to_string(o.m) +
                                                       " rows, the plan takes 1.." + std::to_string(plan->plan->batch()));
    gemvtune::Operands op;
    op.w = o.w;
    op.x = o.x;
    op.y = o.y;
    op.ld = o.ld;
    op.ldx = o.ldx;
    op.ldy = o.ldy;
    op.m = static_cast<int>(o.m);
    op.scales = o.scales;
    op.zeros = o.zeros;
    plan->plan->launch(op, stream);  // checks m, pointers and strides before launching
    return GEMVTUNE_OK;
  } catch (...) {
    return status_of_current_exception();
  }
}

const char* gemvtune_plan_config(const gemvtune_plan* plan) { return plan ? plan->config_text.c_str() : ""; }

const char* gemvtune_plan_source(const gemvtune_plan* plan) { return plan ? plan->source_text.c_str() : ""; }

int64_t gemvtune_plan_batch(const gemvtune_plan* plan) { return plan ? plan->plan->batch() : 0; }

int gemvtune_plan_stream_concurrent(const gemvtune_plan* plan) {
  return plan && plan->plan->stream_concurrent() ? 1 : 0;
}

const char* gemvtune_last_error(void) { return gemvtune::capi::last_error.c_str(); }

const char* gemvtune_status_name(gemvtune_status status) {
  switch (status) {
    case GEMVTUNE_OK: return "GEMVTUNE_OK";
    case GEMVTUNE_ERROR_INVALID_ARGUMENT: return "GEMVTUNE_ERROR_INVALID_ARGUMENT";
    case GEMVTUNE_ERROR_NO_GPU: return "GEMVTUNE_ERROR_NO_GPU";
    case GEMVTUNE_ERROR_CUDA: return "GEMVTUNE_ERROR_CUDA";
    case GEMVTUNE_ERROR_COMPILE: return "GEMVTUNE_ERROR_COMPILE";
    case GEMVTUNE_ERROR_CACHE: return "GEMVTUNE_ERROR_CACHE";
    case GEMVTUNE_ERROR_INTERNAL: return "GEMVTUNE_ERROR_INTERNAL";
  }
  return "unknown status";
}

const char* gemvtune_version(void) { return GEMVTUNE_VERSION_STRING; }

void gemvtune_free(char* text) { std::free(text); }

}  // extern "C"
