#!/usr/bin/env bash
# Runs on the lent GPU machine (device tool) from the repository root, with the build folder
# built on the development machine carried along (see README, "Running on a GPU machine").
# Usage: scripts/gpu_session.sh STEP...   Steps: info tests sanitizer runs sweep
# Logs go to $OUT (or ./gpu-out) so they come back with the call.
set -u
B=${BUILD:-build}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export GEMVTUNE_CACHE=${GEMVTUNE_CACHE:-$OUT/cache.sqlite}
for step in "$@"; do
  case $step in
    info)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv
      "$B/cli/gemvtune" info ;;
    tests)
      for t in "$B"/tests/test_*; do
        [ -x "$t" ] || continue
        echo "== $t"; "$t" --gtest_brief=1 2>&1 | tee "$OUT/$(basename "$t").log" | tail -15
      done ;;
    sanitizer)
      GEMVTUNE_TEST_CONFIG_STRIDE=${STRIDE:-7} compute-sanitizer --tool memcheck --error-exitcode 9 \
        "$B/tests/test_gemv_gpu" --gtest_brief=1 2>&1 | tee "$OUT/sanitizer.log" | tail -15
      echo "compute-sanitizer exit: ${PIPESTATUS[0]}" ;;
    runs)
      for s in 1024x4096 4096x4096 6144x4096 14336x4096 28672x4096 4096x14336 128256x4096; do
        "$B/cli/gemvtune" run --shape $s --dtype bf16 2>&1 | tail -4
      done ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
