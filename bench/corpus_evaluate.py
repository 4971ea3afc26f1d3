#!/usr/bin/env python3
"""Benchmark of `mlbridge corpus evaluate` (docs/corpus.md, "Scoring a policy").

    python3 bench/corpus_evaluate.py --corpus DIR [--plugin build/libMLBridgeLLVM.so] [--reps 3]

Prints JSON lines (one measurement each, like mlbridge-bench):
  * "wall": `evaluate --policy oz --no-cache -j J` (the whole command, Python start
    included) against plain clang-19 running the same commands with the same -j
    (`xargs -P J`, no mlbridge involved), for J = 1 and all cores; median of --reps,
    the two alternating. Also modules/s for each, and the CPU time of each side
    (everything it ran), which a machine shared with other work distorts least.
  * "onnx_overhead": clang CPU time (user+sys of the compiler processes) over the
    corpus with plain -Oz, with the plugin loaded and no runner, and with a trained
    ONNX inliner policy in-process; median of --reps. The policy changes the
    decisions, so the compiler's own work changes too: the "plugin, no runner" row
    isolates the cost of loading the plugin.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "examples", "llvm_plugin"))

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Policy, Toolchain, command_for, policy_args  # noqa: E402
from mlbridge.corpus.elf import text_size  # noqa: E402

#: examples/llvm_plugin/train.py's result on tests/corpus (docs/llvm-plugin.md)
TRAINED = ({"cost_estimate": 1, "callee_basic_block_count": 4}, 61)


def emit(**kw) -> None:
    print(json.dumps({"bench": "corpus_evaluate", **kw}), flush=True)


def plain_commands(corpus: layout.Corpus, tc: Toolchain, out_dir: str, extra: List[str]) -> List[List[str]]:
    cmds = []
    for i, m in enumerate(corpus.modules):
        cmd = command_for(m, Policy("oz", "oz"), os.path.join(out_dir, f"{i}.o"), tc)
        cmds.append(cmd[:-2] + extra + cmd[-2:])
    return cmds


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_plain(cmds: List[List[str]], jobs: int) -> float:
    """Plain clang over the commands: xargs -P, one `sh -c` per command."""
    data = b"".join(shlex.join(c).encode() + b"\0" for c in cmds)
    t = time.monotonic()
    subprocess.run(["xargs", "-0", "-P", str(jobs), "-n", "1", "sh", "-c"], input=data, check=True,
                   stdout=subprocess.DEVNULL, timeout=3600)
    return time.monotonic() - t


def run_evaluate(corpus: str, jobs: int) -> float:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "mlbridge.cli.corpus_evaluate", corpus, "--policy", "oz", "--no-cache",
                        "-j", str(jobs), "-q", "--json"], stdout=subprocess.PIPE, env=env, timeout=3600)
    wall = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"evaluate failed (exit {p.returncode})")
    return wall


def cpu_of(cmds: List[List[str]], jobs: int, env: Optional[Dict[str, str]] = None) -> float:
    """User+sys seconds of the compiler processes (all are reaped children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)

    def one(c: List[str]) -> None:
        subprocess.run(c, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=600, env=env)

    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, cmds))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--plugin", default=os.environ.get("MLBRIDGE_LLVM_PLUGIN") or
                    os.path.join(ROOT, "build", "libMLBridgeLLVM.so"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="'all cores' (default: nproc)")
    ap.add_argument("--model", default=None,
                    help="ONNX inliner policy (default: examples/llvm_plugin's trained linear policy, exported)")
    ap.add_argument("--aot-plugin", default=None,
                    help="libMLBridgeLLVMAot.so: also run its compiled-in policy (runner aot); with --model "
                         "tests/integrations/llvm/models/callee_bb_le_3.onnx (the same policy) the difference "
                         "onnx - aot is the ONNX engine's own cost, the decisions being identical")
    ap.add_argument("--skip-wall", action="store_true")
    ap.add_argument("--skip-onnx", action="store_true")
    args = ap.parse_args()

    corpus = layout.load(args.corpus)
    tc = Toolchain.find(plugin=args.plugin, need_plugin=not args.skip_onnx)
    n = len(corpus.modules)
    emit(what="setup", corpus=os.path.abspath(args.corpus), modules=n, clang=tc.version, cores=os.cpu_count(),
         load_avg=os.getloadavg()[0])
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-") as tmp:
        if not args.skip_wall:
            cmds = plain_commands(corpus, tc, tmp, [])
            for jobs in sorted({1, args.jobs}):
                plain, ev, plain_cpu, ev_cpu = [], [], [], []
                for _ in range(args.reps):
                    c = children_cpu()
                    plain.append(run_plain(cmds, jobs))
                    plain_cpu.append(children_cpu() - c)
                    c = children_cpu()
                    ev.append(run_evaluate(args.corpus, jobs))
                    ev_cpu.append(children_cpu() - c)
                p, e = statistics.median(plain), statistics.median(ev)
                pc, ec = statistics.median(plain_cpu), statistics.median(ev_cpu)
                # CPU (user+sys of everything each side ran: xargs+sh+clang, or mlbridge+clang)
                # is what a loaded machine distorts least.
                emit(what="wall", jobs=jobs, modules=n, reps=args.reps, plain_clang_s=round(p, 3),
                     evaluate_oz_s=round(e, 3), ratio=round(e / p, 4), plain_cpu_s=round(pc, 3),
                     evaluate_cpu_s=round(ec, 3), cpu_ratio=round(ec / pc, 4),
                     plain_modules_per_s=round(n / p, 2), evaluate_modules_per_s=round(n / e, 2),
                     load_avg=os.getloadavg()[0])
        if not args.skip_onnx:
            from linear_policy import LinearPolicy
            model, described = args.model, args.model
            if model is None:
                model = os.path.join(tmp, "trained_inliner.onnx")
                LinearPolicy(*TRAINED).export_onnx(model)
                described = repr(LinearPolicy(*TRAINED))
            policy = Policy.parse(model)
            configs = {
                "oz": [],
                "plugin_no_runner": ["-load", tc.plugin, f"-fpass-plugin={tc.plugin}"],
                "onnx": policy_args(policy, tc.plugin),
            }
            if args.aot_plugin:
                aot = os.path.abspath(args.aot_plugin)
                configs["aot"] = ["-load", aot, f"-fpass-plugin={aot}", "-mllvm", "-mlbridge-inline-runner=aot"]
            cmds = {k: plain_commands(corpus, tc, os.path.join(tmp, k), extra) for k, extra in configs.items()}
            for k in configs:
                os.makedirs(os.path.join(tmp, k))
            cpu: Dict[str, List[float]] = {k: [] for k in configs}
            for _ in range(args.reps):
                for k in configs:   # interleaved, so drift in machine load hits all three alike
                    cpu[k].append(cpu_of(cmds[k], args.jobs))
            med = {k: statistics.median(v) for k, v in cpu.items()}
            text = {k: sum(text_size(os.path.join(tmp, k, f"{i}.o")) for i in range(n)) for k in configs}
            extra = {}
            if "aot" in med:
                extra = dict(aot_cpu_s=round(med["aot"], 3), aot_text=text["aot"],
                             onnx_vs_aot_pct=round(100 * (med["onnx"] / med["aot"] - 1), 2),
                             aot_overhead_pct=round(100 * (med["aot"] / med["oz"] - 1), 2))
            emit(what="onnx_overhead", modules=n, reps=args.reps, jobs=args.jobs, policy=described, **extra,
                 oz_cpu_s=round(med["oz"], 3), plugin_no_runner_cpu_s=round(med["plugin_no_runner"], 3),
                 onnx_cpu_s=round(med["onnx"], 3),
                 plugin_overhead_pct=round(100 * (med["plugin_no_runner"] / med["oz"] - 1), 2),
                 onnx_overhead_pct=round(100 * (med["onnx"] / med["oz"] - 1), 2),
                 oz_text=text["oz"], onnx_text=text["onnx"], load_avg=os.getloadavg()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
