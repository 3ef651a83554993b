// The C API (include/gemvtune/gemvtune.h) over gemvtune::Runtime: every body is wrapped in
// try/catch so no exception crosses into C; each error type maps to one status.
#include "gemvtune/gemvtune.h"

#include <exception>
#include <memory>
#include <new>
#include <string>

#include "gemvtune/runtime.hpp"

struct gemvtune_runtime {
  gemvtune::Runtime runtime;
};

struct gemvtune_plan {
  std::shared_ptr<const gemvtune::Plan> plan;
  std::string config_text;  // owned here so gemvtune_plan_config can return a stable pointer
};

namespace {

thread_local std::string last_error;

gemvtune_status fail(gemvtune_status status, const char* what) {
  try {
    last_error = what;
  } catch (...) {
    // Out of memory while recording the message: the status still says what happened.
  }
  return status;
}

// Called inside a catch block: maps the exception in flight to a status.
gemvtune_status status_of_current_exception() {
  try {
    throw;
  } catch (const gemvtune::InvalidArgument& e) {
    return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const gemvtune::NoGpu& e) {
    return fail(GEMVTUNE_ERROR_NO_GPU, e.what());
  } catch (const gemvtune::CudaError& e) {
    return fail(GEMVTUNE_ERROR_CUDA, e.what());
  } catch (const gemvtune::CompileError& e) {
    return fail(GEMVTUNE_ERROR_COMPILE, e.what());
  } catch (const gemvtune::CacheError& e) {
    return fail(GEMVTUNE_ERROR_CACHE, e.what());
  } catch (const std::bad_alloc&) {
    return fail(GEMVTUNE_ERROR_INTERNAL, "out of host memory");
  } catch (const std::exception& e) {
    return fail(GEMVTUNE_ERROR_INTERNAL, e.what());
  } catch (...) {
    return fail(GEMVTUNE_ERROR_INTERNAL, "unknown exception");
  }
}

}  // namespace

extern "C" {

gemvtune_status gemvtune_runtime_create(const char* cache_path, int device, gemvtune_runtime** out) {
  try {
    if (!out) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_runtime_create: out is NULL");
    *out = nullptr;
    if (device < 0)
      return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT,
                  ("gemvtune_runtime_create: device " + std::to_string(device) + " is negative").c_str());
    gemvtune::RuntimeOptions options;
    if (cache_path) options.cache_path = cache_path;
    options.device = device;
    *out = new gemvtune_runtime{gemvtune::Runtime(std::move(options))};
    return GEMVTUNE_OK;
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
    if (!dtype) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_plan_create: dtype is NULL");
    // Checked before rt so argument errors are reported the same with or without a GPU.
    const gemvtune::DType type = gemvtune::parse_dtype(dtype);
    const gemvtune::Shape shape{n, k};
    gemvtune::check_shape(shape);
    if (!rt) return fail(GEMVTUNE_ERROR_INVALID_ARGUMENT, "gemvtune_plan_create: runtime is NULL");
    auto handle = std::make_unique<gemvtune_plan>();
    handle->plan = rt->runtime.plan(shape, type);
    handle->config_text = gemvtune::to_string(handle->plan->config());
    *out = handle.release();
    return GEMVTUNE_OK;
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

const char* gemvtune_plan_config(const gemvtune_plan* plan) {
  return plan ? plan->config_text.c_str() : "";
}

const char* gemvtune_last_error(void) { return last_error.c_str(); }

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

}  // extern "C"
