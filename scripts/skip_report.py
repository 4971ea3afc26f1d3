"""Prints what a ctest run skipped, with reasons (scripts/test.sh runs it
after each ctest): pytest's summary line and its ``SKIPPED [n] file: reason``
lines (PYTEST_ADDOPTS=-rs) and the C harness's ``[SKIPPED] case: reason``.
ctest shows a passing test's output only in its log, so without this the
skips of every pytest entry stayed out of CI's output (issue 26).

    python3 scripts/skip_report.py BUILD_DIR
"""
from __future__ import annotations

import os
import re
import sys

TESTING = re.compile(r"^\d+/\d+ Testing: (\S+)")
PYTEST_SUMMARY = re.compile(r"^=*\s*(\d+ (passed|failed|skipped|error|errors|deselected|xfailed|xpassed)\b.*)$")
SKIP = re.compile(r"^(SKIPPED \[\d+\] .*|\[SKIPPED\] .*)$")


def report(log_path: str) -> int:
    skipped_total = 0
    rows = []
    name = None
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = TESTING.match(line)
            if m:
                name = m.group(1)
                continue
            if name is None:
                continue
            m = PYTEST_SUMMARY.match(line)
            if m and " in " in line:
                summary = m.group(1).rstrip("= ")
                n = re.search(r"(\d+) skipped", summary)
                if n:
                    skipped_total += int(n.group(1))
                rows.append(f"{name}: {summary}")
                continue
            m = SKIP.match(line)
            if m:
                rows.append(f"  {name}: {m.group(1)}")
                if m.group(1).startswith("[SKIPPED]"):
                    skipped_total += 1
    print(f"== skips: {skipped_total} (pytest entries' summaries and every skip with its reason)")
    for r in rows:
        print(r)
    return 0


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    log = os.path.join(sys.argv[1], "Testing", "Temporary", "LastTest.log")
    if not os.path.isfile(log):
        print(f"skip_report: no {log} (ctest has not run there)", file=sys.stderr)
        return 1
    return report(log)


if __name__ == "__main__":
    sys.exit(main())
