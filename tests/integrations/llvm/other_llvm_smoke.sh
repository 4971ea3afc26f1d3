#!/usr/bin/env bash
# The LLVM plugin against another installed LLVM (default: Debian's llvm-22):
# it configures and builds, loads into that LLVM's opt, and the ML inliner's
# decisions change the output (a policy that never inlines vs one that does).
# Usage: other_llvm_smoke.sh BUILD_DIR [LLVM_PREFIX]
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
build=$1
prefix=${2:-/usr/lib/llvm-22}
if [ ! -f "$prefix/lib/cmake/llvm/LLVMConfig.cmake" ]; then
  echo "other LLVM: $prefix not installed; skipped"
  exit 0
fi
cmake -S "$root" -B "$build" -G Ninja -DMLBRIDGE_WERROR=ON -DLLVM_DIR="$prefix/lib/cmake/llvm" \
  -DMLBRIDGE_BUILD_TESTS=OFF -DMLBRIDGE_WITH_GRPC=OFF -DMLBRIDGE_WITH_ONNXRUNTIME=OFF >/dev/null
cmake --build "$build" --target MLBridgeLLVM >/dev/null
models=$root/tests/integrations/llvm/models
ir=$root/tests/integrations/llvm/inline_small.ll
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for m in never callee_bb_le_3; do
  timeout 120 "$prefix/bin/opt" -load-pass-plugin="$build/libMLBridgeLLVM.so" -mlbridge-inline-runner=onnx \
    -mlbridge-inline-model="$models/$m.onnx" -mlbridge-inline-stats -passes='default<O2>' "$ir" -S \
    -o "$out/$m.ll" </dev/null 2>"$out/$m.err"
  grep -q "model decisions, 0 stock decisions" "$out/$m.err" || { cat "$out/$m.err"; exit 1; }
done
never=$(grep -c ' call ' "$out/never.ll" || true)
some=$(grep -c ' call ' "$out/callee_bb_le_3.ll" || true)
if [ "$some" -ge "$never" ]; then
  echo "other LLVM: the model's decisions did not change the output ($some calls vs $never)" >&2
  exit 1
fi
echo "other LLVM ($("$prefix/bin/opt" --version | grep -o 'LLVM version [0-9.]*')): plugin builds; ML inliner: $never calls with 'never', $some with 'callee_bb_le_3'"
