#!/usr/bin/env bash
# Makes the TensorFlow build environment: a virtualenv .deps/tf-venv with
# TensorFlow 2.15 (LLVM's MLGO pin: `saved_model_cli aot_compile_cpu` and the
# XLA runtime sources its AOT output links; docs/tfaot.md) and tf2onnx, from
# PyPI only. TF 2.15 needs protobuf<5 and numpy<2, mlbridge's own Python needs
# recent ones: TensorFlow is a build-time tool here, in its own environment,
# and mlbridge never imports it (python/mlbridge/formats/tf_to_onnx.py runs it as a
# subprocess; CMake finds it as MLBRIDGE_TF_PYTHON).
# Idempotent: does nothing when the pinned set is installed. pip's cache
# (~/.cache/pip) keeps the ~600 MB of wheels for the next run.
#
#   bash scripts/get-tensorflow.sh [--force]
#
# Environment: MLBRIDGE_TF_VENV (default $root/.deps/tf-venv), PYTHON (the
# interpreter the venv is made from, default python3; TF 2.15 wheels exist
# for CPython 3.9 to 3.11).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# ---- pins (docs/tfaot.md lists them too) -------------------------------------
# tf2onnx 1.17's own requirements would upgrade numpy/protobuf past what TF 2.15
# runs with: its dependencies are pinned to TF 2.15's.
PINS=(tensorflow==2.15.0 tf2onnx==1.17.0 "numpy==1.26.4" "protobuf==4.25.9" "ml-dtypes==0.2.0" onnx==1.17.0)

venv=${MLBRIDGE_TF_VENV:-$root/.deps/tf-venv}
PY=${PYTHON:-python3}
export TF_CPP_MIN_LOG_LEVEL=3  # TF prints CUDA noise on import otherwise
say() { echo "get-tensorflow: $*"; }
die() { echo "get-tensorflow: error: $*" >&2; exit 1; }

stamp="$venv/.mlbridge-tf.stamp"
stamp_text="${PINS[*]}"
if [ "${1:-}" != "--force" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$stamp_text" ] &&
   [ -x "$venv/bin/saved_model_cli" ] &&
   "$venv/bin/python" -c "import tensorflow, tf2onnx, onnx" >/dev/null 2>&1; then
  say "TensorFlow environment already installed in $venv; nothing to do"
  exit 0
fi

ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || die "$PY does not run"
case "$ver" in
  3.9|3.10|3.11) ;;
  *) die "$PY is Python $ver; TensorFlow 2.15 has wheels for Python 3.9 to 3.11 (set PYTHON)" ;;
esac
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv (Python $ver)"
  mkdir -p "$(dirname "$venv")"
  "$PY" -m venv "$venv" || die "cannot create a virtualenv with $PY -m venv"
fi
t0=$(date +%s)
say "installing ${PINS[*]} (pip cache reused)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "${PINS[@]}" ||
  die "pip install failed (see above)"
"$venv/bin/python" - <<'PYEOF' || die "the installed TensorFlow cannot AOT-compile"
import os, tensorflow as tf
d = os.path.dirname(tf.__file__)
for p in ("xla_aot_runtime_src", "include/tensorflow/compiler/tf2xla/xla_compiled_cpu_function.h"):
    if not os.path.exists(os.path.join(d, p)):
        raise SystemExit(f"missing {p} in {d}")
PYEOF
echo "$stamp_text" >"$stamp"
say "TensorFlow 2.15 environment ready in $venv ($(( $(date +%s) - t0 )) s)"
