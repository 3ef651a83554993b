#!/usr/bin/env python3
"""Does a variant of each config pay? A table from gemvtune-sweep CSVs that time configs in pairs.

    python3 scripts/spread_summary.py sweep.csv [more.csv ...]
    python3 scripts/spread_summary.py --pair capped sweep.csv [...]

By default the pairs are a sweep's with GEMVTUNE_SWEEP_SPREAD=1, which times every config twice
in a row: as the block scheduler places it (row CONFIG) and with jit::Placement::spread (row
CONFIG+spread). With --pair capped they are a config and its register-capped twin (CONFIG_rcN
beside CONFIG, as GEMVTUNE_SWEEP_CONFIGS lists them; "spread" below then reads "capped"). One
row per (shape, dtype): the configs
timed both ways, the fastest of each way and their ratio, the geometric mean of spread / plain
over every config, over the configs the spread changed by more than 3% either way, and the count
of those faster and slower, then the largest gain. Where a grid is more than a wave (or an SM
holds no more than the cap anyway) both launches are the same, so the spread of the ratio around
1 there is the noise. Only the standard library is needed.
"""

import argparse
import csv
import math
import re
import sys
from collections import defaultdict

SUFFIX = "+spread"
CHANGED = 0.03


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


CAP = re.compile(r"_rc\d*(?=_m\d+$|$)")


def partner(config, pair):
    """(the plain config's name, whether `config` is the variant)."""
    if pair == "capped":
        plain = CAP.sub("", config)
        return plain, plain != config
    if config.endswith(SUFFIX):
        return config[: -len(SUFFIX)], True
    return config, False


def read(paths, pair="spread"):
    """{(shape, dtype): {config: [plain us, variant us]}}; a config timed in several rounds (files)
    gets the mean of its times."""
    times = defaultdict(lambda: defaultdict(lambda: ([], [])))
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                config, variant = partner(row["config"], pair)
                times[(row["shape"], row["dtype"])][config][1 if variant else 0].append(float(row["us"]))
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {key: {c: [mean(p), mean(v)] for c, (p, v) in configs.items()} for key, configs in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="gemvtune-sweep output files")
    ap.add_argument("--pair", choices=["spread", "capped"], default="spread",
                    help="what each config is paired with: its +spread row (default) or its _rcN twin")
    args = ap.parse_args()
    try:
        data = read(args.csv, args.pair)
    except (OSError, KeyError, ValueError) as e:
        print(f"spread_summary: cannot read the sweep: {e}", file=sys.stderr)
        return 2
    v = args.pair
    print(f"| shape | dtype | configs | best plain us | best {v} us | best {v} / plain | all: {v} / plain |"
          f" changed > 3%: {v} / plain | faster | slower | largest gain |")
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
          f"geometric mean {v} / plain {geomean(all_changed):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
