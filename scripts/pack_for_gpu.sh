#!/usr/bin/env bash
# Copies what a GPU session runs out of a build folder into a folder small enough to carry to the
# lent GPU machine (the device tool carries at most 64 MiB; a whole build folder is more): the
# CLI, the library, the examples, the sweep tool and every test binary, in the build's layout,
# stripped. Then on the GPU machine: BUILD=DEST scripts/gpu_session.sh STEP...
# Usage: scripts/pack_for_gpu.sh [BUILD (default build)] [DEST (default build-gpu/h)] [TEST...]
# With TEST names (test_gemv_gpu ...) only those test binaries go, and with the one name `none`
# no test binary (the CLI, library, examples and sweep tool: 11 MiB, room to carry
# .carry/gemlite_pkg and .carry/pylib beside it): the device tool's 64 MiB counts the working
# tree too (37 MiB on 2026-12-06), so a whole pack does not fit beside it. The script prints
# tree + pack, warns past 60 MiB and fails past 64 (du rounds each up, so the sum errs high).
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
if [ $# -eq 1 ] && [ "$1" = none ]; then
  :  # no test binary
elif [ $# -gt 0 ]; then
  for t in "$@"; do cp "$B/tests/$t" "$D/tests/" || { echo "pack_for_gpu: no test binary $B/tests/$t" >&2; exit 2; }; done
else
  for f in "$B"/tests/test_*; do [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$D/tests/"; done
fi
# Symbols are not needed there; stripping halves what travels.
find "$D" -type f -exec strip --strip-unneeded {} +
size=$(du -sm "$D" | cut -f1)
# What travels besides: the files git tracks and the untracked ones it does not ignore.
tree=0
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2> /dev/null | tail -1 | cut -f1)
  tree=$(( (tree + 1048575) / 1048576 ))
fi
echo "packed $B into $D: ${size} MiB (with the ${tree} MiB working tree: $((size + tree)) of the 64 MiB the device tool carries)"
if [ $((size + tree)) -gt 64 ]; then
  echo "pack_for_gpu: ${size} MiB + ${tree} MiB of working tree is more than the 64 MiB the device tool carries: name fewer test binaries" >&2
  exit 1
elif [ $((size + tree)) -gt 60 ]; then
  echo "pack_for_gpu: warning: ${size} MiB + ${tree} MiB of working tree leaves little of the 64 MiB for anything else carried (.carry/...)" >&2
fi
