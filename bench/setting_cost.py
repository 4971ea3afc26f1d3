"""What one candidate costs in each whole-program setting (issue 22): the time
and CPU to score one policy on a corpus in ``objects``, ``linked`` and ``lto``,
the -Oz baselines cached as training caches them.

    python3 bench/setting_cost.py CORPUS [CORPUS ...] [--policy MODEL.onnx|oz]
                                  [--settings objects linked lto] [--runs 3] [-j JOBS]

For each corpus and setting: the policy's compiles and links run ``--runs``
times (after one warm-up run that also fills the baseline cache); the median
wall, the compilers' and linkers' CPU (children's user+sys: what a loaded
machine does not inflate), candidates per second per core (1 / CPU), and the
corpus's bitcode bytes, so that the cost can be read against program size.
One JSON line per (corpus, setting), then a Markdown table.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import CompileOptions, Policy, Toolchain  # noqa: E402
from mlbridge.corpus.evaluate import BaselineCache, evaluate  # noqa: E402
from mlbridge.corpus.settings import SETTINGS, Setting  # noqa: E402


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="+")
    ap.add_argument("--policy", default=os.path.join(os.path.dirname(__file__), "..", "policies", "inline_size",
                                                     "policy.onnx"))
    ap.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=SETTINGS)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-j", "--jobs", type=int, default=None)
    ap.add_argument("--plugin", default=None)
    args = ap.parse_args()
    policy = Policy.parse(args.policy)
    toolchain = Toolchain.find(plugin=args.plugin, need_plugin=policy.uses_plugin)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-setting-cost-") as cache_dir:
        cache = BaselineCache(cache_dir)
        for root in args.corpora:
            corpus = layout.load(root)
            bc_bytes = sum(os.path.getsize(m.bc) for m in corpus.modules)
            for name in args.settings:
                setting = Setting.parse(name)
                walls, cpus, ok = [], [], True
                for run in range(args.runs + 1):
                    c0, t0 = children_cpu(), time.monotonic()
                    ev = evaluate(corpus, policy, toolchain, jobs=args.jobs, cache=cache, setting=setting,
                                  options=CompileOptions())
                    wall, cpu = time.monotonic() - t0, children_cpu() - c0
                    ok = ok and not ev.failed
                    if run:   # run 0 warms up and fills the -Oz cache
                        walls.append(wall)
                        cpus.append(cpu)
                total = ev.totals()
                row = {"bench": "setting_cost", "corpus": os.path.basename(os.path.normpath(root)),
                       "setting": name, "modules": len(corpus.modules), "bitcode_bytes": bc_bytes,
                       "units": total["modules"], "ok": ok, "wall_s": round(statistics.median(walls), 3),
                       "cpu_s": round(statistics.median(cpus), 3),
                       "candidates_per_s_per_core": round(1.0 / max(statistics.median(cpus), 1e-9), 4),
                       "oz_text": total["oz_text"], "policy_text": total["policy_text"],
                       "delta_pct": total["delta_pct"], "runs": args.runs}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| corpus | bitcode KiB | setting | wall s | CPU s | candidates/s/core | -Oz .text | policy |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['corpus']} | {r['bitcode_bytes'] // 1024:,} | {r['setting']} | {r['wall_s']} | {r['cpu_s']} | "
              f"{r['candidates_per_s_per_core']} | {r['oz_text']:,} | {r['delta_pct']:+.2f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
