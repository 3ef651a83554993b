#!/usr/bin/env bash
# The SASS of one generated kernel, on a machine without a GPU: `gemvtune emit` writes the
# config's source, nvcc compiles it for sm_90 as NVRTC does (the same front end and ptxas),
# cuobjdump disassembles it and scripts/sass_loops.py counts each loop's instructions.
# Usage: scripts/sass.sh CONFIG [--dtype bf16] [--weights dense] [--ops]
#   BUILD (default build) holds cli/gemvtune; OUT (default /tmp/gemvtune-sass) gets CONFIG.cu,
#   .cubin and .sass; ptxas' register and spill report is printed first.
# cuobjdump is not in the CUDA toolkit packages the development machines have; PyPI carries it:
#   python3 -m pip download --no-deps nvidia-cuda-cuobjdump -d /tmp/cuda-tools
#   python3 -m zipfile -e /tmp/cuda-tools/nvidia_cuda_cuobjdump-*.whl /tmp/cuda-tools/x
#   chmod +x /tmp/cuda-tools/x/nvidia/*/bin/cuobjdump
# (found there, or on PATH, or at $CUOBJDUMP).
set -eu
[ $# -ge 1 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
config=$1; shift
emit_args=() ops=
while [ $# -gt 0 ]; do
  case $1 in
    --dtype|--weights) emit_args+=("$1" "${2:?$1 needs a value}"); shift 2 ;;
    --ops) ops=--ops; shift ;;
    *) echo "sass.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-build}
out=${OUT:-/tmp/gemvtune-sass}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || ls /tmp/cuda-tools/x/nvidia/*/bin/cuobjdump 2> /dev/null | head -1 || true)}
[ -x "$build/cli/gemvtune" ] || { echo "sass.sh: no $build/cli/gemvtune (build first, or set BUILD)" >&2; exit 1; }
[ -x "$nvcc" ] || { echo "sass.sh: no nvcc on PATH or at /usr/local/cuda/bin" >&2; exit 1; }
[ -n "$cuobjdump" ] && [ -x "$cuobjdump" ] || { echo "sass.sh: no cuobjdump: see the comment at the top of $0" >&2; exit 1; }
mkdir -p "$out"
"$build/cli/gemvtune" emit --config "$config" "${emit_args[@]}" > "$out/$config.cu"
"$nvcc" -arch=sm_90 -cubin "$out/$config.cu" -o "$out/$config.cubin" -Xptxas -v 2>&1 |
  grep -E "registers|spill" | sed 's/^ptxas info *: *//' || true
"$cuobjdump" -sass "$out/$config.cubin" > "$out/$config.sass"
python3 "$here/sass_loops.py" "$out/$config.sass" $ops
