#!/usr/bin/env python3
"""Does spreading a one-wave grid pay? A table from gemvtune-sweep CSVs run with GEMVTUNE_SWEEP_SPREAD=1.

    python3 scripts/spread_summary.py sweep.csv [more.csv ...]

Such a sweep times every config twice in a row: as the block scheduler places it (row CONFIG)
and with jit::Placement::spread (row CONFIG+spread). One row per (shape, dtype): the configs
timed both ways, the fastest of each way and their ratio, the geometric mean of spread / plain
over every config, over the configs the spread changed by more than 3% either way, and the count
of those faster and slower, then the largest gain. Where a grid is more than a wave (or an SM
holds no more than the cap anyway) both launches are the same, so the spread of the ratio around
1 there is the noise. Only the standard library is needed.
"""

import argparse
import csv
import math
import sys
from collections import defaultdict

SUFFIX = "+spread"
CHANGED = 0.03


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def read(paths):
    """{(shape, dtype): {config: [plain us, spread us]}}"""
    out = defaultdict(lambda: defaultdict(lambda: [None, None]))
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                config = row["config"]
                spread = config.endswith(SUFFIX)
                if spread:
                    config = config[: -len(SUFFIX)]
                out[(row["shape"], row["dtype"])][config][1 if spread else 0] = float(row["us"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="gemvtune-sweep output files")
    args = ap.parse_args()
    try:
        data = read(args.csv)
    except (OSError, KeyError, ValueError) as e:
        print(f"spread_summary: cannot read the sweep: {e}", file=sys.stderr)
        return 2
    print("| shape | dtype | configs | best plain us | best spread us | best spread / plain | all: spread / plain |"
          " changed > 3%: spread / plain | faster | slower | largest gain |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    all_changed = []
    for (shape, dtype), configs in data.items():
        pairs = {c: v for c, v in configs.items() if v[0] and v[1]}
        if not pairs:
            continue
        best_plain = min(pairs.items(), key=lambda kv: kv[1][0])
        best_spread = min(pairs.items(), key=lambda kv: kv[1][1])
        ratios = {c: v[1] / v[0] for c, v in pairs.items()}
        changed = [r for r in ratios.values() if abs(r - 1) > CHANGED]
        all_changed += changed
        gain = min(ratios.items(), key=lambda kv: kv[1])
        print(f"| {shape} | {dtype} | {len(pairs)} | {best_plain[1][0]:.2f} ({best_plain[0]}) | "
              f"{best_spread[1][1]:.2f} ({best_spread[0]}) | {best_spread[1][1] / best_plain[1][0]:.3f} | "
              f"{geomean(list(ratios.values())):.3f} | {geomean(changed):.3f} | "
              f"{sum(r < 1 - CHANGED for r in changed)} | {sum(r > 1 + CHANGED for r in changed)} | "
              f"{gain[0]} {pairs[gain[0]][0]:.2f} -> {pairs[gain[0]][1]:.2f} us |")
    print(f"\nconfigs changed by more than 3% over every shape: {len(all_changed)}, "
          f"geometric mean spread / plain {geomean(all_changed):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
