#!/usr/bin/env python3
"""Issue 38's goal for an eviction policy, on held-out code (a benchmark, not a test):

    PYTHONPATH=python:policies/regalloc_eviction python3 bench/eviction_goal.py \\
        --policy python:regalloc_eviction_policy:flip_policy [--corpora lz4 deflate ...] \\
        [--programs lz4 zstd chacha20 sha256 dgemm] [-j 2] [--json-out FILE]

1. **Modules**: ``mlbridge corpus evaluate --problem regalloc-eviction`` on every
   held-out corpus (default: the evaluation-split recipes built in
   ~/.cache/mlbridge/corpora): the register-allocation score against stock
   llc-19's default advisor, per corpus, in total and as the mean of the
   corpora's changes (the total is dominated by a corpus's hottest module).
2. **Programs**: bench/regalloc_speed.py's callgrind check (executed
   instructions; every output checked against the program's reference): per
   program and in total; a training-split program (brotli) is shown but not
   counted in the goal.
3. **The goal**: score at least 2 % below the default in total, executed
   instructions lower in total and no program above +0.2 %.

Prints a table; one JSON line per corpus, per program and for the goal (stdout
with --json, or --json-out FILE). A corpus or program that fails is a failed
row and the goal is not met, never a result."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

CORPORA = os.path.expanduser("~/.cache/mlbridge/corpora")


def held_out() -> List[str]:
    from mlbridge.corpus.recipes import recipes
    return [n for n, r in sorted(recipes().items()) if getattr(r, "split", "train") == "eval"
            and os.path.exists(os.path.join(CORPORA, n, "corpus_description.json"))]


#: a whole corpus evaluation or speed check that runs longer has hung: a failed row
TIMEOUT_S = 4 * 3600


def _run(cmd: List[str]) -> Tuple[Optional[str], str]:
    """CMD's stdout when it ended well, else None and its last stderr line (or how it ended)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, f"{os.path.basename(cmd[1])} ran past {TIMEOUT_S} s"
    last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
    return p.stdout, last


def corpus_row(name: str, policy: str, jobs: int) -> Dict[str, Any]:
    path = name if os.sep in name else os.path.join(CORPORA, name)
    out, why = _run([sys.executable, "-m", "mlbridge", "corpus", "evaluate", path, "--problem", "regalloc-eviction",
                     "--policy", policy, "--json", "-j", str(jobs)])
    try:   # exit 1 (a module failed) still prints the evaluation: its failed count makes the row fail
        t = json.loads(out or "")["total"]
    except (ValueError, KeyError, TypeError):
        return {"kind": "corpus", "name": name, "ok": False, "error": why}
    return {"kind": "corpus", "name": name, "ok": t["failed"] == 0, "modules": t["ok"], "failed": t["failed"],
            "default": t["baseline_score"], "policy": t["policy_score"], "delta_pct": t["delta_pct"],
            "better": t["better"], "worse": t["worse"]}


def program_rows(policy: str, programs: List[str]) -> List[Dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="mlbridge-evgoal-") as tmp:
        path = os.path.join(tmp, "speed.json")
        _, why = _run([sys.executable, os.path.join(ROOT, "bench", "regalloc_speed.py"), "--policy", policy,
                       "--programs", *programs, "--repeats", "0", "--no-data", "--json-out", path])
        try:   # regalloc_speed writes its JSON only when every program built, ran and printed its reference
            with open(path) as f:
                d = json.load(f)
        except (OSError, ValueError):
            return [{"kind": "program", "name": n, "ok": False, "error": why} for n in programs]
    return [{"kind": "program", "name": r["name"], "ok": bool(r["outputs_equal"]), "split": r["split"],
             "default": r["instructions_default"], "policy": r["instructions_policy"],
             "delta_pct": 100.0 * r["instructions_delta"], "decisions": r["decisions"]} for r in d["programs"]]


def goal(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    cs = [r for r in rows if r["kind"] == "corpus"]
    ps = [r for r in rows if r["kind"] == "program" and r.get("split") != "train"]   # held-out programs only
    ok = all(r["ok"] for r in rows)
    g: Dict[str, Any] = {"kind": "goal", "ok": ok}
    if cs and all(r["ok"] for r in cs):
        d, p = sum(r["default"] for r in cs), sum(r["policy"] for r in cs)
        g.update(score_total_pct=100.0 * (p - d) / d,
                 score_mean_pct=sum(r["delta_pct"] for r in cs) / len(cs))
    if ps and all(r["ok"] for r in ps):
        d, p = sum(r["default"] for r in ps), sum(r["policy"] for r in ps)
        g.update(instructions_total_pct=100.0 * (p - d) / d, worst_program_pct=max(r["delta_pct"] for r in ps))
    g["met"] = bool(ok and g.get("score_total_pct", 0.0) <= -2.0 and g.get("instructions_total_pct", 0.0) < 0
                    and g.get("worst_program_pct", 1.0) <= 0.2)
    return g


def main(argv: Any = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", required=True, help="python:MODULE:FN (as corpus evaluate takes it)")
    ap.add_argument("--corpora", nargs="*", default=None, help="held-out corpora (default: every evaluation-split "
                    "recipe built); none: skip the modules")
    ap.add_argument("--programs", nargs="*", default=["lz4", "zstd", "chacha20", "sha256", "dgemm"],
                    help="speed-check programs (bench/regalloc_speed.py); none: skip them")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="JSON lines on stdout instead of the table")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--plot", default=None, metavar="FILE.png", help="bars of every corpus's and program's change")
    args = ap.parse_args(argv)
    corpora = held_out() if args.corpora is None else args.corpora
    rows: List[Dict[str, Any]] = []
    for c in corpora:
        rows.append(corpus_row(c, args.policy, args.jobs))
        print(f"{c}: {rows[-1].get('delta_pct', 'FAILED')}", file=sys.stderr)
    if args.programs:
        rows += program_rows(args.policy, args.programs)
    rows.append(goal(rows))
    lines = [json.dumps(r) for r in rows]
    if args.json_out:
        with open(args.json_out + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(args.json_out + ".tmp", args.json_out)
    if args.plot:
        from mlbridge.train.report import delta_bars
        done = [r for r in rows[:-1] if r["ok"]]
        delta_bars([f"{r['name']} ({'instructions' if r['kind'] == 'program' else 'score'})" for r in done],
                   [r["delta_pct"] for r in done], args.plot, f"eviction policy {args.policy.split(':')[-1]}",
                   xlabel="change vs LLVM's default advisor (%): score of modules, instructions of programs")
    if args.json:
        print("\n".join(lines))
        return 0
    print(f"| {'corpus / program':20s} | {'default':>16s} | {'policy':>16s} | {'change':>8s} |")
    print(f"|{'-' * 22}|{'-' * 18}|{'-' * 18}|{'-' * 10}|")
    for r in rows[:-1]:
        if not r["ok"]:
            print(f"| {r['name']:20s} | {'FAILED':>16s} | {'':>16s} | {'':>8s} |  {r.get('error', '')}")
            continue
        name = r["name"] + (" (train)" if r.get("split") == "train" else "")
        print(f"| {name:20s} | {r['default']:>16,.0f} | {r['policy']:>16,.0f} | {r['delta_pct']:>+7.2f}% |")
    g = rows[-1]
    parts = [f"{k} {g[k]:+.2f}%" for k in ("score_total_pct", "score_mean_pct", "instructions_total_pct",
                                           "worst_program_pct") if k in g]
    print(f"goal {'met' if g['met'] else 'missed'}: " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
