"""Compares gemvtune-sweep CSVs of two builds timed in one lease: DIR/{,d}sweep_{new,base,new2}.csv
(new2: the new build again after the base, to bracket drift). Prints, per shape and family (int4
tensor-core kernels with and without the ring; dense), the best time of each run and the median
ratios new/base and new2/base over the configs both timed (one run each: no run gets the better
of two)."""
import csv
import sys

d = sys.argv[1]


def load(name):
    out = {}
    try:
        with open(f"{d}/{name}.csv") as f:
            for r in csv.DictReader(f):
                out[(r["shape"], r["config"])] = float(r["us"])
    except FileNotFoundError:
        pass
    return out


for pre in ("sweep", "dsweep"):
    new, base, new2 = load(pre + "_new"), load(pre + "_base"), load(pre + "_new2")
    for shape in sorted({s for s, _ in base}):
        for fam in ("plain", "ring"):
            keys = [k for k in base if k[0] == shape and k in new and k[1].endswith("_ring") == (fam == "ring")]
            if not keys:
                continue
            def best(run):
                k = min((k for k in keys if k in run), key=run.get)
                return f"{run[k]:.2f} ({k[1]})"

            def median(run):
                r = sorted(run[k] / base[k] for k in keys if k in run)
                return f"{r[len(r) // 2]:.3f}" if r else "-"

            print(f"{pre} {shape} {fam}: base {best(base)} new {best(new)} new2 {best(new2) if new2 else '-'}; "
                  f"median new/base {median(new)}, new2/base {median(new2)} over {len(keys)}")
