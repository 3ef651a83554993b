#!/usr/bin/env bash
# Tensor cores on misaligned rows (templates/gemv_tcal.cu) on the lent GPU: the aligned-body
# suite at every offset (CUDA cores and tensor cores), then bench of two misaligned shapes and
# their aligned neighbour at M = 1..16, tuned from an empty cache, against cuBLAS.
# OUT=$OUT bench/probes/tcal/run.sh  (carry the suites' pack, build-gpu/h)
set -u
B=${BUILD:-build-gpu/h}
G=$B/cli/gemvtune
DB=/tmp/tcal/cache.sqlite
mkdir -p /tmp/tcal "$OUT"
rm -f "$DB"*
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "commit $(git rev-parse --short HEAD 2>/dev/null)"
timeout ${TEST_S:-200} "$B/tests/test_gemv_gpu" --gtest_filter="${FILTER:-GemvAlignedBody*}" 2>&1 | tee "$OUT/test_al.log" | grep -E "gemvtune\]|OK \]|PASSED|FAILED|Failure" | head -40
timeout ${BENCH_S:-300} "$G" bench --shape 4097x4099 --shape 4096x4093 --shape 4096x4096 --batch ${BATCHES:-1,2,4,8,16} --db "$DB" --json > "$OUT/bench_mis.json" 2> "$OUT/bench_mis.txt"
echo "bench exit $?"
grep -v "^tuning\|^\[" "$OUT/bench_mis.txt" | tail -40
"$G" list --db "$DB" > "$OUT/list.txt" 2>&1; cat "$OUT/list.txt" | head -40
