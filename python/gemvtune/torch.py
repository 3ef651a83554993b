"""gemvtune for PyTorch: the ``torch.ops.gemvtune.linear`` op, ``Linear`` and ``replace_linears``.

``import gemvtune.torch`` registers the op ``gemvtune::linear(x, weight) -> y`` (y = x W^T, as
``torch.nn.functional.linear`` without bias) with torch.library:

* it has a fake (meta) implementation, so ``torch.compile(fullgraph=True)`` traces it as one
  node without a graph break, and an autograd formula;
* it launches on ``torch.cuda.current_stream()`` and allocates its output through PyTorch;
* it is safe inside ``torch.cuda.graph`` capture: a launch allocates, copies and synchronizes
  nothing. Plans (compiled kernels) are cached per (device, M, N, K, dtype) and created on the
  first eager call, which may take a second (NVRTC); creating one inside a capture is not
  allowed, so run each layer once before capturing (or call ``prepare``). A call during a
  capture that finds no plan falls back to torch, with a warning.

Where gemvtune cannot run a call it falls back to ``torch.nn.functional.linear`` (same
result, torch's kernel): tensors not on a CUDA device, a dtype other than bfloat16, float16
and float32, x and weight of different dtypes or devices, a weight whose rows are not
contiguous (stride(1) != 1, or stride(0) < K), an empty tensor, and every problem the library
refuses (``gemvtune.check_problem``): x with more than 16 rows after flattening to (M, K)
(gemvtune's kernels are for decode batches, M = 1..16).

Settings (``configure``): the tuning cache (default: $GEMVTUNE_CACHE, else
~/.cache/gemvtune/gemvtune.sqlite; a missing file means untuned default configs) and whether
split-K is allowed. Split-K is off by default here, so plans are safe on any number of streams
and in graphs replayed on different streams at once.
"""

import threading
import warnings

import torch
import torch.nn.functional as F

from . import _capi, errors
from .runtime import Runtime

__all__ = ["linear", "Linear", "replace_linears", "prepare", "configure", "plan_for"]

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}
_lib = _capi.lib

_lock = threading.Lock()
_settings = {"cache": None, "kernel_store": None, "split_k": False, "pdl": True}
_runtimes = {}  # device index -> Runtime
_plans = {}  # (device index, m, n, k, dtype) -> Plan, or None where the library refuses the problem
_warned = set()

try:  # the raw cudaStream_t of the current stream as an int, without a Stream object
    from torch._C import _cuda_getCurrentRawStream as _raw_stream
except ImportError:  # pragma: no cover

    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream


def configure(cache=None, *, kernel_store=None, split_k=False, pdl=True):
    """Sets the tuning cache and runtime options for the plans made from now on (plans already
    made are dropped; make them again, outside any graph capture, with ``prepare`` or an eager
    call). See gemvtune.Runtime for the options."""
    with _lock:
        _settings.update(cache=cache, kernel_store=kernel_store, split_k=split_k, pdl=pdl)
        _runtimes.clear()
        _plans.clear()
        _warned.clear()


def _runtime(index):
    rt = _runtimes.get(index)
    if rt is None:
        s = _settings
        rt = Runtime(s["cache"], index, kernel_store=s["kernel_store"], split_k=s["split_k"], pdl=s["pdl"])
        _runtimes[index] = rt
    return rt


def plan_for(device, m, n, k, dtype):
    """The cached gemvtune.Plan of (device, m, n, k, dtype), created now if missing; None when
    the library refuses the problem (the op then falls back to torch). dtype: a torch dtype.
    Must not be called during CUDA graph capture for a problem not planned yet."""
    index = torch.device(device).index
    if index is None:
        index = torch.cuda.current_device()
    key = (index, m, n, k, _DTYPES[dtype])
    plan = _plans.get(key, _plans)
    if plan is not _plans:
        return plan
    with _lock:
        if key in _plans:
            return _plans[key]
        try:
            _capi.check(_lib.gemvtune_problem_check(_capi.problem(n, k, key[4], m)))
        except errors.InvalidArgument:
            _plans[key] = None  # this build cannot run it: torch does, every time
            return None
        with torch.cuda.device(index):
            plan = _runtime(index).plan(n, k, key[4], m=m)
        _plans[key] = plan
        return plan


def _lookup(key):
    """The plan for this call, or None to fall back to torch."""
    plan = _plans.get(key, _plans)
    if plan is not _plans:
        return plan
    index, m, n, k, name = key
    if torch.cuda.is_current_stream_capturing():
        if key not in _warned:
            _warned.add(key)
            warnings.warn(
                f"gemvtune: no plan for M={m} {n}x{k} {name} on cuda:{index} before CUDA graph capture; "
                "this call runs torch.nn.functional.linear. Run the layer once eagerly before capturing "
                "(or call gemvtune.torch.prepare).", RuntimeWarning, stacklevel=4)
        return None
    return plan_for(torch.device("cuda", index), m, n, k, _TORCH_DTYPES[name])


def _linear(x, weight):
    """The op's CUDA work: y = x W^T through a gemvtune plan, or torch where gemvtune cannot.
    Kept lean: in eager decode this Python is the whole host cost of a call."""
    name = _DTYPES.get(x.dtype)
    if name is None or not x.is_cuda or weight.dtype != x.dtype or weight.dim() != 2 or x.dim() == 0:
        return F.linear(x, weight)
    n, k = weight.shape
    index = x.get_device()
    if (weight.get_device() != index or x.shape[-1] != k or weight.stride(1) != 1 or weight.stride(0) < k
            or n == 0 or k == 0):
        return F.linear(x, weight)
    x2 = x if x.dim() == 2 else x.reshape(-1, k)
    m = x2.shape[0]
    if m == 0:
        return F.linear(x, weight)
    if x2.stride(1) != 1 or (m > 1 and x2.stride(0) < k):  # elements contiguous, rows not overlapping
        x2 = x2.contiguous()
    plan = _lookup((index, m, n, k, name))
    if plan is None:
        return F.linear(x, weight)
    y = torch.empty((m, n), dtype=x.dtype, device=x.device)
    switch = torch.cuda.current_device() != index
    if switch:  # the launch uses the current context, which must be the tensors' device's
        previous = torch.cuda.current_device()
        torch.cuda.set_device(index)
    try:
        if m == 1:
            status = _lib.gemvtune_plan_launch(plan._handle, weight.data_ptr(), x2.data_ptr(), y.data_ptr(),
                                               weight.stride(0), _raw_stream(index))
            if status:
                raise _capi.error(status)
        else:
            plan.launch(weight, x2, y, _raw_stream(index), ld=weight.stride(0), ldx=x2.stride(0), ldy=n)
    finally:
        if switch:
            torch.cuda.set_device(previous)
    return y if x.dim() == 2 else y.view(*x.shape[:-1], n)


@torch.library.custom_op("gemvtune::linear", mutates_args=())
def _linear_op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return _linear(x, weight)


@_linear_op.register_fake
def _linear_fake(x, weight):
    torch._check(weight.dim() == 2, lambda: f"gemvtune::linear: weight must be 2-D, got {weight.dim()}-D")
    torch._check(x.dim() >= 1, lambda: "gemvtune::linear: x must have at least one dimension")
    torch._check(x.shape[-1] == weight.shape[1],
                 lambda: f"gemvtune::linear: x has {x.shape[-1]} features, weight has {weight.shape[1]}")
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _setup_context(ctx, inputs, output):
    x, weight = inputs
    ctx.save_for_backward(x, weight)


def _backward(ctx, grad):
    x, weight = ctx.saved_tensors
    grad_x = grad_w = None
    if ctx.needs_input_grad[0]:
        grad_x = grad @ weight
    if ctx.needs_input_grad[1]:
        grad_w = grad.reshape(-1, grad.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
    return grad_x, grad_w


_linear_op.register_autograd(_backward, setup_context=_setup_context)


def linear(x, weight, bias=None):
    """y = x W^T (+ bias), as torch.nn.functional.linear, through gemvtune where it can (see the
    module's docstring for where it falls back to torch). Under torch.compile, and where
    autograd needs it, this calls the registered op ``torch.ops.gemvtune.linear``; in plain
    eager inference it calls the same implementation without the dispatcher's overhead."""
    if torch.compiler.is_compiling() or (torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad)):
        y = torch.ops.gemvtune.linear(x, weight)
    else:
        y = _linear(x, weight)
    return y if bias is None else y + bias


class Linear(torch.nn.Module):
    """nn.Linear whose product runs through gemvtune (``linear``); same parameters and
    state_dict keys as torch.nn.Linear."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = torch.nn.Parameter(torch.empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = torch.nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        torch.nn.init.kaiming_uniform_(self.weight, a=5**0.5)

    @classmethod
    def from_linear(cls, module):
        """A gemvtune Linear sharing module's weight and bias (no copy)."""
        if not isinstance(module, torch.nn.Linear):
            raise errors.InvalidArgument(f"from_linear needs a torch.nn.Linear, got {type(module).__name__}")
        new = cls.__new__(cls)
        torch.nn.Module.__init__(new)
        new.in_features, new.out_features = module.in_features, module.out_features
        new.weight = module.weight
        if module.bias is not None:
            new.bias = module.bias
        else:
            new.register_parameter("bias", None)
        return new

    def forward(self, x):
        return linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def replace_linears(model, *, filter=None):
    """Replaces, in place, every torch.nn.Linear of model (exactly that class: subclasses such
    as quantized layers are left alone) whose filter(name, module) is true (default: all) with
    a gemvtune Linear sharing its parameters. Returns the number replaced."""
    count = 0
    for parent_name, parent in list(model.named_modules()):
        for name, child in list(parent.named_children()):
            full = f"{parent_name}.{name}" if parent_name else name
            if type(child) is torch.nn.Linear and (filter is None or filter(full, child)):
                setattr(parent, name, Linear.from_linear(child))
                count += 1
    return count


def prepare(module, batch_sizes=(1,)):
    """Creates, now, the plans of every gemvtune Linear in module (and of module itself when it
    is one) for each batch size (rows M of x): run it at start-up, before any CUDA graph
    capture, so no call compiles later. Returns the number of plans gemvtune runs (problems it
    refuses are left to torch)."""
    made = 0
    for layer in module.modules():
        if not isinstance(layer, Linear) or not layer.weight.is_cuda or layer.weight.dtype not in _DTYPES:
            continue
        n, k = layer.weight.shape
        for m in batch_sizes:
            if plan_for(layer.weight.device, int(m), n, k, layer.weight.dtype) is not None:
                made += 1
    return made
