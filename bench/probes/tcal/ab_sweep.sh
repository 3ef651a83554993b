#!/usr/bin/env bash
# Same-lease A/B of two packs' tensor-core al kernels (bench/probes/al_loose/ab.sh on listed
# configs), then NEW's sweep of every al config (CUDA cores and tensor cores) of 4097x4099 at
# M = 2, 4, 8, 16 with cuBLAS beside: the data for the model's al terms.
# OLD=build-gpu/old NEW=build-gpu/q OUT=$OUT bench/probes/tcal/ab_sweep.sh
# Everything comes back as $OUT/tcal_ab_sweep.tgz: the device tool returns at most 8 files, and
# on 2026-12-06 the sweep's CSV was left behind with the A/B's eight.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
CONFIGS=${CONFIGS:-tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8,tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_al_m8,tc_t256_r2_kw4_v16_u2_sk1_cs_pdl_al_m8,tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m16,tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_al_m16,tc_t128_r1_kw4_v16_u1_sk2_cs_pdl_al_m16,tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_al_m16,tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m8,tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m16} \
SHAPES=${SHAPES:-"8x4097x4099 16x4097x4099 8x4096x4093 16x4096x4093 8x4096x4096 16x4096x4096"} \
  ROUNDS=${ROUNDS:-2} timeout ${AB_S:-200} bench/probes/al_loose/ab.sh 2>&1 | tail -40
grep -h "WRONG" "$OUT"/al_ab/*.log | head
if [ -n "${SWEEP:-1}" ]; then
  mkdir -p "$OUT/sweep"
  GEMVTUNE_SWEEP_FILTER=_al_m timeout ${SWEEP_S:-300} "$NEW/bench/gemvtune-sweep" "$OUT/sweep/al_4097x4099.csv" bf16 \
    2x4097x4099 4x4097x4099 8x4097x4099 16x4097x4099 > "$OUT/sweep/al_4097x4099.log" 2>&1
  echo "sweep exit $?"; grep -E "^==|WRONG" "$OUT/sweep/al_4097x4099.log" | head -20
  python3 - "$OUT/sweep/al_4097x4099.csv" << 'PY'
import csv, sys, collections
best = collections.defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    if r.get("shape") == "shape": continue
    fam = "tc_al" if r["config"].startswith("tc_") else "cc_al"
    best[(r["shape"], fam)].append((float(r["us"]), r["config"]))
for k in sorted(best):
    v = sorted(best[k])
    print(k[0], k[1], len(v), "best", v[0], "median", v[len(v) // 2][0])
PY
fi
parts=$(cd "$OUT" && ls -d al_ab sweep 2> /dev/null)
[ -n "$parts" ] && tar czf "$OUT/tcal_ab_sweep.tgz" -C "$OUT" $parts && (cd "$OUT" && rm -rf $parts)
