"""The order policy's goal measurement (issue 37, docs/phase-ordering-policy.md):
the shipped phase-ordering policy on projects it was never trained on, in the
compile users already run (clang-19 -Oz with the plugin and one option), against
stock clang-19 -Oz.

Per evaluation-split recipe corpus: every module's object (stored bytes = Berkeley
text + data; geomean over modules of policy / -Oz, modules with a non-empty -Oz
object), modules larger and failed, compile seconds against -Oz's; then the
corpus's linked programs (total stored bytes). Per speed-check codec (lz4, zstd:
programs with workloads): built as a user's build is, with and without the
policy's flags, linked, run; the outputs must be equal (else a miscompile).
Prints one JSON line per project, then a Markdown table.

    python3 bench/order_policy_goal.py --policy policies/phase_ordering/order_policy.json \
        [--recipes lz4 zstandard deflate pyroaring pyclipper ninja simdjson] [--programs lz4 zstd] [-j 2]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from mlbridge.corpus.compile import Policy, Toolchain, driver_plugin_flags  # noqa: E402
from mlbridge.corpus.elf import stored_sizes  # noqa: E402
from mlbridge.corpus.evaluate import evaluate  # noqa: E402
from mlbridge.corpus.layout import load  # noqa: E402
from mlbridge.corpus.settings import Setting  # noqa: E402

EVAL_RECIPES = ["lz4", "zstandard", "deflate", "pyroaring", "pyclipper", "ninja", "simdjson"]


def objects_row(name: str, corpus_dir: str, policy: Policy, tc: Toolchain, jobs: int) -> dict:
    corpus = load(corpus_dir)
    ev = evaluate(corpus, policy, tc, jobs=jobs, problem="phase-ordering")
    logs, larger, smaller, failed, oz_s, pol_s, oz_b, pol_b, oz_t, pol_t = [], 0, 0, [], 0.0, 0.0, 0, 0, 0, 0
    for s in ev.scores:
        if not s.ok:
            failed.append({"module": s.module, "error": (s.policy.error or s.baseline.error or "")[:300]})
            continue
        b, p = int(s.baseline.stored_bytes), int(s.policy.stored_bytes)
        oz_s += s.baseline.seconds
        pol_s += s.policy.seconds
        oz_b += b
        pol_b += p
        oz_t += int(s.baseline.text_bytes)
        pol_t += int(s.policy.text_bytes)
        larger += p > b
        smaller += p < b
        if b > 0:
            logs.append(math.log(p / b))
    row = {"project": name, "modules": len(ev.scores), "failed": len(failed), "failures": failed[:5],
           "log_ratios": [round(v, 6) for v in logs], "oz_seconds": round(oz_s, 3), "policy_seconds": round(pol_s, 3),
           "geomean_pct": round(100 * (math.exp(sum(logs) / len(logs)) - 1), 3) if logs else None,
           "objects_oz_stored": oz_b, "objects_stored": pol_b,
           "objects_pct": round(100.0 * (pol_b - oz_b) / oz_b, 3) if oz_b else None,
           "objects_oz_text": oz_t, "objects_text": pol_t,
           "objects_text_pct": round(100.0 * (pol_t - oz_t) / oz_t, 3) if oz_t else None,
           "smaller": smaller, "larger": larger,
           "compile_ratio": round(pol_s / oz_s, 3) if oz_s else None}
    if os.path.isfile(os.path.join(corpus_dir, "programs.json")):
        lk = evaluate(corpus, policy, tc, jobs=jobs, setting=Setting.parse("linked"), problem="phase-ordering")
        t = lk.totals()
        row.update(linked_oz_stored=t.get("baseline_score"), linked_stored=t.get("policy_score"),
                   linked_pct=t.get("delta_pct"), linked_failed=t.get("failed"),
                   programs_larger=t.get("worse"))
    return row


def workload_row(bench, policy_path: str, tc: Toolchain, work: str) -> dict:
    from mlbridge.tune.workloads import WorkloadError, build_with
    row = {"project": f"{bench.name} codec (workload)"}
    try:
        t0 = time.monotonic()
        oz_exe, oz_out = build_with(bench, os.path.join(work, bench.name, "oz"), tc.clang)
        t1 = time.monotonic()
        pol_exe, pol_out = build_with(bench, os.path.join(work, bench.name, "policy"), tc.clang,
                                      driver_plugin_flags(tc.plugin, "mlbridge-po-policy", policy_path))
        t2 = time.monotonic()
    except WorkloadError as exc:
        row["error"] = str(exc)
        return row
    (oz_t, oz_b), (pol_t, pol_b) = stored_sizes(oz_exe), stored_sizes(pol_exe)
    row.update(linked_oz_stored=oz_b, linked_stored=pol_b, linked_pct=round(100.0 * (pol_b - oz_b) / oz_b, 3),
               linked_text_pct=round(100.0 * (pol_t - oz_t) / oz_t, 3),
               output="same output" if oz_out == pol_out else "MISCOMPILE: the output differs",
               build_ratio=round((t2 - t1) / (t1 - t0), 3) if t1 > t0 else None)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", required=True, help="order_policy.json")
    ap.add_argument("--recipes", nargs="*", default=EVAL_RECIPES, help="evaluation-split recipe corpora")
    ap.add_argument("--programs", nargs="*", default=["lz4", "zstd"], help="speed-check codecs with workloads")
    ap.add_argument("--allow-train", action="store_true", help="also accept training-split recipes (the "
                    "no-crash check over every recipe; their figures are not the goal's)")
    ap.add_argument("-j", "--jobs", type=int, default=0)
    args = ap.parse_args()
    tc = Toolchain.find(need_plugin=True)
    policy = Policy.parse(f"orders:{args.policy}")
    rows = []
    from mlbridge.corpus.recipes import recipes
    from mlbridge.corpus.recipes.build import build
    known = recipes()
    for name in args.recipes:
        if known[name].split != "eval" and not args.allow_train:
            raise SystemExit(f"{name}: not an evaluation-split recipe")
        row = objects_row(name, build(known[name], jobs=args.jobs or None).corpus, policy, tc, args.jobs or 0)
        row["split"] = known[name].split
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.programs:
        from mlbridge.benchmark.speed_check import codec_benchmarks
        with tempfile.TemporaryDirectory(prefix="mlbridge-order-goal-") as work:
            for b in codec_benchmarks(tuple(args.programs)):
                row = workload_row(b, args.policy, tc, work)
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("| project | modules | per object (geomean) | larger | failed | compile time | linked -Oz | linked policy "
          "| linked change | output |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")

    def f(v, fmt="{:+.2f} %"):
        return "" if v is None else fmt.format(v)
    for r in rows:
        print(f"| {r['project']} | {r.get('modules', '')} | {f(r.get('geomean_pct'))} | {r.get('larger', '')} | "
              f"{r.get('failed', '')} | {f(r.get('compile_ratio') or r.get('build_ratio'), '{:.2f}x')} | "
              f"{f(r.get('linked_oz_stored'), '{:,}')} | {f(r.get('linked_stored'), '{:,}')} | "
              f"{f(r.get('linked_pct'))} | {r.get('output', r.get('error', 'no workload'))} |")
    recipe_rows = [r for r in rows if r.get("geomean_pct") is not None and r.get("split") == "eval"]
    if recipe_rows:
        gm = math.exp(sum(math.log(1 + r["geomean_pct"] / 100) for r in recipe_rows) / len(recipe_rows))
        oz = sum(r.get("linked_oz_stored") or 0 for r in recipe_rows)
        st = sum(r.get("linked_stored") or 0 for r in recipe_rows)
        logs = [v for r in recipe_rows for v in r["log_ratios"]]
        secs = sum(r["policy_seconds"] for r in recipe_rows) / max(1e-9, sum(r["oz_seconds"] for r in recipe_rows))
        print(f"\nEvaluation recipes: per-object geomean over all {len(logs)} modules "
              f"{100 * (math.exp(sum(logs) / len(logs)) - 1):+.2f} % (over projects {100 * (gm - 1):+.2f} %); "
              f"linked total {100.0 * (st - oz) / oz if oz else float('nan'):+.2f} %; compile time {secs:.2f}x -Oz's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
