#!/usr/bin/env bash
# build.sh [DIR] [extra cmake args...]: configure and build sluice with CMake + Ninja.
# Configures when DIR is new or when cmake args are given (re-configuring is cheap).
# SLUICE_TARGETS="a b": build only those targets (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}; shift || true
# ccache, where installed, with paths relative to the checkout: a rebuild in another clone of
# the same sources (CI's fresh clone on a developer's machine) reuses the objects.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$dir/build.ninja" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$dir" -G Ninja "${launcher[@]}" "$@" >/dev/null
fi
targets=()
for t in ${SLUICE_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$dir" -j"${SLUICE_JOBS:-$(nproc)}" "${targets[@]}"
