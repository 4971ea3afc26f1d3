#!/usr/bin/env python3
"""Training throughput of `mlbridge train` (docs/training.md): compilations per
second with 1 and 2 (or more) parallel compiles.

    python3 bench/train_throughput.py --corpus DIR [--corpus DIR ...] [--jobs 1 2]
                                      [--steps 2] [--reps 2] [--plugin build/libMLBridgeLLVM.so]

Each measurement is a fresh ES run of `--steps` generations (seed 0, a 16-unit
MLP imitating nothing: score 0 at start, sigma 0.3 so candidates differ) over
the corpora's modules in a scratch folder: every generation exports its
candidates to ONNX and compiles `--modules-per-step` modules under each, in
clang-19 with the plugin, exactly as `mlbridge train run` does. Reported per -j:
compiles/s (wall), the compilers' CPU seconds per compile, and the speed-up
over -j1. The -j values alternate within each repetition, so a load that
drifts over the run touches both. One JSON line per measurement and a summary
line per -j, like mlbridge-bench; the load average is printed with each.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Toolchain  # noqa: E402
from mlbridge.corpus.evaluate import oz_sizes  # noqa: E402
from mlbridge.llvm.inliner_features import FEATURES  # noqa: E402
from mlbridge.train.compiles import LocalCompiles  # noqa: E402
from mlbridge.train.policy import MLPPolicy  # noqa: E402
from mlbridge.problems.inlining.size_trainer import SizeTrainer, TrainConfig  # noqa: E402


def emit(**kw) -> None:
    print(json.dumps({"bench": "train_throughput", **kw}), flush=True)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def one_run(modules, baseline, tc, jobs: int, steps: int, per_step: int, pairs: int) -> dict:
    cfg = TrainConfig(algo="es", hidden=(16,), modules_per_step=per_step, pairs=pairs, sigma=0.3, steps=steps,
                      eval_every=10 ** 9, jobs=jobs, seed=0)
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-train-") as out:
        tr = SizeTrainer(out, modules, baseline, tc, cfg, MLPPolicy(list(FEATURES), (16,), seed=0),
                         compiles=LocalCompiles(jobs))
        cpu0, t0 = children_cpu(), time.monotonic()
        # eval_every is huge, but the last step still scores the policy on every module: count it
        summary = tr.run()
        wall, cpu = time.monotonic() - t0, children_cpu() - cpu0
    n = summary["compiles"]
    return {"jobs": jobs, "compiles": n, "wall_s": round(wall, 2), "compiles_per_s": round(n / wall, 2),
            "cpu_s_per_compile": round(cpu / n, 4), "load_avg": round(os.getloadavg()[0], 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--modules-per-step", type=int, default=12)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--plugin", default=os.environ.get("MLBRIDGE_LLVM_PLUGIN") or
                    os.path.join(ROOT, "build", "libMLBridgeLLVM.so"))
    args = ap.parse_args()
    tc = Toolchain.find(plugin=args.plugin, need_plugin=True)
    corpora = [layout.load(c) for c in args.corpus]
    baseline = {}
    for c in corpora:
        baseline.update(oz_sizes(c, tc))
    modules = [m for c in corpora for m in c.modules if baseline.get(m.name)]
    emit(what="setup", corpora=args.corpus, modules=len(modules), cores=os.cpu_count(), steps=args.steps,
         modules_per_step=args.modules_per_step, candidates=1 + 2 * args.pairs, load_avg=os.getloadavg()[0])
    runs = {j: [] for j in args.jobs}
    for rep in range(args.reps):
        order = args.jobs if rep % 2 == 0 else list(reversed(args.jobs))
        for j in order:
            r = one_run(modules, baseline, tc, j, args.steps, args.modules_per_step, args.pairs)
            runs[j].append(r)
            emit(what="run", rep=rep, **r)
    base = statistics.median(r["compiles_per_s"] for r in runs[args.jobs[0]])
    for j in args.jobs:
        cps = statistics.median(r["compiles_per_s"] for r in runs[j])
        emit(what="summary", jobs=j, compiles_per_s=cps,
             cpu_s_per_compile=statistics.median(r["cpu_s_per_compile"] for r in runs[j]),
             speedup_vs_first=round(cps / base, 2) if base else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
