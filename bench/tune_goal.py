"""The tuner's goal measurement (issue 36, docs/tuning.md): `mlbridge tune` on
programs it was never developed on, each with a wall-clock budget on all cores,
against the same build with stock clang-19 -Oz, in the linked setting.

Programs: the lz4 and zstd codecs of the speed check (evaluation-split projects,
each a real program with a workload whose output is checked: a tuned build that
prints something else is a miscompile, sent back to -Oz), and the corpora of the
evaluation-split recipes named with --recipes (their linked libraries; no
workload). Prints one JSON line per program, then a Markdown table; every tune
checkpoints in OUT/NAME, so a stopped run started again resumes.

    python3 bench/tune_goal.py -o /tmp/tune-goal --minutes 60 [--programs lz4 zstd] [--recipes deflate pyroaring]
        [--setting lto]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from mlbridge.corpus.compile import Toolchain  # noqa: E402
from mlbridge.benchmark.speed_check import codec_benchmarks  # noqa: E402
from mlbridge.tune import TuneOptions, tune  # noqa: E402
from mlbridge.tune.workloads import benchmark_corpus, check_command  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--minutes", type=float, default=60.0, help="budget per program (wall minutes)")
    ap.add_argument("--programs", nargs="*", default=["lz4", "zstd"], help="speed-check codecs (with workloads)")
    ap.add_argument("--recipes", nargs="*", default=[], help="evaluation-split recipe corpora (no workload)")
    ap.add_argument("-j", "--jobs", type=int, default=0)
    ap.add_argument("--setting", default="linked", choices=("linked", "lto"),
                    help="linked (the goal's), or lto: each program's full-LTO link pipeline")
    args = ap.parse_args()
    tc = Toolchain.find(need_plugin=True)
    rows = []
    units = []
    for b in codec_benchmarks(tuple(args.programs)) if args.programs else []:
        folder = os.path.join(args.out, b.name)
        corpus = os.path.join(folder, "corpus")
        if not os.path.isfile(os.path.join(corpus, "programs.json")):
            corpus = benchmark_corpus(b, folder, tc.clang)
        units.append((b.name, corpus, check_command(b)))
    if args.recipes:
        from mlbridge.corpus.recipes import recipes
        from mlbridge.corpus.recipes.build import build
        known = recipes()
        for name in args.recipes:
            if known[name].split != "eval":
                raise SystemExit(f"{name}: not an evaluation-split recipe")
            units.append((name, build(known[name], jobs=args.jobs or None).corpus, None))
    for name, corpus, check in units:
        start = time.monotonic()
        report = tune(corpus, os.path.join(args.out, name, "tune" if args.setting == "linked" else "tune-lto"), tc,
                      TuneOptions(setting=args.setting, budget_minutes=args.minutes, jobs=args.jobs,
                                  check=check),
                      progress=lambda line, n=name: print(f"{n}: {line}", file=sys.stderr, flush=True))
        t = report["total"]
        row = {"program": name, "minutes": t["minutes"], "wall_seconds": round(time.monotonic() - start, 1),
               "candidates": t["candidates"], "modules": t["modules"], "tuned": t["tuned"],
               "oz_stored": t.get("linked_oz_stored"), "stored": t.get("linked_stored"),
               "stored_pct": t.get("linked_stored_pct"), "oz_text": t.get("linked_oz_text"),
               "text": t.get("linked_text"), "text_pct": t.get("linked_text_pct"),
               "objects_stored_pct": t["objects_stored_pct"], "larger": t.get("programs_larger"),
               "checks": [p["check"] for p in report["programs"]], "curve": report["curve"],
               "jobs": t["jobs"], "callee_answers": t.get("callee_answers"), "callee_saved": t.get("callee_saved"),
               "compile_time_ratio": t.get("compile_time_ratio"), "objects_ir_pct": t.get("objects_ir_pct")}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print("| program | minutes | candidates | -Oz stored | tuned stored | change | -Oz .text | tuned .text | change | "
          "output |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r['program']} | {r['minutes']} | {r['candidates']:,} | {r['oz_stored']:,} | {r['stored']:,} | "
              f"{r['stored_pct']:+.2f} % | {r['oz_text']:,} | {r['text']:,} | {r['text_pct']:+.2f} % | "
              f"{', '.join(c or 'no workload' for c in r['checks'])} |")
    oz = sum(r["oz_stored"] for r in rows)
    st = sum(r["stored"] for r in rows)
    if oz:
        print(f"| **total** | | | {oz:,} | {st:,} | **{100.0 * (st - oz) / oz:+.2f} %** | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
