#!/usr/bin/env python3
"""Host cost of an eager call of gemvtune's PyTorch op (issue 13, eager bar).

Two tables, each a microsecond figure per call (calls in loops of --calls, --rounds rounds
interleaved between the rows so load on the machine hits them alike; `median` and `best` of
the rounds):

1. Registration overhead (any machine, CPU tensors, --part registration). One op
   y = f(x, weight), whose kernel only allocates its output (x.new_empty, as the real op
   does), registered in each way torch offers, so the figures are the dispatcher's and
   Python's cost, not a kernel's:
     python call          the kernel called as a Python function (the floor; gemvtune.torch.linear
                          calls its implementation like this in eager inference);
     custom_op            torch.library.custom_op with register_fake and register_autograd
                          (how torch.ops.gemvtune.linear was registered before);
     custom_op, device_types  the same with device_types="cpu" (a kernel for one device);
     Library+reg_autograd torch.library.Library: define, impl (CompositeExplicitAutograd),
                          register_fake, torch.library.register_autograd;
     Library, no autograd the same without any autograd kernel (the floor of a Python kernel
                          behind the dispatcher; loses autograd, not an option);
     gemvtune register_op gemvtune.torch.register_op, what torch.ops.gemvtune.linear uses now
                          (Library, and its own autograd kernel that calls the implementation
                          directly where no gradient is needed).
   Each under torch.no_grad() (decode), grad mode on with no input needing a gradient, and
   torch.inference_mode() (which skips autograd kernels altogether).

2. The real op (--part op) under torch.no_grad(), on the same tensors: torch.nn.functional.linear,
   torch.ops.gemvtune.linear and gemvtune.torch.linear. With CUDA: bf16, M = 1, 4096x4096 and
   1024x4096 (--shapes, --dtype, --batch), the same weights every call (L2-resident: the host
   cost shows); `host` is the time to issue the calls, `call` the time until they have run
   (synchronized), both per call. Without CUDA (or --device cpu): CPU tensors, where the op falls
   back to torch.nn.functional.linear, so op - F.linear is the dispatcher's cost (default shape
   64x64 fp32, small enough that the product costs little).

    python3 bench/peers/op_overhead.py [--part all|registration|op] [--device cpu|cuda]

From the repository root with GEMVTUNE_LIBRARY=build/libgemvtune.so (the package's sources from
python/ are used then), or with the package installed. Needs torch (exit 2 without).
"""

import argparse
import os
import statistics
import sys
import time

if os.environ.get("GEMVTUNE_LIBRARY"):  # run from the repository: the package's sources
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

MODES = ["no_grad", "grad on", "inference_mode"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", default="all", choices=["all", "registration", "op"])
    p.add_argument("--device", choices=["cpu", "cuda"], help="for the op table (default: cuda where available)")
    p.add_argument("--shapes", help="NxK,... for the op table (default: 4096x4096,1024x4096 on CUDA, 64x64 on CPU)")
    p.add_argument("--dtype", help="bfloat16, float16 or float32 (default: bfloat16 on CUDA, float32 on CPU)")
    p.add_argument("--batch", type=int, default=1, help="rows M of x")
    p.add_argument("--calls", type=int, help="calls per round (default: 2000; 500 for the op on CUDA, fewer than "
                   "the launch queue holds, so `host` is what issuing them costs)")
    p.add_argument("--rounds", type=int, default=15)
    args = p.parse_args()
    # Before any table: a median of no rounds, negative calls or an unparsable shape or dtype
    # failed with a traceback, some of them after the first table had run.
    if args.rounds < 1 or (args.calls is not None and args.calls < 1) or args.batch < 1:
        p.error("--rounds, --calls and --batch must be at least 1")
    if args.dtype not in (None, "bfloat16", "float16", "float32"):
        p.error(f"--dtype {args.dtype!r}: expected bfloat16, float16 or float32")
    for shape in args.shapes.split(",") if args.shapes else []:
        n, x, k = shape.lower().partition("x")
        if not (x and n.isdigit() and k.isdigit() and int(n) > 0 and int(k) > 0):
            p.error(f"--shapes: bad shape {shape!r} (expected NxK,...)")
    return args


def measure(rows, calls, rounds, sync=None):
    """rows: {label: fn()}. Returns {label: (median, best)} of us per call (host time to issue
    the calls, and where sync is given also to finish them: {label: ((median, best), (median, best))})."""
    for fn in rows.values():  # warm up (plans, caches)
        for _ in range(max(calls // 10, 10)):
            fn()
    if sync:
        sync()
    host = {label: [] for label in rows}
    total = {label: [] for label in rows}
    for _ in range(rounds):
        for label, fn in rows.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            issued = time.perf_counter()
            if sync:
                sync()
            done = time.perf_counter()
            host[label].append((issued - start) / calls * 1e6)
            total[label].append((done - start) / calls * 1e6)
    stats = lambda v: (statistics.median(v), min(v))  # noqa: E731
    if sync:
        return {label: (stats(host[label]), stats(total[label])) for label in rows}
    return {label: stats(host[label]) for label in rows}


def cell(stats):
    return f"{stats[0]:.2f}/{stats[1]:.2f}"


def mode_context(torch, mode):
    return {"no_grad": torch.no_grad, "grad on": torch.enable_grad, "inference_mode": torch.inference_mode}[mode]()


def registration_table(torch, gt, calls, rounds):
    x, weight = torch.randn(1, 64), torch.randn(64, 64)

    def kernel(x, weight):
        return x.new_empty((*x.shape[:-1], weight.shape[0]))

    def fake(x, weight):
        return x.new_empty((*x.shape[:-1], weight.shape[0]))

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        return grad @ weight, grad.t() @ x

    libraries = []

    def library(ns):
        lib = torch.library.Library(ns, "FRAGMENT")
        libraries.append(lib)
        return lib

    @torch.library.custom_op("gemvtune_bench_custom::linear", mutates_args=())
    def custom(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return kernel(x, weight)

    custom.register_fake(fake)
    custom.register_autograd(backward, setup_context=setup_context)

    @torch.library.custom_op("gemvtune_bench_custom_dev::linear", mutates_args=(), device_types="cpu")
    def custom_dev(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return kernel(x, weight)

    custom_dev.register_fake(fake)
    custom_dev.register_autograd(backward, setup_context=setup_context)

    lib = library("gemvtune_bench_lib")
    lib.define("linear(Tensor x, Tensor weight) -> Tensor")
    lib.impl("linear", kernel, "CompositeExplicitAutograd")
    torch.library.register_fake("gemvtune_bench_lib::linear", fake, lib=lib)
    torch.library.register_autograd("gemvtune_bench_lib::linear", backward, setup_context=setup_context, lib=lib)

    bare = library("gemvtune_bench_bare")
    bare.define("linear(Tensor x, Tensor weight) -> Tensor")
    bare.impl("linear", kernel, "CompositeExplicitAutograd")
    torch.library.register_fake("gemvtune_bench_bare::linear", fake, lib=bare)

    ours = gt.register_op(library("gemvtune_bench_ours"), "linear", kernel, fake, setup_context, backward)
    ops = {
        "python call": kernel,
        "custom_op": torch.ops.gemvtune_bench_custom.linear.default,
        "custom_op, device_types": torch.ops.gemvtune_bench_custom_dev.linear.default,
        "Library+reg_autograd": torch.ops.gemvtune_bench_lib.linear.default,
        "Library, no autograd": torch.ops.gemvtune_bench_bare.linear.default,
        "gemvtune register_op": ours,
    }
    w = torch.randn(64, 64, requires_grad=True)  # the check below: autograd still works
    for label, op in ops.items():
        if label != "Library, no autograd" and label != "python call":
            op(x, w).sum().backward()
    results = {}
    for mode in MODES:
        with mode_context(torch, mode):
            results[mode] = measure({label: (lambda op=op: op(x, weight)) for label, op in ops.items()}, calls, rounds)
    print(f"registration overhead: us per call of an op whose kernel only allocates its output "
          f"(CPU tensors, {rounds} rounds of {calls} calls; median/best)")
    print(f"  {'registration':<24}" + "".join(f"{mode:>16}" for mode in MODES))
    for label in ops:
        print(f"  {label:<24}" + "".join(f"{cell(results[mode][label]):>16}" for mode in MODES))
    del libraries


def op_table(torch, gt, args):
    F = torch.nn.functional
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        print("op_overhead.py: --device cuda, but torch.cuda.is_available() is False", file=sys.stderr)
        sys.exit(2)
    dtype = getattr(torch, args.dtype or ("bfloat16" if device == "cuda" else "float32"))
    shapes = args.shapes or ("4096x4096,1024x4096" if device == "cuda" else "64x64")
    sync = torch.cuda.synchronize if device == "cuda" else None
    calls = args.calls if args.calls is not None else (500 if sync else 2000)
    op = torch.ops.gemvtune.linear
    columns = ["F.linear", "torch.ops.gemvtune.linear", "gemvtune.torch.linear"]
    where = ("CUDA: host = issuing the calls, call = until they ran" if sync
             else "CPU tensors: the op falls back to F.linear")
    print(f"\nthe op, eager, under torch.no_grad() ({where}; {str(dtype).replace('torch.', '')}, "
          f"M = {args.batch}, {args.rounds} rounds of {calls} calls; us per call, median/best)")
    print(f"  {'shape':>11}  {'':>4}" + "".join(f"{c:>27}" for c in columns) + f"{'F.linear/op':>13}")
    for shape in shapes.split(","):
        n, k = (int(v) for v in shape.lower().split("x"))
        g = torch.Generator(device="cpu").manual_seed(0)
        weight = (torch.randn(n, k, generator=g) / k**0.5).to(device=device, dtype=dtype)
        x = torch.randn(args.batch, k, generator=g).to(device=device, dtype=dtype)
        with torch.no_grad():
            torch.testing.assert_close(op(x, weight).float(), F.linear(x, weight).float(), atol=3e-2, rtol=2e-2)
            if device == "cuda":
                plan = gt.plan_for(weight.device, args.batch, n, k, dtype)
                if plan is None:
                    print(f"  {shape:>11}  gemvtune does not run this problem (torch does)")
            rows = {"F.linear": lambda: F.linear(x, weight), "torch.ops.gemvtune.linear": lambda: op(x, weight),
                    "gemvtune.torch.linear": lambda: gt.linear(x, weight)}
            result = measure(rows, calls, args.rounds, sync)
        parts = [("host", 0), ("call", 1)] if sync else [("", None)]
        for name, index in parts:
            cells = [result[c] if index is None else result[c][index] for c in columns]
            ratio = cells[0][0] / cells[1][0]
            print(f"  {shape:>11}  {name:>4}" + "".join(f"{cell(c):>27}" for c in cells) + f"{ratio:>12.2f}x")


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        print("op_overhead.py: needs PyTorch, which is not installed here", file=sys.stderr)
        sys.exit(2)
    import gemvtune.torch as gt

    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, "
          f"{'CUDA ' + torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA'}")
    if args.part in ("all", "registration"):
        registration_table(torch, gt, args.calls or 2000, args.rounds)
    if args.part in ("all", "op"):
        op_table(torch, gt, args)


if __name__ == "__main__":
    main()
