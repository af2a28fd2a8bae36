#!/usr/bin/env bash
# build.sh [DIR] [extra cmake args...]: configure (once) and build sluice with CMake + Ninja.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
fi
cmake --build "$dir" -j"${SLUICE_JOBS:-$(nproc)}"
