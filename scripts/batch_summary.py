#!/usr/bin/env python3
"""Issue 11's bars from batched bench runs: tuned / cuBLAS per shape and M, and what misses.

    python3 scripts/batch_summary.py bench_batch_bf16.json [bench_batch_fp16.json ...] \
        [--chain decode_chain_m8.txt] [--check]

Inputs: `gemvtune bench --preset llama-3.1-8b --batch 1,2,4,8,16 --dtype D --json` files (one a
dtype; `gpu_session.sh tunebatch benchbatch decodebatch` writes them) and, optionally, the bf16
decode chain at M = 8 (examples/decode_chain --batch 8). One table a file: tuned / cuBLAS in graph
mode for each shape (rows) and M (columns), eager in brackets where it is the lower, and the
geometric mean a column.

Bars (issue 11), each printed as met or missed, with what misses it:
  every-shape   bf16 and fp16, M = 2, 4, 8, 16: >= 1.0x cuBLAS, graph and eager
  mid-shapes    bf16 and fp16, 4096x4096, 1024x4096, 6144x4096 at every M: >= 1.2x (graph)
  geomean       bf16 and fp16, each M: geometric mean over the file's shapes >= 1.2x (graph)
  batch-free    14336x4096, 28672x4096, 4096x14336, 128256x4096: time(M = 8) <= 1.10 time(M = 1),
                time(M = 16) <= 1.15 time(M = 1)
  fp32          fp32, every M: >= 1.0x cuBLAS (graph)
  chain         bf16 chain at M = 8: >= 4100 GB/s and >= 1.12x cuBLAS's chain (--chain)
Also printed, not issue 11's bars and not counted by --check: issue 14's untuned rule (>= 0.95x
cuBLAS, graph) at every M, as `also untuned` (bench's "untuned" row where it has one, the
nearest tuned shape's config; else its "default") and `also empty-cache` (the "default" row: the
analytic default a server with nothing tuned runs).
With --check the exit status is 1 when a bar is missed, 2 for unreadable input. Standard library only.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_summary import BadInput, geomean, read_chain, read_json, require_rows, rows_of  # noqa: E402  (one reader of bench --json)

EVERY_SHAPE_X, MID_X, GEOMEAN_X, FP32_X = 1.0, 1.2, 1.2, 1.0
UNTUNED_X = 0.95  # issue 14's
MID_SHAPES = ("4096x4096", "1024x4096", "6144x4096")
BATCH_FREE = {"14336x4096", "28672x4096", "4096x14336", "128256x4096"}
BATCH_FREE_RATIO = {8: 1.10, 16: 1.15}
CHAIN_GBPS, CHAIN_X = 4100.0, 1.12


def read_rows(path):
    rows = rows_of(read_json(path), os.path.basename(path))
    if rows and rows[0]["weights"] != "dense":
        raise BadInput(f"{path}: {rows[0]['weights']} weights; issue 11's bars are for dense bf16, fp16 and fp32")
    return rows


def geomeans_by_m(rows):
    """{M: geometric mean of tuned / cuBLAS (graph)}, M ascending."""
    return {m: geomean([r["tuned_x"] for r in rows if r["m"] == m]) for m in sorted({r["m"] for r in rows})}


def check(rows):
    """{bar: [checked count, [misses]]} over the rows of one dtype."""
    bars = {}

    def bar(name, ok, what):
        entry = bars.setdefault(name, [0, []])
        entry[0] += 1
        if not ok:
            entry[1].append(what)

    dtype = rows[0]["dtype"]
    by_key = {(r["shape"], r["m"]): r for r in rows}
    for r in rows:
        what = f"{dtype} {r['shape']} M={r['m']}"
        for name, x in (("untuned", r["untuned_x"]), ("empty-cache", r["default_x"])):
            if x is not None:
                bar(name, x >= UNTUNED_X, f"{what} {x:.3f}x")
        if dtype == "fp32":
            bar("fp32", r["tuned_x"] >= FP32_X, f"{what} {r['tuned_x']:.3f}x")
            continue
        if r["m"] > 1:
            worst = min(x for x in (r["tuned_x"], r["tuned_eager_x"]) if x is not None)
            bar("every-shape", worst >= EVERY_SHAPE_X, f"{what} {worst:.3f}x")
        if r["shape"] in MID_SHAPES:
            bar("mid-shapes", r["tuned_x"] >= MID_X, f"{what} {r['tuned_x']:.3f}x")
        base = by_key.get((r["shape"], 1))
        if r["shape"] in BATCH_FREE and r["m"] in BATCH_FREE_RATIO and base is not None:
            ratio = r["tuned_us"] / base["tuned_us"]
            bar("batch-free", ratio <= BATCH_FREE_RATIO[r["m"]], f"{what} {ratio:.3f} x time(M=1)")
    if dtype != "fp32":
        for m, g in geomeans_by_m(rows).items():
            bar("geomean", g >= GEOMEAN_X, f"{dtype} M={m} {g:.3f}x")
    return bars


def render_table(rows):
    ms = sorted({r["m"] for r in rows})
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    by_key = {(r["shape"], r["m"]): r for r in rows}
    out = [f"{rows[0]['dtype']} ({rows[0]['file']}), tuned / cuBLAS in graph mode (eager in brackets where lower):", "",
           "| shape | " + " | ".join(f"M = {m}" for m in ms) + " |", "| --- |" + " --- |" * len(ms)]
    for s in shapes:
        cells = []
        for m in ms:
            r = by_key.get((s, m))
            if r is None:
                cells.append("-")
                continue
            cell = f"{r['tuned_x']:.2f}"
            if r["tuned_eager_x"] is not None and r["tuned_eager_x"] < r["tuned_x"]:
                cell += f" ({r['tuned_eager_x']:.2f})"
            cells.append(cell)
        out.append(f"| {s} | " + " | ".join(cells) + " |")
    out.append("| geometric mean | " + " | ".join(f"{g:.2f}" for g in geomeans_by_m(rows).values()) + " |")
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="gemvtune bench --batch ... --json outputs, one a dtype")
    p.add_argument("--chain", help="examples/decode_chain --batch 8 output (bf16)")
    p.add_argument("--check", action="store_true", help="exit 1 when a bar is missed")
    args = p.parse_args(argv)
    try:
        files = [read_rows(path) for path in args.files]
        chain = read_chain(args.chain) if args.chain else None
        files = [rows for rows in files if rows]
        require_rows(files, args.files)
    except BadInput as e:
        print(f"batch_summary: {e}", file=sys.stderr)
        return 2
    bars = {}
    for rows in files:
        sys.stdout.write(render_table(rows) + "\n")
        for name, (count, misses) in check(rows).items():
            entry = bars.setdefault(name, [0, []])
            entry[0] += count
            entry[1] += misses
    texts = {
        "every-shape": f"bf16/fp16, M = 2-16, >= {EVERY_SHAPE_X}x cuBLAS graph and eager",
        "mid-shapes": f"{', '.join(MID_SHAPES)} >= {MID_X}x at every M",
        "geomean": f"geometric mean >= {GEOMEAN_X}x at each M",
        "batch-free": "time(M=8) <= 1.10, time(M=16) <= 1.15 x time(M=1) on the four large shapes",
        "fp32": f"fp32 >= {FP32_X}x at every M",
    }
    also = {
        "untuned": f"the nearest tuned shape's config, else the default, >= {UNTUNED_X}x cuBLAS",
        "empty-cache": f"the analytic default alone, nothing tuned, >= {UNTUNED_X}x cuBLAS",
    }
    missed = False
    for kind, named in (("bar", texts), ("also", also)):  # only issue 11's bars decide --check
        for name, text in named.items():
            if name not in bars:
                continue
            count, misses = bars[name]
            missed |= kind == "bar" and bool(misses)
            print(f"{kind} {name} ({text}): {count - len(misses)}/{count} met"
                  + (f"; missed by {', '.join(misses)}" if misses else ""))
    if chain is not None:
        ms, gbps, cublas_ms = chain
        ok = gbps >= CHAIN_GBPS and cublas_ms / ms >= CHAIN_X
        missed |= not ok
        print(f"bar chain (M = 8 chain >= {CHAIN_GBPS:.0f} GB/s and >= {CHAIN_X}x cuBLAS's): {gbps:.0f} GB/s, "
              f"{cublas_ms / ms:.3f}x, " + ("met" if ok else "missed"))
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
