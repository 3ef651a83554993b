#!/usr/bin/env bash
# Runs on the lent GPU machine (device tool) from the repository root, with the build folder
# built on the development machine carried along (see README, "Running on a GPU machine").
# Usage: scripts/gpu_session.sh STEP...
#   info       nvidia-smi and gemvtune info
#   tests      every test binary (GPU tests included), logs in $OUT
#   sanitizer  the GEMV correctness suite under compute-sanitizer memcheck (every STRIDE-th config)
#   tune       gemvtune tune --preset llama-3.1-8b into a fresh cache, twice (the second does
#              nothing), then query and list
#   bench      gemvtune bench --preset llama-3.1-8b for bf16, fp16 and fp32 (JSON in $OUT)
#   multigpu   after `tune`: the same preset tuned with --devices all into a second fresh cache,
#              wall times of both, then scripts/compare_tunings.py on the two caches
#   quick      the GPU tests that are fast: PDL chain, fused, operands, split-K determinism,
#              tuner, runtime and CLI (full output in $OUT)
#   twintests  the GPU tests of the register-capped CUDA-core twins and of the spread launch
#              alone (what `captwins` and `spread` run before their sweeps), for a short call
#   examples   the 32-layer decode chain and a 16-thread, 60 s server simulation
#   decode     the decode chain alone
#   batchtests the batched correctness suite (both families, M = 2, 3, 8, 13, 16; every
#              STRIDE-th config, default 1) and, with COMPILE_ALL=1 in the environment, the
#              whole-space compile (test_compile_space with GEMVTUNE_COMPILE_ALL=1)
#   tunebatch  gemvtune tune --preset llama-3.1-8b --batch 1,2,4,8,16 into a fresh cache, timed
#   benchbatch gemvtune bench --preset llama-3.1-8b --batch 1,2,4,8,16 for $DTYPES (default bf16)
#   decodebatch the decode chain at each M of $BATCHES (default "1 8"); after benchbatch,
#              scripts/batch_summary.py's tables of issue 11's bars ($OUT/batch_summary.md)
#   quanttests the quantized-weight correctness suite (every format, both quantized families,
#              M = 1, 2, 5, 13; every STRIDE-th config, default 1; GEMVTUNE_TEST_CONFIG_FILTER=tc_
#              in the environment keeps the configs whose name has that text: the int4
#              tensor-core family)
#   benchquant gemvtune bench --preset llama-3.1-8b --weights W --batch $BENCH_BATCHES (default
#              1,16) for W in $WEIGHTS (default int4g128 int8 fp8), JSON in $OUT
#   decodequant the decode chain with each of $WEIGHTS against the bf16 cuBLAS chain; after
#              benchquant and peers, scripts/quant_summary.py's table of issue 12's bars ($OUT/quant_summary.md)
#   python     the Python suite (GPU tests included) against $B/libgemvtune.so, then
#              examples/python/decode_chain.py; pytest comes from $PYLIB if the machine lacks it
#   peers      bench/peers/quant_peers.py (bf16 cuBLAS, tinygemm int4, GemLite W4/W8) at M =
#              $PEER_BATCHES (default 1,16) with GemLite from .carry/gemlite_pkg, extra options in
#              $PEERS_ARGS; table in $OUT/peers.txt, JSON in $OUT/peers.json, progress in $OUT/peers.log
#   profile    Nsight Compute on `gemvtune run` for each "SHAPE WEIGHTS CONFIG [BATCH]" in $PROFILE
#              (entries separated by ';'): speed of light, occupancy, warp stalls, memory; one
#              timed launch each, clocks left alone; full text in $OUT/profile_N.txt
#   chaincontext do picks that tie alone differ after the call before them in a decode step?
#              gemvtune-sweep of every PDL tensor-core config of $CTX_WEIGHTS (default int4g128)
#              at M = 1 on 28672x4096 (after 4096x4096) and 6144x4096 (after 4096x14336), alone
#              and with GEMVTUNE_SWEEP_NEIGHBOR; CSVs in $OUT/ctx_*.csv
#   quantsanitizer the quantized correctness suite under compute-sanitizer memcheck (every
#              STRIDE-th config, default 29)
#   placement  bench/probes/block_placement.cu, compiled there with nvcc: where the scheduler
#              puts the blocks of one-wave grids, alone and in a graph of PDL calls, and how fast
#              1 to 132 SMs stream ($OUT/placement.txt)
#   spread     the spread launch's GPU test, then gemvtune-sweep with GEMVTUNE_SWEEP_SPREAD=1 (each config as scheduled, then with
#              its one-wave grid spread over every SM): the PDL tensor-core space on six batched
#              bf16 pairs rich in one-wave grids, nine CUDA-core configs at M = 1 on five shapes,
#              the int4g128 PDL tensor-core space at M = 1 on 6144x4096 with 28672x4096's
#              balanced twins; CSVs in $OUT/spread_*.csv, scripts/spread_summary.py's table in
#              $OUT/spread.md
#   captwins   the capped twins' GPU test (against float64), then register-capped CUDA-core
#              twins (rcN) beside their plain configs at M = 1, two
#              rounds: the configs round 1 ran with fewer registers and a few near a step, on
#              the preset's six M = 1 shapes below lm_head; scripts/spread_summary.py --pair
#              capped's table in $OUT/captwins.md, CSVs in $OUT/captwins_*.csv
#   batchtwins the CUDA-core configs at M = 2, 4, 8 (bench/probes/batch_twins/mM.txt: each
#              valid t64-t256 config, its register-capped twin where explain offers one, and
#              three tensor-core controls) on 6144x4096 and 14336x4096, two rounds; the capped
#              pairs' table in $OUT/batchtwins.md (M in $TWIN_BATCHES, default "2 4 8")
#   familysweep issue 14's sweep: `tune --shape 256x2048` (1 MiB) alone into a fresh cache, timed;
#              the first 16 shapes of --preset families, then the whole preset (the other 9),
#              timed, into another fresh cache; bench --preset families on it (tuned, untuned
#              default, cuBLAS; $OUT/bench_families.json and .txt) and scripts/sweep_summary.py
#   tinytune   issue 14's 3 s bar: each of $TINY_SHAPES (default five shapes of 1 MB and less)
#              tuned alone by a fresh process into a fresh cache, $TINY_ROUNDS rounds (default
#              2), wall time and phases; then bench of them against cuBLAS ($OUT/tiny_*.txt);
#              TINY_CUDA_CACHE=off compiles everything for real (no driver compute cache),
#              TINY_CLIS="cliA cliB" alternates two builds' CLIs (an A/B of tune time)
#   coldstart  is a fresh machine's first tune a second slower because its memory is touched for the
#              first time? (Not NVRTC's library pages nor the GPU's first use: bench/results/h200.md,
#              2026-12-05 17:36 and 2026-12-06 01:43 UTC.) Meant as the first step of a freshly
#              started machine: `free -m`, $COLD_GIB GiB (default 8) of fresh memory written by one
#              process (numpy, timed), then `tune --shape 256x2048` into a fresh cache three times
#              (wall time and phases). The first at the second's time says it was the memory: on
#              the development VM the first write of 8 GiB took 21 s (2.6 s a GiB; 1 GiB again
#              0.6 s), and a tune's 16 NVRTC compiles hold about 90 MB each. On the H200 on
#              2026-12-06 it did not: 8 GiB in 3.5 s, then 3.63, 1.98, 2.12 s (h200.md).
#              COLD_GIB=0 writes none; COLD_PRE (a command) runs before the tunes (see the step).
# OFFSET=r (default 0) with STRIDE=n makes batchtests, quanttests, sanitizer and quantsanitizer
# check the configs i with i % n == r: runs at r = 0 to n - 1 cover the whole space.
#
# The device tool brings back at most 8 files of its $OUT: point OUT at a folder outside it and
# tar that folder into the tool's $OUT after this script returns (README, "Running on a GPU
# machine"), which also keeps what a step cut by `timeout` left.
set -u
B=${BUILD:-build}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
DB=${DB:-$OUT/cache.sqlite}
G="$B/cli/gemvtune"
# A correctness suite (test binary $1) under compute-sanitizer memcheck with every $3-th config;
# the whole log in $OUT/$2, its end and the exit status printed.
memcheck() {
  GEMVTUNE_TEST_CONFIG_STRIDE=$3 GEMVTUNE_TEST_CONFIG_OFFSET=${OFFSET:-0} compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$B/tests/$1" --gtest_brief=1 2>&1 | tee "$OUT/$2" | tail -8
  echo "compute-sanitizer exit: ${PIPESTATUS[0]}"
}
# Runs a test binary with its whole output in $OUT/$1 (the log to read when something fails),
# then shows the lines matching $2 (at most $3) and the binary's exit status. Piping the binary
# through `tee | grep | head` instead killed it with SIGPIPE once head had its lines: a run with
# many failures, the one whose log matters, lost its log and never finished.
logged() {
  local log=$1 pattern=$2 lines=$3
  shift 3
  "$@" > "$OUT/$log" 2>&1
  local rc=$?
  grep -E "$pattern" "$OUT/$log" | head -"$lines"
  echo "exit $rc"
}
for step in "$@"; do
  echo "===== $step ($(date +%T))"
  case $step in
    info)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv
      "$G" info ;;
    tests)
      for t in "$B"/tests/test_*; do
        [ -x "$t" ] || continue
        echo "== $t"; logged "$(basename "$t").log" "gemvtune\]|PASSED|FAILED|SKIPPED|Failure|ns per" 30 "$t" --gtest_brief=1
      done ;;
    sanitizer)
      memcheck test_gemv_gpu sanitizer.log "${STRIDE:-7}" ;;
    tune)
      rm -f "$DB"*
      /usr/bin/time -f "tune wall time %e s" "$G" tune --preset llama-3.1-8b --db "$DB" 2>&1 | tee "$OUT/tune_one_gpu.log" | tail -14
      /usr/bin/time -f "second tune wall time %e s" "$G" tune --preset llama-3.1-8b --db "$DB" 2>&1 | tail -3
      "$G" query --shape 4096x4096 --db "$DB"
      "$G" list --db "$DB" ;;
    bench)
      for dt in bf16 fp16 fp32; do
        "$G" bench --preset llama-3.1-8b --dtype $dt --db "$DB" --json > "$OUT/bench_$dt.json" 2> "$OUT/bench_$dt.txt"
        echo "exit $?"; grep -v "^tuning\|^\[" "$OUT/bench_$dt.txt" | tail -40
      done ;;
    multigpu)
      ALL_DB="$OUT/cache_all_gpus.sqlite"
      rm -f "$ALL_DB"*
      nvidia-smi -L
      /usr/bin/time -f "tune --devices all wall time %e s" "$G" tune --preset llama-3.1-8b --devices all --db "$ALL_DB" 2>&1 | tee "$OUT/tune_all_gpus.log" | tail -12
      "$G" list --db "$DB" --json > "$OUT/list_one_gpu.json"
      "$G" list --db "$ALL_DB" --json > "$OUT/list_all_gpus.json"
      "$G" list --db "$ALL_DB"
      python3 scripts/compare_tunings.py "$OUT/list_one_gpu.json" "$OUT/list_all_gpus.json" ;;
    quick)
      logged test_gemv_quick.log "OK|PASSED|FAILED|Failure|SKIPPED" 30 \
        "$B/tests/test_gemv_gpu" --gtest_filter='GemvChain*:GemvFused*:GemvOperands*:*Determin*'
      for t in test_tuner_gpu test_runtime; do
        echo "== $t"; logged "$t.log" "gemvtune\]|OK \]|PASSED|FAILED|Failure|SKIPPED|us|ns" 40 "$B/tests/$t"
      done
      # test_cli runs the CLI at the path it was built at unless told where it is now.
      echo "== test_cli"; logged test_cli.log "PASSED|FAILED|Failure|SKIPPED" 20 \
        env GEMVTUNE_TEST_CLI="$(realpath "$G")" "$B/tests/test_cli" --gtest_brief=1 ;;
    decode)
      "$B/examples/decode_chain" --db "$DB" 2>&1 | tee "$OUT/decode_chain.txt" ;;
    twintests)
      logged test_twins_spread.log "gemvtune\]|PASSED|FAILED|Failure|SKIPPED" 16 \
        "$B/tests/test_gemv_batch_gpu" --gtest_filter='BatchGpuTwins.CudaCoreCappedTwins*:SpreadLaunchGpu*' ;;
    batchtests)
      logged test_gemv_batch_gpu.log "gemvtune\]|PASSED|FAILED|Failure" 40 \
        env GEMVTUNE_TEST_CONFIG_STRIDE=${STRIDE:-1} GEMVTUNE_TEST_CONFIG_OFFSET=${OFFSET:-0} "$B/tests/test_gemv_batch_gpu" --gtest_brief=1
      if [ -n "${COMPILE_ALL:-}" ]; then
        GEMVTUNE_COMPILE_ALL=1 "$B/tests/test_compile_space" --gtest_brief=1 2>&1 | tail -5
      fi ;;
    tunebatch)
      rm -f "$DB"*
      /usr/bin/time -f "tune --batch 1,2,4,8,16 wall time %e s" "$G" tune --preset llama-3.1-8b --batch 1,2,4,8,16 --db "$DB" 2>&1 | tee "$OUT/tune_batch.log" | tail -40 ;;
    benchbatch)
      for dt in ${DTYPES:-bf16}; do
        "$G" bench --preset llama-3.1-8b --batch ${BENCH_BATCHES:-1,2,4,8,16} --dtype $dt --db "$DB" --json > "$OUT/bench_batch_$dt.json" 2> "$OUT/bench_batch_$dt.txt"
        echo "exit $?"; grep -v "^tuning\|^\[" "$OUT/bench_batch_$dt.txt" | grep -v "not tuned yet" | tail -60
      done ;;
    python)
      export GEMVTUNE_LIBRARY="$B/libgemvtune.so" GEMVTUNE_CLI="$B/cli/gemvtune" PYTHONPATH="python:${PYLIB:-.carry/pylib}${PYTHONPATH:+:$PYTHONPATH}"
      # The suite needs no third-party plugin, and the machine's own (pytest_timeout in the torch
      # venv) need not load into the pytest carried in $PYLIB: pytest 8.3's addini refused
      # pytest_timeout's "float" option there and the run stopped before any test (2026-12-06).
      export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
      python3 -m pytest -q -rs -p no:cacheprovider tests/python 2>&1 | tee "$OUT/pytest.log" | tail -25
      echo "pytest exit ${PIPESTATUS[0]}"
      python3 examples/python/decode_chain.py --db "$DB" 2>&1 | tee "$OUT/python_decode_chain.txt" | tail -30 ;;
    quanttests)
      logged test_gemv_quant_gpu.log "gemvtune\]|PASSED|FAILED|Failure" 80 \
        env GEMVTUNE_TEST_CONFIG_STRIDE=${STRIDE:-1} GEMVTUNE_TEST_CONFIG_OFFSET=${OFFSET:-0} "$B/tests/test_gemv_quant_gpu" --gtest_brief=1 ;;
    benchquant)
      for w in ${WEIGHTS:-int4g128 int8 fp8}; do
        "$G" bench --preset llama-3.1-8b --weights $w --batch ${BENCH_BATCHES:-1,16} --db "$DB" --json > "$OUT/bench_$w.json" 2> "$OUT/bench_$w.txt"
        echo "exit $?"; grep -v "^tuning\|^\[" "$OUT/bench_$w.txt" | grep -v "not tuned yet" | tail -40
      done ;;
    decodequant)
      for w in ${WEIGHTS:-int4g128 int8 fp8}; do
        "$B/examples/decode_chain" --db "$DB" --weights $w 2>&1 | tee "$OUT/decode_chain_$w.txt"
      done
      # issue 12's table and bars, where benchquant and peers ran before in this session
      if [ -f "$OUT/peers.json" ]; then
        benches=$(ls "$OUT"/bench_int4g128.json "$OUT"/bench_int8.json "$OUT"/bench_fp8.json 2>/dev/null)
        chain=$([ -f "$OUT/decode_chain_int4g128.txt" ] && echo "--chain $OUT/decode_chain_int4g128.txt")
        [ -n "$benches" ] && python3 scripts/quant_summary.py --peers "$OUT/peers.json" $benches $chain | tee "$OUT/quant_summary.md"
      fi ;;
    decodebatch)
      for m in ${BATCHES:-1 8}; do
        "$B/examples/decode_chain" --db "$DB" --batch $m 2>&1 | tee "$OUT/decode_chain_m$m.txt"
      done
      # issue 11's tables and bars, where benchbatch ran before in this session
      benches=$(ls "$OUT"/bench_batch_bf16.json "$OUT"/bench_batch_fp16.json "$OUT"/bench_batch_fp32.json 2>/dev/null)
      chain=$([ -f "$OUT/decode_chain_m8.txt" ] && echo "--chain $OUT/decode_chain_m8.txt")
      [ -n "$benches" ] && python3 scripts/batch_summary.py $benches $chain | tee "$OUT/batch_summary.md" | grep "^bar" ;;
    peers)
      PYTHONPATH=".carry/gemlite_pkg${PYTHONPATH:+:$PYTHONPATH}" python3 bench/peers/quant_peers.py \
        --batch "${PEER_BATCHES:-1,16}" --json "$OUT/peers.json" ${PEERS_ARGS:-} 2> "$OUT/peers.log" | tee "$OUT/peers.txt"
      echo "quant_peers exit ${PIPESTATUS[0]}"; tail -3 "$OUT/peers.log" ;;
    profile)
      n=0
      IFS=';' read -ra specs <<< "${PROFILE:-}"
      for spec in "${specs[@]}"; do
        read -r shape weights config batch <<< "$spec"
        [ -n "$shape" ] || continue
        n=$((n + 1))
        echo "== profile $n: $shape $weights $config M=${batch:-1}"
        ncu --clock-control none --kernel-name regex:gemv --launch-skip 2 --launch-count 1 \
          --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
          --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
          --metrics "$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected selected no_instruction dispatch_stall tex_throttle barrier branch_resolving | sed 's/,$//')" \
          "$G" run --shape "$shape" --weights "$weights" --config "$config" --batch "${batch:-1}" > "$OUT/profile_$n.txt" 2>&1
        echo "ncu exit $?"
        grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit Reg|Issued Ipc|No Eligible|Warp Cycles Per Issued|Active Warps Per|Eligible Warps|L1/TEX Hit|L2 Hit|Mem Busy|Max Bandwidth|graph:|issue_stalled|Issue Slots Busy|Executed Ipc A" "$OUT/profile_$n.txt" | head -45
      done ;;
    chaincontext)
      for pair in "28672x4096 4096x4096" "6144x4096 4096x14336"; do
        read -r shape before <<< "$pair"
        GEMVTUNE_SWEEP_FILTER=tc_+_pdl "$B/bench/gemvtune-sweep" "$OUT/ctx_alone_$shape.csv" \
          bf16:${CTX_WEIGHTS:-int4g128} $shape | tail -10
        GEMVTUNE_SWEEP_NEIGHBOR=$before GEMVTUNE_SWEEP_FILTER=tc_+_pdl "$B/bench/gemvtune-sweep" \
          "$OUT/ctx_after_$shape.csv" bf16:${CTX_WEIGHTS:-int4g128} $shape | tail -11
      done ;;
    quantsanitizer)
      memcheck test_gemv_quant_gpu quant_sanitizer.log "${STRIDE:-29}" ;;
    familysweep)
      FAM_DB="$OUT/cache_families.sqlite"; SMALL_DB="$OUT/cache_small.sqlite"
      rm -f "$FAM_DB"* "$SMALL_DB"*
      /usr/bin/time -f "tune 256x2048 (1 MiB) alone, empty cache: wall time %e s" \
        "$G" tune --shape 256x2048 --db "$SMALL_DB" 2>&1 | tee "$OUT/tune_small.log" | tail -4
      "$G" tune --list-presets | awk '/^families/ {f = 1; next} /^[^ ]/ {f = 0} f {print $1}' > "$OUT/families_all.txt"
      head -16 "$OUT/families_all.txt" > "$OUT/families16.txt"
      /usr/bin/time -f "tune of the first 16 families shapes, empty cache: wall time %e s" \
        "$G" tune --shapes "$OUT/families16.txt" --db "$FAM_DB" 2>&1 | tee "$OUT/tune_families16.log" | tail -20
      /usr/bin/time -f "tune --preset families (the other $(( $(wc -l < "$OUT/families_all.txt") - 16 )) shapes): wall time %e s" \
        "$G" tune --preset families --db "$FAM_DB" 2>&1 | tee "$OUT/tune_families.log" | tail -13
      "$G" bench --preset families --db "$FAM_DB" --json > "$OUT/bench_families.json" 2> "$OUT/bench_families.txt"
      echo "bench exit $?"; grep -E "^gemvtune bench|geometric|not tuned" "$OUT/bench_families.txt"
      python3 scripts/sweep_summary.py "$OUT/bench_families.json" | tee "$OUT/sweep_families.md" ;;
    coldstart)
      free -m | head -2
      if [ "${COLD_GIB:-8}" != 0 ]; then
        /usr/bin/time -f "${COLD_GIB:-8} GiB of fresh memory written: wall time %e s" \
          python3 -c "import numpy as np; a = np.ones(${COLD_GIB:-8} << 30, dtype=np.uint8); print(int(a[::1 << 20].sum()), 'MiB touched')"
      fi
      # COLD_PRE: a command run before the tunes (with $G, the CLI, in its environment), e.g.
      # "$G explain --shape 256x2048 --config t128_r1_kw1_v16_u8_sk1_cs_pdl": one compile and
      # the GPU's first use by the same binary, to tell a first run of the binary from a first
      # run of NVRTC on many threads
      if [ -n "${COLD_PRE:-}" ]; then
        G="$G" /usr/bin/time -f "COLD_PRE: wall time %e s" bash -c "$COLD_PRE" > "$OUT/cold_pre.txt" 2>&1
        tail -2 "$OUT/cold_pre.txt"
      fi
      for round in 1 2 3; do
        rm -f "$OUT/cold.sqlite"*
        /usr/bin/time -f "tune 256x2048 (round $round), empty cache: wall time %e s" \
          "$G" tune --shape 256x2048 --db "$OUT/cold.sqlite" > "$OUT/cold_$round.txt" 2>&1
        grep -E "^time in the jobs|wall time" "$OUT/cold_$round.txt"
      done ;;
    tinytune)
      TINY_DB="$OUT/cache_tiny.sqlite"; rm -f "$TINY_DB"*
      tiny=${TINY_SHAPES:-256x2048 128x4096 256x2047 512x1024 1024x512}
      # TINY_CUDA_CACHE=off: every compile for real (NVRTC 13 otherwise finds kernels compiled
      # before on this machine in the driver's compute cache); TINY_CLIS: CLI binaries to
      # alternate shape by shape (an A/B of two builds), default the one of $B
      cache_env=""; [ "${TINY_CUDA_CACHE:-on}" = off ] && cache_env="CUDA_CACHE_DISABLE=1"
      for round in $(seq "${TINY_ROUNDS:-2}"); do
        for shape in $tiny; do
          for cli in ${TINY_CLIS:-$G}; do
            rm -f "$OUT/tiny.sqlite"*
            tag=$(echo "$cli" | tr '/' '_')
            env $cache_env /usr/bin/time -f "tune $shape alone (round $round, $cli${cache_env:+, $cache_env}), empty cache: wall time %e s" \
              "$cli" tune --shape "$shape" --db "$OUT/tiny.sqlite" > "$OUT/tiny_${shape}_${round}_$tag.txt" 2>&1
            grep -E "^time in the jobs|wall time|measured in" "$OUT/tiny_${shape}_${round}_$tag.txt"
          done
        done
      done
      # bench tunes them on the spot into its own fresh cache
      "$G" bench $(printf -- '--shape %s ' $tiny) \
        --db "$TINY_DB" 2>&1 | tee "$OUT/tiny_bench.txt" | tail -25 ;;
    placement)
      nvcc -O3 -arch=sm_90 -o "$OUT/block_placement" bench/probes/block_placement.cu && \
        "$OUT/block_placement" 2>&1 | tee "$OUT/placement.txt"
      echo "exit ${PIPESTATUS[0]}"; rm -f "$OUT/block_placement" ;;
    spread)
      SW="$B/bench/gemvtune-sweep"
      logged test_spread.log "gemvtune\]|PASSED|FAILED|Failure|SKIPPED" 12 \
        "$B/tests/test_gemv_batch_gpu" --gtest_filter='SpreadLaunchGpu*'
      GEMVTUNE_SWEEP_SPREAD=1 GEMVTUNE_SWEEP_FILTER=tc_+_pdl "$SW" "$OUT/spread_tc.csv" bf16 \
        2x28672x4096 2x6144x4096 8x6144x4096 8x4096x4096 8x1024x4096 16x6144x4096 | grep -v "^SKIPPED" | tail -60
      GEMVTUNE_SWEEP_SPREAD=1 GEMVTUNE_SWEEP_CONFIGS=t256_r1_kw1_v16_u4_sk1_cs_pdl,t256_r1_kw1_v16_u8_sk1_cs_pdl,t128_r2_kw4_v16_u4_sk1_cs_pdl_pf,t128_r2_kw4_v16_u2_sk1_cs_pdl,t64_r1_kw1_v16_u4_sk1_cs_pdl,t128_r1_kw2_v16_u8_sk1_cs_pdl_pf,t256_r4_kw2_v16_u2_sk1_cs_pdl,t256_r2_kw1_v16_u4_sk1_cs_pdl,t128_r1_kw1_v16_u4_sk1_cs_pdl \
        "$SW" "$OUT/spread_m1.csv" bf16 4096x4096 1024x4096 6144x4096 14336x4096 4096x14336 | tail -40
      GEMVTUNE_SWEEP_SPREAD=1 GEMVTUNE_SWEEP_FILTER=tc_+_pdl "$SW" "$OUT/spread_int4.csv" bf16:int4g128 6144x4096 | tail -12
      GEMVTUNE_SWEEP_SPREAD=1 GEMVTUNE_SWEEP_CONFIGS=tc_t448_r1_kw1_v16_u1_sk1_cs_pdl,tc_t480_r1_kw1_v16_u1_sk1_cs_pdl,tc_t224_r1_kw1_v16_u1_sk1_cs_pdl,tc_t512_r1_kw1_v16_u1_sk1_cs_pdl,tc_t256_r1_kw1_v16_u1_sk1_cs_pdl \
        "$SW" "$OUT/spread_int4_twins.csv" bf16:int4g128 28672x4096 | tail -12
      python3 scripts/spread_summary.py "$OUT"/spread_*.csv | tee "$OUT/spread.md" ;;
    batchtwins)
      for m in ${TWIN_BATCHES:-2 4 8}; do
        for round in 1 2; do
          GEMVTUNE_SWEEP_CONFIGS=$(paste -sd, bench/probes/batch_twins/m$m.txt) "$B/bench/gemvtune-sweep" \
            "$OUT/batchtwins_m${m}_$round.csv" bf16 ${m}x6144x4096 ${m}x14336x4096 | grep -v "^SKIPPED" | tail -4
        done
      done
      python3 scripts/spread_summary.py --pair capped "$OUT"/batchtwins_*.csv | tee "$OUT/batchtwins.md" ;;
    captwins)
      logged test_captwins.log "gemvtune\]|PASSED|FAILED|Failure|SKIPPED" 12 \
        "$B/tests/test_gemv_batch_gpu" --gtest_filter='BatchGpuTwins.CudaCoreCappedTwins*'
      pairs=""
      for c in t256_r2_kw1_v16_u4_sk1_cs_pdl:80 t128_r2_kw1_v16_u4_sk1_cs_pdl:80 t64_r2_kw1_v16_u4_sk1_cs_pdl:80 \
               t128_r2_kw4_v16_u2_sk1_cs_pdl:64 t256_r2_kw2_v16_u2_sk1_cs_pdl:64 t128_r2_kw2_v16_u2_sk1_cs_pdl:64 \
               t256_r1_kw1_v16_u8_sk1_cs_pdl:80 t128_r1_kw1_v16_u8_sk1_cs_pdl:80 t128_r1_kw2_v16_u4_sk1_cs_pdl:64 \
               t128_r4_kw1_v16_u2_sk1_cs_pdl:rc t256_r4_kw1_v16_u1_sk1_cs_pdl:80; do
        cap=${c#*:}; [ "$cap" = rc ] && cap=""
        pairs="$pairs,${c%:*},${c%:*}_rc$cap"
      done
      for round in 1 2; do
        GEMVTUNE_SWEEP_CONFIGS=${pairs#,} "$B/bench/gemvtune-sweep" "$OUT/captwins_$round.csv" bf16 \
          6144x4096 4096x4096 1024x4096 14336x4096 4096x14336 28672x4096 | grep -v "^SKIPPED" | tail -30
      done
      python3 scripts/spread_summary.py --pair capped "$OUT"/captwins_*.csv | tee "$OUT/captwins.md" ;;
    examples)
      "$B/examples/decode_chain" --db "$DB" 2>&1 | tee "$OUT/decode_chain.txt"
      "$B/examples/server_sim" --db "$DB" --threads 16 --seconds 60 2>&1 | tail -5 | tee "$OUT/server_sim.txt" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
