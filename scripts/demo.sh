#!/usr/bin/env bash
# The main job: what users come for. Builds the corpus of one real project
# (default lz4 from PyPI, pinned by sha256; any recipe of `mlbridge corpus list`
# works), then scores the shipped inlining-for-size policies (run in-process in
# clang-19 and ld.lld-19 through the mlbridge plugin) against clang-19 -Oz on it
# in three settings: per object and linked programs (policies/inline_size), full
# LTO (policies/inline_size_lto, trained there): tables, a PNG, and where the
# bytes went, function by function; then the shipped phase-ordering policy
# (policies/phase_ordering: a few pass orders tried in-process, the smallest
# object kept) per object and linked; then `mlbridge tune` searches the project's
# own pass orders for a few minutes (MLBRIDGE_DEMO_TUNE_MINUTES, default 3) and
# writes a tuning file. The toy demos: examples/demo/toy.sh.
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
echo "== 5. the phase-ordering policy (policies/phase_ordering): inside the same clang-19 -Oz compile, the plugin"
echo "   compiles a few whole pass orders learned from tune searches on training projects beside -Oz's own, in memory,"
echo "   and keeps the smallest object (-Oz wins ties, so no module grows). Stored bytes (code + read-only +"
echo "   initialized data), per module object, then $project's linked programs; where the bytes went:"
mlbridge corpus evaluate "$corpus" --problem phase-ordering \
  --policy "orders:$root/policies/phase_ordering/order_policy.json" --plugin "$root/build/libMLBridgeLLVM.so" \
  --setting objects --rows 8 --plot "$out/$project-orders.png"
mlbridge corpus evaluate "$corpus" --problem phase-ordering \
  --policy "orders:$root/policies/phase_ordering/order_policy.json" --plugin "$root/build/libMLBridgeLLVM.so" \
  --setting linked --where 8
echo "   in your own build: CFLAGS=\"-Oz -fplugin=\$PLUGIN -fpass-plugin=\$PLUGIN -mllvm -mlbridge-po-policy=$root/policies/phase_ordering/order_policy.json\""
echo
minutes=${MLBRIDGE_DEMO_TUNE_MINUTES:-3}
echo "== 6. mlbridge tune: per module, the pass order clang-19 runs in place of -Oz's, searched for $minutes minutes"
echo "   and judged on $project's linked programs in stored bytes (code + read-only + initialized data); a tuning"
echo "   file any build applies with three flags (docs/tuning.md). Resumable: a second run reuses $out/tune-$project."
mlbridge tune "$corpus" -o "$out/tune-$project" --budget-minutes "$minutes" --plugin "$root/build/libMLBridgeLLVM.so"
echo
echo "   the tuning file, scored on its own by corpus evaluate (stored bytes, linked programs):"
mlbridge corpus evaluate "$corpus" --problem phase-ordering --policy "tuning:$out/tune-$project/tuning.json" \
  --plugin "$root/build/libMLBridgeLLVM.so" --setting linked -q
echo "   to apply it to your own build: CFLAGS=\"-Oz \$(mlbridge tune flags $out/tune-$project/tuning.json)\""
echo
echo "plots: $out/$project.png (inlining, LTO), $out/$project-orders.png (phase ordering)   per program: $out/$project.csv"
echo "tune: $out/tune-$project/report.md, curve.png"
echo "the policies, their training and their numbers: policies/*/README.md, docs/training.md, docs/phase-ordering-policy.md"
echo "settings (objects, linked, lto) and programs.json: docs/corpus.md"
