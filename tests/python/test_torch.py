"""The torch layer (gemvtune.torch): the op against torch.nn.functional.linear for every dtype,
inside CUDA graphs and under torch.compile(fullgraph=True). Tests that need a GPU skip without
one; all of them skip where PyTorch is not installed."""

import warnings

import pytest

import gemvtune

# Llama-3.1-8B's decode shapes (fused qkv, o, fused gate_up, down, lm_head) and a few odd ones:
# K not a multiple of 8 (narrower loads), tiny N, a single column.
SHAPES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (128256, 4096),
          (1024, 4096), (333, 1234), (7, 64), (5, 1)]
TOLERANCE = {"bfloat16": (3e-2, 2e-2), "float16": (3e-3, 3e-3), "float32": (1e-4, 1e-4)}


@pytest.fixture
def gt(torch):
    import gemvtune.torch as gt

    return gt


def _operands(torch, n, k, dtype, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    w = (torch.randn(n, k, generator=g) / k**0.5).to(device=device, dtype=dtype)
    x = torch.randn(k, generator=g).to(device=device, dtype=dtype)
    return w, x


def _close(torch, actual, expected):
    atol, rtol = TOLERANCE[str(expected.dtype).replace("torch.", "")]
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol)


# ---- without a GPU (torch present) ----------------------------------------------------------


def test_op_is_registered_and_falls_back_on_cpu(torch, gt):
    w, x = _operands(torch, 64, 32, torch.float32, "cpu")
    y = torch.ops.gemvtune.linear(x, w)
    torch.testing.assert_close(y, torch.nn.functional.linear(x, w))
    b = torch.randn(64)
    torch.testing.assert_close(gt.linear(x[None], w, b), torch.nn.functional.linear(x[None], w, b))


def test_opcheck_on_cpu(torch, gt):
    w, x = _operands(torch, 16, 8, torch.float32, "cpu")
    torch.library.opcheck(torch.ops.gemvtune.linear.default, (x[None].clone(), w.clone().requires_grad_()))


def test_fake_tensor_shapes(torch, gt):
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        y = torch.ops.gemvtune.linear(torch.empty(2, 3, 4096), torch.empty(1024, 4096))
    assert tuple(y.shape) == (2, 3, 1024)


def test_fake_impl_is_the_ops_own(torch, gt):
    """The op's fake implementation is registered and is what fake tensors run: its own checks
    answer a bad shape (without it, FakeTensorMode would run the CompositeExplicitAutograd
    kernel on meta tensors and torch's message would come instead), and fake CUDA tensors (no
    GPU needed) go through it, not through the eager fast path, which would launch."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    assert torch._C._dispatch_has_kernel_for_dispatch_key("gemvtune::linear", "Meta")
    assert torch.Tag.pt2_compliant_tag in torch.ops.gemvtune.linear.default.tags
    with FakeTensorMode():
        with pytest.raises(RuntimeError, match="gemvtune::linear: x has 5 features, weight has 64"):
            torch.ops.gemvtune.linear(torch.empty(1, 5), torch.empty(16, 64))
    try:
        with FakeTensorMode():
            x = torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16)
    except (RuntimeError, AssertionError) as e:
        pytest.skip(f"this torch cannot make fake CUDA tensors: {e}")
    for grad in (False, True):
        with FakeTensorMode(), torch.set_grad_enabled(grad):
            x = torch.empty(1, 4096, device="cuda", dtype=torch.bfloat16)
            w = torch.empty(1024, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=grad)
            layer = gt.Linear(4096, 8, device="cuda", dtype=torch.bfloat16)
            for y in (torch.ops.gemvtune.linear(x, w), gt.linear(x[0], w), layer(x)):
                assert y.device.type == "cuda" and y.shape[-1] in (1024, 8)


def test_op_stays_one_node_and_honours_modes(torch, gt):
    """Tracing (make_fx over fake tensors) records the op as one node, and a TorchDispatchMode
    sees it: the eager fast path of the op's autograd kernel leaves modes to the dispatcher."""
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._python_dispatch import TorchDispatchMode

    graph = make_fx(lambda x, w: torch.ops.gemvtune.linear(x, w) * 2, tracing_mode="fake")(
        torch.randn(1, 8), torch.randn(4, 8))
    targets = [str(node.target) for node in graph.graph.nodes if node.op == "call_function"]
    assert targets.count("gemvtune.linear.default") == 1, targets

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    w, x = _operands(torch, 16, 8, torch.float32, "cpu")
    for context in (torch.no_grad, torch.enable_grad):
        with context(), Seen() as seen:
            y = torch.ops.gemvtune.linear(x, w)
        assert "gemvtune.linear.default" in seen.ops
        torch.testing.assert_close(y, torch.nn.functional.linear(x, w))


def _count_redispatches(monkeypatch, gt):
    calls = []
    redispatch = gt._redispatch

    def counted(*args):
        calls.append(args[1])
        return redispatch(*args)

    monkeypatch.setattr(gt, "_redispatch", counted)
    return calls


def test_eager_calls_skip_the_second_dispatch(torch, gt, monkeypatch):
    """An eager call that needs no gradient runs the implementation from the autograd kernel
    (one trip into Python); meta tensors and modes are redispatched below autograd."""
    calls = _count_redispatches(monkeypatch, gt)
    w, x = _operands(torch, 16, 8, torch.float32, "cpu")
    for context in (torch.no_grad, torch.enable_grad):
        with context():
            torch.testing.assert_close(torch.ops.gemvtune.linear(x, w), torch.nn.functional.linear(x, w))
    assert calls == [], "plain CPU tensors take the direct path"
    assert torch.ops.gemvtune.linear(x.to("meta"), w.to("meta")).shape == (16,)
    assert len(calls) == 1


def test_op_autograd_and_inference_mode(torch, gt):
    """The op itself (not only gt.linear): gradients of both inputs, second order, and the
    no-gradient paths (grad mode on with no input needing one, no_grad, inference_mode)."""
    w, x = _operands(torch, 6, 5, torch.float64, "cpu")
    xs = x.repeat(2, 3, 1).requires_grad_()
    ws = w.clone().requires_grad_()
    assert torch.autograd.gradcheck(torch.ops.gemvtune.linear, (xs, ws))
    assert torch.autograd.gradgradcheck(torch.ops.gemvtune.linear, (xs, ws))
    torch.library.opcheck(torch.ops.gemvtune.linear.default, (xs, ws))
    expected = torch.nn.functional.linear(x, w)
    for context in (torch.enable_grad, torch.no_grad, torch.inference_mode):
        with context():
            y = torch.ops.gemvtune.linear(x, w)
            assert not y.requires_grad
            torch.testing.assert_close(y, expected)
    with torch.no_grad():
        assert not torch.ops.gemvtune.linear(x, ws).requires_grad


def test_autograd_matches_torch(torch, gt):
    w, x = _operands(torch, 12, 8, torch.float64, "cpu")
    xs = x.repeat(3, 1).requires_grad_()
    ws = w.clone().requires_grad_()
    gt.linear(xs, ws).square().sum().backward()
    xr, wr = xs.detach().clone().requires_grad_(), w.clone().requires_grad_()
    torch.nn.functional.linear(xr, wr).square().sum().backward()
    torch.testing.assert_close(xs.grad, xr.grad)
    torch.testing.assert_close(ws.grad, wr.grad)


def test_linear_module_and_replace_linears(torch, gt):
    class Subclass(torch.nn.Linear):
        pass

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                torch.nn.Sequential(torch.nn.Linear(16, 4, bias=False)), Subclass(4, 4))
    x = torch.randn(2, 8)
    expected = model(x)
    weight = model[0].weight
    assert gt.replace_linears(model) == 2
    assert isinstance(model[0], gt.Linear) and isinstance(model[2][0], gt.Linear)
    assert type(model[3]) is Subclass, "subclasses of nn.Linear (quantized layers) are left alone"
    assert model[0].weight is weight, "parameters are shared, not copied"
    assert set(model.state_dict()) == {"0.weight", "0.bias", "2.0.weight", "3.weight", "3.bias"}
    torch.testing.assert_close(model(x), expected)
    fresh = gt.Linear(8, 3, bias=False)
    assert fresh(x).shape == (2, 3) and "bias=False" in repr(fresh)
    with pytest.raises(gemvtune.InvalidArgument):
        gt.Linear.from_linear(torch.nn.ReLU())


def test_compile_fullgraph_traces_the_op(torch, gt):
    """On CPU tensors the op falls back to torch at run time, but dynamo still has to trace it
    without a graph break (fullgraph=True fails on one)."""
    model = torch.nn.Sequential(gt.Linear(32, 64), torch.nn.SiLU(), gt.Linear(64, 16, bias=False))
    x = torch.randn(1, 32)
    with torch.no_grad():
        expected = model(x)
        compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
        torch.testing.assert_close(compiled(x), expected)


# ---- on the GPU ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("m", [2, 5, 16])
def test_batches_match_torch(torch_cuda, gt, dtype, m):
    torch = torch_cuda
    t = getattr(torch, dtype)
    w, _ = _operands(torch, 6144, 4096, t, "cuda")
    x = torch.randn(m, 4096, device="cuda", dtype=t)
    with torch.no_grad():
        _close(torch, torch.ops.gemvtune.linear(x, w), torch.nn.functional.linear(x, w))
    assert gt.plan_for(w.device, m, 6144, 4096, t) is not None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("n, k", SHAPES)
def test_every_dtype_matches_torch(torch_cuda, gt, dtype, n, k):
    torch = torch_cuda
    t = getattr(torch, dtype)
    if n * k >= 128256 * 4096 and t is not torch.bfloat16:
        pytest.skip("the lm_head shape is checked in bf16 only (size)")
    w, x = _operands(torch, n, k, t, "cuda")
    with torch.no_grad():
        for shape in [(k,), (1, k), (1, 1, k)]:
            xs = x.reshape(shape)
            y = torch.ops.gemvtune.linear(xs, w)
            assert y.shape == (*shape[:-1], n) and y.dtype == t
            _close(torch, y, torch.nn.functional.linear(xs, w))
            _close(torch, gt.linear(xs, w), torch.nn.functional.linear(xs, w))
    plan = gt.plan_for(w.device, 1, n, k, t)
    assert plan is not None and plan.config, "M = 1 goes through gemvtune, not the fallback"


def test_strided_weights_misaligned_x_and_batches(torch_cuda, gt):
    torch = torch_cuda
    n, k = 512, 1000
    wide = torch.randn(n, k + 24, device="cuda", dtype=torch.bfloat16) / k**0.5
    w = wide[:, 3:k + 3]  # row stride k + 24, start not 16-byte aligned
    buf = torch.randn(k + 1, device="cuda", dtype=torch.bfloat16)
    x = buf[1:]  # misaligned by one element
    with torch.no_grad():
        _close(torch, torch.ops.gemvtune.linear(x, w), torch.nn.functional.linear(x, w))
        xb = torch.randn(3, 2, k, device="cuda", dtype=torch.bfloat16)  # M = 6: gemvtune
        _close(torch, torch.ops.gemvtune.linear(xb, w), torch.nn.functional.linear(xb, w))
        assert gt.plan_for(w.device, 6, n, k, torch.bfloat16) is not None
        xp = torch.randn(5, k + 8, device="cuda", dtype=torch.bfloat16)[:, 1:k + 1]  # padded, misaligned rows
        _close(torch, torch.ops.gemvtune.linear(xp, w), torch.nn.functional.linear(xp, w))
        xe = x.expand(4, k)  # rows overlap (stride 0): copied first
        _close(torch, torch.ops.gemvtune.linear(xe, w), torch.nn.functional.linear(xe, w))
        xl = torch.randn(20, k, device="cuda", dtype=torch.bfloat16)  # M = 20 > 16: torch
        _close(torch, torch.ops.gemvtune.linear(xl, w), torch.nn.functional.linear(xl, w))
        assert gt.plan_for(w.device, 20, n, k, torch.bfloat16) is None
        wt = torch.randn(k, n, device="cuda", dtype=torch.bfloat16).t()  # columns contiguous: torch runs it
        _close(torch, torch.ops.gemvtune.linear(x, wt), torch.nn.functional.linear(x, wt))
        x16 = x.to(torch.float16)  # mixed dtypes: torch decides (it raises)
        with pytest.raises(RuntimeError):
            torch.ops.gemvtune.linear(x16, w)


def test_runs_on_the_current_stream(torch_cuda, gt):
    torch = torch_cuda
    w, x = _operands(torch, 4096, 4096, torch.bfloat16, "cuda")
    with torch.no_grad():
        expected = torch.nn.functional.linear(x, w)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                torch.cuda._sleep(1000000)  # keep the side stream busy: a launch elsewhere would race
                y = gt.linear(x, w)
        s.synchronize()
        _close(torch, y, expected)


def test_cuda_graph_capture_and_replay(torch_cuda, gt):
    torch = torch_cuda
    layers = [torch.nn.Linear(4096, 6144, bias=False), torch.nn.Linear(6144, 4096, bias=False),
              torch.nn.Linear(4096, 1024, bias=True)]
    model = torch.nn.Sequential(*layers).to("cuda", torch.bfloat16)
    reference = [l.weight for l in layers]
    assert gt.replace_linears(model) == 3
    static_x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        model(static_x)  # eager first: plans are created outside the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.cuda.graph(graph):
                static_y = model(static_x)
        assert not [w for w in caught if "gemvtune" in str(w.message)], "every layer had its plan before capture"
        for seed in range(3):
            static_x.copy_(torch.randn(1, 4096, generator=torch.Generator().manual_seed(seed)).to("cuda", torch.bfloat16))
            graph.replay()
            torch.cuda.synchronize()
            h = static_x
            for layer, weight in zip(layers, reference):
                h = torch.nn.functional.linear(h, weight, layer.bias)
            _close(torch, static_y, h)


def test_capture_without_plan_falls_back_with_a_warning(torch_cuda, gt):
    torch = torch_cuda
    gt.configure()  # drops every plan
    w, x = _operands(torch, 3000, 4096, torch.float16, "cuda")
    x = x[None].clone()
    with torch.no_grad():
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with pytest.warns(RuntimeWarning, match="before CUDA graph capture"):
            with torch.cuda.graph(graph):
                y = torch.ops.gemvtune.linear(x, w)
        graph.replay()
        torch.cuda.synchronize()
        _close(torch, y, torch.nn.functional.linear(x, w))
        assert gt.plan_for(w.device, 1, 3000, 4096, torch.float16) is not None  # made now, outside


def test_compile_fullgraph_on_gpu_matches_eager(torch_cuda, gt):
    torch = torch_cuda

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate_up = torch.nn.Linear(1024, 2 * 2816, bias=False)
            self.down = torch.nn.Linear(2816, 1024, bias=False)

        def forward(self, x):
            gate, up = self.gate_up(x).chunk(2, dim=-1)
            return x + self.down(torch.nn.functional.silu(gate) * up)

    model = Block().to("cuda", torch.bfloat16).eval()
    gt.replace_linears(model)
    x = torch.randn(1, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        expected = model(x)
        torch._dynamo.reset()
        compiled = torch.compile(model, fullgraph=True)
        _close(torch, compiled(x), expected)
        _close(torch, compiled(x), expected)  # and again, from the compiled graph


def test_eager_gpu_calls_skip_the_second_dispatch(torch_cuda, gt, monkeypatch):
    """The op's cheap eager path on CUDA tensors: no redispatch below autograd (the dispatch
    key set of plain CUDA tensors is the one the autograd kernel recognises)."""
    torch = torch_cuda
    calls = _count_redispatches(monkeypatch, gt)
    w, x = _operands(torch, 1024, 4096, torch.bfloat16, "cuda")
    with torch.no_grad():
        _close(torch, torch.ops.gemvtune.linear(x, w), torch.nn.functional.linear(x, w))
    _close(torch, torch.ops.gemvtune.linear(x[None], w), torch.nn.functional.linear(x[None], w))
    assert calls == [], f"redispatched with key sets {calls}"


def test_opcheck_on_gpu(torch_cuda, gt):
    torch = torch_cuda
    w, x = _operands(torch, 256, 512, torch.float32, "cuda")
    torch.library.opcheck(torch.ops.gemvtune.linear.default, (x[None].clone(), w.clone()))


def test_prepare_plans_every_layer(torch_cuda, gt):
    torch = torch_cuda
    gt.configure()
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096, bias=False), torch.nn.Linear(4096, 14336, bias=False))
    model = model.to("cuda", torch.bfloat16)
    gt.replace_linears(model)
    assert gt.prepare(model) == 2
    assert gt.prepare(model, batch_sizes=(1, 4, 32)) == 4, "M = 32 is left to torch"
