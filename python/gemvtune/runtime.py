"""The runtime from Python: open a tuning cache, plan a problem, launch on device pointers.

Mirrors gemvtune::Runtime and Plan (docs/runtime.md) through the C API. Pointers are plain
integers (CUdeviceptr), passed as they are, or objects with ``data_ptr()`` (torch tensors),
checked against the plan first (Plan.launch); streams are integers (CUstream) or objects with
``cuda_stream`` (torch.cuda.Stream); 0 is the legacy default stream.
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
    return _capi.integer(value, name, 0, _capi.INT64_MAX)  # the int64_t fields of gemvtune_operands


def tensor_layout(t, dtypes, device, rows, cols, ld=0, per_element=1):
    """Whether the tensor t can be an operand of a launch on CUDA device ``device``: ``rows`` rows
    of ``cols`` values each (weights; nibbles for packed int4), one row after another at a row
    stride ``ld`` (0: t's own), in one of the dtypes named in ``dtypes`` (as _capi.dtype_name
    names them). per_element: values an element of t holds (2 for int4 packed in bytes).

    Returns (None, the row stride to launch with: ld if given, else stride(0) of a 2-D t, 0
    (dense) for a 1-D t or a single row) where it can, else (why not, as the end of a sentence
    naming t, None); Plan.launch raises InvalidArgument with it. (gemvtune.torch checks its
    operands inline, falling back to torch, and launches with pointers: its eager hot path
    cannot afford this general check.) t must be 1-D or 2-D with unit stride along its last
    dimension: the kernels read a row's values contiguously and take one row stride."""
    if not t.is_cuda:
        return f"is not on a CUDA device (it is on {getattr(t, 'device', 'the host')})", None
    if device is not None and t.get_device() != device:
        return f"is on cuda:{t.get_device()}, the plan's runtime on cuda:{device}", None
    name = _capi.dtype_name(t.dtype)
    if name not in dtypes:
        return f"has dtype {name}, the plan needs {' or '.join(dtypes)}", None
    shape, strides = t.shape, t.stride()
    if len(shape) not in (1, 2):
        return f"is {len(shape)}-D; give a 1-D or 2-D (rows, columns) view", None
    if strides[-1] != 1:
        return f"has stride {strides[-1]} along its last dimension; a row's elements must be contiguous", None
    if len(shape) == 2:
        if shape[1] * per_element < cols:
            return f"has rows of {shape[1] * per_element} values, the plan's are {cols}", None
        if shape[0] < rows:
            return f"has {shape[0]} rows, the launch needs {rows}", None
        own = strides[0] * per_element
        if not ld:
            ld = own if rows > 1 else 0
        elif rows > 1 and ld != own:
            return f"has a row stride of {own}, not the {ld} given", None
        if rows > 1 and ld < cols:
            return f"has a row stride of {ld}, less than its {cols} values a row: its rows overlap", None
        return None, ld
    step = ld or cols
    need = (rows - 1) * step + cols if rows > 1 else cols
    if shape[0] * per_element < need:
        return (f"holds {shape[0] * per_element} values, the launch needs {need} ({rows} row(s) of {cols}"
                + (f" at a stride of {step})" if rows > 1 else ")")), None
    return None, ld


def _dense_elements(shape, strides):
    """The element count of a row-major contiguous tensor, None where it is not one."""
    expected = 1
    for size, stride in zip(reversed(tuple(shape)), reversed(tuple(strides))):
        if size != 1 and stride != expected:
            return None
        expected *= size
    return expected


# Weight formats other than dense: the tensor dtypes w may have (raw bytes as uint8 always) and
# how many weights an element holds (docs/weights.md: int4 packs two a byte, low nibble first).
_PACKED = {"int8": (("int8", "uint8"), 1), "fp8": (("float8_e4m3fn", "uint8"), 1),
           "fp8t": (("float8_e4m3fn", "uint8"), 1)}
for _g in (32, 64, 128):
    _PACKED[f"int4g{_g}"] = (("uint8", "int8"), 2)


def check_problem(n, k, dtype="bf16", *, m=1, weights=None):
    """Raises InvalidArgument when this build cannot plan the problem (bad sizes, dtype, weight
    format, a K that is not a multiple of an int4 group, batch M outside 1..16); needs no GPU."""
    p = _capi.problem(n, k, dtype, m, weights)
    _capi.check(_lib.gemvtune_problem_check(ctypes.byref(p)))


class Plan:
    """A ready-to-launch y = x W^T for one problem (m rows of x at most), from Runtime.plan(). Launches allocate
    nothing and never synchronize, so they can be captured into a CUDA graph. A plan whose
    ``stream_concurrent`` is False (split-K) must not run on two streams at the same time."""

    __slots__ = ("_handle", "m", "n", "k", "dtype", "weights", "device", "config", "source", "stream_concurrent")

    def __init__(self, handle, n, k, dtype, weights, device=None):
        self._handle = handle
        self.m = _lib.gemvtune_plan_batch(handle)
        self.n, self.k, self.dtype, self.weights, self.device = n, k, dtype, weights or dtype, device
        self.config = _lib.gemvtune_plan_config(handle).decode()
        self.source = _lib.gemvtune_plan_source(handle).decode()
        self.stream_concurrent = bool(_lib.gemvtune_plan_stream_concurrent(handle))

    def launch(self, w, x, y, stream=None, *, ld=0, ldx=0, ldy=0, m=0, scales=None, zeros=None):
        """Enqueues y = x W^T on ``stream``. ld, ldx, ldy: row strides in elements of W, x and y
        (0: dense; a 2-D tensor's stride(0) when it is one). m: rows of x and y, 1..plan.m (0:
        plan.m). scales and zeros: for quantized weight formats only.

        Operands are device pointers (ints), which the library cannot check, or tensors
        (anything with data_ptr(): torch tensors), which are checked against the plan: on the
        runtime's CUDA device, of the plan's dtype (w: of its weight format; int4 packed two a
        byte in uint8), 1-D or 2-D with contiguous rows and enough of them for (m, n, k).
        A tensor that does not fit raises InvalidArgument naming it."""
        if self._handle is None:
            raise errors.InvalidArgument("launch of a closed plan")
        ld, ldx, ldy, m = _stride(ld, "ld"), _stride(ldx, "ldx"), _stride(ldy, "ldy"), _stride(m, "m")
        # An m above plan.m is the library's to refuse, with its message: check the tensors
        # for the rows the plan has.
        rows = min(m, self.m) if m else self.m
        dense = self.weights in (self.dtype, "dense")
        w_dtypes, per_element = ((self.dtype,), 1) if dense else _PACKED.get(self.weights, ((), 1))
        w, ld = self._operand(w, "w", w_dtypes, self.n, self.k, ld, per_element)
        x, ldx = self._operand(x, "x", (self.dtype,), rows, self.k, ldx)
        y, ldy = self._operand(y, "y", (self.dtype,), rows, self.n, ldy)
        scales = self._side(scales, "scales", dense)
        zeros = self._side(zeros, "zeros", dense)
        stream = _stream(stream)
        if ldx or ldy or m or scales or zeros:
            o = _capi.Operands(ctypes.sizeof(_capi.Operands), w, scales, zeros, x, ldx, y, ldy, ld, m)
            status = _lib.gemvtune_plan_launch_ex(self._handle, ctypes.byref(o), stream)
        else:
            status = _lib.gemvtune_plan_launch(self._handle, w, x, y, ld, stream)
        if status:
            raise _capi.error(status)

    def _operand(self, value, name, dtypes, rows, cols, ld, per_element=1):
        """(pointer, row stride) of w, x or y; a tensor checked by tensor_layout."""
        if not hasattr(value, "data_ptr"):
            return _ptr(value, name), ld
        if not dtypes:  # a weight format newer than _PACKED: its packing is the library's to check
            return _ptr(value, name), ld
        why, ld = tensor_layout(value, dtypes, self.device, rows, cols, ld, per_element)
        if why:
            raise errors.InvalidArgument(f"{name} {why} (plan: {self._problem()})")
        return int(value.data_ptr()), ld

    def _side(self, value, name, dense):
        """The pointer of scales or zeros; a tensor checked for device, dtype and size (docs/weights.md)."""
        if not hasattr(value, "data_ptr") or dense:  # a dense plan refuses scales in the library
            return _ptr(value, name)
        fmt = self.weights
        if fmt.startswith("int4g"):
            dtypes, count = (self.dtype,), self.n * (self.k // int(fmt[5:]))
        elif name == "zeros":  # zeros of an 8-bit format: the library's to refuse
            return _ptr(value, name)
        else:
            dtypes, count = ("fp32",), 1 if fmt == "fp8t" else self.n
        why = None
        if not value.is_cuda:
            why = f"is not on a CUDA device (it is on {getattr(value, 'device', 'the host')})"
        elif self.device is not None and value.get_device() != self.device:
            why = f"is on cuda:{value.get_device()}, the plan's runtime on cuda:{self.device}"
        elif _capi.dtype_name(value.dtype) not in dtypes:
            why = f"has dtype {_capi.dtype_name(value.dtype)}, {fmt} needs {dtypes[0]}"
        else:
            have = _dense_elements(value.shape, value.stride())
            if have is None:
                why = "is not contiguous"
            elif have < count:
                why = f"holds {have} values, {fmt} needs {count}"
        if why:
            raise errors.InvalidArgument(f"{name} {why} (plan: {self._problem()})")
        return int(value.data_ptr())

    def _problem(self):
        return f"m={self.m} {self.n}x{self.k} {self.dtype}" + ("" if self.weights == self.dtype else
                                                                f" weights={self.weights}")

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
        device = _capi.integer(device, "device", 0, _capi.INT_MAX)  # a C int
        options = _capi.RuntimeOptions()
        options.struct_size = ctypes.sizeof(_capi.RuntimeOptions)
        options.cache_path = _capi.text(cache, "cache")
        options.kernel_store_dir = b"" if kernel_store is False else _capi.text(kernel_store, "kernel_store")
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
        return Plan(handle.value, p.n, p.k, p.dtype.decode(), p.weights.decode() if p.weights else None, self.device)

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
