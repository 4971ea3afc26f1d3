#!/usr/bin/env bash
# One install that works anywhere (issue 35): `pip install .` of this tree into a
# fresh virtual environment (scikit-build-core builds the library, the tools and
# the LLVM plugin into the package), then the main job's commands from an empty
# folder, with nothing of the source tree on the path: the plugin is found in the
# package, `mlbridge version` lists it, a corpus is built, a shipped policy is
# scored in-process, and a short `mlbridge tune` writes a tuning file.
#   bash scripts/install_check.sh            (CI: scripts/test.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m venv "$tmp/venv"
pip=("$tmp/venv/bin/python" -m pip --disable-pip-version-check -q)
echo "install-check: pip install $root (builds the C++ side; a few minutes)"
"${pip[@]}" install "$root" >"$tmp/pip.log" 2>&1 || { tail -40 "$tmp/pip.log"; exit 1; }
mkdir "$tmp/empty" && cd "$tmp/empty"
unset PYTHONPATH MLBRIDGE_LLVM_PLUGIN
mlb() { "$tmp/venv/bin/mlbridge" "$@"; }
mlb version
plugin=$(mlb version --json | "$tmp/venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["components"]["llvm-plugin"] or "")')
case "$plugin" in
  "$tmp/venv/"*) echo "install-check: the plugin is the package's own: ${plugin#$tmp/venv/}" ;;
  *) echo "install-check: FAILED: the installed package did not find its own plugin (found: '${plugin}')"; exit 1 ;;
esac
corpus=$(mlb corpus build lz4 -q | tail -1)
mlb corpus evaluate "$corpus" --policy "$root/policies/inline_size/policy.onnx" --setting linked -q
mlb tune "$corpus" -o tuned --budget-minutes 0.2 -q >/dev/null
test -s tuned/tuning.json && test -s tuned/report.md
mlb tune flags tuned/tuning.json | grep -q -- "-fpass-plugin=$plugin"
echo "install-check: passed (an installed mlbridge built, scored and tuned lz4 from an empty folder)"
