#!/usr/bin/env bash
# Every test: C++ (gtest) and Python (pytest, incl. stock LLVM 19 interop) via
# ctest, warning-free with -Werror under g++ and clang, then the C++ tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer; a short fuzzing
# run of every fuzz target (docs/reliability.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
# TensorFlow 2.15 in its own venv (.deps/tf-venv) for the `tf` tests: TF AOT
# models, mlbridge convert (docs/tfaot.md). Cached by pip; a no-op when present.
bash "$root/scripts/get-tensorflow.sh"
bash "$root/scripts/get-litert.sh"   # libLiteRt.so (ai-edge-litert 2.3.0) for the LiteRT runner's tests
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
# Every pytest run lists its skips with their reasons; skip_report.py prints
# them after each ctest (ctest keeps a passing test's output in its log only).
export PYTEST_ADDOPTS="-rs${PYTEST_ADDOPTS:+ $PYTEST_ADDOPTS}"
skips() { "${PYTHON:-python3}" "$root/scripts/skip_report.py" "$1"; }

echo "== g++: build and run all tests"
"$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j2 --timeout 900)
skips "$root/build"

echo "== clang-19: warning-free build and C++ tests"
CC=clang-19 CXX=clang++-19 "$root/scripts/build.sh" "$root/build-clang" -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_TFAOT=OFF
(cd "$root/build-clang" && ctest --output-on-failure -j2 -R '^cpp\.|noexcept|^ort\.|^c\.')
skips "$root/build-clang"

echo "== g++ with ASan + UBSan: C++ tests"
"$root/scripts/build.sh" "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DMLBRIDGE_SANITIZE=address,undefined -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_GRPC=OFF
(cd "$root/build-asan" && ctest --output-on-failure -j2 -R '^cpp\.|noexcept|^ort\.|^c\.|^fuzz\.')
skips "$root/build-asan"

echo "== clang-19 libFuzzer + ASan + UBSan: each fuzz target for a few seconds, then its saved crashers and seeds"
CC=clang-19 CXX=clang++-19 "$root/scripts/build.sh" "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLBRIDGE_FUZZ=ON \
  -DMLBRIDGE_BUILD_TESTS=OFF -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_GRPC=OFF -DMLBRIDGE_WITH_ONNXRUNTIME=OFF
(cd "$root/build-fuzz" && ctest --output-on-failure -j2 -L fuzz)

echo "== g++ with ThreadSanitizer: one ONNX model evaluated from many threads, pipe and shared-memory runner threads"
"$root/scripts/build.sh" "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLBRIDGE_SANITIZE=thread -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_GRPC=OFF -DMLBRIDGE_WITH_ONNXRUNTIME=OFF
(cd "$root/build-tsan" && ctest --output-on-failure -j2 -R '^cpp\.(Engine|PipeRunner|ShmRunner|Formats)')

echo "== the LLVM plugin built against LLVM 22 (bookworm-security): its tests with clang-22 / opt-22"
cmake -S "$root" -B "$root/build-llvm22" -G Ninja -DMLBRIDGE_WERROR=ON -DLLVM_DIR=/usr/lib/llvm-22/lib/cmake/llvm \
  -DMLBRIDGE_WITH_GRPC=OFF -DMLBRIDGE_WITH_ONNXRUNTIME=OFF -DMLBRIDGE_WITH_TFAOT=OFF >"$root/build-llvm22.configure.log" 2>&1 \
  || { cat "$root/build-llvm22.configure.log"; exit 1; }
grep -E "^-- mlbridge.*enabled" "$root/build-llvm22.configure.log"
cmake --build "$root/build-llvm22" --target MLBridgeLLVM MLBridgeLLVMAot mlbridge-aot >/dev/null
(cd "$root/build-llvm22" && ctest --output-on-failure -j2 -R '^llvm\.')
skips "$root/build-llvm22"

echo "== install, then build consumers with find_package(MLBridge) and pkg-config"
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$root/build" --prefix "$prefix" >/dev/null
cmake -S "$root/tests/consumer" -B "$prefix/consumer-build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer"
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" g++ -std=c++17 -fno-exceptions -fno-rtti "$root/tests/consumer/main.cc" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs mlbridge) -o "$prefix/consumer-pc"
LD_LIBRARY_PATH="$prefix/lib" "$prefix/consumer-pc"
{ "$prefix/bin/mlbridge-bench" 2>&1 || true; } | grep -q usage && echo "mlbridge-bench installed"

echo "== pip install . into a fresh virtual environment, then the main job's commands from an empty folder"
bash "$root/scripts/install_check.sh"

echo "== mutation testing (mutmut, docs/testing.md): the Python files of the newest change to formats/, transport/, corpus/ or llvm/, 10 mutants and 300 s a package"
# Survivors are listed, not failed on: a new one needs a test or a line in
# docs/testing.md's table of equivalent mutants. mutmut failing fails the step.
pkgs=(python/mlbridge/formats python/mlbridge/transport python/mlbridge/corpus python/mlbridge/llvm)
last=$(git -C "$root" log -1 --format=%H -- "${pkgs[@]}" 2>/dev/null || true)
if [ -n "$last" ] && git -C "$root" rev-parse -q --verify "$last~1^{commit}" >/dev/null; then
  git -C "$root" log -1 --format='mutation: change %h %s' "$last" | cut -c1-120
  MUTATION_LABEL=ci "$root/scripts/mutation.sh" --changed "$last~1" --max 10 --budget 300
else
  echo "mutation: SKIPPED: no git history before the newest change here (a shallow clone?)"
fi
