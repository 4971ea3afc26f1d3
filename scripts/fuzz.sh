#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang-19 with ASan + UBSan) into
# build-fuzz/ and runs each for SECONDS (default 60), printing one line per
# target: executions, findings, corpus size. Corpora grow in
# build-fuzz/fuzz/work/<target>/corpus between runs; findings (crashing,
# leaking, slow or memory-hungry inputs) land in .../findings: once fixed,
# copy each to tests/fuzz/<target>/, where ctest replays it forever.
#   scripts/fuzz.sh [SECONDS] [TARGET_REGEX]     FUZZ_JOBS=2 runs two at once
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
filter=${2:-.}
dir=$root/build-fuzz
CC=clang-19 CXX=clang++-19 cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLBRIDGE_FUZZ=ON \
  -DMLBRIDGE_WERROR=ON -DMLBRIDGE_BUILD_TESTS=OFF -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_GRPC=OFF \
  -DMLBRIDGE_WITH_ONNXRUNTIME=OFF >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
cmake --build "$dir" -j"$(nproc)" >/dev/null
targets=$(cd "$dir/fuzz" && ls fuzz_* | sed 's/^fuzz_//' | grep -E "$filter")
echo "== fuzzing $(echo "$targets" | wc -w) targets for ${seconds}s each (clang-19, ASan + UBSan)"
run() {
  local name=$1 opts=(-rss_limit_mb=2560 -timeout=20) inputs=()
  [[ $name =~ ^(onnx_|c_api) ]] && opts+=(-dict="$root/fuzz/onnx.dict")
  [[ -d $root/tests/fuzz/$name ]] && inputs+=("$root/tests/fuzz/$name")
  [[ -d $dir/fuzz/seeds/$name ]] && inputs+=("$dir/fuzz/seeds/$name")
  (cd "$dir/fuzz" && "$root/fuzz/run_one.sh" "$dir/fuzz/fuzz_$name" "$seconds" "$dir/fuzz/work/$name" "${opts[@]}" \
    -- "${inputs[@]}")
}
export -f run
export root dir seconds
failed=0
echo "$targets" | xargs -P "${FUZZ_JOBS:-1}" -I{} bash -c 'run {}' || failed=1
if [[ $failed -ne 0 ]]; then echo "== findings: see the lines above"; exit 1; fi
echo "== no findings"
