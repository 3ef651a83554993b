#!/usr/bin/env bash
# The A/B of q4l_warp_local_x_on_657718d.patch (not run: no GPU could be started in session 45,
# and session 48's lease went to the tables). Build the patched tree (the patch applies to
# 8cdae3e as it is), and carry build-gpu/ab with the patched gemvtune-sweep and
# test_gemv_quant_gpu in new/ and the unpatched gemvtune-sweep in old/ (2.2 MiB stripped; session
# 48 left one built from 8cdae3e), then run this from the repository root. Another layout: set
# NEW, OLD and QTEST.
set -u
O=${O:-/tmp/p}; mkdir -p $O
NEW=${NEW:-build-gpu/ab/new/gemvtune-sweep}; OLD=${OLD:-build-gpu/ab/old/gemvtune-sweep}
QTEST=${QTEST:-build-gpu/ab/new/test_gemv_quant_gpu}
SH="4096x4096 4096x14336 1024x4096"
export GEMVTUNE_SWEEP_CONFIGS=tc_t256_r1_kw8_v16_u1_sk1_cs_pdl,tc_t256_r2_kw8_v16_u1_sk1_cs_pdl,tc_t512_r1_kw16_v16_u1_sk1_cs_pdl,tc_t256_r1_kw8_v16_u2_sk1_cs_pdl,tc_t128_r1_kw4_v16_u2_sk1_cs_pdl,tc_t256_r1_kw4_v16_u2_sk1_cs_pdl,tc_t256_r1_kw2_v16_u1_sk4_cs_pdl
check() {
  echo "== correctness (new): int4g128 $1 M=1 whole space ($(date +%T))"
  $QTEST --gtest_brief=1 \
    --gtest_filter="Formats/QuantGpu.WholeSpaceMatchesFloat64/int4g128_$1_M1" > $O/quant_m1_$1.log 2>&1
  echo "exit $?"; grep -E "PASSED|SKIPPED|FAILED|Failure|gemvtune\]" $O/quant_m1_$1.log | head -5
}
for round in 1 2; do
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    echo "== sweep $b round $round ($(date +%T))"
    timeout 35 $bin $O/${b}_$round.csv bf16:int4g128 $SH > $O/${b}_$round.log 2>&1
    echo "exit $? rows $(wc -l < $O/${b}_$round.csv) WRONG $(grep -c WRONG $O/${b}_$round.log)"
  done
done
python3 - "$O" <<'PY'
import csv, sys, math, re, collections
O = sys.argv[1]
t = collections.defaultdict(list)
for b in ("old", "new"):
    for r in (1, 2):
        try:
            for row in csv.DictReader(open(f"{O}/{b}_{r}.csv")):
                if row["us"] and row["us"] != "WRONG":
                    t[(b, row["shape"], row["config"])].append(float(row["us"]))
        except OSError:
            pass
def warp_local(c):
    m = re.match(r"tc_t(\d+)_r\d+_kw(\d+)_", c)
    return m and int(m.group(1)) == 32 * int(m.group(2))
for kind in (True, False):
    rs = collections.defaultdict(list)
    for (b, s, c), v in t.items():
        if b != "new" or bool(warp_local(c)) != kind or "_ring" in c: continue
        o = t.get(("old", s, c))
        if o: rs[s].append(min(v) / min(o))
    for s, r in rs.items():
        g = math.exp(sum(map(math.log, r)) / len(r))
        print(f"{'warp-local' if kind else 'unchanged '} {s}: {len(r)} configs, new/old geomean {g:.3f}, min {min(r):.3f}, max {max(r):.3f}")
for s in sorted({k[1] for k in t}):
    for b in ("old", "new"):
        best = min(((min(v), c) for (bb, ss, c), v in t.items() if bb == b and ss == s and "_ring" not in c), default=None)
        print(f"best {b} {s}: {best}")
PY
check bf16
check fp16
