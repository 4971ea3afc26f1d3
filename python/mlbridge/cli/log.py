"""``mlbridge log show|export``: LLVM training logs (docs/training-logs.md):
the inliner's (the plugin's -mlbridge-inline-training-log) and, with ``--problem
phase-ordering``, the pass orders of `mlbridge tune log` (problems/phase_ordering/logs.py)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, List, Optional

from . import problem as problem_flag
from .errors import UsageError, usage_error
from .progress import Progress


def add_parser(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("log", help="training logs: summarize, export for trainers",
                        description="LLVM training logs (the plugin's -mlbridge-inline-training-log, LLVM's "
                        "-training-log; with --problem phase-ordering, the pass orders `mlbridge tune log` writes): "
                        "summarize them, export them as TFRecords of tf.train.SequenceExample "
                        "(ml-compiler-opt's trainers), .npz or Parquet.")
    sub2 = lg.add_subparsers(dest="log_cmd", required=True, metavar="ACTION", parser_class=type(lg))
    s = sub2.add_parser("show", help="summarize a training log",
                        description="A training log's features, contexts, decisions and reward; with --problem "
                        "phase-ordering, each context's order step by step, by name.")
    s.add_argument("log", help="a training log")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    problem_flag.add_argument(s)
    s.set_defaults(run=show)
    e = sub2.add_parser("export", help="convert training logs for trainers",
                        description="One record per trajectory (context) with at least one step: every logged "
                        "feature, the score list (delta_size) and a per-step float 'reward' holding the module's "
                        "reward. Reward: 'relative' = ml-compiler-opt's 1 - (policy+0.01)/(oz+0.01), from the "
                        "sizes set_log_reward keeps in LOG.reward.json; 'bytes' = -delta_size, the bytes saved "
                        "against -Oz (.text for inlining-size, stored bytes for phase-ordering); 'auto' = "
                        "relative if every log has its sizes, else bytes. --problem phase-ordering: only its logs "
                        "(module_features, step, action) are read, another is skipped with its reason.")
    e.add_argument("logs", nargs="+", metavar="LOG", help="training logs (a folder: every *.log in it, recursively)")
    e.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created)")
    e.add_argument("--format", default="tfrecord", choices=["tfrecord", "npz", "parquet"],
                   help="tfrecord: DIR/training.tfrecord; npz: DIR/training.npz; parquet: DIR/training.parquet "
                   "(needs pyarrow)")
    e.add_argument("--reward", default="auto", choices=["auto", "relative", "bytes"])
    e.add_argument("--quiet", action="store_true", help="no progress output")
    e.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    problem_flag.add_argument(e)
    e.set_defaults(run=export)


def _phase_ordering_logs(problem: Any) -> Optional[Any]:
    """problems/phase_ordering/logs.py for its problem (its logs' check and step
    names); None for the inliner's logs, read as they are."""
    if problem.name != "phase-ordering":
        return None
    from ..problems.phase_ordering import logs
    return logs


def show(args: argparse.Namespace) -> int:
    problem = problem_flag.checked(args, "log show")
    if not os.path.exists(args.log):
        raise UsageError(f"{args.log}: no such file")
    from ..llvm.log_summary import summarize
    po = _phase_ordering_logs(problem)
    s = po.summarize(args.log) if po is not None else summarize(args.log)
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    p = print
    p(f"{s['log']}: {len(s['contexts'])} context(s), {s['observations']} observation(s)")
    for c in s["contexts"]:
        p(f"  context {c['name']!r}: {c['observations']} observation(s)")
        if "decisions" in c:
            p(f"    {s['advice']['name']} by step: {' '.join(c['decisions'])}")
    p(f"features ({len(s['features'])}):")
    width = max((len(f["name"]) for f in s["features"]), default=0)
    for f in s["features"]:
        p(f"  {f['name']:<{width}}  {f['type']} {f['shape']}")
    if s["score"]:
        p(f"score: {s['score']['name']} {s['score']['type']} {s['score']['shape']}")
    if s["advice"]:
        p(f"advice: {s['advice']['name']} {s['advice']['type']} {s['advice']['shape']}")
    for name, counts in s["decisions"].items():
        p(f"{name}: {counts}")
    r = s["reward"]
    if r["delta_size"] is not None:
        line = f"reward: delta_size {r['delta_size']} {r.get('unit', 'bytes')}"
        if "relative" in r:
            line += f" (policy {r['policy_size']} vs -Oz {r['baseline_size']}: relative reward {r['relative']:+.4f})"
        else:
            line += " (no sizes recorded: set_log_reward not called)"
        p(line)
    p("ml-compiler-opt: " + ("usable (one context, at least one step)" if s["ml_compiler_opt_usable"]
                             else "would skip this module (it needs exactly one context with at least one step)"))
    return 0


def export(args: argparse.Namespace) -> int:
    """``log export``: see llvm/log_export.export_logs; exit code 1 when a log was skipped."""
    from ..llvm.log_export import LogExportError, export_logs, find_logs
    problem = problem_flag.checked(args, "log export")   # the rewards below are its (bytes against -Oz)
    po = _phase_ordering_logs(problem)
    bars: List[Progress] = []

    def start(total: int) -> None:
        # no progress for one log: its error, if any, is the one line on stderr
        bars.append(Progress(total, "export", quiet=args.quiet or args.json or total == 1, unit="log"))

    def done(path: str, ok: bool) -> None:
        bars[0].update(1, postfix=os.path.basename(path) if ok else None)

    def skipped(reason: str) -> None:
        if len(paths) > 1:   # one log: its reason is the command's error, below
            line = f"mlbridge: {reason} (skipped)"
            if bars[0].quiet:   # --quiet silences progress, not errors
                print(line, file=sys.stderr)
            else:
                bars[0].write(line)

    try:
        paths = find_logs(args.logs)
        result = export_logs(paths, args.output, format=args.format, reward=args.reward, on_start=start,
                             on_log=done, on_skip=skipped, check=po.check_log if po is not None else None)
    except LogExportError as exc:
        raise usage_error(exc) from None
    finally:
        for bar in bars:
            bar.close()
    failed, outputs = result["failed"], result["outputs"]
    if args.json:
        print(json.dumps(result, indent=1))
    if not outputs:
        what = failed[0]["error"] if len(paths) == 1 else \
            f"{', '.join(args.logs)}: none of the {len(paths)} logs could be read"
        print(f"mlbridge: error: {what}; nothing written", file=sys.stderr)
        return 1
    if not args.json and not args.quiet:
        print(f"{result['records']} trajectories, {result['steps']} steps from {len(paths) - len(failed)} of "
              f"{len(paths)} logs (reward: {result['reward']}) -> {', '.join(outputs)}")
        if result["without_steps"]:
            print(f"{len(result['without_steps'])} log(s) without any step (no call site) wrote no record",
                  file=sys.stderr)
    return 1 if failed else 0
