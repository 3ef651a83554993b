"""Compares gemvtune-sweep CSVs of two builds timed in one lease: DIR/{,d}sweep_{new,base,new2}.csv
(new2: the new build again after the base, to bracket drift; its better time per config counts).
Prints, per shape and family (int4 tensor-core kernels with and without the ring; dense), the
best time of each build and the median ratio new/base over the configs both timed."""
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
            t_new = {k: min(new[k], new2.get(k, float("inf"))) for k in keys}
            bb = min(keys, key=base.get)
            bn = min(keys, key=t_new.get)
            ratios = sorted(t_new[k] / base[k] for k in keys)
            print(f"{pre} {shape} {fam}: base {base[bb]:.2f} ({bb[1]}) new {t_new[bn]:.2f} ({bn[1]}) "
                  f"best ratio {t_new[bn] / base[bb]:.3f}, median {ratios[len(ratios) // 2]:.3f} over {len(keys)}")
