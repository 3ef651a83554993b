"""gemvtune for PyTorch: the ``torch.ops.gemvtune.linear`` op, ``Linear`` and ``replace_linears``.

``import gemvtune.torch`` registers the op ``gemvtune::linear(x, weight) -> y`` (y = x W^T, as
``torch.nn.functional.linear`` without bias) with torch.library:

* it has a fake (meta) implementation, so ``torch.compile(fullgraph=True)`` traces it as one
  node without a graph break, and an autograd formula;
* it is registered with ``torch.library.Library`` and an autograd kernel of its own
  (``register_op``) rather than ``torch.library.custom_op``, whose wrappers cost several
  microseconds per eager call: an eager call that needs no gradient crosses from the
  dispatcher into Python once (bench/peers/op_overhead.py, docs/python.md);
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

_MISSING = object()  # _plans.get default: no entry yet (None is an entry: torch runs the problem)

try:  # the raw cudaStream_t of the current stream as an int, without a Stream object
    from torch._C import _cuda_getCurrentRawStream as _raw_stream
except ImportError:  # pragma: no cover

    def _raw_stream(index):
        return torch.cuda.current_stream(index).cuda_stream

try:  # the current CUDA device, without torch.cuda.current_device()'s lazy-init check (a CUDA tensor
    # is at hand whenever this is called, so CUDA is initialized)
    from torch._C import _cuda_getDevice as _current_device
except ImportError:  # pragma: no cover
    _current_device = torch.cuda.current_device


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
    """The plan for a call whose key is not in _plans yet, or None to fall back to torch."""
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
    """The op's work: y = x W^T through a gemvtune plan, or torch where gemvtune cannot.
    Kept lean: in eager decode this Python is the whole host cost of a call (each tensor
    attribute or method here costs about 0.1 us, a view or an allocation about 1 us, the
    ctypes launch about 1 us)."""
    dtype = x.dtype
    name = _DTYPES.get(dtype)
    if name is None or not x.is_cuda or weight.dtype is not dtype:
        return F.linear(x, weight)
    shape, xshape = weight.shape, x.shape
    xdim = len(xshape)
    if len(shape) != 2 or xdim == 0:
        return F.linear(x, weight)
    n, k = shape
    ld, step = weight.stride()
    index = x.get_device()
    if step != 1 or ld < k or n == 0 or k == 0 or xshape[-1] != k or weight.get_device() != index:
        return F.linear(x, weight)
    if xdim == 1:  # one row: no 2-D view
        m, x2, ldx = 1, x, k
        if x.stride(0) != 1:
            x2 = x.contiguous()
    else:
        x2 = x if xdim == 2 else x.reshape(-1, k)
        m = xshape[0] if xdim == 2 else x2.shape[0]
        if m == 0:
            return F.linear(x, weight)
        ldx, step = x2.stride()
        if step != 1 or (m > 1 and ldx < k):  # elements contiguous, rows not overlapping
            x2 = x2.contiguous()
            ldx = k
    key = (index, m, n, k, name)
    plan = _plans.get(key, _MISSING)
    if plan is _MISSING:
        plan = _lookup(key)
    if plan is None:
        return F.linear(x, weight)
    # y in its final shape (no view afterwards); sizes as separate ints, which torch parses
    # faster than a tuple
    y = x.new_empty(n) if xdim == 1 else x.new_empty(m, n) if xdim == 2 else x.new_empty(*xshape[:-1], n)
    if _current_device() == index:
        if m == 1:
            status = _lib.gemvtune_plan_launch(plan._handle, weight.data_ptr(), x2.data_ptr(), y.data_ptr(), ld,
                                               _raw_stream(index))
            if status:
                raise _capi.error(status)
        else:
            # Pointers, not tensors: the operands were checked above, Plan.launch need not again.
            plan.launch(weight.data_ptr(), x2.data_ptr(), y.data_ptr(), _raw_stream(index), ld=ld, ldx=ldx, ldy=n)
        return y
    previous = _current_device()  # the launch uses the current context, which must be the tensors' device's
    torch.cuda.set_device(index)
    try:
        plan.launch(weight.data_ptr(), x2.data_ptr(), y.data_ptr(), _raw_stream(index), ld=ld, ldx=ldx, ldy=n, m=m)
    finally:
        torch.cuda.set_device(previous)
    return y


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


_AFTER_AUTOGRAD = torch._C._after_autograd_keyset
_AFTER_AUTOGRAD_RAW = _AFTER_AUTOGRAD.raw_repr()
# Dispatch key sets, below autograd, of calls whose kernel is the implementation itself: dense
# CPU or CUDA tensors with no mode (fake, proxy, functionalization, a TorchDispatchMode) and no
# tensor subclass on the way. Any other call is redispatched through the dispatcher.
_DIRECT_KEYSETS = frozenset(torch._C.DispatchKeySet(key).raw_repr()
                            for key in (torch._C.DispatchKey.CPU, torch._C.DispatchKey.CUDA))


def _redispatch(op, keyset, x, weight):
    """A call of op that the autograd kernel leaves to the dispatcher, below autograd (as
    torch.library's own autograd kernel does)."""
    with torch._C._AutoDispatchBelowAutograd():
        return op.redispatch(keyset & _AFTER_AUTOGRAD, x, weight)


def register_op(library, name, implementation, fake, setup_context, backward):
    """Defines ``library.ns::name(Tensor x, Tensor weight) -> Tensor`` and returns its OpOverload.

    Lower-level than ``torch.library.custom_op``, for a cheaper eager call (a third of its
    dispatcher cost: bench/peers/op_overhead.py): ``implementation`` is the CompositeExplicitAutograd
    kernel (every device), ``fake`` the fake (meta) implementation that torch.compile traces,
    and the autograd kernel is ours rather than torch.library.register_autograd's: where no
    input needs a gradient and the call carries plain CPU or CUDA tensors it calls
    ``implementation`` at once, with no second trip through the dispatcher; where one does it
    applies an autograd.Function of ``setup_context`` and ``backward`` (the signatures of
    torch.library.register_autograd's); anything else (fake or meta tensors, modes, subclasses)
    is redispatched below autograd as torch's own kernel would."""
    qualname = f"{library.ns}::{name}"
    library.define(f"{name}(Tensor x, Tensor weight) -> Tensor", tags=(torch.Tag.pt2_compliant_tag,))
    library.impl(name, implementation, "CompositeExplicitAutograd")
    torch.library.register_fake(qualname, fake, lib=library)
    op = getattr(getattr(torch.ops, library.ns), name).default
    below_autograd = torch._C._AutoDispatchBelowAutograd
    grad_enabled = torch._C.is_grad_enabled

    class Function(torch.autograd.Function):
        @staticmethod
        def forward(x, weight):
            with below_autograd():
                return op(x, weight)

        @staticmethod
        def setup_context(ctx, inputs, output):
            setup_context(ctx, inputs, output)

        @staticmethod
        def backward(ctx, grad):
            return backward(ctx, grad)

    Function.__name__ = Function.__qualname__ = f"{library.ns}_{name}_backward"

    def autograd_kernel(keyset, x, weight):
        if grad_enabled() and (x.requires_grad or weight.requires_grad):
            return Function.apply(x, weight)
        if keyset.raw_repr() & _AFTER_AUTOGRAD_RAW in _DIRECT_KEYSETS:
            return implementation(x, weight)
        return _redispatch(op, keyset, x, weight)

    library.impl(name, autograd_kernel, "Autograd", with_keyset=True)
    return op


_Tensor = torch.Tensor
_dispatch_modes = torch._C._len_torch_dispatch_stack
_compiling = torch.compiler.is_compiling
_grad_enabled = torch._C.is_grad_enabled
_library = torch.library.Library("gemvtune", "FRAGMENT")  # kept: the registrations live as long as it
_op = register_op(_library, "linear", _linear, _linear_fake, _setup_context, _backward)


def linear(x, weight, bias=None):
    """y = x W^T (+ bias), as torch.nn.functional.linear, through gemvtune where it can (see the
    module's docstring for where it falls back to torch). In plain eager inference (no gradient
    needed, x a plain tensor, no TorchDispatchMode such as FakeTensorMode active) it calls the
    implementation without the dispatcher; otherwise (torch.compile, autograd, fake tensors,
    tracing) the registered op ``torch.ops.gemvtune.linear``."""
    if (_compiling() or type(x) is not _Tensor or _dispatch_modes()
            or (_grad_enabled() and (x.requires_grad or weight.requires_grad))):
        y = _op(x, weight)
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
