#!/usr/bin/env python3
"""Compares two tuning caches given as `gemvtune list --json` outputs (for example one tuned on
one GPU, one on all GPUs of a host): every (gpu, shape, dtype, batch, templates, weights) must have exactly one entry
in each, the same set in both; prints both winners and their time difference.
Usage: compare_tunings.py A.json B.json [--tolerance PCT]   (exit 1 when a check fails)"""
import json
import sys


def entries(path):
    with open(path) as f:
        tuned = json.load(f)["tuned"]
    by_key = {}
    dupes = []
    for e in tuned:
        gpu = e["gpu"]
        key = (f'{gpu["name"]} sm{gpu["sm_count"]}', f'{e["n"]}x{e["k"]}', e["dtype"], e["batch"],
               e["template_version"], e.get("weights", "dense"))  # lists before schema 2 have no weights
        if key in by_key:
            dupes.append(key)
        by_key[key] = e
    return by_key, dupes


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    tolerance = float(argv[argv.index("--tolerance") + 1]) if "--tolerance" in argv else 5.0
    a, dupes_a = entries(argv[1])
    b, dupes_b = entries(argv[2])
    ok = True
    for name, dupes in ((argv[1], dupes_a), (argv[2], dupes_b)):
        for d in dupes:
            print(f"DUPLICATE in {name}: {d}")
            ok = False
    for key in sorted(set(a) ^ set(b)):
        print(f"MISSING in {argv[2] if key in a else argv[1]}: {key}")
        ok = False
    print(f"{'shape':<12} {'dtype':<5} {'A config':<30} {'A us':>8} {'B config':<30} {'B us':>8} {'B/A':>6}")
    for key in sorted(set(a) & set(b)):
        ea, eb = a[key], b[key]
        ratio = eb["time_us"] / ea["time_us"]
        flag = "" if abs(ratio - 1) * 100 <= tolerance else f"  (differs by more than {tolerance}%)"
        print(f"{key[1]:<12} {key[2]:<5} {ea['config']:<30} {ea['time_us']:>8.2f} {eb['config']:<30} {eb['time_us']:>8.2f} "
              f"{ratio:>6.3f}{flag}")
    print(f"{len(a)} entries in A, {len(b)} in B: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
