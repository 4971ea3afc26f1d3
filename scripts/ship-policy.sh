#!/usr/bin/env bash
# Ships a trained inlining-for-size policy: copies RUN's best policy into
# policies/inline_size/ and records the observations the shipped-policy test
# replays (tests/policy): the plugin's training logs of lz4's modules compiled
# by clang-19 with this model deciding in-process (built-in engine).
#   scripts/ship-policy.sh RUN [PLUGIN]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
run=${1:?usage: scripts/ship-policy.sh RUN_FOLDER [libMLBridgeLLVM.so]}
plugin=${2:-$root/build/libMLBridgeLLVM.so}
dest=$root/policies/inline_size
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
for f in policy.onnx policy.json; do
  [ -f "$run/$f" ] || { echo "ship-policy: $run/$f not found (a run folder of mlbridge train run)" >&2; exit 2; }
done
mkdir -p "$dest"
cp "$run/policy.onnx" "$run/policy.json" "$dest/"
corpus=$(python3 -m mlbridge corpus build lz4 -q | tail -1)   # cached: prints the folder
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
python3 -m mlbridge corpus evaluate "$corpus" --policy "$dest/policy.onnx" --plugin "$plugin" --log "$logs" -q >/dev/null
rm -rf "$dest/observations"
mkdir -p "$dest/observations"
for m in lz4frame lz4hc xxhash; do
  cp "$logs/lz4libs/$m.c.o.log" "$dest/observations/$m.log"
done
echo "shipped $run/policy.onnx to $dest ($(du -sh "$dest/observations" | cut -f1) of recorded observations)"
