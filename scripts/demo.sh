#!/usr/bin/env bash
# The main job: what users come for. Builds the corpus of one real project
# (default lz4 from PyPI, pinned by sha256; any recipe of `mlbridge corpus list`
# works), then scores the shipped inlining-for-size policies (run in-process in
# clang-19 and ld.lld-19 through the mlbridge plugin) against clang-19 -Oz on it
# in three settings: per object and linked programs (policies/inline_size), full
# LTO (policies/inline_size_lto, trained there): tables, a PNG, and where the
# bytes went, function by function. The toy demos: examples/demo/toy.sh.
#   bash scripts/demo.sh [PROJECT]      (output in out/demo/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
project=${1:-lz4}
"$root/scripts/setup.sh"
out=$root/out/demo
mkdir -p "$out"
echo "== 0. build the mlbridge LLVM plugin (libMLBridgeLLVM.so; log: $out/build.log)"
MLBRIDGE_BUILD_TARGETS=MLBridgeLLVM "$root/scripts/build.sh" "$root/build" >"$out/build.log" 2>&1 \
  || { tail -30 "$out/build.log"; exit 1; }
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
mlbridge() { python3 -m mlbridge "$@"; }

echo "== 1. the corpus of $project: its modules' bitcode and recorded clang-19 -Oz commands (cached)"
corpus=$(mlbridge corpus build "$project" | tail -1)
mlbridge corpus info "$corpus" | sed -n 1,12p

echo
echo "== 2. the shipped policy vs clang-19 -Oz on $project, per module object (.text bytes; what MLGO trains on)"
mlbridge corpus evaluate "$corpus" --policy "$root/policies/inline_size/policy.onnx" \
  --plugin "$root/build/libMLBridgeLLVM.so" --setting objects --rows 8
echo
echo "== 3. the same, on what ships: $project's programs (programs.json) linked by ld.lld-19 --gc-sections"
mlbridge corpus evaluate "$corpus" --policy "$root/policies/inline_size/policy.onnx" \
  --plugin "$root/build/libMLBridgeLLVM.so" --setting linked
echo
echo "== 4. full LTO, with the policy trained there (policies/inline_size_lto): it decides in each pre-link compile"
echo "   and, loaded into ld.lld-19, in the LTO backend; the -Oz build uses the same flags and link."
echo "   Where the bytes went, function by function:"
mlbridge corpus evaluate "$corpus" --policy "$root/policies/inline_size_lto/policy.onnx" \
  --plugin "$root/build/libMLBridgeLLVM.so" --setting lto --where 8 --plot "$out/$project.png" --csv "$out/$project.csv"
echo
echo "plot: $out/$project.png   per program: $out/$project.csv"
echo "the policies, their training and their numbers: policies/inline_size*/README.md, docs/training.md"
echo "settings (objects, linked, lto) and programs.json: docs/corpus.md"
