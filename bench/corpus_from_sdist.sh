#!/usr/bin/env bash
# A real MLGO corpus for bench/corpus_evaluate.py, quickly: a PyPI source release
# compiled file by file with clang-19 -Oz -Xclang -fembed-bitcode=all (every folder
# holding headers on the include path; files that do not compile alone are
# skipped and counted), then LLVM's own extract_ir (mlgo-utils).
#   bash bench/corpus_from_sdist.sh brotli==1.1.0 /tmp/brotli-corpus [-j N]
# (`mlbridge corpus build` is the supported way; this is the benchmark's stopgap.)
set -euo pipefail
spec=${1:?usage: corpus_from_sdist.sh NAME==VERSION OUT_DIR [-j N]}
out=${2:?usage: corpus_from_sdist.sh NAME==VERSION OUT_DIR [-j N]}
jobs=$(nproc)
[[ "${3:-}" == "-j" ]] && jobs=${4:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --no-deps --no-binary :all: "$spec" -d "$work/dl"
mkdir -p "$work/src" "$work/objs"
for a in "$work"/dl/*; do
  case "$a" in *.zip) unzip -q "$a" -d "$work/src" ;; *) tar xf "$a" -C "$work/src" ;; esac
done
cd "$work/src"
pyinc=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
incs=(-I"$pyinc")
# Public include/ folders, and folders holding headers that are not inside one
# (include/NAME/x.h is meant as <NAME/x.h>: its own folder on the path would shadow).
while IFS= read -r d; do incs+=(-I"$PWD/$d"); done < <(find . -type d -name include | sort)
while IFS= read -r d; do incs+=(-I"$PWD/$d"); done < <(find . \( -name '*.h' -o -name '*.hpp' \) -printf '%h\n' \
  | grep -v '/include/' | grep -v '/include$' | sort -u)
find . \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' \) -not -path '*test*' -not -path '*example*' | sort \
  > "$work/files"
export work
printf '%s\0' "${incs[@]}" > "$work/incs"
compile_one() {
  mapfile -d '' incs < "$work/incs"
  obj="$work/objs/${1#./}.o"
  mkdir -p "$(dirname "$obj")"
  case "$1" in *.c) std=(-std=gnu11 -x c) ;; *) std=(-std=c++17 -x c++) ;; esac
  clang-19 -Oz -Xclang -fembed-bitcode=all -DNDEBUG -w "${incs[@]}" "${std[@]}" -c "$1" -o "$obj" 2>/dev/null \
    || { echo "skipped (does not compile alone): $1" >&2; rm -f "$obj"; }
}
export -f compile_one
tr '\n' '\0' < "$work/files" | xargs -0 -P "$jobs" -n 1 bash -c 'compile_one "$1"' _
extract_ir --input_type=directory --input "$work/objs" --output_dir "$out" \
  --llvm_objcopy_path "$(command -v llvm-objcopy-19)" --num_workers "$jobs" 2>/dev/null
echo "$spec: $(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['modules']))" \
  "$out/corpus_description.json") modules of $(wc -l < "$work/files") source files in $out"
