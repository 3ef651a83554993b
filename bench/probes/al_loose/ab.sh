#!/usr/bin/env bash
# Same-lease A/B of two builds' aligned-body (al) kernels: bench/gemvtune-sweep times the listed
# configs (GEMVTUNE_SWEEP_CONFIGS) on misaligned shapes and 4096x4096, old and new alternating,
# ROUNDS times (default 2). Run on the GPU machine from the repository root:
#   OLD=build-gpu/old NEW=build-gpu/q OUT=$OUT bench/probes/al_loose/ab.sh
# Used on 2026-12-06 for the loose elements' x loaded with the first trip's x (templates/gemv.cu).
set -u
out=${OUT:?}/al_ab; mkdir -p "$out"
configs=${CONFIGS:-t128_r1_kw1_v16_u4_sk1_cs_pdl_al,t256_r1_kw1_v16_u4_sk1_cs_pdl_al,t64_r1_kw1_v16_u4_sk1_cs_pdl_al,t128_r1_kw2_v16_u4_sk1_cs_pdl_al,t128_r1_kw1_v16_u2_sk1_cs_pdl_al,t256_r1_kw1_v16_u8_sk1_cs_pdl_al,t128_r1_kw1_v16_u4_sk1_cs_pdl}
shapes=${SHAPES:-4097x4099 4096x4093 11008x4095 4096x4096 2048x4097}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for b in old new; do
    dir=$([ $b = old ] && echo "${OLD:?}" || echo "${NEW:?}")
    t0=$(date +%s%N)
    GEMVTUNE_SWEEP_CONFIGS=$configs "$dir/bench/gemvtune-sweep" "$out/${b}_$round.csv" bf16 $shapes > "$out/${b}_$round.log" 2>&1
    echo "$b round $round exit $? in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
done
python3 - "$out" << 'PY'
import csv, glob, sys, collections, os
t = collections.defaultdict(list)
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.csv"))):
    b = os.path.basename(f).split("_")[0]
    for r in csv.DictReader(open(f)):
        if r.get("shape") == "shape": continue
        t[(r["shape"], r["config"], b)].append(float(r["us"]))
keys = sorted({(s, c) for s, c, _ in t})
print(f"{'shape':<12} {'config':<40} {'old us':>14} {'new us':>14} {'new/old':>8}")
for s, c in keys:
    o, n = t.get((s, c, "old"), []), t.get((s, c, "new"), [])
    if o and n:
        print(f"{s:<12} {c:<40} {min(o):>7.2f}-{max(o):<6.2f} {min(n):>7.2f}-{max(n):<6.2f} {min(n)/min(o):>8.3f}")
PY
