#!/usr/bin/env python3
"""Peer benchmark for quantized-weight decode GEMV (issue 12).

Times y = x W^T (x: M x K bf16 activations, W: N x K) for the Llama-3.1-8B decode shapes with
  - bf16 cuBLAS: torch.nn.functional.linear on bf16 weights (the baseline),
  - PyTorch's int4 tinygemm, group size 128 (aten._convert_weight_to_int4pack /
    aten._weight_int4pack_mm),
  - GemLite (Triton): A16W4 HQQ-style int4 g128, A16W8 int8 and A16W8 fp8 e4m3, both with
    per-output-channel fp32 scales,
each in a CUDA graph of back-to-back calls that rotate through enough copies of the weights
(and scales) to cover 2.5 x L2, so every call reads its operands from HBM. Prints a table and,
with --json FILE, the same rows for scripts. See bench/peers/README.md.

Needs torch with CUDA (exit 2 without); GemLite comes from PYTHONPATH (.carry/gemlite_pkg).
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import sys
import time

# Llama-3.1-8B decode GEMVs, N x K (as nn.Linear's weight): q/o, kv, qkv fused, gate/up, gate+up
# fused, down, lm_head. The same preset as `gemvtune tune --preset llama-3.1-8b`.
LLAMA31_8B_SHAPES = [(4096, 4096), (1024, 4096), (6144, 4096), (14336, 4096), (28672, 4096),
                     (4096, 14336), (128256, 4096)]
QUICK_SHAPES = [(4096, 4096), (14336, 4096)]
GROUP = 128                # quantization group along K for the int4 formats
TINYGEMM_INNER_K_TILES = 8  # 16-byte B loads; what torchao/gpt-fast use

PEERS = [
    # key, label in the table
    ("cublas_bf16", "bf16 cuBLAS"),
    ("tinygemm_int4_g128", "tinygemm int4 g128"),
    ("gemlite_a16w4_g128", "GemLite A16W4 g128"),
    ("gemlite_a16w8_int8", "GemLite A16W8 int8"),
    ("gemlite_a16w8_fp8", "GemLite A16W8 fp8"),
]
LABELS = dict(PEERS)


def format_bytes(key: str, n: int, k: int) -> int:
    """Bytes one call must read from the weight format: weights + scales + zeros (x and y,
    at most 16 rows, are left out)."""
    groups = k // GROUP
    return {
        "cublas_bf16": 2 * n * k,
        # packed int4 + [K/128, N, 2] bf16 (scale, zero)
        "tinygemm_int4_g128": n * k // 2 + groups * n * 2 * 2,
        # packed int4 (int32 words) + bf16 scales [K/128, N] + bf16 zeros [K/128, N]
        "gemlite_a16w4_g128": n * k // 2 + 2 * groups * n * 2,
        # int8 / fp8 weights + fp32 scale per output channel
        "gemlite_a16w8_int8": n * k + 4 * n,
        "gemlite_a16w8_fp8": n * k + 4 * n,
    }[key]


def parse_shapes(text: str):
    shapes = []
    for item in text.split(","):
        item = item.strip().lower()
        if not item:
            continue
        try:
            n, k = (int(v) for v in item.split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad shape {item!r}: expected NxK, e.g. 4096x14336")
        if n <= 0 or k <= 0 or k % GROUP or n % 8:
            raise argparse.ArgumentTypeError(
                f"bad shape {item!r}: N must be a multiple of 8 and K of {GROUP}")
        shapes.append((n, k))
    if not shapes:
        raise argparse.ArgumentTypeError("no shape given")
    return shapes


def parse_batches(text: str):
    try:
        batches = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad --batch {text!r}: expected e.g. 1,16")
    if not batches or any(m < 1 or m > 4096 for m in batches):
        raise argparse.ArgumentTypeError(f"bad --batch {text!r}: M from 1 to 4096")
    return batches


def parse_peers(text: str):
    if text.strip() == "all":
        return [key for key, _ in PEERS]
    keys = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [v for v in keys if v not in LABELS]
    if unknown or not keys:
        raise argparse.ArgumentTypeError(
            f"unknown peer(s) {', '.join(unknown) or '(none)'}; known: {', '.join(LABELS)}")
    return [key for key, _ in PEERS if key in keys]  # table order, baseline first


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Times quantized-weight GEMV peers (bf16 cuBLAS, PyTorch int4 tinygemm, "
                    "GemLite A16W4 / A16W8 int8 / A16W8 fp8) on the Llama-3.1-8B decode shapes, "
                    "y = x W^T with x of M rows (bf16). Needs a CUDA GPU (exit 2 without).",
        epilog="GemLite is imported from PYTHONPATH, e.g. "
               "PYTHONPATH=.carry/gemlite_pkg python3 bench/peers/quant_peers.py --batch 1,16 "
               "--json out.json. Columns: us per call, GB/s over the bytes the format must read "
               "(weights + scales + zeros), 'x bf16' = bf16 cuBLAS time / this time, 'rel err' = "
               "max|y - ref| / max|ref| against a float64 reference over the dequantized weights "
               "the peer was given.")
    p.add_argument("--batch", type=parse_batches, default=[1, 16],
                   help="comma-separated M values (default 1,16)")
    p.add_argument("--quick", action="store_true",
                   help="only 4096x4096 and 14336x4096 (for testing)")
    p.add_argument("--shapes", type=parse_shapes, default=None,
                   help="comma-separated NxK list instead of the Llama-3.1-8B set")
    p.add_argument("--peers", type=parse_peers, default=parse_peers("all"),
                   help="comma-separated subset of: " + ", ".join(LABELS) + " (default all)")
    p.add_argument("--json", metavar="FILE", default=None,
                   help="write the rows as JSON (rewritten after every row)")
    p.add_argument("--replays", type=int, default=9,
                   help="graph replays per measurement; the median is kept (default 9)")
    p.add_argument("--rotate", type=float, default=2.5,
                   help="weight copies cover this many times the L2 (default 2.5)")
    p.add_argument("--tol", type=float, default=2e-2,
                   help="a peer whose rel err exceeds this is marked WRONG (default 2e-2)")
    p.add_argument("--gemlite-config", default="auto", metavar="auto|none|FILE",
                   help="GemLite autotune cache to load: auto = the package's configs/h100.json "
                        "(H100 and H200 share sm_90 and the tuning keys), none = autotune every "
                        "shape, or a JSON file (default auto)")
    p.add_argument("--seed", type=int, default=1234, help="seed for the random operands")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when any peer FAILED or is WRONG")
    args = p.parse_args(argv)
    if args.replays < 1:
        p.error("--replays must be at least 1")
    if not (math.isfinite(args.rotate) and args.rotate > 0) or not (math.isfinite(args.tol) and args.tol > 0):
        p.error("--rotate and --tol must be finite and > 0")
    if args.shapes is None:
        args.shapes = QUICK_SHAPES if args.quick else LLAMA31_8B_SHAPES
    return args


def describe(exc: BaseException, limit: int = 400) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    text = " | ".join(lines[:3])
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --------------------------------------------------------------------------------------------
# Output


COLUMNS = [  # header, width, right-aligned
    ("shape", 12, False), ("M", 3, True), ("peer", 19, False), ("us", 9, True),
    ("GB/s", 6, True), ("MB", 8, True), ("x bf16", 7, True), ("rel err", 8, True),
    ("status", 6, False), ("note", 0, False),
]


def _cell(text, width, right):
    if width == 0:
        return text
    return text.rjust(width) if right else text.ljust(width)


def table_header() -> str:
    return "  ".join(_cell(h, w, r) for h, w, r in COLUMNS).rstrip()


def table_row(row: dict) -> str:
    def num(v, fmt):
        return "-" if v is None else format(v, fmt)

    note = row.get("note") or ""
    if row.get("error"):
        note = (note + "; " if note else "") + row["error"]
    if len(note) > 160:
        note = note[:157] + "..."
    cells = [
        row["shape"], str(row["m"]), row["label"], num(row.get("us"), ".2f"),
        num(row.get("gbps"), ".0f"), num(row["bytes_per_call"] / 1e6, ".2f"),
        "-" if row.get("speedup_vs_bf16") is None else f'{row["speedup_vs_bf16"]:.2f}x',
        num(row.get("rel_err"), ".1e"), row["status"].upper() if row["status"] != "ok" else "ok",
        note,
    ]
    return "  ".join(_cell(c, w, r) for c, (_, w, r) in zip(cells, COLUMNS)).rstrip()


def summary_lines(results, peers, batches):
    """Geometric-mean speed-up over bf16 cuBLAS per peer and M, over the shapes where both ran
    and the peer verified."""
    lines = []
    for m in batches:
        parts = []
        for key in peers:
            if key == "cublas_bf16":
                continue
            vals = [r["speedup_vs_bf16"] for r in results
                    if r["peer"] == key and r["m"] == m and r["status"] == "ok"
                    and r.get("speedup_vs_bf16")]
            if vals:
                geo = math.exp(sum(math.log(v) for v in vals) / len(vals))
                parts.append(f"{LABELS[key]} {geo:.2f}x (n={len(vals)})")
            else:
                parts.append(f"{LABELS[key]} -")
        if parts:
            lines.append(f"geomean speed-up over bf16 cuBLAS at M={m}: " + ", ".join(parts))
    return lines


def _finite(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {key: _finite(val) for key, val in v.items()}
    if isinstance(v, list):
        return [_finite(val) for val in v]
    return v


def write_json(path, meta, results):
    doc = _finite(dict(meta))
    doc["results"] = _finite(results)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------------------------
# Peers. Each setup returns a Built: one zero-argument call per weight copy (each returns y,
# M x N), the float64 rows of copy 0's dequantized weights, and optional extra info.


class Built:
    def __init__(self, calls, deq_rows, storage_bytes, info=None):
        self.calls = calls
        self.deq_rows = deq_rows          # (r0, r1) -> float64 [r1 - r0, K] on the GPU
        self.storage_bytes = storage_bytes  # bytes one copy actually occupies
        self.info = info                  # () -> (note, dict), called after the warm-up


class Ctx:
    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.dev = torch.device("cuda", torch.cuda.current_device())
        self.stream = torch.cuda.Stream()
        self.gen = torch.Generator(device=self.dev)
        self.gen.manual_seed(args.seed)
        props = torch.cuda.get_device_properties(self.dev)
        self.gpu_name = props.name
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 60 * 1024 * 1024)
        self.gemlite = None
        self.gemlite_error = None
        self.gemlite_config = None
        self.gemlite_config_entries = 0


def _nbytes(*tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def _rand_scales(ctx, shape, scale):
    torch = ctx.torch
    return (torch.rand(shape, device=ctx.dev, generator=ctx.gen) + 0.5) * scale


def setup_cublas_bf16(ctx, n, k, copies, x):
    torch = ctx.torch
    F = torch.nn.functional
    w = torch.randn((n, k), device=ctx.dev, generator=ctx.gen, dtype=torch.bfloat16)
    ws = [w] + [w.clone() for _ in range(copies - 1)]
    calls = [lambda wi=wi: F.linear(x, wi) for wi in ws]
    return Built(calls, lambda r0, r1: w[r0:r1].double(), _nbytes(w))


def setup_tinygemm_int4(ctx, n, k, copies, x):
    # aten._convert_weight_to_int4pack(Tensor self, int innerKTiles): self is uint8 [N, K/2],
    # element 2j of a row in the high nibble of byte j, 2j+1 in the low one (int4mm.cu:
    # matrix_to_m16n8k16_Bint4_layout); returns int32 [N/8, K/(innerKTiles*16), 32, innerKTiles/2].
    # aten._weight_int4pack_mm(Tensor self, Tensor mat2, int qGroupSize, Tensor qScaleAndZeros):
    # self bf16 [M, K], qScaleAndZeros bf16 [K/group, N, 2] = (scale, zero), and
    # w = (q - 8) * scale + zero for q in 0..15.
    torch = ctx.torch
    aten = torch.ops.aten
    q = torch.randint(0, 16, (n, k), device=ctx.dev, generator=ctx.gen, dtype=torch.uint8)
    s = _rand_scales(ctx, (n, k // GROUP), 2e-3).to(torch.bfloat16)
    z = (torch.randn((n, k // GROUP), device=ctx.dev, generator=ctx.gen) * 2e-3).to(torch.bfloat16)
    w_u8 = ((q[:, ::2] << 4) | q[:, 1::2]).contiguous()
    sz = torch.stack([s, z], dim=2).transpose(0, 1).contiguous()
    packs = []
    for i in range(copies):
        packed = aten._convert_weight_to_int4pack(w_u8, TINYGEMM_INNER_K_TILES)
        packs.append((packed, sz if i == 0 else sz.clone()))
    del w_u8
    calls = [lambda p=p, t=t: aten._weight_int4pack_mm(x, p, GROUP, t) for p, t in packs]

    def deq_rows(r0, r1):
        s64 = s[r0:r1].double().repeat_interleave(GROUP, dim=1)
        z64 = z[r0:r1].double().repeat_interleave(GROUP, dim=1)
        return (q[r0:r1].double() - 8.0) * s64 + z64

    note = f"innerKTiles {TINYGEMM_INNER_K_TILES}"
    return Built(calls, deq_rows, _nbytes(*packs[0]), info=lambda: (note, {}))


def load_gemlite(ctx):
    """Imports GemLite once and loads its autotune cache; on failure every GemLite peer reports
    ctx.gemlite_error."""
    args = ctx.args
    try:
        import gemlite
        import gemlite.helper  # noqa: F401  (needs tqdm)
        import gemlite.core  # noqa: F401
        import gemlite.triton_kernels.utils  # noqa: F401
    except Exception as e:  # ImportError, or a CUDA/Triton error raised at import
        ctx.gemlite_error = ("import gemlite failed (is .carry/gemlite_pkg on PYTHONPATH?): "
                             + describe(e))
        return
    ctx.gemlite = gemlite
    cfg = args.gemlite_config
    if cfg == "auto":
        cfg = os.path.join(os.path.dirname(gemlite.__file__), "configs", "h100.json")
    if cfg != "none":
        if os.path.isfile(cfg) and gemlite.load_config(cfg, print_error=True):
            ctx.gemlite_config = cfg
        else:
            ctx.gemlite_config = None
            print(f"quant_peers: could not load GemLite config {cfg}; GemLite autotunes every "
                  "shape", file=sys.stderr)
    try:
        cache = gemlite.core.GEMLITE_TRITON_CONFIG_CACHE
        ctx.gemlite_config_entries = sum(len(v) for v in cache.values())
    except Exception:
        ctx.gemlite_config_entries = 0


def _need_gemlite(ctx):
    if ctx.gemlite is None:
        raise RuntimeError(ctx.gemlite_error or "GemLite not loaded")
    return ctx.gemlite


def _gemlite_info(ctx, layer, m, n, k):
    """Which GemLite kernel runs for M, whether the loaded config had this shape's key (else
    GemLite autotuned it at the warm-up), and the Triton config it used."""
    gl = ctx.gemlite
    core = gl.core
    meta = layer.get_meta_args()
    w_nbits, group_size, per_sample, in_dtype = meta[1], meta[2], meta[4], meta[5]
    if in_dtype == core.DType.BF16.value:  # as in core.forward_functional
        in_dtype = core.DType.FP16.value
    type_id = in_dtype * 100 + w_nbits
    matmul_type = core.get_matmul_type(m, w_nbits, False)
    closest_m = gl.triton_kernels.utils.get_closest_m(m)
    signature = str((closest_m, n, k, group_size, per_sample, type_id))
    hit = signature in core.GEMLITE_TRITON_CONFIG_CACHE.get(matmul_type, {})
    extra = {"gemlite_kernel": matmul_type, "gemlite_config_key": signature,
             "gemlite_config_hit": hit}
    try:
        best = core.GEMLITE_TRITON_MAPPING[matmul_type].kernel[0].best_config
        extra["gemlite_triton_config"] = str(best) if best is not None else None
    except Exception:
        pass
    cfg = os.path.splitext(os.path.basename(ctx.gemlite_config))[0] if ctx.gemlite_config else ""
    note = f"{matmul_type}, " + (f"{cfg} config" if hit else "autotuned")
    return note, extra


def setup_gemlite_a16w4(ctx, n, k, copies, x):
    # HQQ convention, W = (W_q - zeros) * scales with W_q uint8 in 0..15 [N, K], scales and zeros
    # bf16 [N, K/128]; A16W4_HQQ_INT.from_weights takes group_size = numel(W_q) / numel(scales)
    # and packs W_q into int32 words along K (8 per word), zeros stored as -zeros * scales (bf16).
    gl = _need_gemlite(ctx)
    torch = ctx.torch
    q = torch.randint(0, 16, (n, k), device=ctx.dev, generator=ctx.gen, dtype=torch.uint8)
    s = _rand_scales(ctx, (n, k // GROUP), 2e-3).to(torch.bfloat16)
    z = (torch.rand((n, k // GROUP), device=ctx.dev, generator=ctx.gen) * 4 + 5.5).to(torch.bfloat16)
    layers = []
    for _ in range(copies):
        layers.append(gl.helper.A16W4_HQQ_INT(device=str(ctx.dev), dtype=torch.bfloat16)
                      .from_weights(q, s, z))
    if layers[0].group_size != GROUP:
        raise RuntimeError(f"GemLite layer has group_size {layers[0].group_size}, expected {GROUP}")
    calls = [lambda layer=layer: layer(x) for layer in layers]

    def deq_rows(r0, r1):
        s64 = s[r0:r1].double().repeat_interleave(GROUP, dim=1)
        z64 = z[r0:r1].double().repeat_interleave(GROUP, dim=1)
        return (q[r0:r1].double() - z64) * s64

    m = x.shape[0]
    layer0 = layers[0]
    return Built(calls, deq_rows, _nbytes(layer0.W_q, layer0.scales, layer0.zeros),
                 info=lambda: _gemlite_info(ctx, layer0, m, n, k))


def _setup_gemlite_a16w8(ctx, n, k, copies, x, fp8: bool):
    # Pre-quantized path of gemlite.helper.A16W8_INT8 / A16W8_FP8.from_weights(weight, scales=):
    # weight int8 or float8_e4m3fn [N, K], scales fp32 [N, 1]; W = weight * scales. The layer
    # keeps a transposed view of `weight`, so every copy gets its own clone.
    gl = _need_gemlite(ctx)
    torch = ctx.torch
    if fp8:
        q = (torch.randn((n, k), device=ctx.dev, generator=ctx.gen) * 64).clamp_(-448, 448)
        q = q.to(torch.float8_e4m3fn)
        maker = gl.helper.A16W8_FP8
    else:
        q = torch.randint(-127, 128, (n, k), device=ctx.dev, generator=ctx.gen, dtype=torch.int8)
        maker = gl.helper.A16W8_INT8
    s = _rand_scales(ctx, (n, 1), 1e-3 if not fp8 else 2e-3).float()
    layers = []
    for i in range(copies):
        qi, si = (q, s) if i == 0 else (q.clone(), s.clone())
        layers.append(maker(device=str(ctx.dev), dtype=torch.bfloat16).from_weights(qi, scales=si))
    calls = [lambda layer=layer: layer(x) for layer in layers]

    def deq_rows(r0, r1):
        return q[r0:r1].float().double() * s[r0:r1].double()

    m = x.shape[0]
    layer0 = layers[0]
    return Built(calls, deq_rows, _nbytes(layer0.W_q, layer0.scales),
                 info=lambda: _gemlite_info(ctx, layer0, m, n, k))


def setup_gemlite_a16w8_int8(ctx, n, k, copies, x):
    return _setup_gemlite_a16w8(ctx, n, k, copies, x, fp8=False)


def setup_gemlite_a16w8_fp8(ctx, n, k, copies, x):
    return _setup_gemlite_a16w8(ctx, n, k, copies, x, fp8=True)


SETUPS = {
    "cublas_bf16": setup_cublas_bf16,
    "tinygemm_int4_g128": setup_tinygemm_int4,
    "gemlite_a16w4_g128": setup_gemlite_a16w4,
    "gemlite_a16w8_int8": setup_gemlite_a16w8_int8,
    "gemlite_a16w8_fp8": setup_gemlite_a16w8_fp8,
}


# --------------------------------------------------------------------------------------------
# Verification and timing


def relative_error(ctx, y, x64, deq_rows, n, k) -> float:
    """max|y - ref| / max|ref|, ref = x (float64) @ W^T over the dequantized weights; inf for
    NaN/inf output."""
    torch = ctx.torch
    m = x64.shape[0]
    if tuple(y.shape) != (m, n):
        raise RuntimeError(f"output shape {tuple(y.shape)}, expected {(m, n)}")
    ref = torch.empty((m, n), dtype=torch.float64, device=y.device)
    rows = max(1, (1 << 30) // (8 * k))  # at most 1 GiB of float64 weights at a time
    for r0 in range(0, n, rows):
        r1 = min(n, r0 + rows)
        ref[:, r0:r1] = x64 @ deq_rows(r0, r1).t()
    err = (y.double() - ref).abs().max().item()
    scale = ref.abs().max().item()
    if not math.isfinite(err):
        return math.inf
    return err / scale if scale > 0 else err


def calls_per_graph(copies: int, bytes_per_call: int) -> int:
    # As tuner/device_problem.cpp time_calls: enough calls that steady state dominates, and at
    # least one pass over every copy.
    calls = max(copies, max(8, int(2e8 / bytes_per_call)))
    return min(calls, max(copies, 2000))


def time_graph(ctx, calls, n_calls: int, replays: int) -> float:
    """Median microseconds per call over `replays` replays of one CUDA graph of n_calls
    back-to-back calls, call i using copy i % len(calls)."""
    torch = ctx.torch
    stream = ctx.stream
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for i in range(n_calls):
            calls[i % len(calls)]()
    try:
        with torch.cuda.stream(stream):
            graph.replay()  # warm-up
        stream.synchronize()
        ms = []
        for _ in range(replays):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            with torch.cuda.stream(stream):
                start.record(stream)
                graph.replay()
                stop.record(stream)
            stop.synchronize()
            ms.append(start.elapsed_time(stop))
        return statistics.median(ms) * 1e3 / n_calls
    finally:
        del graph


def run_peer(ctx, key, n, k, x, x64) -> dict:
    torch = ctx.torch
    args = ctx.args
    m = x.shape[0]
    nbytes = format_bytes(key, n, k)
    copies = max(1, math.ceil(args.rotate * ctx.l2_bytes / nbytes))
    row = {"shape": f"{n}x{k}", "n": n, "k": k, "m": m, "peer": key, "label": LABELS[key],
           "status": "failed", "us": None, "gbps": None, "bytes_per_call": nbytes,
           "storage_bytes_per_copy": None, "copies": copies, "calls_per_graph": None,
           "speedup_vs_bf16": None, "rel_err": None, "note": "", "error": None}
    t0 = time.time()
    built = y = None
    stage = "setup"
    try:
        built = SETUPS[key](ctx, n, k, copies, x)
        row["storage_bytes_per_copy"] = built.storage_bytes
        torch.cuda.synchronize()
        stage = "warm-up"  # first calls compile / autotune (Triton) outside the graph
        ctx.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(ctx.stream):
            for call in built.calls:
                call()
        ctx.stream.synchronize()
        if built.info is not None:
            note, extra = built.info()
            row["note"] = note
            row.update(extra)
        stage = "verify"
        with torch.cuda.stream(ctx.stream):
            y = built.calls[0]()
        ctx.stream.synchronize()
        err = relative_error(ctx, y, x64, built.deq_rows, n, k)
        y = None
        verified = math.isfinite(err) and err <= args.tol
        row["rel_err"] = err if math.isfinite(err) else None
        if not math.isfinite(err):
            row["note"] = (row["note"] + "; " if row["note"] else "") + "non-finite output"
        stage = "timing"
        n_calls = calls_per_graph(copies, nbytes)
        row["calls_per_graph"] = n_calls
        us = time_graph(ctx, built.calls, n_calls, args.replays)
        row["us"] = us
        row["gbps"] = nbytes / (us * 1e-6) / 1e9
        row["status"] = "ok" if verified else "wrong"
    except Exception as e:
        row["error"] = f"{stage}: {describe(e)}"
        row["status"] = "failed"
    finally:
        try:  # let pending work finish before the copies go back to the allocator
            torch.cuda.synchronize()
        except Exception as e:  # a sticky CUDA error: later rows will say so too
            if not row["error"]:
                row["error"] = f"after {stage}: {describe(e)}"
                row["status"] = "failed"
        built = y = None
        gc.collect()
        try:
            torch.cuda.empty_cache()
        except Exception:
            pass
    row["seconds"] = round(time.time() - t0, 2)
    return row


# --------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except Exception as e:
        print(f"quant_peers: cannot import torch ({describe(e)}); this benchmark needs PyTorch "
              "with CUDA on a GPU machine", file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        print("quant_peers: no CUDA device (torch.cuda.is_available() is False); run it on the "
              "GPU machine", file=sys.stderr)
        return 2

    ctx = Ctx(torch, args)
    if any(key.startswith("gemlite") for key in args.peers):
        load_gemlite(ctx)
    try:
        import triton
        triton_version = triton.__version__
    except Exception:
        triton_version = None

    meta = {
        "tool": "bench/peers/quant_peers.py",
        "gpu": ctx.gpu_name,
        "l2_bytes": ctx.l2_bytes,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "triton": triton_version,
        "gemlite": getattr(ctx.gemlite, "__version__", None),
        "gemlite_path": os.path.dirname(ctx.gemlite.__file__) if ctx.gemlite else None,
        "gemlite_error": ctx.gemlite_error,
        "gemlite_config": ctx.gemlite_config,
        "gemlite_config_entries": ctx.gemlite_config_entries,
        "tinygemm_inner_k_tiles": TINYGEMM_INNER_K_TILES,
        "group_size": GROUP,
        "batches": args.batch,
        "shapes": [f"{n}x{k}" for n, k in args.shapes],
        "peers": args.peers,
        "rotate_l2_factor": args.rotate,
        "replays": args.replays,
        "tolerance": args.tol,
        "rel_err_definition": "max|y - ref| / max|ref|, ref in float64 over the dequantized "
                              "weights the peer was given (copy 0)",
        "bytes_definition": "weights + scales + zeros of the format (x and y not counted)",
        "speedup_definition": "bf16 cuBLAS us / peer us, same shape and M",
    }

    out = sys.stdout
    print(f"quant_peers: {ctx.gpu_name}, L2 {ctx.l2_bytes / 2**20:.1f} MiB, torch "
          f"{torch.__version__} (CUDA {torch.version.cuda}), triton {triton_version}", file=out)
    if any(key.startswith("gemlite") for key in args.peers):
        if ctx.gemlite is not None:
            cfg = (f"config {ctx.gemlite_config} ({ctx.gemlite_config_entries} entries)"
                   if ctx.gemlite_config else "no config loaded: autotunes every shape")
            print(f"GemLite {ctx.gemlite.__version__} from {meta['gemlite_path']}, {cfg}", file=out)
        else:
            print(f"GemLite: {ctx.gemlite_error}", file=out)
    print(f"timing: CUDA graph of back-to-back calls over weight copies covering >= {args.rotate} "
          f"x L2, median of {args.replays} replays; verified against float64 (WRONG above "
          f"{args.tol:g})", file=out)
    print(file=out)
    print(table_header(), file=out)
    out.flush()

    results = []
    started = time.time()
    for n, k in args.shapes:
        for m in args.batch:
            x = torch.randn((m, k), device=ctx.dev, generator=ctx.gen, dtype=torch.bfloat16)
            x64 = x.double()
            base_us = None
            for key in args.peers:
                print(f"[{time.time() - started:7.1f} s] {n}x{k} M={m} {key} ...",
                      file=sys.stderr, flush=True)
                row = run_peer(ctx, key, n, k, x, x64)
                if key == "cublas_bf16" and row["status"] == "ok":
                    base_us = row["us"]
                if base_us and row["us"]:
                    row["speedup_vs_bf16"] = base_us / row["us"]
                results.append(row)
                print(table_row(row), file=out, flush=True)
                if args.json:
                    write_json(args.json, meta, results)
            del x, x64

    print(file=out)
    for line in summary_lines(results, args.peers, args.batch):
        print(line, file=out)
    bad = [r for r in results if r["status"] != "ok"]
    print(f"{len(results)} rows, {len(results) - len(bad)} ok, "
          f"{sum(r['status'] == 'wrong' for r in results)} wrong, "
          f"{sum(r['status'] == 'failed' for r in results)} failed, in {time.time() - started:.0f} s"
          + (f"; JSON in {args.json}" if args.json else ""), file=out)
    print("x bf16 = bf16 cuBLAS time / this time (above 1: faster); rel err = max|y - ref| / "
          "max|ref| against float64; MB = bytes read per call (weights + scales + zeros)", file=out)
    out.flush()
    if args.json:
        write_json(args.json, meta, results)
    return 1 if (args.strict and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
