#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, with AddressSanitizer and UndefinedBehaviorSanitizer) of
# what gemvtune reads from outside: `import`'s JSON (fuzz_import_test's structured fuzz runs in
# the suite; this one follows coverage), config text, shape files, and the GPTQ/AWQ converters.
# Builds with clang into $BUILD (default build-fuzz), then runs each target for SECONDS (default
# 60) on a copy of its seeds in tests/fuzz/corpus (one process a target, one after another).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   targets: import_json config_text shape_list checkpoint
# A finding stops its target and leaves the input as $BUILD/findings/<target>/crash-*: run the
# target on that file to reproduce it (build-fuzz/tests/fuzz_<target> FILE). Exit 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
B=${BUILD:-build-fuzz}
all="import_json config_text shape_list checkpoint"
usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
seconds=${1:-60}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS must be a whole number > 0, not '$seconds'" >&2; usage >&2; exit 2; }
shift $(( $# > 0 ? 1 : 0 ))
targets=${*:-$all}
for t in $targets; do
  [[ " $all " == *" $t "* ]] || { echo "fuzz.sh: no target '$t' (targets: $all)" >&2; exit 2; }
done
command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang++ (Debian: apt-get install clang)" >&2; exit 2; }
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# --as-needed: as in sanitize_cpu.sh, the driver stub FindCUDAToolkit adds is not wanted.
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DGEMVTUNE_LIBFUZZER=ON -DGEMVTUNE_BUILD_BENCH=OFF -DGEMVTUNE_TEST_WHEEL=OFF \
  -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined -Wl,--as-needed" >/dev/null
cmake --build "$B" -j"$(nproc)" --target $(for t in $targets; do printf 'fuzz_%s ' "$t"; done)
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
found=0
for t in $targets; do
  corpus="$B/corpus/$t" findings="$B/findings/$t"
  mkdir -p "$corpus" "$findings"
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  echo "== fuzz_$t: $seconds s"
  if ! "$B/tests/fuzz_$t" "$corpus" -max_total_time="$seconds" -artifact_prefix="$findings/" \
       -print_final_stats=1 > "$B/findings/$t.log" 2>&1; then
    found=1
    echo "fuzz_$t: FINDING (log $B/findings/$t.log):"
    ls "$findings"
  fi
  grep -E "^#[0-9]+.*(DONE|cov:)" "$B/findings/$t.log" | tail -1 || true
done
exit $found
