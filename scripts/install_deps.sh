#!/usr/bin/env bash
# Installs what building gemvtune needs on a fresh Debian/Ubuntu machine that already has the
# CUDA toolkit (nvcc, NVRTC, cuda.h): compiler, CMake, Ninja, SQLite, Boost.Program_options,
# GoogleTest and nlohmann-json; and pytest and matplotlib for the Python package's tests
# (tests/python; matplotlib for gemvtune.roofline), for the python3 on PATH. Does nothing that
# is already there.
set -euo pipefail
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
need=()
for pkg in g++ cmake ninja-build libsqlite3-dev libboost-program-options-dev libgtest-dev nlohmann-json3-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
# The distribution's python3 gets Debian's pytest and matplotlib (pip refuses to install into
# it); another python3 first on PATH (pyenv, a venv) gets them from PyPI with its own pip below.
python_prefix=$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null || echo /usr)
if ! python3 -c 'import pytest' >/dev/null 2>&1 && [ "$python_prefix" = /usr ]; then
  dpkg -s python3-pytest >/dev/null 2>&1 || need+=(python3-pytest)
fi
if ! python3 -c 'import matplotlib' >/dev/null 2>&1 && [ "$python_prefix" = /usr ]; then
  dpkg -s python3-matplotlib >/dev/null 2>&1 || need+=(python3-matplotlib)
fi
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! python3 -c 'import pytest' >/dev/null 2>&1; then
  python3 -m pip install -q pytest
fi
if ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
  python3 -m pip install -q matplotlib
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install_deps: the CUDA toolkit (13.x, with NVRTC) is required and was not found" >&2
  exit 1
fi
