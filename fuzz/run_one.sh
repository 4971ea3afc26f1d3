#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS and prints one line:
#   <target>  runs=<executions>  findings=<crash/leak/timeout/oom files>  corpus=<inputs kept>
#   run_one.sh TARGET_BINARY SECONDS WORKDIR [libFuzzer options...] -- [seed dirs...]
# New inputs go to WORKDIR/corpus (kept between runs); findings to
# WORKDIR/findings (copy them to tests/fuzz/<target>/ once fixed). Exit 1 on a finding.
set -uo pipefail
bin=$1 seconds=$2 work=$3
shift 3
opts=()
while [[ $# -gt 0 && $1 != -- ]]; do opts+=("$1"); shift; done
[[ $# -gt 0 ]] && shift
name=$(basename "$bin"); name=${name#fuzz_}
mkdir -p "$work/corpus" "$work/findings"
before=$(find "$work/findings" -type f | wc -l)
"$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/findings/" "${opts[@]}" \
  "$work/corpus" "$@" >"$work/log" 2>&1
status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
findings=$(( $(find "$work/findings" -type f | wc -l) - before ))
if [[ $status -ne 0 && $findings -eq 0 ]]; then findings=1; fi
printf '%-28s runs=%-10s findings=%-3s corpus=%s\n' "$name" "${runs:-0}" "$findings" \
  "$(find "$work/corpus" -type f | wc -l)"
if [[ $findings -ne 0 ]]; then
  grep -m1 -E "ERROR|SUMMARY|runtime error|Deadly|out-of-memory|timeout" "$work/log" | sed 's/^/  /'
  echo "  log: $work/log  findings: $work/findings"
  exit 1
fi
