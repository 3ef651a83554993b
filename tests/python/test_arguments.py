"""Arguments on their way from Python to C, without a GPU: paths as str, bytes or os.PathLike,
NUL bytes, integers out of their C type's range, empty and single-string shape lists, a plain
text answer that looks like JSON, and tensors given to Plan.launch checked against the plan
(with a stand-in tensor class and a stand-in library, so no GPU or PyTorch is needed)."""

import os

import pytest

import gemvtune
from gemvtune import _capi, runtime

H200 = "NVIDIA H200/132sm/cc9.0"


# ---- paths: str, bytes, os.PathLike, nothing else ---------------------------------------------


def test_bytes_and_path_like_paths_are_the_path_itself(tmp_path):
    db = os.fsencode(tmp_path / "cache.sqlite")
    assert gemvtune.list_cache(db)["db"] == os.fsdecode(db), "bytes were once the path \"b'...'\""
    assert gemvtune.list_cache(tmp_path / "cache.sqlite")["db"] == os.fsdecode(db)
    assert _capi.text(b"/x/cache.sqlite", "db") == b"/x/cache.sqlite"


def test_str_with_surrogate_escapes_is_its_original_bytes():
    # What os.listdir() gives for a name that is not UTF-8 goes back to C as those bytes.
    assert _capi.text("/tmp/caf\udce9.sqlite", "db") == b"/tmp/caf\xe9.sqlite"


@pytest.mark.parametrize("value", [42, 4.5, ["cache.sqlite"], object()])
def test_other_types_are_refused_by_name(value, db):
    with pytest.raises(gemvtune.InvalidArgument, match="db must be a str, bytes or os.PathLike"):
        gemvtune.list_cache(value)
    with pytest.raises(gemvtune.InvalidArgument, match="out must be a str, bytes or os.PathLike"):
        gemvtune.export_cache(out=value, db=db)
    with pytest.raises(gemvtune.InvalidArgument, match="file must be a str, bytes or os.PathLike"):
        gemvtune.import_cache(value, db=db)
    with pytest.raises(gemvtune.InvalidArgument, match="cache must be a str, bytes or os.PathLike"):
        gemvtune.Runtime(cache=value)
    assert not os.path.exists(db)


@pytest.mark.parametrize("call", [
    lambda tmp: gemvtune.parse_shape("4096x4096\0junk"),
    lambda tmp: gemvtune.check_problem(64, 64, "bf16\0garbage"),
    lambda tmp: gemvtune.check_problem(64, 64, "bf16", weights="int8\0x"),
    lambda tmp: gemvtune.list_cache(str(tmp / "ok.sqlite") + "\0.bak"),
    lambda tmp: gemvtune.list_cache(os.fsencode(tmp / "ok.sqlite") + b"\0.bak"),
    lambda tmp: gemvtune.query("4096x4096", gpu=H200 + "\0x", db=str(tmp / "c.sqlite")),
])
def test_nul_bytes_are_refused_not_cut_short(call, tmp_path):
    # C would read each only up to the NUL: "4096x4096\0junk" was the shape 4096x4096.
    with pytest.raises(gemvtune.InvalidArgument, match="NUL"):
        call(tmp_path)


@pytest.mark.parametrize("path", ["[x].sqlite", "{x}.sqlite", "[1]", "/tmp/caf\udce9.sqlite"])
def test_default_cache_path_is_text_not_json(monkeypatch, path):
    # Its answer was read as JSON when it started with [ or { (relative paths, valid ones), and
    # decoded as UTF-8 where a path is any bytes.
    monkeypatch.setenv("GEMVTUNE_CACHE", path)
    assert gemvtune.default_cache_path() == path


# ---- integers out of their C type's range ------------------------------------------------------


@pytest.mark.parametrize("device, message", [(2**32, "device = 4294967296 is out of range"),
                                             (2**31, "device = 2147483648 is out of range"),
                                             (-1, "device must not be negative"),
                                             (1.0, "device must be an integer"),
                                             (True, "device must be an integer")])
def test_device_ordinals_outside_a_c_int_are_refused(device, message, db):
    # ctypes keeps the low 32 bits: 2**32 was device 0, 2**32 - 1 was device -1.
    with pytest.raises(gemvtune.InvalidArgument, match=message):
        gemvtune.Runtime(db, device)
    with pytest.raises(gemvtune.InvalidArgument, match=message):
        gemvtune.query("4096x4096", db=db, device=device)
    with pytest.raises(gemvtune.InvalidArgument, match=message):
        gemvtune.peak(device=device, db=db)
    with pytest.raises(gemvtune.InvalidArgument, match=message.replace("device", r"devices\[1\]")):
        gemvtune.tune(["64x64"], devices=[0, device], db=db, progress=False)
    assert not os.path.exists(db)


# ---- tune's shapes ---------------------------------------------------------------------------


def test_tune_with_an_empty_shape_list_has_nothing_to_tune(db):
    # An empty list once meant "no argument": the default preset went to the GPU.
    with pytest.raises(gemvtune.InvalidArgument, match="no shapes to tune"):
        gemvtune.tune([], db=db, progress=False)
    with pytest.raises(gemvtune.InvalidArgument, match="no shapes to tune"):
        gemvtune.tune(shapes=(), db=db, progress=False)
    assert not os.path.exists(db)


def test_tune_takes_one_string_as_one_shape(db):
    # It was iterated character by character: "bad shape '4'".
    with pytest.raises(gemvtune.InvalidArgument, match="bad shape '4096x'"):
        gemvtune.tune("4096x", db=db, progress=False)
    with pytest.raises(gemvtune.InvalidArgument, match="unknown strategy 'fast'"):
        gemvtune.tune("4096x4096", strategy="fast", db=db, progress=False)


# ---- Plan.launch: strides and tensors ----------------------------------------------------------


class FakeDtype:
    """Prints as a torch dtype does ("torch.bfloat16"), which is all the package reads of one."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"

    __repr__ = __str__


BF16, FP16, FP32, UINT8 = FakeDtype("bfloat16"), FakeDtype("float16"), FakeDtype("float32"), FakeDtype("uint8")


class FakeTensor:
    """What Plan.launch reads of a torch tensor: data_ptr, is_cuda, device, get_device, dtype,
    shape, stride, numel."""

    def __init__(self, shape, dtype=BF16, stride=None, device=0, ptr=0x7F0000000000):
        self.shape = tuple(shape)
        if stride is None:  # row-major contiguous
            stride, step = [], 1
            for size in reversed(self.shape):
                stride.insert(0, step)
                step *= size
        self._stride = tuple(stride)
        self.dtype = dtype
        self._device = device  # None: the host
        self._ptr = ptr

    is_cuda = property(lambda self: self._device is not None)
    device = property(lambda self: "cpu" if self._device is None else f"cuda:{self._device}")

    def get_device(self):
        return -1 if self._device is None else self._device

    def data_ptr(self):
        return self._ptr

    def stride(self, dim=None):
        return self._stride if dim is None else self._stride[dim]

    def numel(self):
        count = 1
        for size in self.shape:
            count *= size
        return count


class FakeLibrary:
    """Records the launches a Plan makes instead of making them."""

    def __init__(self):
        self.launches = []

    def gemvtune_plan_launch(self, handle, w, x, y, ld, stream):
        self.launches.append({"w": w, "x": x, "y": y, "ld": ld, "ldx": 0, "ldy": 0, "m": 0, "scales": 0, "zeros": 0})
        return 0

    def gemvtune_plan_launch_ex(self, handle, operands, stream):
        o = operands._obj
        self.launches.append({f: getattr(o, f) for f in ("w", "x", "y", "ld", "ldx", "ldy", "m", "scales", "zeros")})
        return 0


@pytest.fixture
def make_plan(monkeypatch):
    """make_plan(n, k, dtype, m, weights) -> a Plan on device 0 whose launches FakeLibrary records."""
    fake = FakeLibrary()
    monkeypatch.setattr(runtime, "_lib", fake)
    plans = []

    def make(n, k, dtype="bf16", m=1, weights=None):
        plan = runtime.Plan.__new__(runtime.Plan)
        plans.append(plan)
        plan.m, plan.n, plan.k, plan.dtype, plan.weights, plan.device = m, n, k, dtype, weights or dtype, 0
        plan.config, plan.source, plan.stream_concurrent = "t64", "default", True
        plan._handle = 1  # last: a handle the library never sees, whatever failed above
        return plan

    make.launches = fake.launches
    yield make
    for plan in plans:  # its handle is not the library's: never destroy it there
        plan._handle = None


@pytest.mark.parametrize("kwargs, message", [
    ({"ld": 2**64 + 4096}, "ld = 18446744073709555712 is out of range"),
    ({"ldx": 2**63}, "ldx = 9223372036854775808 is out of range"),
    ({"ldy": -1}, "ldy must not be negative"),
    ({"m": 2**64 + 1}, "m = 18446744073709551617 is out of range"),
    ({"ld": 4096.0}, "ld must be an integer"),
])
def test_launch_strides_outside_int64_are_refused(make_plan, kwargs, message):
    # ctypes kept the low 64 bits: ld = 2**64 + 4096 arrived as 4096, m = 2**64 + 1 as 1.
    plan = make_plan(4096, 4096, m=4)
    with pytest.raises(gemvtune.InvalidArgument, match=message):
        plan.launch(0x1000, 0x2000, 0x3000, **kwargs)
    assert make_plan.launches == []


def test_launch_takes_pointers_unchecked(make_plan):
    plan = make_plan(4096, 4096)
    plan.launch(0x1000, 0x2000, 0x3000, ld=8192)
    assert make_plan.launches == [{"w": 0x1000, "x": 0x2000, "y": 0x3000, "ld": 8192, "ldx": 0, "ldy": 0, "m": 0,
                                   "scales": 0, "zeros": 0}]


def test_launch_takes_row_strides_from_tensors(make_plan):
    plan = make_plan(64, 128, m=4)
    w = FakeTensor((64, 128), stride=(256, 1), ptr=0x1000)  # a column slice of a 64 x 256 weight
    x = FakeTensor((4, 128), stride=(192, 1), ptr=0x2000)
    y = FakeTensor((4, 64), ptr=0x3000)
    plan.launch(w, x, y)
    assert make_plan.launches[-1] == {"w": 0x1000, "x": 0x2000, "y": 0x3000, "ld": 256, "ldx": 192, "ldy": 64, "m": 0,
                                      "scales": 0, "zeros": 0}
    # Given strides that are the tensors' own, and 1-D x and y of one row, pass.
    one = make_plan(64, 128)
    one.launch(w, FakeTensor((128,)), FakeTensor((64,)), ld=256)
    assert make_plan.launches[-1]["ld"] == 256
    # Three of the plan's four rows, from buffers of four.
    plan.launch(w, x, y, m=3)
    assert make_plan.launches[-1]["m"] == 3


@pytest.mark.parametrize("operands, kwargs, message", [
    ({"x": FakeTensor((4, 128), device=None)}, {}, "x is not on a CUDA device"),
    ({"w": FakeTensor((64, 128), device=1)}, {}, "w is on cuda:1, the plan's runtime on cuda:0"),
    ({"x": FakeTensor((4, 128), dtype=FP16)}, {}, "x has dtype fp16, the plan needs bf16"),
    ({"y": FakeTensor((4, 64), dtype=FP32)}, {}, "y has dtype fp32, the plan needs bf16"),
    ({"w": FakeTensor((64, 128), dtype=FP16)}, {}, "w has dtype fp16, the plan needs bf16"),
    ({"y": FakeTensor((4 * 64 - 1,))}, {}, "y holds 255 values, the launch needs 256"),
    ({"x": FakeTensor((128,))}, {}, "x holds 128 values, the launch needs 512"),
    ({"x": FakeTensor((2, 128))}, {}, "x has 2 rows, the launch needs 4"),
    ({"x": FakeTensor((2, 128))}, {"m": 3}, "x has 2 rows, the launch needs 3"),
    ({"w": FakeTensor((64, 100))}, {}, "w has rows of 100 values, the plan's are 128"),
    ({"w": FakeTensor((128, 64))}, {}, "w has rows of 64 values"),  # transposed
    ({"w": FakeTensor((64, 128), stride=(1, 64))}, {}, "w has stride 64 along its last dimension"),
    ({"w": FakeTensor((64, 128), stride=(256, 1))}, {"ld": 128}, "w has a row stride of 256, not the 128 given"),
    ({"x": FakeTensor((4, 128), stride=(64, 1))}, {}, "rows overlap"),
    ({"x": FakeTensor((1, 4, 128))}, {}, "x is 3-D"),
])
def test_launch_checks_tensors_against_the_plan(make_plan, operands, kwargs, message):
    plan = make_plan(64, 128, m=4)
    given = {"w": FakeTensor((64, 128)), "x": FakeTensor((4, 128)), "y": FakeTensor((4, 64)), **operands}
    with pytest.raises(gemvtune.InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan.launch(given["w"], given["x"], given["y"], **kwargs)
    assert make_plan.launches == [], "nothing reached the library"


def test_launch_checks_quantized_tensors(make_plan):
    plan = make_plan(64, 256, weights="int4g128")
    w = FakeTensor((64, 128), dtype=UINT8, ptr=0x1000)  # two weights a byte
    x, y = FakeTensor((256,)), FakeTensor((64,))
    scales, zeros = FakeTensor((64, 2), ptr=0x4000), FakeTensor((64, 2), ptr=0x5000)
    plan.launch(w, x, y, scales=scales, zeros=zeros)
    assert {k: make_plan.launches[-1][k] for k in ("w", "scales", "zeros")} == {"w": 0x1000, "scales": 0x4000,
                                                                                "zeros": 0x5000}
    padded = FakeTensor((64, 128), dtype=UINT8, stride=(144, 1))  # rows padded to 288 weights
    plan.launch(padded, x, y, scales=scales, zeros=zeros)
    assert make_plan.launches[-1]["ld"] == 288, "ld counts nibbles for int4"
    for bad, message in [
        ({"w": FakeTensor((64, 256))}, "w has dtype bf16, the plan needs uint8 or int8"),
        ({"w": FakeTensor((64, 64), dtype=UINT8)}, "w has rows of 128 values, the plan's are 256"),
        ({"scales": FakeTensor((64, 2), dtype=FP32)}, "scales has dtype fp32, int4g128 needs bf16"),
        ({"zeros": FakeTensor((64, 1))}, "zeros holds 64 values, int4g128 needs 128"),
        ({"zeros": FakeTensor((64, 2), stride=(1, 64))}, "zeros is not contiguous"),
        ({"scales": FakeTensor((64, 2), device=None)}, "scales is not on a CUDA device"),
    ]:
        given = {"w": w, "x": x, "y": y, "scales": scales, "zeros": zeros, **bad}
        with pytest.raises(gemvtune.InvalidArgument, match=message):
            plan.launch(given["w"], given["x"], given["y"], scales=given["scales"], zeros=given["zeros"])
    int8 = make_plan(64, 256, weights="int8")
    with pytest.raises(gemvtune.InvalidArgument, match="scales holds 1 values, int8 needs 64"):
        int8.launch(FakeTensor((64, 256), dtype=FakeDtype("int8")), x, y, scales=FakeTensor((1,), dtype=FP32))
