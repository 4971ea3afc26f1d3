#!/usr/bin/env bash
# The toy demos (the README's main job is scripts/demo.sh): a toy C++ compiler (toyc) asks a Python model, over named
# pipes, how much to unroll each loop, in each of the three wire formats;
# then stock clang-19 does the same through the mlbridge pass plugin: its ML
# inliner trains against a Python model and ships the result in-process.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh" "$root/build" >/dev/null
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
for fmt in bitstream json protobuf; do
  echo "== toyc asks the unroll model over named pipes, format: $fmt"
  python3 "$root/examples/demo/unroll_model.py" "$root/build/examples/toyc" "$root/examples/demo/kernels.toy" --format "$fmt"
  echo
done
echo "== no model at all: toyc reports it within its 2 s connect timeout and compiles with its default"
chan=$(mktemp -d)
"$root/build/examples/toyc" "$root/examples/demo/kernels.toy" --channel "$chan/nobody" | sed -n '1p;$p'
rmdir "$chan"
if [ -f "$root/build/libMLBridgeLLVM.so" ]; then
  echo
  echo "== stock clang-19 + the mlbridge plugin: train an inlining-for-size policy over pipes, deploy it in-process (ONNX)"
  python3 "$root/examples/llvm_plugin/train.py" --plugin "$root/build/libMLBridgeLLVM.so"
fi
