"""``mlbridge train room``: how much room inlining leaves around -Oz, per program
and setting (train/room.py); a table, RUN/room.json, resumable."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List

from ..corpus.settings import SETTINGS
from .errors import UsageError, usage_error
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
    from ..corpus.compile import CompileOptions, CompileSetupError, Toolchain
    from ..core.files import write_json_atomic
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
    from .train import _hidden
    hidden = _hidden(args.hidden)
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
        raise usage_error(exc) from None
    if not work:
        raise UsageError("no program to search (check --programs)")
    os.makedirs(args.out, exist_ok=True)
    options = CompileOptions(timeout=args.timeout)
    jobs = args.jobs or os.cpu_count() or 1
    deadline = None if args.minutes is None else time.monotonic() + 60.0 * args.minutes
    rows: List[Dict[str, Any]] = []
    failed = 0
    best: Dict[str, Any] = {}   # program -> the search holding its smallest build
    total = len(work) * len(args.start) * args.budget
    with Progress(total, f"room ({setting.name})", quiet=args.quiet, unit="build") as bar:
        for (corpus, prog), start in [(w, s) for w in work for s in args.start]:
            try:
                search = RoomSearch(corpus, prog, setting, toolchain, args.out, jobs=jobs, options=options,
                                    start=start)
                seen = [len(search.state.tried)]
                bar.update(seen[0], postfix=prog.name)

                def step(st: Any, seen: List[int] = seen) -> None:
                    bar.update(len(st.tried) - seen[0], postfix=f"{prog.name} {len(st.kept)} kept")
                    seen[0] = len(st.tried)

                st = search.run(budget=args.budget, deadline=deadline, on_step=step)
                bar.update(args.budget - seen[0])
                rows.append(dict(room_row(st), corpus=os.path.basename(os.path.normpath(corpus.root))))
                key = f"{corpus.root}/{prog.name}"
                if st.best is not None and (key not in best or st.best < best[key].state.best):
                    best[key] = search
            except RoomError as exc:
                failed += 1
                print(f"mlbridge: {exc}", file=sys.stderr)
                rows.append({"corpus": os.path.basename(os.path.normpath(corpus.root)), "program": prog.name,
                             "setting": setting.name, "start": start, "error": str(exc)})
    summary: Dict[str, Any] = {"setting": setting.name, "programs": rows}
    if args.fit and best:
        summary["fit"] = fit_from_searches(list(best.values()), hidden, args.out, args.seed, quiet=args.quiet)
    write_json_atomic(os.path.join(args.out, "room.json"), summary, indent=1)
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_room(rows)
        if "fit" in summary:
            f = summary["fit"]
            print(f"\nfitted to {f['decisions']:,} decisions of {f['programs']} programs' best builds: accuracy "
                  f"{f['accuracy']:.3f}; policy: {f['policy']}")
    return 1 if failed else 0


def fit_from_searches(searches: List[Any], hidden: Any, out: str, seed: int, *, quiet: bool) -> Dict[str, Any]:
    """Learning from the search: each program's best build, logged, imitated by
    one policy (the decisions of all programs at once)."""
    import tempfile

    import numpy as np

    from ..llvm.inliner_features import FEATURES
    from ..train.imitation import fit_imitation
    from ..train.policy import MLPPolicy
    xs, ys = [], []
    with tempfile.TemporaryDirectory(prefix="mlbridge-room-fit-") as work, \
            Progress(len(searches), "logging the best builds", quiet=quiet, unit="program") as bar:
        for s in searches:
            m, trajs = s.logged(dict(s.state.kept), work)
            bar.update(1, postfix=s.program.name)
            if not m.ok:
                print(f"mlbridge: {s.program.name}: the logged build failed: {m.error}", file=sys.stderr)
                continue
            for t in trajs:
                xs.append(t.x)
                ys.append(t.decision)
    if not xs:
        raise UsageError("--fit: no decision was logged")
    x, y = np.concatenate(xs), np.concatenate(ys).astype(np.int64)
    policy = MLPPolicy(list(FEATURES), hidden, seed=seed)
    fit = fit_imitation(policy, x, y)
    policy.save(os.path.join(out, "policy.json"))
    onnx = policy.export_onnx(os.path.join(out, "policy.onnx"))
    return {"programs": len(searches), "decisions": int(y.size), "inlined": int(y.sum()),
            "accuracy": float(fit["accuracy"]), "policy": onnx}


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
