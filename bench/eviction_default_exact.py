#!/usr/bin/env python3
"""How often LLVM 19's default eviction rule, answered over the interactive
channel by mlbridge.problems.eviction.default_advisor.DefaultAdvisor,
reproduces stock llc-19 byte for byte (the first step of exact imitation:
whatever differs is a case the channel's features cannot decide).

    PYTHONPATH=python python3 bench/eviction_default_exact.py --corpora pymunk lz4 [--max-modules N] [-j 1]

Each module of each corpus (~/.cache/mlbridge/corpora/NAME, or a path) is
optimized once by its recorded clang-19 command to bitcode (as the eviction
trainer does), then compiled to an object by stock llc-19 at the module's own
options (RegallocEviction.codegen_args) and by llc-19 with the channel answered
by DefaultAdvisor. Prints one JSON line per module ("identical", "decisions",
seconds) and a summary; for differing modules, the register-allocation score of
both (score_module) when --score is given."""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import CompileOptions, Policy, Toolchain, cc1_args, command_for  # noqa: E402
from mlbridge.llvm.interactive import regalloc_evict  # noqa: E402
from mlbridge.problems import get  # noqa: E402
from mlbridge.problems.eviction.default_advisor import DefaultAdvisor  # noqa: E402

PROBLEM = get("regalloc-eviction")
CORPORA = os.path.expanduser("~/.cache/mlbridge/corpora")


def stock_command(llc: str, ir: str, args: List[str], out: str) -> List[str]:
    """Stock llc-19 to an object: the channel's command without the channel."""
    return [llc, "-regalloc=greedy", "-filetype=obj", *args, ir, "-o", out]


def one(k: int, module: Any, tc: Toolchain, work: str, timeout: float, score: bool) -> Dict[str, Any]:
    row: Dict[str, Any] = {"module": module.name}
    ir = os.path.join(work, f"{k:04d}.opt.bc")
    cmd = command_for(module, Policy("oz", "oz"), ir, tc, CompileOptions(bitcode=True), PROBLEM)
    try:
        if subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                          cwd=work).returncode != 0:
            return {**row, "error": "clang failed making its IR"}
    except subprocess.TimeoutExpired:
        return {**row, "error": f"clang ran past {timeout:g} s"}
    recorded = cc1_args(module.command(), emit=())
    args = PROBLEM.codegen_args(recorded)
    stock, ours = ir + ".stock.o", ir + ".default.o"
    t0 = time.perf_counter()
    try:
        p = subprocess.run(stock_command(tc.llc, ir, args, stock), stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {**row, "error": f"stock llc ran past {timeout:g} s"}
    row["stock_s"] = round(time.perf_counter() - t0, 3)
    if p.returncode != 0:
        return {**row, "error": "stock llc failed"}
    t0 = time.perf_counter()
    try:
        result, answers = regalloc_evict(ir, DefaultAdvisor(), out_path=ours, extra_args=["-filetype=obj", *args],
                                         timeout=timeout, llc=tc.llc)
    except Exception as exc:   # the advisor raised: reported, the run goes on
        return {**row, "error": f"{type(exc).__name__}: {exc}"}
    row["channel_s"] = round(time.perf_counter() - t0, 3)
    row["decisions"] = len(answers)
    row["evict_nothing"] = sum(1 for a in answers if a == 32)
    if not result.ok:
        return {**row, "error": "llc with the channel failed" + (" (timed out)" if result.timed_out else "")}
    with open(stock, "rb") as f, open(ours, "rb") as g:
        row["identical"] = f.read() == g.read()
    if score and not row["identical"]:
        from mlbridge.llvm.regalloc_score import score_module
        try:
            base = score_module(ir, llc=tc.llc, extra_args=args, timeout=timeout).total
            pol = score_module(ir, llc=tc.llc, extra_args=args, policy=DefaultAdvisor(), timeout=timeout).total
            row["score_default"], row["score_channel"] = base, pol
        except Exception as exc:
            row["score_error"] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", nargs="+", required=True, help="names under ~/.cache/mlbridge/corpora or paths")
    ap.add_argument("--max-modules", type=int, default=None, help="at most N modules per corpus")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per clang or llc run")
    ap.add_argument("--score", action="store_true", help="also score differing modules (two more llc runs each)")
    opts = ap.parse_args()
    tc = Toolchain.find(need_llc=True)
    items = []
    for name in opts.corpora:
        corpus = layout.load(name if os.sep in name else os.path.join(CORPORA, name))
        mods = list(corpus.modules)[:opts.max_modules]
        items += [(name, m) for m in mods]
    rows: List[Dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-evict-exact-") as work, \
            cf.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futs = [pool.submit(one, k, m, tc, work, opts.timeout, opts.score) for k, (_, m) in enumerate(items)]
        for (name, _), fut in zip(items, futs):
            row = {"corpus": name, **fut.result()}
            rows.append(row)
            print(json.dumps(row), flush=True)
    done = [r for r in rows if "identical" in r]
    same = sum(r["identical"] for r in done)
    asked = [r for r in done if r["decisions"]]
    summary: Dict[str, Any] = {
        "summary": True, "modules": len(rows), "compared": len(done), "errors": len(rows) - len(done),
        "identical": same, "identical_pct": round(100.0 * same / len(done), 1) if done else None,
        "with_decisions": len(asked), "identical_with_decisions": sum(r["identical"] for r in asked),
        "decisions": sum(r["decisions"] for r in done)}
    scored = [r for r in done if "score_default" in r]
    if scored:
        d = sum(r["score_default"] for r in scored)
        summary["differing_score_delta_pct"] = round(100.0 * (sum(r["score_channel"] for r in scored) - d) / d, 3) \
            if d else None
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
