"""``mlbridge train room``: how much room a problem's decisions leave around -Oz,
per program and setting; a table, OUT/room.json, resumable. Inlining
(problems/inlining/room.py): a greedy search over joint per-callee decisions;
phase ordering (problems/phase_ordering/room.py): ``mlbridge tune``'s search of
pass orders, one tune per corpus."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, Dict, List, Tuple

from ..corpus.settings import SETTINGS
from . import problem as problem_flag
from .errors import UsageError, usage_error

#: the inlining search's own flags (None or False: not given), and why phase ordering has none
_INLINING_ONLY = {"budget": "`mlbridge tune` has no budget of candidates per program: --minutes is its budget",
                  "programs": "its tune searches every module of the corpus", "start": "the inlining search's",
                  "fit": "the inlining search's; `mlbridge tune log` turns a tune into training logs"}


def add_parser(ts: argparse._SubParsersAction, run_options: Any) -> None:
    r = ts.add_parser("room", help="measure the room around -Oz: inlining (a greedy search over joint per-callee "
                      "decisions) or pass orders (mlbridge tune's search)",
                      description="For each program of each corpus (programs.json), search around -Oz for "
                                  "smaller builds in --setting. Inlining (the default --problem): a candidate "
                                  "inlines every call of one callee, or none of them; kept when the program "
                                  "shrinks; OUT/PROGRAM.SETTING.json is written after each batch (a run started "
                                  "again resumes). --problem phase-ordering: `mlbridge tune`'s search of pass "
                                  "orders per module (lto: per program's link), one tune per corpus into OUT/NAME/tune with "
                                  "--minutes as its budget (resumable as tune is), in stored bytes, in the objects, "
                                  "linked or lto setting. Writes OUT/room.json; prints the table. docs/training.md, "
                                  "\"Where the room is\".")
    r.add_argument("corpora", nargs="+", help="corpus folders (with programs.json, but for phase ordering in the "
                   "objects setting)")
    r.add_argument("-o", "--out", required=True, help="folder for the search states and room.json")
    r.add_argument("--setting", choices=SETTINGS, default=None,
                   help="default: lto for inlining, linked for phase ordering (not thinlto: its backends are "
                        "not searched)")
    r.add_argument("--budget", type=int, default=None,
                   help="inlining: candidates tried per program, in all runs (default 100); phase ordering has "
                        "no per-program budget: --minutes is the tune's")
    r.add_argument("--minutes", type=float, default=None,
                   help="inlining: start no new batch after this long (resumable); phase ordering: each corpus's "
                        "tune budget, in wall minutes over all runs into OUT (default 60)")
    r.add_argument("--programs", nargs="*", default=None, metavar="NAME", help="inlining: only these programs")
    r.add_argument("--start", nargs="+", choices=("oz", "never"), default=None,
                   help="inlining: where searches start (restarts): oz, -Oz's decisions; never, no call inlined "
                        "(default: both; the table keeps each program's best)")
    r.add_argument("--fit", action="store_true",
                   help="inlining: learn from the search: log every decision of each program's best build (its "
                        "38 features, the answer taken) and fit a policy to them: OUT/policy.json, OUT/policy.onnx")
    r.add_argument("--hidden", default="16", help="--fit: hidden layer sizes; 0 for linear")
    r.add_argument("-j", "--jobs", type=int, default=0, help="compiles in parallel (default: all cores)")
    run_options(r)
    problem_flag.add_argument(r)
    r.set_defaults(run=run_room)


def run_room(args: argparse.Namespace) -> int:
    problem = problem_flag.checked(args, "train room")   # the setting: each recipe's own check, below
    if args.minutes is not None and args.minutes <= 0:
        raise UsageError("--minutes must be positive")
    if problem.name == "phase-ordering":
        for name, why in _INLINING_ONLY.items():
            if getattr(args, name) not in (None, False):
                raise UsageError(f"--{name}: not for the phase-ordering room ({why})")
        summary, columns = _phase_ordering_room(args), PHASE_ORDERING_COLUMNS
    else:
        summary, columns = _inlining_room(args), INLINING_COLUMNS
    rows = summary["programs"]
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_room(rows, columns)
        if "fit" in summary:
            f = summary["fit"]
            print(f"\nfitted to {f['decisions']:,} decisions of {f['programs']} programs' best builds: accuracy "
                  f"{f['accuracy']:.3f}; policy: {f['policy']}")
    return 1 if any("error" in r for r in rows) else 0


def _inlining_room(args: argparse.Namespace) -> Dict[str, Any]:
    from ..problems.inlining.room_recipe import STARTS, measure_room
    from ..train.run_folder import RunSetupError
    from .train import parse_hidden, progress_stage
    budget = 100 if args.budget is None else args.budget
    if budget < 1:
        raise UsageError("--budget must be at least 1")
    hidden = parse_hidden(args.hidden)
    try:
        return measure_room(args.corpora, args.out, args.setting or "lto", budget=budget, minutes=args.minutes,
                            programs=args.programs, starts=args.start or STARTS, fit=args.fit, hidden=hidden,
                            jobs=args.jobs, seed=args.seed, timeout=args.timeout, clang=args.clang,
                            plugin=args.plugin, stage=progress_stage(args),
                            warn=lambda line: print(f"mlbridge: {line}", file=sys.stderr))
    except RunSetupError as exc:
        raise usage_error(exc) from None


def _phase_ordering_room(args: argparse.Namespace) -> Dict[str, Any]:
    from ..core.errors import ArgumentError
    from ..problems.phase_ordering.room import measure_room
    from ..train.run_folder import RunSetupError
    from .train import progress_stage
    try:
        return measure_room(args.corpora, args.out, args.setting or "linked", minutes=args.minutes, jobs=args.jobs,
                            seed=args.seed, timeout=args.timeout, clang=args.clang, plugin=args.plugin,
                            stage=progress_stage(args), warn=lambda line: print(f"mlbridge: {line}", file=sys.stderr))
    except RunSetupError as exc:
        if isinstance(exc, ArgumentError) and exc.argument == "corpora":
            raise UsageError(exc.worded("CORPUS")) from None
        raise usage_error(exc) from None


Column = Tuple[str, str, Callable[[Dict[str, Any]], str]]


def _pct(r: Dict[str, Any]) -> str:
    return "-" if r["room_pct"] is None else f"{r['room_pct']:+.2f} %"


#: (header, alignment, cell) per column; the left-aligned ones name the row (an error's row too)
INLINING_COLUMNS: List[Column] = [
    ("corpus", "---", lambda r: r["corpus"]), ("program", "---", lambda r: r["program"]),
    ("setting", "---", lambda r: r["setting"]), ("start", "---", lambda r: r["start"]),
    ("-Oz .text", "---:", lambda r: f"{r['oz']:,}"), ("start .text", "---:", lambda r: f"{r['base']:,}"),
    ("best found", "---:", lambda r: f"{r['best']:,}"), ("room", "---:", _pct),
    ("kept / tried", "---:", lambda r: f"{r['kept']} / {r['tried']}"), ("builds", "---:", lambda r: str(r["builds"])),
    ("minutes", "---:", lambda r: str(r["minutes"]))]
PHASE_ORDERING_COLUMNS: List[Column] = [
    ("corpus", "---", lambda r: r["corpus"]), ("program", "---", lambda r: r["program"]),
    ("setting", "---", lambda r: r["setting"]), ("-Oz stored", "---:", lambda r: f"{r['oz']:,}"),
    ("best found", "---:", lambda r: f"{r['best']:,}"), ("room", "---:", _pct),
    ("tuned / modules", "---:", lambda r: f"{r['tuned']} / {r['modules']}"),
    ("tried", "---:", lambda r: f"{r['tried']:,}"), ("minutes", "---:", lambda r: str(r["minutes"]))]


def print_room(rows: List[Dict[str, Any]], columns: List[Column] = INLINING_COLUMNS) -> None:
    print("| " + " | ".join(h for h, _, _ in columns) + " |")
    print("|" + "|".join(a for _, a, _ in columns) + "|")
    named = [c for c in columns if c[1] == "---"]
    for r in rows:
        if "error" in r:
            print("| " + " | ".join([cell(r) for _, _, cell in named] + [f"FAILED: {r['error']}"]) + " |"
                  + " |" * (len(columns) - len(named) - 1))
        else:
            print("| " + " | ".join(cell(r) for _, _, cell in columns) + " |")
