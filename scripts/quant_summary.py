#!/usr/bin/env python3
"""Issue 12's table: gemvtune's quantized kernels beside the peers of the same run, against its bars.

    python3 scripts/quant_summary.py --peers peers.json bench_int4g128.json bench_int8.json \
        bench_fp8.json [--chain decode_chain_int4g128.txt] [--check]

Inputs: `gemvtune bench --weights W --json` files (int4g128, int8, fp8; any subset) and the JSON of
bench/peers/quant_peers.py from the same lease (`gpu_session.sh benchquant peers decodequant`
writes all of them). One row per (shape, M): gemvtune's tuned time in graph mode and its share of
the read ceiling bench measured, each peer's time, and gemvtune's speed-up over the best peer of
its format. A peer that failed the peers script's float64 check (status WRONG) is shown in
brackets and never counts as the best peer.

Bars (issue 12), each printed as met or missed, with the rows that miss it:
  int4-peers     int4g128, M = 1: >= 1.6x the faster of tinygemm and GemLite W4
  int4-28672     int4g128, M = 1, 28672x4096: <= 17 us
  int4-ceiling   int4g128, M = 1, >= 50 MB read a call: >= 85% of the read ceiling
  8bit-ceiling   int8 and fp8, M = 1, >= 100 MB read a call: >= 90% of the read ceiling
  8bit-peers     int8 and fp8, M = 1: >= 1.15x GemLite of the same format
  m16-peers      M = 16: int4 >= 1.3x the best W4 peer, int8 and fp8 >= 1.1x GemLite's same format
  chain          decode chain with int4g128 weights, M = 1: >= 3.3x the bf16 cuBLAS chain
                 (from examples/decode_chain's output, --chain)
With --check the exit status is 1 when a bar is missed, 2 for unreadable input. Standard library only.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_summary import BadInput, read_chain, read_json, require_rows, rows_of  # noqa: E402  (one reader of bench --json)

FORMATS = ("int4g128", "int8", "fp8")
# The peers of each format, by quant_peers.py's peer names: (name, column label).
PEERS = {
    "int4g128": (("tinygemm_int4_g128", "tinygemm"), ("gemlite_a16w4_g128", "GemLite W4")),
    "int8": (("gemlite_a16w8_int8", "GemLite int8"),),
    "fp8": (("gemlite_a16w8_fp8", "GemLite fp8"),),
}
INT4_PEER_X, INT4_US_28672, INT4_PCT, INT4_MB = 1.6, 17.0, 85.0, 50e6
Q8_PCT, Q8_MB, Q8_PEER_X = 90.0, 100e6, 1.15
M16_X = {"int4g128": 1.3, "int8": 1.1, "fp8": 1.1}
CHAIN_X = 3.3


def bench_rows(paths):
    """{(format, shape, M): row of sweep_summary.rows_of} from bench --json files."""
    rows = {}
    for path in paths:
        doc = read_json(path)
        fmt = doc.get("weights") if isinstance(doc, dict) else None
        if fmt not in FORMATS:
            raise BadInput(f"{path}: weights {fmt!r}, not one of {', '.join(FORMATS)}")
        for r in rows_of(doc, os.path.basename(path)):
            rows[(fmt, r["shape"], r["m"])] = r
    return rows


def peer_times(path):
    """{(peer, shape, M): (us, ok)} from quant_peers.py's JSON; rows that did not run are left out."""
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise BadInput(f"{path}: not a quant_peers.py --json document (no 'results' list)")
    times = {}
    for r in doc["results"]:
        try:
            if r.get("us") is None:
                continue  # failed or skipped: no time
            times[(r["peer"], r["shape"], int(r["m"]))] = (float(r["us"]), r.get("status") == "ok")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BadInput(f"{path}: bad result {r!r}: {e}") from None
    return times


def chain_speedup(path):
    """gemvtune's PDL chain over cuBLAS's from examples/decode_chain's output."""
    ours_ms, _, cublas_ms = read_chain(path)
    return cublas_ms / ours_ms


def summarize(rows, peers):
    """Per (shape, M): each format's row and peers, and the misses of each bar."""
    # The shapes in the order of the bench files (the preset's), M = 1 before M = 16.
    keys = sorted(dict.fromkeys((s, m) for (_, s, m) in rows), key=lambda k: k[1])
    table, misses, checked = [], {}, {}

    def bar(name, ok, what):
        checked[name] = checked.get(name, 0) + 1
        if not ok:
            misses.setdefault(name, []).append(what)

    for shape, m in keys:
        line = {"shape": shape, "m": m, "formats": {}}
        for fmt in FORMATS:
            r = rows.get((fmt, shape, m))
            if r is None:
                continue
            ps = [(label, peers.get((name, shape, m))) for name, label in PEERS[fmt]]
            valid = [t[0] for _, t in ps if t and t[1]]
            x = min(valid) / r["tuned_us"] if valid else None
            line["formats"][fmt] = {"row": r, "peers": ps, "x_best": x}
            what = f"{shape} M={m}"
            if m == 1 and fmt == "int4g128":
                if x is not None:
                    bar("int4-peers", x >= INT4_PEER_X, f"{what} {x:.3f}x")
                if shape == "28672x4096":
                    bar("int4-28672", r["tuned_us"] <= INT4_US_28672, f"{what} {r['tuned_us']:.2f} us")
                if r["bytes"] >= INT4_MB and r["pct"] is not None:
                    bar("int4-ceiling", r["pct"] >= INT4_PCT, f"{what} {r['pct']:.2f}%")
            if m == 1 and fmt != "int4g128":
                if r["bytes"] >= Q8_MB and r["pct"] is not None:
                    bar("8bit-ceiling", r["pct"] >= Q8_PCT, f"{fmt} {what} {r['pct']:.2f}%")
                if x is not None:
                    bar("8bit-peers", x >= Q8_PEER_X, f"{fmt} {what} {x:.3f}x")
            if m == 16 and x is not None:
                bar("m16-peers", x >= M16_X[fmt], f"{fmt} {what} {x:.3f}x")
        table.append(line)
    return table, misses, checked


def render(table, misses, checked, chain=None):
    fmts = [f for f in FORMATS if any(f in line["formats"] for line in table)]
    head = ["shape", "M"]
    for fmt in fmts:
        head += [f"{fmt} us (% ceil)"] + [label for _, label in PEERS[fmt]] + ["x best peer"]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for line in table:
        cells = [line["shape"], str(line["m"])]
        for fmt in fmts:
            f = line["formats"].get(fmt)
            if f is None:
                cells += ["-"] * (2 + len(PEERS[fmt]))
                continue
            r = f["row"]
            cells.append(f"{r['tuned_us']:.2f}" + (f" ({r['pct']:.1f})" if r["pct"] is not None else ""))
            for _, t in f["peers"]:
                cells.append("-" if t is None else f"{t[0]:.2f}" if t[1] else f"({t[0]:.2f} wrong)")
            cells.append("-" if f["x_best"] is None else f"{f['x_best']:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    names = {
        "int4-peers": f"int4g128 M = 1 >= {INT4_PEER_X}x the best W4 peer",
        "int4-28672": f"int4g128 M = 1 28672x4096 <= {INT4_US_28672:g} us",
        "int4-ceiling": f"int4g128 M = 1, >= {INT4_MB / 1e6:g} MB: >= {INT4_PCT:g}% of the read ceiling",
        "8bit-ceiling": f"int8 and fp8 M = 1, >= {Q8_MB / 1e6:g} MB: >= {Q8_PCT:g}% of the read ceiling",
        "8bit-peers": f"int8 and fp8 M = 1 >= {Q8_PEER_X}x GemLite of the same format",
        "m16-peers": "M = 16: int4 >= 1.3x, int8 and fp8 >= 1.1x the best peer",
    }
    for name, text in names.items():
        if name not in checked:
            out.append(f"bar {name} ({text}): no row to check")
            continue
        missed = misses.get(name, [])
        out.append(f"bar {name} ({text}): {checked[name] - len(missed)}/{checked[name]} met"
                   + (f"; missed by {', '.join(missed)}" if missed else ""))
    if chain is not None:
        out.append(f"bar chain (int4g128 decode chain >= {CHAIN_X}x the bf16 cuBLAS chain): {chain:.2f}x, "
                   + ("met" if chain >= CHAIN_X else "missed"))
    return "\n".join(out) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="gemvtune bench --weights W --json outputs (int4g128, int8, fp8)")
    p.add_argument("--peers", required=True, help="bench/peers/quant_peers.py --json output of the same run")
    p.add_argument("--chain", help="examples/decode_chain --weights int4g128 output")
    p.add_argument("--check", action="store_true", help="exit 1 when a bar is missed")
    args = p.parse_args(argv)
    try:
        rows = bench_rows(args.files)
        peers = peer_times(args.peers)
        chain = chain_speedup(args.chain) if args.chain else None
        require_rows(rows, args.files)
    except BadInput as e:
        print(f"quant_summary: {e}", file=sys.stderr)
        return 2
    table, misses, checked = summarize(rows, peers)
    sys.stdout.write(render(table, misses, checked, chain))
    missed = bool(misses) or (chain is not None and chain < CHAIN_X)
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
