#!/usr/bin/env bash
# Checks the model's register table for the tensor cores' al kernel (tuner/model.cpp) against the
# GPU: every tensor-core al config of three misaligned shapes, M = 16 and 8 first, then 2 and 4
# (bench/gemvtune-sweep, CSV with the sweep build's model_us; rank offline with the CLI's model),
# then `bench` at M = 8 and 16 from an empty cache (tuned and default rows against cuBLAS).
#   OUT=$OUT bench/probes/tcal/al_model.sh   (carry a pack of the CLI and sweep, e.g. build-gpu/a)
set -u
B=${BUILD:-build-gpu/a}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "commit $(git rev-parse --short HEAD 2>/dev/null)"
GEMVTUNE_SWEEP_FILTER="tc_+_al_m" timeout "${SWEEP_S:-330}" "$B/bench/gemvtune-sweep" "${OUT:?}/al_sweep.csv" bf16 \
  16x4096x4093 16x4097x4099 16x11008x4095 8x4096x4093 8x4097x4099 8x11008x4095 2x4097x4099 4x4097x4099 \
  > "$OUT/al_sweep.log" 2>&1
echo "sweep exit $? ($(($(wc -l < "$OUT/al_sweep.csv") - 1)) rows)"
grep -E "^==|^  " "$OUT/al_sweep.log" | head -60
rm -f /tmp/al_model.sqlite*
timeout "${BENCH_S:-150}" "$B/cli/gemvtune" bench --shape 4097x4099 --shape 4096x4093 --shape 11008x4095 --batch 8,16 \
  --db /tmp/al_model.sqlite > "$OUT/bench.txt" 2>&1
echo "bench exit $?"
grep -E "tuned |default |cuBLAS " "$OUT/bench.txt" | grep -v "no PDL"
