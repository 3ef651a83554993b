#!/usr/bin/env bash
# The checks a session owes the H200 at its final commit (issues 11, 12 and 14's bars and the GPU
# suites), as four phases, each one device call under the tool's 10-minute limit. Run on the lent
# machine from the repository root: OUT=$OUT scripts/gpu_lease.sh PHASE
#   bars    the 1 MB tune as the machine's first process, then uncached (tinytune), info,
#           familysweep, tunebatch, benchbatch (bf16), decodebatch: issue 14's and 11's tables
#           (about 160 s on the H200 on 2026-12-06)
#   suites  quick, test_timing_gpu, the batched suite with every 17th config and the quantized one
#           with every 101st (about 400 s)
#   quant   benchquant and python (about 230 s)
#   peers   peers, then decodequant, which prints issue 12's table once benchquant ran (about 320 s)
#   misaligned  the aligned-body suite at every offset (CUDA cores and tensor cores), then bench of
#           4097x4099, 4096x4093 and 4096x4096 at M = 1-16 from an empty cache against cuBLAS
#           (bench/probes/tcal/run.sh; about 110 s on an H100 on 2026-12-06)
# Carry the bench pack (scripts/pack_for_gpu.sh build build-gpu/q none) with .carry/gemlite_pkg and
# .carry/pylib for bars, quant and peers, the suites' pack (... build-gpu/h test_gemv_gpu
# test_tuner_gpu test_runtime test_cli test_timing_gpu test_gemv_batch_gpu test_gemv_quant_gpu)
# for suites and misaligned; both together pass the tool's 64 MiB. The suites' pack holds the CLI
# and the sweep too, so BENCH_PACK=build-gpu/h runs bars from it alone (no .carry needed there). Run the phases on one warm machine, in that
# order: they share one cache and one log folder (/tmp/lease), and each call brings back all of
# it so far as $OUT/lease_PHASE.tgz (caches left out) with the end of the phase's log printed.
# A call that gets another GPU than an H200 runs nothing and says so (the bars are the H200's),
# unless ANY_GPU=1.
set -u
phase=${1:-}
case $phase in bars|suites|quant|peers|misaligned) ;; *) echo "usage: gpu_lease.sh bars|suites|quant|peers|misaligned" >&2; exit 2 ;; esac
command -v nvidia-smi > /dev/null || { echo "gpu_lease: no nvidia-smi: not a GPU machine" >&2; exit 2; }
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "GPU: $gpu; commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown)"
case "$gpu" in
  *H200*) ;;
  *) [ "${ANY_GPU:-0}" = 1 ] || { echo "not an H200: nothing run (ANY_GPU=1 runs anyway)"; exit 0; } ;;
esac
back=${OUT:?OUT must name the device tool\'s output folder}
L=/tmp/lease; mkdir -p "$L/cache"
log="$L/lease_$phase.log"
export DB="$L/cache/cache.sqlite" BUILD=${BENCH_PACK:-build-gpu/q}
# step LIMIT_S STEP...: gpu_session.sh steps with their output in the phase's log, cut at LIMIT_S
step() {
  local limit=$1; shift
  OUT=$L timeout "$limit" scripts/gpu_session.sh "$@" >> "$log" 2>&1
  echo "[$* exit $? at $(date +%T)]" >> "$log"
}
echo "phase $phase from $(date +%T); up $(cut -d' ' -f1 /proc/uptime) s; driver compute cache: $(du -sh ~/.nv/ComputeCache 2>&1 | cut -f1)" >> "$log"
case $phase in
  bars)
    # the first tune of a fresh machine (driver compute cache empty), then every compile for real
    OUT=$L/first TINY_SHAPES=256x2048 TINY_ROUNDS=1 timeout 40 scripts/gpu_session.sh tinytune >> "$log" 2>&1
    TINY_CUDA_CACHE=off TINY_ROUNDS=2 step 90 tinytune
    step 20 info; step 120 familysweep; step 90 tunebatch
    DTYPES=bf16 step 60 benchbatch; step 60 decodebatch ;;
  suites)
    export BUILD=${SUITES_PACK:-build-gpu/h}
    step 150 quick
    GEMVTUNE_TEST_CONFIG_STRIDE=1 timeout 100 "$BUILD/tests/test_timing_gpu" --gtest_brief=1 > "$L/test_timing_gpu.log" 2>&1
    echo "test_timing_gpu exit $?" >> "$log"; grep -E "PASSED|FAILED|Failure" "$L/test_timing_gpu.log" | head -10 >> "$log"
    # The batched suite compiles the tensor cores' al kernels too since 2026-12-06: 170 s cut
    # it on an H100 in its last fp32 cases (every bf16 and fp16 case had passed).
    STRIDE=17 step 240 batchtests; STRIDE=101 step 170 quanttests ;;
  quant)
    step 260 benchquant; PYLIB=.carry/pylib step 120 python ;;
  peers)
    # Without GemLite the table's W4 and W8 columns stay empty and the 8-bit bar has no row: say
    # so first (2026-12-07's H100 run forgot the folder and only the rows' import errors told).
    [ -d .carry/gemlite_pkg ] || echo "gpu_lease: .carry/gemlite_pkg was not carried: GemLite's rows will fail, tinygemm runs alone" | tee -a "$log"
    step 360 peers; step 150 decodequant ;;
  misaligned)
    OUT=$L/misaligned BUILD=${SUITES_PACK:-build-gpu/h} FILTER='GemvAlignedBody*' timeout 400 bench/probes/tcal/run.sh >> "$log" 2>&1
    echo "[misaligned exit $? at $(date +%T)]" >> "$log" ;;
esac
echo "phase $phase to $(date +%T)" >> "$log"
tail -c 9000 "$log"
tar czf "$back/lease_$phase.tgz" --exclude='*.sqlite*' -C "$(dirname "$L")" "$(basename "$L")"
