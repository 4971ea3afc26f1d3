#!/usr/bin/env bash
# Installs LiteRT's C library for the optional `litert` runner
# (include/mlbridge/litert_runner.h): libLiteRt.so from the PyPI wheel
# `ai-edge-litert` (Google's), pinned by version and sha256, into
# .deps/litert/lib. No registry ships LiteRT's headers: mlbridge declares the
# few C functions it uses (src/litert/litert_api.h), pinned to this version,
# and loads the library at run time. Idempotent; the wheel is cached in
# ${XDG_CACHE_HOME:-~/.cache}/mlbridge/downloads.
#
#   bash scripts/get-litert.sh [--force]
#
# Environment: MLBRIDGE_LITERT_DIR (default $root/.deps/litert),
# MLBRIDGE_DOWNLOAD_CACHE, PYTHON (default python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# ---- pins (change together with src/litert/litert_api.h's kPinnedVersion) ----
LITERT_VERSION=2.3.0
LITERT_WHEEL=ai_edge_litert-2.3.0-cp311-cp311-manylinux_2_27_x86_64.whl
LITERT_WHEEL_SHA256=1f15078a6725d2357d9de9221664c29afa0545d807559c5f7199ce5e40b96b23
LITERT_LIB_SHA256=eec47eb35e2924b3166015887e652a58edc9af823ae38e02bf83bef2548300bb

dest=${MLBRIDGE_LITERT_DIR:-$root/.deps/litert}
cache=${MLBRIDGE_DOWNLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mlbridge/downloads}
PY=${PYTHON:-python3}
say() { echo "get-litert: $*"; }
die() { echo "get-litert: error: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

lib="$dest/lib/libLiteRt.so"
if [ "${1:-}" != "--force" ] && [ -f "$lib" ] && [ "$(sha "$lib")" = "$LITERT_LIB_SHA256" ]; then
  say "LiteRT $LITERT_VERSION already installed in $dest; nothing to do"
  exit 0
fi
mkdir -p "$cache"
whl="$cache/$LITERT_WHEEL"
if ! [ -f "$whl" ] || [ "$(sha "$whl")" != "$LITERT_WHEEL_SHA256" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux_2_27_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
    "ai-edge-litert==$LITERT_VERSION" -d "$tmp" || die "pip download ai-edge-litert==$LITERT_VERSION failed"
  [ -f "$tmp/$LITERT_WHEEL" ] || die "expected $LITERT_WHEEL, pip produced: $(ls "$tmp" | tr '\n' ' ')"
  [ "$(sha "$tmp/$LITERT_WHEEL")" = "$LITERT_WHEEL_SHA256" ] || die "sha256 mismatch for $LITERT_WHEEL"
  mv "$tmp/$LITERT_WHEEL" "$whl"
  say "downloaded $LITERT_WHEEL, sha256 verified"
fi
mkdir -p "$dest/lib"
"$PY" - "$whl" "$lib.tmp" <<'PYEOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("ai_edge_litert/libLiteRt.so") as src, open(sys.argv[2], "wb") as dst:
    dst.write(src.read())
PYEOF
[ "$(sha "$lib.tmp")" = "$LITERT_LIB_SHA256" ] || die "libLiteRt.so in $LITERT_WHEEL has an unexpected sha256"
chmod 755 "$lib.tmp"
mv "$lib.tmp" "$lib"
echo "LiteRT $LITERT_VERSION: lib/libLiteRt.so from PyPI $LITERT_WHEEL (sha256 $LITERT_WHEEL_SHA256)" >"$dest/SOURCES.txt"
say "installed LiteRT $LITERT_VERSION (libLiteRt.so) into $dest"
