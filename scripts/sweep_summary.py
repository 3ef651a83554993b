#!/usr/bin/env python3
"""A markdown table of one or more `gemvtune bench --json` files, against issue 14's bars.

    python3 scripts/sweep_summary.py bench_families.json [more.json ...] [--check]

One row per (file, shape, M): the weights' size in MiB (bf16/fp16/fp32 dense: N x K x element
size; quantized: the bytes the tuned kernel reads per call), the tuned kernel's and cuBLAS's
microseconds per call in graph mode, tuned / cuBLAS and untuned / cuBLAS (bench's "untuned"
variant where it has one: the nearest other tuned shape's config, what a server runs for a
shape with no entry of its own; else its "default" variant: the analytic default config, what a
shape with no cache entry and no tuned neighbour runs), default / cuBLAS (the "default" variant
alone: what a server with an empty cache runs), and the tuned kernel's share of the read
ceiling bench measured. A last column names the bars a row misses:

  tuned        tuned / cuBLAS < 1.05
  untuned      untuned default / cuBLAS < 0.95
  empty-cache  default / cuBLAS < 0.95 (issue 14's untuned bar read as "nothing tuned at all")
  few-row      bf16, N < 64 and K about 8192 (6144..10240), tuned > 2.5 us per call
  k3-ceiling   K = 3 (mod 8) and about 33 MB of weights (25..45 MB), tuned < 80% of the ceiling

Then geometric means and a count of the rows missing each bar. With --check the exit status is
1 when a row misses a bar (2 for unreadable input). Only the standard library is needed.
"""

import argparse
import json
import math
import os
import re
import sys

TUNED_BAR = 1.05
UNTUNED_BAR = 0.95
FEW_ROW_US = 2.5
FEW_ROW_N = 64
FEW_ROW_K = (6144, 10240)
K3_CEILING_PCT = 80.0
K3_BYTES = (25e6, 45e6)
ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
BAR_NAMES = ("tuned", "untuned", "empty-cache", "few-row", "k3-ceiling")


class BadInput(Exception):
    pass


def require_rows(rows, files):
    """BadInput where the bench files held no rows: the summaries' one rule for empty input."""
    if not rows:
        raise BadInput("no rows in " + ", ".join(files))


def read_json(path):
    """The JSON document at path; BadInput naming the file where it cannot be read or parsed."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: {e}") from None


def _variant(entry, name):
    for v in entry.get("variants", []):
        if v.get("variant") == name:
            return v
    return None


def rows_of(doc, label):
    """The rows of one bench --json document (a dict)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("shapes"), list):
        raise BadInput(f"{label}: not a gemvtune bench --json document (no 'shapes' list)")
    dtype = doc.get("dtype", "bf16")
    weights = doc.get("weights", "dense")
    ceiling = doc.get("ceiling_gbps")
    rows = []
    for entry in doc["shapes"]:
        try:
            n, k = (int(x) for x in entry["shape"].lower().split("x"))
            m = int(entry.get("batch", 1))
        except (KeyError, ValueError, AttributeError) as e:
            raise BadInput(f"{label}: bad shape entry {entry!r}: {e}") from None
        tuned, cublas = _variant(entry, "tuned"), _variant(entry, "cuBLAS")
        analytic = _variant(entry, "default")
        default = _variant(entry, "untuned") or analytic
        if tuned is None or cublas is None:
            raise BadInput(f"{label}: {entry['shape']} at M = {m} lacks the tuned or the cuBLAS variant")
        if weights == "dense" and dtype in ELEMENT_BYTES:
            weight_bytes = n * k * ELEMENT_BYTES[dtype]
        else:  # quantized: what the tuned kernel reads (GB/s x us = kB)
            weight_bytes = tuned["graph_gbps"] * tuned["graph_us"] * 1e3
        pct = tuned.get("pct_of_ceiling")
        if pct is None and ceiling:
            pct = 100 * tuned["graph_gbps"] / ceiling
        row = {
            "file": label, "shape": f"{n}x{k}", "n": n, "k": k, "m": m, "dtype": dtype, "weights": weights,
            "bytes": weight_bytes, "tuned_us": tuned["graph_us"], "cublas_us": cublas["graph_us"],
            "tuned_x": cublas["graph_us"] / tuned["graph_us"],
            "tuned_eager_x": (cublas["eager_us"] / tuned["eager_us"]
                              if tuned.get("eager_us") and cublas.get("eager_us") else None),
            "untuned_x": cublas["graph_us"] / default["graph_us"] if default else None,
            "default_x": cublas["graph_us"] / analytic["graph_us"] if analytic else None,
            "pct": pct, "source": entry.get("source", ""),
        }
        row["fails"] = failed_bars(row)
        rows.append(row)
    return rows


def read_chain(path):
    """(gemvtune's PDL chain ms, its GB/s, cuBLAS's chain ms) from examples/decode_chain's output."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise BadInput(f"{path}: {e}") from None
    ours = re.search(r"gemvtune, PDL\s+([\d.]+) ms\s+([\d.]+) GB/s", text)
    theirs = re.search(r"^\s*cuBLAS\s+([\d.]+) ms", text, re.M)
    if not ours or not theirs:
        raise BadInput(f"{path}: no 'gemvtune, PDL' and 'cuBLAS' chain lines")
    return float(ours.group(1)), float(ours.group(2)), float(theirs.group(1))


def failed_bars(row):
    """The names of the bars this row misses."""
    fails = []
    if row["tuned_x"] < TUNED_BAR:
        fails.append("tuned")
    if row["untuned_x"] is not None and row["untuned_x"] < UNTUNED_BAR:
        fails.append("untuned")
    if row["default_x"] is not None and row["default_x"] < UNTUNED_BAR:
        fails.append("empty-cache")
    if (row["dtype"] == "bf16" and row["n"] < FEW_ROW_N and FEW_ROW_K[0] <= row["k"] <= FEW_ROW_K[1]
            and row["tuned_us"] > FEW_ROW_US):
        fails.append("few-row")
    if (row["k"] % 8 == 3 and K3_BYTES[0] <= row["bytes"] <= K3_BYTES[1] and row["pct"] is not None
            and row["pct"] < K3_CEILING_PCT):
        fails.append("k3-ceiling")
    return fails


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _fmt(x, spec, missing="-"):
    return missing if x is None else format(x, spec)


def _mib(b):
    mib = b / 2**20
    return f"{mib:.2f}" if mib < 10 else f"{mib:.1f}" if mib < 100 else f"{mib:.0f}"


def render(rows):
    """The markdown table and the summary lines, as one string."""
    several = len({r["file"] for r in rows}) > 1
    head = (["file"] if several else []) + ["shape (N x K)", "MiB", "M", "tuned us", "cuBLAS us", "tuned / cuBLAS",
                                            "untuned / cuBLAS", "default / cuBLAS", "% of read ceiling", "misses"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for r in rows:
        cells = ([r["file"]] if several else []) + [
            r["shape"], _mib(r["bytes"]), str(r["m"]), f"{r['tuned_us']:.2f}", f"{r['cublas_us']:.2f}",
            f"{r['tuned_x']:.2f}x", _fmt(r["untuned_x"], ".2f") + ("x" if r["untuned_x"] is not None else ""),
            _fmt(r["default_x"], ".2f") + ("x" if r["default_x"] is not None else ""),
            _fmt(r["pct"], ".1f"), ("**" + ", ".join(r["fails"]) + "**") if r["fails"] else ""]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for m in sorted({r["m"] for r in rows}):
        at_m = [r for r in rows if r["m"] == m]
        gt, gu = geomean([r["tuned_x"] for r in at_m]), geomean([r["untuned_x"] for r in at_m])
        lines.append(f"M = {m}: {len(at_m)} rows, geometric mean tuned {_fmt(gt, '.3f')}x cuBLAS, "
                     f"untuned {_fmt(gu, '.3f')}x")
    bars = {"tuned": f">= {TUNED_BAR}x cuBLAS tuned", "untuned": f">= {UNTUNED_BAR}x cuBLAS untuned",
            "empty-cache": f">= {UNTUNED_BAR}x cuBLAS on the analytic default, nothing tuned",
            "few-row": f"N < {FEW_ROW_N}, K ~ 8192 (bf16) <= {FEW_ROW_US} us",
            "k3-ceiling": f"~33 MB with K = 3 (mod 8) >= {K3_CEILING_PCT:.0f}% of the read ceiling"}
    applies = {"few-row": lambda r: r["dtype"] == "bf16" and r["n"] < FEW_ROW_N and FEW_ROW_K[0] <= r["k"] <= FEW_ROW_K[1],
               "k3-ceiling": lambda r: r["k"] % 8 == 3 and K3_BYTES[0] <= r["bytes"] <= K3_BYTES[1],
               "untuned": lambda r: r["untuned_x"] is not None,
               "empty-cache": lambda r: r["default_x"] is not None}
    for name in BAR_NAMES:
        checked = [r for r in rows if applies.get(name, lambda r: True)(r)]
        missed = [r for r in checked if name in r["fails"]]
        what = ", ".join(f"{r['shape']} M={r['m']}" for r in missed[:8]) + (" ..." if len(missed) > 8 else "")
        if not checked:
            lines.append(f"bar {name} ({bars[name]}): no row of that kind")
            continue
        lines.append(f"bar {name} ({bars[name]}): {len(checked) - len(missed)}/{len(checked)} rows meet it"
                     + (f"; missed by {what}" if missed else ""))
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="gemvtune bench --json outputs")
    p.add_argument("--check", action="store_true", help="exit 1 when a row misses a bar")
    args = p.parse_args(argv)
    rows = []
    try:
        for path in args.files:
            rows += rows_of(read_json(path), os.path.basename(path))
        require_rows(rows, args.files)
    except BadInput as e:
        print(f"sweep_summary: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(render(rows))
    return 1 if args.check and any(r["fails"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
