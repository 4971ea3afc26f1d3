"""Runs mutmut in a scratch folder made by scripts/mutation.sh and writes
summary.txt: per file, mutants killed / survived / timeout / no tests, then
every survivor by name (`python3 -m mutmut.__main__ show NAME` for its diff).

--max N tries an evenly spaced, fixed sample of N mutants (CI's budget) instead
of all of them; the sample depends only on the code, so a rerun picks the same.

--budget S stops trying mutants after S seconds (CI's fixed budget): mutmut runs
in a child process that is interrupted (Ctrl-C, then killed) when the time is
up; the mutants not yet tried are left out of the summary, whose first line
says how many were tried.

--recheck runs, for every mutant mutmut did not kill, the whole test selection
in a fresh process with the mutant active (MUTANT_UNDER_TEST, which child
processes inherit): mutmut maps a mutant only to tests that reach it in the
test process, so code run by ``python -m mlbridge`` in a subprocess is
"no tests" or "survived" there even when a subprocess test kills it. Results
go to recheck.json; summary.txt counts them as killed, in a column of their own.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import mutmut.__main__ as mm   # as a module: mutmut warns when its __main__ runs twice
from mutmut.mutation.data import SourceFileMutationData
from mutmut.stats import status_by_exit_code
from mutmut.utils.file_utils import walk_mutatable_files


def exit_codes(path) -> dict:
    """mutant name -> mutmut's exit code for it (None: not tried), of one file."""
    m = SourceFileMutationData(path=path)
    m.load()
    return m.exit_code_by_key


def all_mutants() -> list[str]:
    return sorted(n for path in walk_mutatable_files() for n in exit_codes(path))


def run_with_budget(cmd: list[str], budget: float, grace: float = 15.0) -> int | None:
    """Run cmd in a process group of its own; when the budget runs out, Ctrl-C
    the group (mutmut stops its workers and keeps what it saved), then kill it.
    The exit code, or None when the budget ran out."""
    child = subprocess.Popen(cmd, start_new_session=True)
    try:
        return child.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        pass
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 60.0)):
        try:
            os.killpg(child.pid, sig)
            child.wait(timeout=wait)
            break
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    return None


def recheck(names: list[str], timeout: float) -> dict:
    """name -> "killed" | "survived" | "timeout", by the whole selection."""
    from mutmut.configuration import config
    sel = list(config().pytest_add_cli_args_test_selection)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *sel]

    def run(mutant: str) -> str:
        env = dict(os.environ, MUTANT_UNDER_TEST=mutant)
        try:
            rc = subprocess.run(cmd, cwd="mutants", env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return "timeout"
        return "survived" if rc == 0 else "killed"

    if run("") != "survived":   # no mutant active: the selection must pass, or every verdict is noise
        print("mutation: the test selection fails without a mutant; no recheck")
        return {}
    got = {}
    for i, name in enumerate(names):
        got[name] = run(name)
        print(f"recheck {i + 1}/{len(names)}: {got[name]:8} {name}", flush=True)
    return got


def not_killed() -> list[str]:
    out = []
    for path in walk_mutatable_files():
        out.extend(n for n, c in exit_codes(path).items()
                   if c is not None and status_by_exit_code[c] not in ("killed", "timeout"))
    return sorted(out)


def summarize(out: Path, note: str = "") -> int:
    lines, survivors = [], []
    totals: collections.Counter = collections.Counter()
    rechecked = json.loads(Path("recheck.json").read_text()) if Path("recheck.json").exists() else {}
    for path in sorted(walk_mutatable_files()):
        counts: collections.Counter = collections.Counter()
        for name, code in sorted(exit_codes(path).items()):
            if code is None:          # not in the sample
                continue
            status = status_by_exit_code[code]
            if status not in ("killed", "timeout") and rechecked.get(name) in ("killed", "timeout"):
                status = "rechecked"   # killed by the whole selection (a subprocess test, see --recheck)
            counts[status] += 1
            if status not in ("killed", "timeout", "rechecked"):
                survivors.append(f"{status:9} {name}" + (" (whole selection: survived)" if name in rechecked else ""))
        if not counts:
            continue
        totals.update(counts)
        lines.append(row(str(path).replace("src/", "python/", 1), counts))
    lines.append(row("total", totals))
    text = "\n".join(([note] if note else []) + [f"{'file':44} {'killed':>6} {'rechk':>5} {'surv.':>6} {'timeout':>7} {'no test':>7} "
                      f"{'other':>5} {'score':>6}"]
                     + lines + ["", "not killed:"] + survivors) + "\n"
    out.write_text(text)
    return 0


def row(label: str, c: collections.Counter) -> str:
    """score: killed (by mutmut or the recheck) + timeouts, over every mutant tried."""
    other = sum(v for k, v in c.items() if k not in ("killed", "rechecked", "survived", "timeout", "no tests"))
    tried = sum(c.values())
    caught = c["killed"] + c["rechecked"] + c["timeout"]
    score = f"{100.0 * caught / tried:.1f}%" if tried else "-"
    return (f"{label:44} {c['killed']:6} {c['rechecked']:5} {c['survived']:6} {c['timeout']:7} {c['no tests']:7} "
            f"{other:5} {score:>6}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--max", type=int, default=0)
    ap.add_argument("--recheck", action="store_true", help="survivors: the whole selection, subprocesses included")
    ap.add_argument("--recheck-only", action="store_true", help="only the recheck, of an earlier run in this folder")
    ap.add_argument("--recheck-timeout", type=float, default=1200.0)
    ap.add_argument("--budget", type=float, default=0.0, help="stop trying mutants after this many seconds")
    ap.add_argument("names", nargs="*", help="only these mutants (names or globs, as `results` prints them)")
    a = ap.parse_args()
    names: list[str] = list(a.names)
    if a.max and not names:
        # Generate the mutants first (what `mutmut run` does before testing), then sample.
        mm.makedirs(Path("mutants"), exist_ok=True)
        mm.copy_src_dir()
        mm.copy_also_copy_files()
        mm.setup_source_paths()
        mm.create_mutants(a.jobs)
        every = all_mutants()
        if len(every) > a.max:
            step = len(every) / a.max
            names = [every[int(i * step)] for i in range(a.max)]
        print(f"mutation: {len(names) or len(every)} of {len(every)} mutants")
    note = ""
    if not a.recheck_only and a.budget > 0:
        # each mutant's result is saved as it comes, so what was tried counts
        rc = run_with_budget([sys.executable, os.path.abspath(__file__), "--jobs", str(a.jobs), *names], a.budget)
        if rc:
            return rc
        if rc is None:
            tried = sum(1 for path in walk_mutatable_files() for c in exit_codes(path).values() if c is not None)
            note = (f"mutation: the budget of {a.budget:g} s ran out: {tried} of {len(names) or len(all_mutants())} "
                    f"mutants tried" + ("" if tried else " (the tests' mapping and clean runs took it all)"))
            print(note)
    elif not a.recheck_only:
        try:
            mm._run(names, a.jobs)
        except SystemExit as e:
            if e.code:
                return int(e.code) if isinstance(e.code, int) else 1
    if a.recheck or a.recheck_only:
        done = json.loads(Path("recheck.json").read_text()) if Path("recheck.json").exists() else {}
        done.update(recheck([n for n in not_killed() if n not in done], a.recheck_timeout))
        Path("recheck.json").write_text(json.dumps(done, indent=1, sort_keys=True))
    return summarize(Path("summary.txt"), note)


if __name__ == "__main__":
    sys.exit(main())
