"""``mlbridge train room``: how much room inlining leaves around -Oz, per program
and setting (train/room.py); a table, RUN/room.json, resumable."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List

from .errors import UsageError
from .progress import Progress


def add_parser(ts: argparse._SubParsersAction, run_options: Any) -> None:
    r = ts.add_parser("room", help="measure the room around -Oz: a greedy search over joint per-callee decisions",
                      description="For each program of each corpus (programs.json), search around -Oz's "
                                  "decisions for smaller builds in --setting: a candidate inlines every call of "
                                  "one callee, or none of them; kept when the program shrinks. Writes "
                                  "OUT/PROGRAM.SETTING.json after each batch (a run started again resumes) and "
                                  "OUT/room.json; prints the table. docs/training.md, \"Where the room is\".")
    r.add_argument("corpora", nargs="+", help="corpus folders with programs.json")
    r.add_argument("-o", "--out", required=True, help="folder for the search states and room.json")
    r.add_argument("--setting", choices=("objects", "linked", "lto"), default="lto")
    r.add_argument("--budget", type=int, default=100, help="candidates tried per program, in all runs")
    r.add_argument("--minutes", type=float, default=None, help="start no new batch after this long (resumable)")
    r.add_argument("--programs", nargs="*", default=None, metavar="NAME", help="only these programs")
    r.add_argument("-j", "--jobs", type=int, default=0, help="candidates built in parallel (default: all cores)")
    run_options(r)
    r.set_defaults(run=run_room)


def run_room(args: argparse.Namespace) -> int:
    from ..corpus.compile import CompileOptions, CompileSetupError, Toolchain
    from ..corpus.layout import CorpusError, load
    from ..corpus.programs import load_programs
    from ..corpus.settings import Setting, find_lld
    from ..train.room import RoomError, RoomSearch, room_row

    if args.budget < 1:
        raise UsageError("--budget must be at least 1")
    if args.minutes is not None and args.minutes <= 0:
        raise UsageError("--minutes must be positive")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"-o {args.out}: exists and is not a folder")
    work: List[Any] = []
    try:
        toolchain = Toolchain.find(args.clang, args.plugin, need_plugin=True)
        setting = Setting.parse(args.setting)
        if setting.whole_program:
            find_lld(toolchain.clang)
        for path in args.corpora:
            corpus = load(path)
            for prog in load_programs(corpus):
                if args.programs is None or prog.name in args.programs:
                    work.append((corpus, prog))
    except (CorpusError, CompileSetupError) as exc:
        raise UsageError(str(exc)) from None
    if not work:
        raise UsageError("no program to search (check --programs)")
    os.makedirs(args.out, exist_ok=True)
    options = CompileOptions(timeout=args.timeout)
    jobs = args.jobs or os.cpu_count() or 1
    deadline = None if args.minutes is None else time.monotonic() + 60.0 * args.minutes
    rows: List[Dict[str, Any]] = []
    failed = 0
    with Progress(len(work) * args.budget, f"room ({setting.name})", quiet=args.quiet, unit="build") as bar:
        for corpus, prog in work:
            try:
                search = RoomSearch(corpus, prog, setting, toolchain, args.out, jobs=jobs, options=options)
                seen = [len(search.state.tried)]
                bar.update(seen[0], postfix=prog.name)

                def step(st: Any, seen: List[int] = seen) -> None:
                    bar.update(len(st.tried) - seen[0], postfix=f"{prog.name} {len(st.kept)} kept")
                    seen[0] = len(st.tried)

                st = search.run(budget=args.budget, deadline=deadline, on_step=step)
                bar.update(args.budget - seen[0])
                rows.append(dict(room_row(st), corpus=os.path.basename(os.path.normpath(corpus.root))))
            except RoomError as exc:
                failed += 1
                print(f"mlbridge: {exc}", file=sys.stderr)
                rows.append({"corpus": os.path.basename(os.path.normpath(corpus.root)), "program": prog.name,
                             "setting": setting.name, "error": str(exc)})
    tmp = os.path.join(args.out, "room.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"setting": setting.name, "programs": rows}, f, indent=1)
    os.replace(tmp, os.path.join(args.out, "room.json"))
    if args.json:
        json.dump({"setting": setting.name, "programs": rows}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_room(rows)
    return 1 if failed else 0


def print_room(rows: List[Dict[str, Any]]) -> None:
    print("| corpus | program | setting | -Oz .text | best found | room | kept / tried | builds | minutes |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "error" in r:
            print(f"| {r['corpus']} | {r['program']} | {r['setting']} | FAILED: {r['error']} | | | | | |")
            continue
        pct = "-" if r["room_pct"] is None else f"{r['room_pct']:+.2f} %"
        print(f"| {r['corpus']} | {r['program']} | {r['setting']} | {r['oz']:,} | {r['best']:,} | {pct} | "
              f"{r['kept']} / {r['tried']} | {r['builds']} | {r['minutes']} |")
