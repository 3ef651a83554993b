#!/usr/bin/env bash
# Installs what building gemvtune needs on a fresh Debian/Ubuntu machine that already has the
# CUDA toolkit (nvcc, NVRTC, cuda.h): compiler, CMake, Ninja, SQLite, Boost.Program_options,
# GoogleTest and nlohmann-json. Does nothing that is already there.
set -euo pipefail
need=()
for pkg in g++ cmake ninja-build libsqlite3-dev libboost-program-options-dev libgtest-dev nlohmann-json3-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install_deps: the CUDA toolkit (13.x, with NVRTC) is required and was not found" >&2
  exit 1
fi
