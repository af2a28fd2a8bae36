#!/usr/bin/env bash
# build.sh [DIR] [extra cmake args...]: configure and build sluice with CMake + Ninja.
# Configures when DIR is new or when cmake args are given (re-configuring is cheap).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
if [ ! -f "$dir/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
fi
cmake --build "$dir" -j"${SLUICE_JOBS:-$(nproc)}"
