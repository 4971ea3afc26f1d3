#!/usr/bin/env bash
# Mutation testing of the Python package with mutmut (docs/testing.md).
#
#   scripts/mutation.sh [PACKAGE|FILE ...]   formats transport corpus llvm (default: all four),
#                                            or files such as python/mlbridge/formats/bitstream.py
#   scripts/mutation.sh --changed [REV]      only the package files changed since REV (default
#                                            origin/main if it exists, else HEAD~1); --max N caps
#                                            the mutants tried per package (default 20 with --changed);
#                                            the tests: those that import a changed module
#   --budget S                               stop trying mutants of a package after S seconds
#
# Each package runs in its own scratch copy (out/mutation/NAME): mutmut rewrites
# the code it mutates, and other work (a soak run, other engineers' tests) uses
# python/ from this tree at the same time. Results: out/mutation/NAME/summary.txt,
# `cd out/mutation/NAME && python3 -c "import sys; sys.argv[0]='mutmut'; from mutmut.__main__
# import cli; cli()" show MUTANT` for a mutant's diff (`results` lists them all).
# Runs under `nice -n 19`; MUTATION_JOBS sets mutmut's worker count (default 1);
# MUTATION_TESTS="tests/python/STAGE/test_a.py ..." replaces the package's test files;
# MUTATION_MUTANTS="NAME ..." tries only those mutants (e.g. survivors, again);
# MUTATION_LABEL=x runs in out/mutation/x-PACKAGE (keeps an earlier run's folder);
# MUTATION_RECHECK=1 then runs the whole selection against each mutant not killed
# (subprocess tests included: mutmut itself only runs the tests it saw reach the
# mutant in-process); `scripts/mutation_run.py --recheck-only` in a run's folder
# does that later.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
jobs=${MUTATION_JOBS:-1}
max=0
budget=0
changed=""
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --changed) changed=1
               if [ $# -gt 1 ] && [ "${2#-}" = "$2" ] && git -C "$root" rev-parse -q --verify "$2^{commit}" >/dev/null; then
                 rev=$2; shift
               fi ;;
    --max) max=$2; shift ;;
    --budget) budget=$2; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) targets+=("$1") ;;
  esac
  shift
done

# Which tests exercise which package. mutmut runs, for each mutant, only the
# tests that called the mutated function in-process (code run in a child
# process counts as "no tests": such mutants are reported, not hidden).
declare -A changed_tests=()
tests_for() {
  if [ -n "${MUTATION_TESTS:-}" ]; then echo "$MUTATION_TESTS"; return; fi   # a narrower selection
  if [ -n "${changed_tests[$1]:-}" ]; then echo "${changed_tests[$1]}"; return; fi
  case "$1" in
    formats) echo tests/python/formats/test_formats.py tests/python/transport/test_roundtrip.py tests/python/repo/test_vectors.py \
                  tests/python/formats/test_observation_fast_path.py tests/python/formats/test_json_numeric_path.py \
                  tests/python/formats/test_jsonfloat.py tests/python/core/test_values.py tests/python/formats/test_answer_encoder.py \
                  tests/python/formats/test_decoder_properties.py tests/python/repo/test_cross_language.py ;;
    transport) echo tests/python/transport/test_sessions.py tests/python/transport/test_server_read_timeout.py tests/python/transport/test_shm.py \
                    tests/python/transport/test_supervise.py tests/python/transport/test_faults.py tests/python/transport/test_roundtrip.py \
                    tests/python/rpc/test_pipe_workers.py tests/python/repo/test_cross_language.py ;;
    corpus) echo tests/python/corpus/test_corpus_extract.py tests/python/corpus/test_corpus_build.py tests/python/corpus/test_corpus_evaluate.py \
                 tests/python/corpus/test_corpus_programs.py tests/python/corpus/test_corpus_properties.py tests/python/repo/test_layout.py ;;
    llvm) echo tests/python/llvm/test_llvm_interop.py tests/python/llvm/test_training_log.py \
               tests/python/llvm/test_training_log_export.py tests/python/llvm/test_logs.py ;;
    *) echo "mutation: unknown package $1 (formats, transport, corpus, llvm)" >&2; return 1 ;;
  esac
}

if [ -n "$changed" ]; then
  if [ -z "${rev:-}" ]; then
    if git -C "$root" rev-parse -q --verify origin/main >/dev/null; then rev=origin/main; else rev=HEAD~1; fi
  fi
  [ "$max" -gt 0 ] || max=20
  # Committed changes only (REV..HEAD): what the change under test touches.
  mapfile -t targets < <(git -C "$root" diff --name-only --diff-filter=AM "$rev" HEAD -- \
      python/mlbridge/formats python/mlbridge/transport python/mlbridge/corpus python/mlbridge/llvm | grep '\.py$' || true)
  if [ ${#targets[@]} -eq 0 ]; then
    echo "mutation: no changed files in formats/, transport/, corpus/, llvm/ since $rev"
    exit 0
  fi
  # A fixed budget wants few, fast tests: those that import a changed module
  # (mlbridge.PKG.NAME, or NAME from mlbridge.PKG); the package's list if none does.
  for t in "${targets[@]}"; do
    pkg=$(basename "$(dirname "$t")"); name=$(basename "$t" .py)
    [ "$name" = __init__ ] && pat="from mlbridge\\.$pkg import " || pat="mlbridge\\.$pkg\\.$name\\b|from mlbridge\\.$pkg import .*\\b$name\\b"
    for f in $(cd "$root" && grep -l -E "$pat" tests/python/*/test_*.py 2>/dev/null); do
      case " ${changed_tests[$pkg]:-} " in *" $f "*) ;; *) changed_tests[$pkg]="${changed_tests[$pkg]:-} $f" ;; esac
    done
  done
fi
[ ${#targets[@]} -gt 0 ] || targets=(formats transport corpus llvm)

# Group the targets by package: one scratch copy and one mutmut run each.
declare -A files_of=()
for t in "${targets[@]}"; do
  case "$t" in
    formats|transport|corpus|llvm) files_of[$t]="${files_of[$t]:-} src/mlbridge/$t/*.py" ;;
    python/mlbridge/*/*.py) pkg=$(basename "$(dirname "$t")"); tests_for "$pkg" >/dev/null
                            files_of[$pkg]="${files_of[$pkg]:-} src/${t#python/}" ;;
    *) echo "mutation: $t is neither a package nor a file under python/mlbridge/PACKAGE/" >&2; exit 2 ;;
  esac
done

# The C++ test peer, when built, so the cross-language tests run too.
if [ -z "${MLBRIDGE_TESTPEER:-}" ] && [ -x "$root/build/tools/mlbridge-testpeer" ]; then
  export MLBRIDGE_TESTPEER="$root/build/tools/mlbridge-testpeer" MLBRIDGE_BUILD_DIR="$root/build"
fi
"$PY" -c "import mutmut" 2>/dev/null || { echo "mutation: mutmut is not installed (pip install -r python/requirements-dev.txt)" >&2; exit 1; }
status=0
for pkg in "${!files_of[@]}"; do
  work="$root/out/mutation/${MUTATION_LABEL:+$MUTATION_LABEL-}$pkg"
  rm -rf "$work"
  mkdir -p "$work/src" "$work/tests" "$work/mutants"
  # mutmut names a mutant after its module path, stripping only "src.": the
  # package goes to src/; the tests find it through python/ (conftest's PYDIR).
  cp -a "$root/python/mlbridge" "$work/src/"
  cp -a "$root/tests/python" "$work/tests/"
  find "$work" -name __pycache__ -prune -exec rm -rf {} +
  # mutants/ is where the tests run (conftest's ROOT): the package as python/,
  # the rest of the tree read through links.
  ln -s src "$work/mutants/python"
  mkdir -p "$work/mutants/tests"
  for d in "$root"/tests/*/; do
    d=${d%/}; [ "$(basename "$d")" = python ] || ln -s "$d" "$work/mutants/tests/"
  done
  for d in bench examples policies integrations proto tools include; do
    [ -e "$root/$d" ] && ln -s "$root/$d" "$work/mutants/$d"
  done
  # the C++ sources some tests read (the engine's op list): beside the mutated
  # package in mutants/src, one link per folder
  mkdir -p "$work/mutants/src"
  for d in "$root"/src/*/; do
    d=${d%/}; [ "$(basename "$d")" = mlbridge ] || ln -s "$d" "$work/mutants/src/$(basename "$d")"
  done
  only=""
  for f in ${files_of[$pkg]}; do only+="    $f"$'\n'; done
  sel=""
  for f in $(tests_for "$pkg"); do sel+="    $f"$'\n'; done
  cat >"$work/setup.cfg" <<CFG
[mutmut]
source_paths = src/mlbridge
only_mutate =
$only
also_copy =
    tests
pytest_add_cli_args_test_selection =
$sel
pytest_add_cli_args =
    -p
    no:cacheprovider
CFG
  echo "== mutation: $pkg (${files_of[$pkg]# }), tests: $(tests_for "$pkg" | wc -w) files; log in $work/run.log"
  start=$(date +%s)
  args=()
  if [ "$max" -gt 0 ]; then
    # A fixed budget: mutmut enumerates the mutants, we pick every k-th one.
    args+=(--max "$max")
  fi
  [ "$budget" = 0 ] || args+=(--budget "$budget")
  [ -z "${MUTATION_RECHECK:-}" ] || args+=(--recheck)
  (cd "$work" && nice -n 19 env PYTHONPATH= "$PY" "$root/scripts/mutation_run.py" --jobs "$jobs" "${args[@]}" ${MUTATION_MUTANTS:-}) \
      >"$work/run.log" 2>&1 || { status=1; tail -n 30 "$work/run.log"; }
  cat "$work/summary.txt" 2>/dev/null || true
  echo "   ($(( $(date +%s) - start )) s)"
done
exit $status
