#!/usr/bin/env bash
# Configures and builds mlbridge into build/ (or $1). Extra args go to CMake.
# MLBRIDGE_BUILD_TARGETS="a b" builds only those targets (the demo needs the plugin only).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
cmake -S "$root" -B "$dir" -G Ninja -DMLBRIDGE_WERROR=ON "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
grep -E "^-- mlbridge" "$dir.configure.log" || true
cmake --build "$dir" -j"$(nproc)" ${MLBRIDGE_BUILD_TARGETS:+--target $MLBRIDGE_BUILD_TARGETS}
