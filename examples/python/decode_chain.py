#!/usr/bin/env python3
"""decode_chain.py: one Llama-3.1-8B decode step's GEMVs from PyTorch, through torch and through
gemvtune's op, each captured in a CUDA graph.

A stack of nn.Linear layers shaped like Llama-3.1-8B (random weights, nothing downloaded): 32
layers of fused qkv 6144x4096, o 4096x4096, fused gate_up 28672x4096 and down 4096x14336, then
lm_head 128256x4096: 129 GEMVs, 15.01 GB of bf16 weights in distinct tensors. Each GEMV reads the
previous one's output (its first K elements), as examples/decode_chain.cpp does. The chain is
captured once with torch.nn.functional.linear and once with torch.ops.gemvtune.linear, each in
its own torch.cuda.CUDAGraph; replays are timed with CUDA events (median). Then each distinct
shape is timed eagerly, one call at a time, through torch and through the op, weights rotated
past L2.

    python3 examples/python/decode_chain.py [--db CACHE] [--layers 32] [--batch 1] [--replays 20]

With the package installed (pip install .), or GEMVTUNE_LIBRARY=build/libgemvtune.so from the
repository root. Tune first for the tuned figures (gemvtune tune --preset llama-3.1-8b, or
gemvtune.tune()); without a cache every shape uses the analytic model's default config.
Exits 77 (skipped) with a message where there is no GPU or no PyTorch.
"""

import argparse
import os
import statistics
import sys

if os.environ.get("GEMVTUNE_LIBRARY"):  # run from the repository: the package's sources
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

LAYER_SHAPES = [("qkv", 6144, 4096), ("o", 4096, 4096), ("gate_up", 28672, 4096), ("down", 4096, 14336)]
LM_HEAD = ("lm_head", 128256, 4096)
PRESET_SHAPES = [(4096, 4096), (1024, 4096), (6144, 4096), (14336, 4096), (28672, 4096), (4096, 14336),
                 (128256, 4096)]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", help="tuning cache (default: $GEMVTUNE_CACHE or ~/.cache/gemvtune/gemvtune.sqlite)")
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--batch", type=int, default=1, help="rows M of x (decode batch), 1..16")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--replays", type=int, default=20)
    p.add_argument("--eager-calls", type=int, default=200, help="calls per shape in the eager comparison; 0 skips it")
    args = p.parse_args()
    # Checked here, before the PyTorch and GPU skips: a bad value is a usage error anywhere.
    if not 1 <= args.batch <= 16:
        p.error("--batch must be 1..16")
    if args.layers < 1 or args.replays < 1 or args.eager_calls < 0:
        p.error("--layers and --replays must be at least 1, --eager-calls at least 0")
    return args


def skip(message):
    print(f"decode_chain.py: skipped: {message}")
    sys.exit(77)


def median_ms(torch, run, replays):
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def build_chain(torch, layers, dtype):
    """Weights in distinct tensors, scaled so activations keep their size through 129 products."""
    weights = []
    for _ in range(layers):
        for name, n, k in LAYER_SHAPES:
            weights.append((name, torch.empty(n, k, device="cuda", dtype=dtype).uniform_(-1, 1).mul_((3.0 / k) ** 0.5)))
    name, n, k = LM_HEAD
    weights.append((name, torch.empty(n, k, device="cuda", dtype=dtype).uniform_(-1, 1).mul_((3.0 / k) ** 0.5)))
    return weights


def chain_fn(linear, x0, weights):
    """The chain as a closure: each GEMV reads the first K elements of the previous output."""
    ks = [w.shape[1] for _, w in weights]

    def run():
        h = x0
        y = None
        for i, (_, w) in enumerate(weights):
            y = linear(h, w)
            if i + 1 < len(weights):
                h = y[..., : ks[i + 1]]
        return y

    return run


def capture(torch, fn):
    """Runs fn once eagerly (gemvtune plans are made here, outside the capture), then captures
    it into a CUDA graph; returns (graph, output of the captured run)."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out


def eager_comparison(torch, gt, dtype, m, calls):
    """Per shape: us per call of F.linear, of the op and of gemvtune.torch.linear, one call after
    another without a graph, over enough weight copies that L2 (60 MB on an H200) never holds
    the next one."""
    import torch.nn.functional as F

    print(f"\neager calls, one at a time (us per call, median of 5 runs of {calls} calls, weights rotated past L2):")
    print(f"  {'shape':>13}  {'torch':>8}  {'op':>8}  {'gt.linear':>9}  {'torch/op':>8}")
    esize = torch.tensor([], dtype=dtype).element_size()
    for n, k in PRESET_SHAPES:
        copies = max(2, min(64, int(-(-256e6 // (n * k * esize)))))
        ws = [torch.empty(n, k, device="cuda", dtype=dtype).uniform_(-1, 1).mul_((3.0 / k) ** 0.5) for _ in range(copies)]
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        with torch.no_grad():

            def loop(f):
                def run():
                    for i in range(calls):
                        f(x, ws[i % copies])

                return run

            op = torch.ops.gemvtune.linear
            for f in (F.linear, op, gt.linear):  # warm up (plans, cuBLAS heuristics)
                loop(f)()
            us = [median_ms(torch, loop(f), 5) * 1e3 / calls for f in (F.linear, op, gt.linear)]
        print(f"  {f'{n}x{k}':>13}  {us[0]:8.2f}  {us[1]:8.2f}  {us[2]:9.2f}  {us[0] / us[1]:7.2f}x")
        del ws


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        skip("PyTorch is not installed")
    import gemvtune
    import gemvtune.torch as gt

    if not torch.cuda.is_available():
        skip("no CUDA GPU (torch.cuda.is_available() is False)")
    dtype = getattr(torch, args.dtype)
    gt.configure(cache=args.db)
    db = args.db or gemvtune.default_cache_path()
    torch.manual_seed(0)

    weights = build_chain(torch, args.layers, dtype)
    total_bytes = sum(w.numel() * w.element_size() for _, w in weights)
    x0 = torch.randn(args.batch, 4096, device="cuda", dtype=dtype)
    import torch.nn.functional as F

    with torch.no_grad():
        torch_graph, torch_out = capture(torch, chain_fn(F.linear, x0, weights))
        ours_graph, ours_out = capture(torch, chain_fn(torch.ops.gemvtune.linear, x0, weights))
        torch_graph.replay()
        ours_graph.replay()
        torch.cuda.synchronize()
        ref, got = torch_out.double(), ours_out.double()
        rel = ((got - ref).norm() / ref.norm()).item()
        finite = bool(torch.isfinite(got).all() and torch.isfinite(ref).all())
        ms_torch = median_ms(torch, torch_graph.replay, args.replays)
        ms_ours = median_ms(torch, ours_graph.replay, args.replays)

    gpu = torch.cuda.get_device_name()
    print(f"decode chain: {len(weights)} GEMVs, {total_bytes / 1e9:.2f} GB of {args.dtype} weights, M = {args.batch}, "
          f"{gpu}, torch {torch.__version__}, gemvtune {gemvtune.__version__}; one CUDA graph each, "
          f"{args.replays} replays (median)")
    print(f"  cache: {db}{'' if os.path.exists(db) else ' (missing: untuned default configs)'}")
    for name, n, k in LAYER_SHAPES + [LM_HEAD]:
        plan = gt.plan_for(x0.device, args.batch, n, k, dtype)
        print(f"  {name:>8} {n}x{k}: " + (f"{plan.config} ({plan.source})" if plan else "torch (not planned)"))
    ceiling = None
    try:
        for p in gemvtune.list_cache(db)["peaks"]:
            if p["gpu"]["name"] == gpu:
                ceiling = p["gbps"]
    except gemvtune.GemvtuneError:
        pass
    for label, ms in (("torch (F.linear)", ms_torch), ("gemvtune op", ms_ours)):
        gbps = total_bytes / (ms * 1e-3) / 1e9
        line = f"  {label:<18} {ms:8.3f} ms  {gbps:6.0f} GB/s"
        if ceiling:
            line += f"  {100 * gbps / ceiling:5.1f}% of the {ceiling:.0f} GB/s read ceiling"
        print(line)
    print(f"  gemvtune op / torch: {ms_torch / ms_ours:.2f}x")
    ok = finite and rel < 0.1
    print(f"  output: gemvtune vs torch relative L2 difference {rel:.4f} ({'ok' if ok else 'MISMATCH'})")

    del torch_graph, ours_graph, weights
    torch.cuda.empty_cache()
    if args.eager_calls > 0:
        eager_comparison(torch, gt, dtype, args.batch, args.eager_calls)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
