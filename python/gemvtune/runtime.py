"""The runtime from Python: open a tuning cache, plan a problem, launch on device pointers.

Mirrors gemvtune::Runtime and Plan (docs/runtime.md) through the C API. Pointers are plain
integers (CUdeviceptr) or objects with ``data_ptr()`` (torch tensors); streams are integers
(CUstream) or objects with ``cuda_stream`` (torch.cuda.Stream); 0 is the legacy default stream.
"""

import ctypes

from . import _capi, errors

_lib = _capi.lib


def _ptr(value, name):
    if value is None:
        return 0
    if hasattr(value, "data_ptr"):
        return int(value.data_ptr())
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
        return value
    raise errors.InvalidArgument(f"{name} must be a device pointer (int) or a tensor, got {value!r}")


def _stream(value):
    if value is None:
        return None
    if hasattr(value, "cuda_stream"):
        value = value.cuda_stream
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64:
        return value or None
    raise errors.InvalidArgument(f"stream must be a CUstream (int) or a torch.cuda.Stream, got {value!r}")


def _stride(value, name):
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.InvalidArgument(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise errors.InvalidArgument(f"{name} must not be negative, got {value}")
    return value


def check_problem(n, k, dtype="bf16", *, m=1, weights=None):
    """Raises InvalidArgument when this build cannot plan the problem (bad sizes, dtype or
    batch M outside 1..16; quantized weight formats until they land); needs no GPU."""
    p = _capi.problem(n, k, dtype, m, weights)
    _capi.check(_lib.gemvtune_problem_check(ctypes.byref(p)))


class Plan:
    """A ready-to-launch y = x W^T for one problem (m rows of x at most), from Runtime.plan(). Launches allocate
    nothing and never synchronize, so they can be captured into a CUDA graph. A plan whose
    ``stream_concurrent`` is False (split-K) must not run on two streams at the same time."""

    __slots__ = ("_handle", "m", "n", "k", "dtype", "weights", "config", "source", "stream_concurrent")

    def __init__(self, handle, n, k, dtype, weights):
        self._handle = handle
        self.m = _lib.gemvtune_plan_batch(handle)
        self.n, self.k, self.dtype, self.weights = n, k, dtype, weights or dtype
        self.config = _lib.gemvtune_plan_config(handle).decode()
        self.source = _lib.gemvtune_plan_source(handle).decode()
        self.stream_concurrent = bool(_lib.gemvtune_plan_stream_concurrent(handle))

    def launch(self, w, x, y, stream=None, *, ld=0, ldx=0, ldy=0, m=0, scales=None, zeros=None):
        """Enqueues y = x W^T on ``stream``. ld, ldx, ldy: row strides in elements of W, x and y
        (0: dense). m: rows of x and y, 1..plan.m (0: plan.m). scales and zeros: for quantized
        weight formats only."""
        if self._handle is None:
            raise errors.InvalidArgument("launch of a closed plan")
        w, x, y = _ptr(w, "w"), _ptr(x, "x"), _ptr(y, "y")
        stream = _stream(stream)
        scales, zeros = _ptr(scales, "scales"), _ptr(zeros, "zeros")
        if ldx or ldy or m or scales or zeros:
            o = _capi.Operands(ctypes.sizeof(_capi.Operands), w, scales, zeros, x, _stride(ldx, "ldx"), y,
                               _stride(ldy, "ldy"), _stride(ld, "ld"), _stride(m, "m"))
            status = _lib.gemvtune_plan_launch_ex(self._handle, ctypes.byref(o), stream)
        else:
            status = _lib.gemvtune_plan_launch(self._handle, w, x, y, _stride(ld, "ld"), stream)
        if status:
            raise _capi.error(status)

    def close(self):
        """Releases the handle (the plan's kernels stay while other handles or the runtime use
        them). Later launches raise InvalidArgument."""
        handle, self._handle = self._handle, None
        if handle:
            _lib.gemvtune_plan_destroy(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"<gemvtune.Plan m={self.m} {self.n}x{self.k} {self.dtype} weights={self.weights} "
                f"config={self.config} source={self.source!r}>")


class Runtime:
    """One GPU's runtime: the tuning cache (read-only), the compiled kernels and their plans.

    cache: the cache file (None: $GEMVTUNE_CACHE, else ~/.cache/gemvtune/gemvtune.sqlite; a
    missing file means default configs). kernel_store: folder of compiled kernels kept across
    restarts (None: "<cache>.kernels"; False or "": none). split_k=False makes every plan safe
    on concurrent streams (split-K only where its splits finish in a thread block cluster, which
    needs no shared workspace); pdl=False turns programmatic dependent launch off.
    Raises NoGpu without a CUDA driver or GPU, CacheError for an unusable cache file.
    """

    def __init__(self, cache=None, device=0, *, kernel_store=None, split_k=True, pdl=True):
        if isinstance(device, bool) or not isinstance(device, int):
            raise errors.InvalidArgument(f"device must be an integer, got {device!r}")
        options = _capi.RuntimeOptions()
        options.struct_size = ctypes.sizeof(_capi.RuntimeOptions)
        options.cache_path = _capi.text(cache)
        options.kernel_store_dir = b"" if kernel_store is False else _capi.text(kernel_store)
        options.device = device
        options.flags = (0 if split_k else _capi.NO_SPLIT_K) | (0 if pdl else _capi.NO_PDL)
        handle = ctypes.c_void_p()
        _capi.check(_lib.gemvtune_runtime_create_ex(ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle.value
        self.device = device

    def plan(self, n, k, dtype="bf16", *, m=1, weights=None):
        """The plan of y[m x n] = x[m x k] W^T (W n x k, row-major, as nn.Linear's weight).
        Compiles on first use of a problem (about a second), then is a cheap lookup: create
        plans at start-up, not per token, and before any CUDA graph capture."""
        if self._handle is None:
            raise errors.InvalidArgument("plan() on a closed runtime")
        p = _capi.problem(n, k, dtype, m, weights)
        handle = ctypes.c_void_p()
        _capi.check(_lib.gemvtune_plan_create_ex(self._handle, ctypes.byref(p), ctypes.byref(handle)))
        return Plan(handle.value, p.n, p.k, p.dtype.decode(), weights)

    def close(self):
        """Releases the runtime; plans made from it stay valid."""
        handle, self._handle = self._handle, None
        if handle:
            _lib.gemvtune_runtime_destroy(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
