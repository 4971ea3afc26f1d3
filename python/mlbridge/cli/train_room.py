"""``mlbridge train room``: how much room inlining leaves around -Oz, per program
and setting (problems/inlining/room.py); a table, RUN/room.json, resumable."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

from ..corpus.settings import SETTINGS
from .errors import UsageError, usage_error


def add_parser(ts: argparse._SubParsersAction, run_options: Any) -> None:
    r = ts.add_parser("room", help="measure the room around -Oz: a greedy search over joint per-callee decisions",
                      description="For each program of each corpus (programs.json), search around -Oz's "
                                  "decisions for smaller builds in --setting: a candidate inlines every call of "
                                  "one callee, or none of them; kept when the program shrinks. Writes "
                                  "OUT/PROGRAM.SETTING.json after each batch (a run started again resumes) and "
                                  "OUT/room.json; prints the table. docs/training.md, \"Where the room is\".")
    r.add_argument("corpora", nargs="+", help="corpus folders with programs.json")
    r.add_argument("-o", "--out", required=True, help="folder for the search states and room.json")
    r.add_argument("--setting", choices=SETTINGS, default="lto")
    r.add_argument("--budget", type=int, default=100, help="candidates tried per program, in all runs")
    r.add_argument("--minutes", type=float, default=None, help="start no new batch after this long (resumable)")
    r.add_argument("--programs", nargs="*", default=None, metavar="NAME", help="only these programs")
    r.add_argument("--start", nargs="+", choices=("oz", "never"), default=["oz", "never"],
                   help="where searches start (restarts): oz, -Oz's decisions; never, no call inlined "
                        "(default: both; the table keeps each program's best)")
    r.add_argument("--fit", action="store_true",
                   help="learn from the search: log every decision of each program's best build (its 38 "
                        "features, the answer taken) and fit a policy to them: OUT/policy.json, OUT/policy.onnx")
    r.add_argument("--hidden", default="16", help="--fit: hidden layer sizes; 0 for linear")
    r.add_argument("-j", "--jobs", type=int, default=0, help="candidates built in parallel (default: all cores)")
    run_options(r)
    r.set_defaults(run=run_room)


def run_room(args: argparse.Namespace) -> int:
    from ..problems.inlining.room_recipe import measure_room
    from ..train.run_folder import RunSetupError
    from .train import parse_hidden, progress_stage

    if args.budget < 1:
        raise UsageError("--budget must be at least 1")
    if args.minutes is not None and args.minutes <= 0:
        raise UsageError("--minutes must be positive")
    hidden = parse_hidden(args.hidden)
    try:
        summary = measure_room(args.corpora, args.out, args.setting, budget=args.budget, minutes=args.minutes,
                               programs=args.programs, starts=args.start, fit=args.fit, hidden=hidden,
                               jobs=args.jobs, seed=args.seed, timeout=args.timeout, clang=args.clang,
                               plugin=args.plugin, stage=progress_stage(args),
                               warn=lambda line: print(f"mlbridge: {line}", file=sys.stderr))
    except RunSetupError as exc:
        raise usage_error(exc) from None
    rows = summary["programs"]
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_room(rows)
        if "fit" in summary:
            f = summary["fit"]
            print(f"\nfitted to {f['decisions']:,} decisions of {f['programs']} programs' best builds: accuracy "
                  f"{f['accuracy']:.3f}; policy: {f['policy']}")
    return 1 if any("error" in r for r in rows) else 0


def print_room(rows: List[Dict[str, Any]]) -> None:
    print("| corpus | program | setting | start | -Oz .text | start .text | best found | room | kept / tried | "
          "builds | minutes |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['corpus']} | {r['program']} | {r['setting']} | {r['start']} | FAILED: {r['error']} "
                  "| | | | | | |")
            continue
        pct = "-" if r["room_pct"] is None else f"{r['room_pct']:+.2f} %"
        print(f"| {r['corpus']} | {r['program']} | {r['setting']} | {r['start']} | {r['oz']:,} | {r['base']:,} | "
              f"{r['best']:,} | {pct} | {r['kept']} / {r['tried']} | {r['builds']} | {r['minutes']} |")
