#!/usr/bin/env bash
# Copies what a GPU session runs out of a build folder into a folder small enough to carry to the
# lent GPU machine (the device tool carries at most 64 MiB; a whole build folder is more): the
# CLI, the library, the examples, the sweep tool and every test binary, in the build's layout,
# stripped. Then on the GPU machine: BUILD=DEST scripts/gpu_session.sh STEP...
# Usage: scripts/pack_for_gpu.sh [BUILD (default build)] [DEST (default build-gpu/h)] [TEST...]
# With TEST names (test_gemv_gpu ...) only those test binaries go: the device tool's 64 MiB
# counts the working tree too (33 MiB on 2026-12-05), so a whole pack does not fit beside it.
set -euo pipefail
B=${1:-build}
D=${2:-build-gpu/h}
shift $(( $# < 2 ? $# : 2 ))
[ -x "$B/cli/gemvtune" ] || { echo "pack_for_gpu: no $B/cli/gemvtune: build first (cmake --build $B)" >&2; exit 2; }
rm -rf "$D"
mkdir -p "$D/cli" "$D/tests" "$D/bench" "$D/examples"
cp "$B/cli/gemvtune" "$D/cli/"
cp "$B/libgemvtune.so" "$D/"
for f in "$B"/examples/*; do [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$D/examples/"; done
for f in "$B"/bench/gemvtune-*; do [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$D/bench/"; done
if [ $# -gt 0 ]; then
  for t in "$@"; do cp "$B/tests/$t" "$D/tests/" || { echo "pack_for_gpu: no test binary $B/tests/$t" >&2; exit 2; }; done
else
  for f in "$B"/tests/test_*; do [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$D/tests/"; done
fi
# Symbols are not needed there; stripping halves what travels.
find "$D" -type f -exec strip --strip-unneeded {} +
size=$(du -sm "$D" | cut -f1)
echo "packed $B into $D: ${size} MiB"
if [ "$size" -gt 60 ]; then echo "pack_for_gpu: $D is ${size} MiB, near the 64 MiB the device tool carries" >&2; exit 1; fi
