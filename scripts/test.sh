#!/usr/bin/env bash
# Every test: C++ (gtest) and Python (pytest, incl. stock LLVM 19 interop) via
# ctest, warning-free with -Werror under g++ and clang, then the C++ tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"

echo "== g++: build and run all tests"
"$root/scripts/build.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j2 --timeout 900)

echo "== clang-19: warning-free build and C++ tests"
CC=clang-19 CXX=clang++-19 "$root/scripts/build.sh" "$root/build-clang" -DMLBRIDGE_BUILD_TOOLS=OFF
(cd "$root/build-clang" && ctest --output-on-failure -j2 -R '^cpp\.|noexcept|^ort\.|^c\.')

echo "== g++ with ASan + UBSan: C++ tests"
"$root/scripts/build.sh" "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DMLBRIDGE_SANITIZE=address,undefined -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_GRPC=OFF
(cd "$root/build-asan" && ctest --output-on-failure -j2 -R '^cpp\.|noexcept|^ort\.|^c\.')

echo "== g++ with ThreadSanitizer: one ONNX model evaluated from many threads, pipe and shared-memory runner threads"
"$root/scripts/build.sh" "$root/build-tsan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMLBRIDGE_SANITIZE=thread -DMLBRIDGE_BUILD_TOOLS=OFF -DMLBRIDGE_WITH_GRPC=OFF -DMLBRIDGE_WITH_ONNXRUNTIME=OFF
(cd "$root/build-tsan" && ctest --output-on-failure -j2 -R '^cpp\.(Engine|PipeRunner|ShmRunner|Formats)')

echo "== the LLVM plugin against LLVM 22: builds, loads into opt-22, the ML inliner decides"
"$root/tests/integrations/llvm/other_llvm_smoke.sh" "$root/build-llvm22" /usr/lib/llvm-22

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
