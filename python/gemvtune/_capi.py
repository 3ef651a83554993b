"""ctypes binding of libgemvtune.so's C API (include/gemvtune/gemvtune.h).

The library is found, in this order, at ``$GEMVTUNE_LIBRARY`` (a file, or a folder holding
libgemvtune.so: a CMake build tree, say) or inside this package (where ``pip install .`` puts
it). Nothing here needs a GPU: the library loads the CUDA driver itself, at run time.
"""

import ctypes
import glob
import json
import operator
import os
import sys

from . import errors

LIBRARY_NAME = "libgemvtune.so"


# ---- the structs of gemvtune.h (each starts with its own size) --------------------------------


class Problem(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("dtype", ctypes.c_char_p),
        ("weights", ctypes.c_char_p),
        ("after_n", ctypes.c_int64),
        ("after_k", ctypes.c_int64),
    ]


class Operands(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("w", ctypes.c_uint64),
        ("scales", ctypes.c_uint64),
        ("zeros", ctypes.c_uint64),
        ("x", ctypes.c_uint64),
        ("ldx", ctypes.c_int64),
        ("y", ctypes.c_uint64),
        ("ldy", ctypes.c_int64),
        ("ld", ctypes.c_int64),
        ("m", ctypes.c_int64),
    ]


class RuntimeOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("cache_path", ctypes.c_char_p),
        ("kernel_store_dir", ctypes.c_char_p),
        ("device", ctypes.c_int),
        ("flags", ctypes.c_uint),
    ]


TUNE_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


class TuneOptions(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("db", ctypes.c_char_p),
        ("strategy", ctypes.c_char_p),
        ("devices", ctypes.POINTER(ctypes.c_int)),
        ("device_count", ctypes.c_size_t),
        ("on_event", TUNE_CALLBACK),
        ("user", ctypes.c_void_p),
        ("force", ctypes.c_int),
        ("reserved", ctypes.c_int),
    ]


NO_SPLIT_K = 1
NO_PDL = 2

# ---- loading ---------------------------------------------------------------------------------------


def _candidates():
    given = os.environ.get("GEMVTUNE_LIBRARY")
    if given:
        return [os.path.join(given, LIBRARY_NAME) if os.path.isdir(given) else given]
    return [os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)]


def _preload_nvrtc():
    """libgemvtune.so links libnvrtc.so.13. Where the dynamic loader cannot find it (no CUDA
    toolkit on its path), load it from the usual places first: the toolkit, or the NVIDIA
    wheels PyTorch installs. Returns True when one was loaded."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    patterns = []
    for root in filter(None, roots):
        patterns += [os.path.join(root, d, "libnvrtc.so.1*") for d in ("lib64", "lib", "targets/*/lib")]
    for site in sys.path:
        patterns += [os.path.join(site, "nvidia", "*", "lib", "libnvrtc.so.1*"),
                     os.path.join(site, "nvidia", "*", "*", "lib", "libnvrtc.so.1*")]
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            if "builtins" in os.path.basename(path) or "alt" in os.path.basename(path):
                continue
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return True
            except OSError:
                continue
    return False


def _load():
    tried = []
    for path in _candidates():
        if not os.path.exists(path):
            tried.append(f"{path}: no such file")
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            if "nvrtc" in str(e) and _preload_nvrtc():
                try:
                    return ctypes.CDLL(path), path
                except OSError as again:
                    e = again
            tried.append(f"{path}: {e}")
    raise ImportError(
        "gemvtune: cannot load " + LIBRARY_NAME + " (" + "; ".join(tried) + "). Install the package "
        "with `pip install .` from the repository, or set GEMVTUNE_LIBRARY to a build's libgemvtune.so "
        "(cmake --build build --target gemvtune_shared)."
    )


lib, library_path = _load()

_status = ctypes.c_int
_p = ctypes.c_void_p
_i64 = ctypes.c_int64
_u64 = ctypes.c_uint64
_str = ctypes.c_char_p
_out_str = ctypes.POINTER(ctypes.c_void_p)  # char** kept as void* so it can be freed

_PROTOTYPES = {
    "gemvtune_runtime_create": (_status, [_str, ctypes.c_int, ctypes.POINTER(_p)]),
    "gemvtune_runtime_create_ex": (_status, [ctypes.POINTER(RuntimeOptions), ctypes.POINTER(_p)]),
    "gemvtune_runtime_destroy": (None, [_p]),
    "gemvtune_plan_create": (_status, [_p, _i64, _i64, _str, ctypes.POINTER(_p)]),
    "gemvtune_plan_create_ex": (_status, [_p, ctypes.POINTER(Problem), ctypes.POINTER(_p)]),
    "gemvtune_plan_destroy": (None, [_p]),
    "gemvtune_plan_launch": (_status, [_p, _u64, _u64, _u64, _i64, _p]),
    "gemvtune_plan_launch_ex": (_status, [_p, ctypes.POINTER(Operands), _p]),
    "gemvtune_plan_config": (_str, [_p]),
    "gemvtune_plan_source": (_str, [_p]),
    "gemvtune_plan_stream_concurrent": (ctypes.c_int, [_p]),
    "gemvtune_plan_batch": (_i64, [_p]),
    "gemvtune_problem_check": (_status, [ctypes.POINTER(Problem)]),
    "gemvtune_free": (None, [_p]),
    "gemvtune_default_cache_path": (_status, [_out_str]),
    "gemvtune_device_count": (_status, [ctypes.POINTER(ctypes.c_int)]),
    "gemvtune_cache_list": (_status, [_str, _out_str]),
    "gemvtune_cache_export": (_status, [_str, _str, _out_str]),
    "gemvtune_cache_import": (_status, [_str, _str, _out_str]),
    "gemvtune_query": (_status, [_str, ctypes.POINTER(Problem), ctypes.c_int, _str, _out_str]),
    "gemvtune_peak": (_status, [_str, ctypes.c_int, _out_str]),
    "gemvtune_fit": (_status, [_str, _str, _out_str]),
    "gemvtune_presets": (_status, [_out_str]),
    "gemvtune_find_preset": (_status, [_str, _out_str]),
    "gemvtune_parse_shape": (_status, [_str, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "gemvtune_read_shape_file": (_status, [_str, _out_str]),
    "gemvtune_tune": (_status, [ctypes.POINTER(Problem), ctypes.c_size_t, ctypes.POINTER(TuneOptions), _out_str]),
    "gemvtune_last_error": (_str, []),
    "gemvtune_status_name": (_str, [ctypes.c_int]),
    "gemvtune_version": (_str, []),
}

for _name, (_restype, _argtypes) in _PROTOTYPES.items():
    _f = getattr(lib, _name)
    _f.restype = _restype
    _f.argtypes = _argtypes


# ---- helpers ----------------------------------------------------------------------------------------


def text(value, name):
    """A str, bytes or os.PathLike argument as the bytes a const char* takes; None stays NULL.

    str goes through os.fsencode, so a name os.listdir() returned with surrogate escapes (a
    file name that is not UTF-8) reaches C as the bytes it came from; bytes are taken as they
    are. Anything else raises InvalidArgument naming ``name``: calling str() on it would turn
    b"x.sqlite" into the path "b'x.sqlite'" (a silently different file) and 42 into "42". A NUL
    byte raises too, since C would read the string only up to it."""
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        value = os.fsencode(value)
    elif not isinstance(value, bytes):
        raise errors.InvalidArgument(f"{name} must be a str, bytes or os.PathLike, got {type(value).__name__} "
                                     f"{value!r}")
    return no_nul(value, name)


def no_nul(data, name):
    """data (bytes), or InvalidArgument when it holds a NUL, where C would cut it short."""
    if b"\0" in data:
        raise errors.InvalidArgument(f"{name} {data!r} holds a NUL byte")
    return data


def error(status):
    """The exception for a failed call, with the library's message for this thread."""
    message = lib.gemvtune_last_error().decode(errors="replace")
    return errors.BY_STATUS.get(status, errors.InternalError)(message)


def check(status):
    if status != 0:
        raise error(status)


def _call_out(function, args):
    """Calls a C function whose last argument is char** out; returns the bytes it wrote."""
    out = ctypes.c_void_p()
    check(function(*args, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value)
    finally:
        lib.gemvtune_free(out)


def call_json(function, *args):
    """Calls a C function whose last argument is char** json_out; returns the decoded JSON."""
    return json.loads(_call_out(function, args).decode())


def call_text(function, *args):
    """Calls a C function whose last argument is char** out holding plain text (a path), not
    JSON; returns it as a str (os.fsdecode: a path that is not UTF-8 comes back as text() takes
    it). Which of the two a function returns is fixed by the function, so each call says it:
    guessing from the first character read a path such as "[x].sqlite" as JSON."""
    return os.fsdecode(_call_out(function, args))


INT_MAX = 2**31 - 1  # a C int: device ordinals
INT64_MAX = 2**63 - 1  # int64_t: sizes, strides


def integer(value, name, low, high):
    """value as an int in low..high, else InvalidArgument naming it. Every int given to a C
    field goes through this: ctypes keeps only the low bits of an int outside the field's type,
    so device 2**32 would run on device 0 and ld = 2**64 + 4096 would arrive as 4096."""
    if isinstance(value, bool):  # an int to Python, never meant as a size or ordinal
        raise errors.InvalidArgument(f"{name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise errors.InvalidArgument(f"{name} must be an integer, got {value!r}") from None
    if value < low:
        raise errors.InvalidArgument(f"{name} must not be negative, got {value}" if low == 0
                                     else f"{name} = {value} is out of range ({low}..{high})")
    if value > high:
        raise errors.InvalidArgument(f"{name} = {value} is out of range ({low}..{high})")
    return value


def problem(n, k, dtype, m=1, weights=None, after=None):
    """A gemvtune_problem; sizes must be integers (the library checks their ranges). after:
    (n, k) of the GEMV just before this one in a decode step (gemvtune_tune ranks finalists
    right after it), or None."""
    after_n, after_k = after if after is not None else (0, 0)
    sizes = [integer(value, name, -INT64_MAX - 1, INT64_MAX)
             for name, value in (("m", m), ("n", n), ("k", k), ("after n", after_n), ("after k", after_k))]
    if not isinstance(dtype, str):
        dtype = dtype_name(dtype)
    if weights is not None and not isinstance(weights, str):
        weights = dtype_name(weights)
    p = Problem()
    p.struct_size = ctypes.sizeof(Problem)
    p.m, p.n, p.k, p.after_n, p.after_k = sizes
    p.dtype = text(dtype, "dtype")
    p.weights = text(weights, "weights") if weights else None
    return p


_DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}
_dtype_name_of = {}  # dtype object -> its name: Plan.launch and gemvtune.torch ask on every call


def dtype_name(dtype):
    """"bf16", "fp16", "fp32" for strings and torch dtypes (by name, so torch is not imported);
    other torch dtypes by their name without "torch." ("int8", "uint8", "float8_e4m3fn")."""
    if isinstance(dtype, str):
        return dtype
    try:
        return _dtype_name_of[dtype]
    except (KeyError, TypeError):  # not seen yet, or not hashable
        pass
    name = str(dtype).replace("torch.", "")
    name = _DTYPE_NAMES.get(name, name)
    try:
        _dtype_name_of[dtype] = name
    except TypeError:
        pass
    return name
