#!/usr/bin/env bash
# Installs the official ONNX Runtime shared library and its C/C++ headers into
# .deps/onnxruntime/{include,lib}, from package registries only, each artifact
# pinned by version and sha256 (docs/onnxruntime.md):
#   * library: PyPI `onnxruntime` wheel (Microsoft's), onnxruntime/capi/libonnxruntime.so.*
#     (pip download of one fixed wheel, whatever the local Python is);
#   * headers: the official onnxruntime-android AAR's headers/ folder, as shipped
#     inside the npm package `com.github.asus4.onnxruntime` (MIT repackaging;
#     Maven Central here does not serve onnxruntime-android). These headers are
#     ONNX Runtime 1.29.0, C API version 29, which a 1.31 library serves.
# Idempotent: does nothing when the pinned files are already installed.
# Downloads are kept in ${XDG_CACHE_HOME:-~/.cache}/mlbridge/downloads and reused
# after their hash is checked again.
#
#   bash scripts/get-onnxruntime.sh [--force]
#
# Environment: MLBRIDGE_ORT_DIR (install folder, default $root/.deps/onnxruntime),
# MLBRIDGE_DOWNLOAD_CACHE (download cache folder), PYTHON (default python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# ---- pins (change together; docs/onnxruntime.md lists them too) ----------------
ORT_VERSION=1.31.1
ORT_WHEEL=onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl
ORT_WHEEL_SHA256=5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f
ORT_LIB_SHA256=fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3
HDR_NPM_PACKAGE=com.github.asus4.onnxruntime
HDR_NPM_VERSION=0.4.9
HDR_NPM_TARBALL=com.github.asus4.onnxruntime-0.4.9.tgz
HDR_NPM_SHA256=e59788788818fdde1b2e522e766a21ba0f7d8391de55737abf81e32cc801785d
HDR_AAR_MEMBER=package/Plugins/Android/onnxruntime.aar
HDR_AAR_SHA256=98cddbac92640b4a6af72a03c42e0491851f366d3da66bbaeb5dd66310946cf2
HDR_ORT_VERSION=1.29.0
HDR_API_VERSION=29
HDR_C_API_SHA256=acc0cf4b3f28d39339c76770d76164bb7a0637dc89f5fde764b4017b632f6743

dest=${MLBRIDGE_ORT_DIR:-$root/.deps/onnxruntime}
cache=${MLBRIDGE_DOWNLOAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mlbridge/downloads}
PY=${PYTHON:-python3}
force=0
[ "${1:-}" = "--force" ] && force=1

say() { echo "get-onnxruntime: $*"; }
die() { echo "get-onnxruntime: error: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
mib() { awk -v n="$(stat -c %s "$1")" 'BEGIN { printf "%.1f MiB", n / 1048576 }'; }

stamp_text="onnxruntime $ORT_VERSION lib $ORT_LIB_SHA256 headers $HDR_ORT_VERSION api $HDR_API_VERSION $HDR_C_API_SHA256"
stamp="$dest/.mlbridge-onnxruntime.stamp"

# ---- already there? -------------------------------------------------------------
if [ "$force" = 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] &&
   [ -f "$dest/lib/libonnxruntime.so.$ORT_VERSION" ] && [ -f "$dest/include/onnxruntime_c_api.h" ] &&
   [ "$(sha "$dest/lib/libonnxruntime.so.$ORT_VERSION")" = "$ORT_LIB_SHA256" ] &&
   [ "$(sha "$dest/include/onnxruntime_c_api.h")" = "$HDR_C_API_SHA256" ]; then
  say "ONNX Runtime $ORT_VERSION (headers $HDR_ORT_VERSION, C API $HDR_API_VERSION) already installed in $dest; nothing to do"
  exit 0
fi

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"
"$PY" -m pip --version >/dev/null 2>&1 || die "$PY -m pip not available (needed to fetch the onnxruntime wheel from PyPI)"
command -v npm >/dev/null || die "npm not found (needed to fetch the headers from the npm registry)"

mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fetch NAME SHA256 COMMAND...: makes $cache/NAME, verified; COMMAND downloads into $tmp/dl.
fetch() {
  local name=$1 want=$2
  shift 2
  local file="$cache/$name"
  if [ -f "$file" ] && [ "$(sha "$file")" = "$want" ]; then
    say "using cached $name ($(mib "$file"), sha256 verified)"
    return
  fi
  rm -f "$file"
  rm -rf "$tmp/dl" && mkdir -p "$tmp/dl"
  local t0
  t0=$(now)
  "$@" >/dev/null || die "download of $name failed (command: $*)"
  [ -f "$tmp/dl/$name" ] || die "expected $name, the registry client produced: $(ls "$tmp/dl" | tr '\n' ' ')"
  local got
  got=$(sha "$tmp/dl/$name")
  [ "$got" = "$want" ] || die "sha256 mismatch for $name: got $got, pinned $want"
  mv "$tmp/dl/$name" "$file"
  say "downloaded $name ($(mib "$file") in $(elapsed "$t0")), sha256 verified"
}

# The one wheel, whatever Python runs this (the library inside is the same in every wheel).
fetch "$ORT_WHEEL" "$ORT_WHEEL_SHA256" \
  "$PY" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
  "onnxruntime==$ORT_VERSION" -d "$tmp/dl"
fetch "$HDR_NPM_TARBALL" "$HDR_NPM_SHA256" \
  npm pack --silent --ignore-scripts --cache "$tmp/npm-cache" --pack-destination "$tmp/dl" "$HDR_NPM_PACKAGE@$HDR_NPM_VERSION"

# ---- unpack into a fresh folder, then swap it in ---------------------------------
stage="$tmp/stage"
mkdir -p "$stage/include" "$stage/lib" "$stage/share"
"$PY" - "$cache/$ORT_WHEEL" "$stage" "$ORT_VERSION" <<'EOF'
import sys, zipfile
whl, stage, ver = sys.argv[1:]
with zipfile.ZipFile(whl) as z:
    for member, out in ((f"onnxruntime/capi/libonnxruntime.so.{ver}", f"lib/libonnxruntime.so.{ver}"),
                        ("onnxruntime/LICENSE", "share/LICENSE"),
                        ("onnxruntime/ThirdPartyNotices.txt", "share/ThirdPartyNotices.txt")):
        with z.open(member) as src, open(f"{stage}/{out}", "wb") as dst:
            dst.write(src.read())
EOF
[ "$(sha "$stage/lib/libonnxruntime.so.$ORT_VERSION")" = "$ORT_LIB_SHA256" ] || die "library in $ORT_WHEEL has an unexpected sha256"
chmod 755 "$stage/lib/libonnxruntime.so.$ORT_VERSION"
ln -s "libonnxruntime.so.$ORT_VERSION" "$stage/lib/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "$stage/lib/libonnxruntime.so"

tar -xzf "$cache/$HDR_NPM_TARBALL" -C "$tmp" "$HDR_AAR_MEMBER"
[ "$(sha "$tmp/$HDR_AAR_MEMBER")" = "$HDR_AAR_SHA256" ] || die "onnxruntime.aar in $HDR_NPM_TARBALL has an unexpected sha256"
"$PY" - "$tmp/$HDR_AAR_MEMBER" "$stage/include" <<'EOF'
import os, sys, zipfile
aar, out = sys.argv[1:]
n = 0
with zipfile.ZipFile(aar) as z:
    for info in z.infolist():
        name = info.filename
        if name.startswith("headers/") and not name.endswith("/"):
            base = os.path.basename(name)
            with z.open(info) as src, open(os.path.join(out, base), "wb") as dst:
                dst.write(src.read())
            n += 1
if n == 0:
    sys.exit("no headers/ in the AAR")
EOF
[ "$(sha "$stage/include/onnxruntime_c_api.h")" = "$HDR_C_API_SHA256" ] || die "onnxruntime_c_api.h has an unexpected sha256"
grep -q "^#define ORT_API_VERSION $HDR_API_VERSION\$" "$stage/include/onnxruntime_c_api.h" ||
  die "onnxruntime_c_api.h is not C API version $HDR_API_VERSION"
cat >"$stage/share/SOURCES.txt" <<EOF
ONNX Runtime $ORT_VERSION for mlbridge (installed by scripts/get-onnxruntime.sh)
lib/libonnxruntime.so.$ORT_VERSION  sha256 $ORT_LIB_SHA256
  from PyPI $ORT_WHEEL  sha256 $ORT_WHEEL_SHA256  (member onnxruntime/capi/libonnxruntime.so.$ORT_VERSION)
include/*.h  ONNX Runtime $HDR_ORT_VERSION headers, C API version $HDR_API_VERSION  (onnxruntime_c_api.h sha256 $HDR_C_API_SHA256)
  from npm $HDR_NPM_PACKAGE@$HDR_NPM_VERSION  sha256 $HDR_NPM_TARBALL=$HDR_NPM_SHA256
  (member $HDR_AAR_MEMBER sha256 $HDR_AAR_SHA256, its headers/ folder)
EOF
echo "$stamp_text" >"$stage/.mlbridge-onnxruntime.stamp"

mkdir -p "$(dirname "$dest")"
rm -rf "$dest.old"
[ -e "$dest" ] && mv "$dest" "$dest.old"
mv "$stage" "$dest"
rm -rf "$dest.old"
say "installed ONNX Runtime $ORT_VERSION library and $HDR_ORT_VERSION headers (C API $HDR_API_VERSION) into $dest"
say "  $(ls "$dest/include" | wc -l) headers in include/, lib/libonnxruntime.so.$ORT_VERSION (+ .so.1, .so links)"
