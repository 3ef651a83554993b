#!/usr/bin/env bash
# Same-lease A/B of the tensor-core al kernel (templates/gemv_tcal.cu) of two or three builds:
# NEW (default build-gpu/h) and, where it is there, NEW2 (build-gpu/new2), each against OLD
# (build-gpu/old): the al suite of tensor cores at every offset on NEW, then
# bench/probes/al_loose/ab.sh on listed configs and shapes (CONFIGS, SHAPES, ROUNDS). Everything
# comes back as $OUT/edge_ab.tgz.   OUT=$OUT bench/probes/tcal/edge_ab.sh
# Used on 2026-12-06 for where a warp reads its edge chunks (edge_regs.patch: the first edge's
# weights in registers before the loop; edge_l1.patch: prefetched to L1, not L2; neither kept)
# and for the turns of a row set's leftover chunks and edges (kept).
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
NEW=${NEW:-build-gpu/h}; NEW2=${NEW2:-build-gpu/new2}; OLD=${OLD:-build-gpu/old}
W=/tmp/edge_ab; rm -rf "$W"; mkdir -p "$W"
timeout ${TEST_S:-200} "$NEW/tests/test_gemv_gpu" --gtest_filter='GemvAlignedBodyGpu.TensorCores*' > "$W/test_al.log" 2>&1
echo "al suite exit $?"; grep -E "^\[  (PASSED|FAILED) |Failure|\[gemvtune\]" "$W/test_al.log" | head -12
export CONFIGS=${CONFIGS:-tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m8,tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_al_m8,tc_t256_r2_kw4_v16_u2_sk1_cs_pdl_al_m8,tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_al_m16,tc_t256_r1_kw4_v16_u2_sk2_cs_pdl_al_m16,tc_t128_r1_kw4_v16_u1_sk2_cs_pdl_al_m16,tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_al_m2,tc_t256_r1_kw8_v16_u4_sk1_cs_pdl_m8,tc_t256_r1_kw8_v16_u2_sk1_cs_pdl_m16}
export SHAPES=${SHAPES:-"2x4097x4099 8x4097x4099 16x4097x4099 8x4096x4093 16x4096x4093 8x4096x4096 16x4096x4096"}
for v in new new2; do
  [ $v = new2 ] && [ ! -d "$NEW2" ] && continue
  mkdir -p "$W/$v"
  n=$([ $v = new ] && echo "$NEW" || echo "$NEW2")
  echo "== old against $v ($n)"
  OLD=$OLD NEW=$n OUT=$W/$v ROUNDS=${ROUNDS:-2} timeout ${AB_S:-150} bench/probes/al_loose/ab.sh 2>&1 | tail -30
  grep -h WRONG "$W/$v"/al_ab/*.log | head -5
done
tar czf "${OUT:?}/edge_ab.tgz" -C /tmp edge_ab
