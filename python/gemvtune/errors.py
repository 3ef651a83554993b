"""Exceptions raised by the gemvtune package.

Each C API status (include/gemvtune/gemvtune.h) maps to one class; the message is the library's,
the same text the ``gemvtune`` CLI prints for the same failure.
"""


class GemvtuneError(Exception):
    """Base of every gemvtune error. ``status`` is the C API status name."""

    status = "GEMVTUNE_ERROR_INTERNAL"


class InvalidArgument(GemvtuneError, ValueError):
    """Bad shape, dtype, pointer, option, or a problem this build cannot run (the CLI's exit 2)."""

    status = "GEMVTUNE_ERROR_INVALID_ARGUMENT"


class NoGpu(GemvtuneError, RuntimeError):
    """No CUDA driver or no GPU on this machine."""

    status = "GEMVTUNE_ERROR_NO_GPU"


class CudaError(GemvtuneError, RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""

    status = "GEMVTUNE_ERROR_CUDA"


class CompileError(GemvtuneError, RuntimeError):
    """NVRTC rejected a kernel; the message carries its log."""

    status = "GEMVTUNE_ERROR_COMPILE"


class CacheError(GemvtuneError, RuntimeError):
    """The tuning cache file exists but cannot be used (not a gemvtune cache, newer schema, ...)."""

    status = "GEMVTUNE_ERROR_CACHE"


class InternalError(GemvtuneError, RuntimeError):
    """Anything else (out of host memory, a bug)."""

    status = "GEMVTUNE_ERROR_INTERNAL"


class TuneFailed(GemvtuneError, RuntimeError):
    """Some shapes of a tune run failed (the CLI exits 1). The others were tuned and stored;
    ``result`` is the whole run's document, as ``gemvtune.tune(check=False)`` returns it."""

    status = "GEMVTUNE_OK"

    def __init__(self, message, result):
        super().__init__(message)
        self.result = result


BY_STATUS = {
    1: InvalidArgument,
    2: NoGpu,
    3: CudaError,
    4: CompileError,
    5: CacheError,
    6: InternalError,
}
