#!/usr/bin/env bash
# Installs what building and testing mlbridge needs; safe to run again.
# Debian packages via apt-get; Python packages via pip for the default
# `python3` (see README: we use the PyPI interpreter, not Debian's /usr/bin/python3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

debs=(cmake ninja-build g++ pkg-config libgtest-dev protobuf-compiler libprotobuf-dev
      libgrpc++-dev protobuf-compiler-grpc llvm-19 clang-19 openssl
      # the compiler integrations (integrations/): LLVM pass plugin, MLIR pass, GCC plugin
      llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools gcc-12-plugin-dev
      # the LLVM plugin is also built and tested against the newest LLVM (bookworm-security)
      llvm-22-dev llvm-22 clang-22 lld-22
      # corpora from local ThinLTO links (tests/python/corpus/test_corpus_extract.py); the linked and lto settings
      lld-19)
missing=()
for p in "${debs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi

PY=${PYTHON:-python3}
if ! "$PY" -c "import numpy, pytest, google.protobuf, orjson, simdjson, grpc, onnx, onnxruntime, gymnasium, ray, tqdm, matplotlib, tensorboard, hypothesis, mlgo, pyarrow, mutmut" >/dev/null 2>&1; then
  echo "setup: installing Python packages for $PY"
  "$PY" -m pip install -q --disable-pip-version-check -r "$root/python/requirements-dev.txt"
fi

# ONNX Runtime for the optional `onnxruntime` component (pinned, sha256-checked;
# docs/onnxruntime.md). The library comes from PyPI's wheel, headers from npm.
bash "$root/scripts/get-onnxruntime.sh"
