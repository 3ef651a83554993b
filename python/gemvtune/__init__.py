"""gemvtune: tuned decode GEMV kernels (y = x W^T, the nn.Linear of LLM decode) from Python.

A ctypes binding of libgemvtune.so's C API, so one package serves every Python 3 version
(docs/python.md says why). Three parts:

* the runtime: ``Runtime(cache, device).plan(n, k, dtype)`` then ``plan.launch(w, x, y, stream)``
  on device pointers;
* the offline side, the CLI's cache commands: ``tune``, ``query``, ``list_cache``,
  ``export_cache``, ``import_cache``, ``peak``;
* ``gemvtune.torch`` (import it explicitly; needs PyTorch): the ``torch.ops.gemvtune.linear``
  op, ``gemvtune.torch.Linear`` and ``replace_linears``.

Errors are exceptions of gemvtune.errors carrying the library's (and the CLI's) messages.
"""

from . import _capi
from .errors import (CacheError, CompileError, CudaError, GemvtuneError, InternalError, InvalidArgument, NoGpu,
                     TuneFailed)
from .offline import (default_cache_path, device_count, export_cache, fit, import_cache, list_cache, parse_shape,
                      peak, presets, query, tune)
from .runtime import Plan, Runtime, check_problem

__version__ = _capi.lib.gemvtune_version().decode()
library_path = _capi.library_path

__all__ = [
    "Runtime", "Plan", "check_problem",
    "tune", "query", "list_cache", "export_cache", "import_cache", "peak", "fit", "presets", "parse_shape",
    "default_cache_path", "device_count",
    "GemvtuneError", "InvalidArgument", "NoGpu", "CudaError", "CompileError", "CacheError", "InternalError",
    "TuneFailed",
    "library_path",
]
