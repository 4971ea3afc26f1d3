"""``mlbridge log show|export``: LLVM training logs (docs/training-logs.md)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

from .errors import UsageError
from .progress import Progress


def add_parser(sub: argparse._SubParsersAction) -> None:
    lg = sub.add_parser("log", help="training logs: summarize, export for trainers",
                        description="LLVM training logs (the plugin's -mlbridge-inline-training-log, LLVM's "
                        "-training-log): summarize them, export them as TFRecords of tf.train.SequenceExample "
                        "(ml-compiler-opt's trainers), .npz or Parquet.")
    sub2 = lg.add_subparsers(dest="log_cmd", required=True, metavar="ACTION", parser_class=type(lg))
    s = sub2.add_parser("show", help="summarize a training log")
    s.add_argument("log", help="a training log")
    s.add_argument("--json", action="store_true", help="print the summary as JSON")
    s.set_defaults(run=show)
    e = sub2.add_parser("export", help="convert training logs for trainers",
                        description="One record per trajectory (context) with at least one step: every logged "
                        "feature, the score list (delta_size) and a per-step float 'reward' holding the module's "
                        "reward. Reward: 'relative' = ml-compiler-opt's 1 - (policy+0.01)/(oz+0.01), from the "
                        "sizes set_log_reward keeps in LOG.reward.json; 'bytes' = -delta_size, the .text bytes "
                        "saved against -Oz; 'auto' = relative if every log has its sizes, else bytes.")
    e.add_argument("logs", nargs="+", metavar="LOG", help="training logs (a folder: every *.log in it, recursively)")
    e.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created)")
    e.add_argument("--format", default="tfrecord", choices=["tfrecord", "npz", "parquet"],
                   help="tfrecord: DIR/training.tfrecord; npz: DIR/training.npz; parquet: DIR/training.parquet "
                   "(needs pyarrow)")
    e.add_argument("--reward", default="auto", choices=["auto", "relative", "bytes"])
    e.add_argument("--quiet", action="store_true", help="no progress output")
    e.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    e.set_defaults(run=export)


def _expand(paths: List[str]) -> List[str]:
    out: List[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs if f.endswith(".log"))
            if not found:
                raise UsageError(f"{p}: no *.log file in this folder")
            out.extend(found)
        elif os.path.exists(p):
            out.append(p)
        else:
            raise UsageError(f"{p}: no such file")
    return out


def show(args: argparse.Namespace) -> int:
    if not os.path.exists(args.log):
        raise UsageError(f"{args.log}: no such file")
    from ..llvm.log_summary import summarize
    s = summarize(args.log)
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    p = print
    p(f"{s['log']}: {len(s['contexts'])} context(s), {s['observations']} observation(s)")
    for c in s["contexts"]:
        p(f"  context {c['name']!r}: {c['observations']} observation(s)")
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
        line = f"reward: delta_size {r['delta_size']} bytes"
        if "relative" in r:
            line += f" (policy {r['policy_size']} vs -Oz {r['baseline_size']}: relative reward {r['relative']:+.4f})"
        else:
            line += " (no sizes recorded: set_log_reward not called)"
        p(line)
    p("ml-compiler-opt: " + ("usable (one context, at least one step)" if s["ml_compiler_opt_usable"]
                             else "would skip this module (it needs exactly one context with at least one step)"))
    return 0


def export(args: argparse.Namespace) -> int:
    """Every log read, then the output written under a temporary name and
    renamed. A malformed log is skipped with its reason (exit code 1); when no
    log could be read, nothing is written (no empty output, no new folder)."""
    from ..core.errors import MLBridgeError
    from ..llvm import log_export as lx
    from ..llvm.training_log import read_training_log
    paths = _expand(args.logs)
    if args.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("--format parquet needs pyarrow (python3 -m pip install pyarrow)") from None
    if os.path.lexists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"{args.output}: exists and is not a folder")
    made = _new_folders(args.output)
    os.makedirs(args.output, exist_ok=True)
    sink: Any = None
    failed: List[Dict[str, str]] = []
    empty: List[str] = []
    steps = 0
    try:
        mode = lx.choose_reward_mode(paths, args.reward)
        sink = lx.SINKS[args.format](args.output)
        # no progress for one log: its error, if any, is the one line on stderr
        with Progress(len(paths), "export", quiet=args.quiet or args.json or len(paths) == 1, unit="log") as prog:
            for path in paths:
                try:
                    trajs = lx.trajectories(read_training_log(path), mode)
                except (MLBridgeError, OSError, ValueError) as exc:
                    reason = str(exc) if path in str(exc) else f"{path}: {exc}"
                    failed.append({"log": path, "error": reason})
                    if len(paths) > 1:   # one log: its reason is the command's error, below
                        line = f"mlbridge: {reason} (skipped)"
                        if prog.quiet:   # --quiet silences progress, not errors
                            print(line, file=sys.stderr)
                        else:
                            prog.write(line)
                    prog.update(1)
                    continue
                if not trajs:
                    empty.append(path)
                for t in trajs:
                    sink.add(t)
                    steps += t.steps
                prog.update(1, postfix=os.path.basename(path))
        records = sink.records
        if len(failed) == len(paths):   # nothing read: nothing written
            sink.abort()
            _remove_new_folders(made)
            outputs: List[str] = []
        else:
            outputs = sink.close()
    except BaseException:
        if sink is not None:
            sink.abort()
        _remove_new_folders(made)
        raise
    result = {"logs": len(paths), "records": records if outputs else 0, "steps": steps if outputs else 0,
              "reward": mode, "format": args.format, "outputs": outputs, "without_steps": empty, "failed": failed}
    if args.json:
        print(json.dumps(result, indent=1))
    if not outputs:
        what = failed[0]["error"] if len(paths) == 1 else \
            f"{', '.join(args.logs)}: none of the {len(paths)} logs could be read"
        print(f"mlbridge: error: {what}; nothing written", file=sys.stderr)
        return 1
    if not args.json and not args.quiet:
        print(f"{records} trajectories, {steps} steps from {len(paths) - len(failed)} of {len(paths)} logs "
              f"(reward: {mode}) -> {', '.join(outputs)}")
        if empty:
            print(f"{len(empty)} log(s) without any step (no call site) wrote no record", file=sys.stderr)
    return 1 if failed else 0


def _new_folders(path: str) -> List[str]:
    """The folders ``os.makedirs(path)`` would make, deepest first."""
    out: List[str] = []
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        out.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    return out


def _remove_new_folders(made: List[str]) -> None:
    """Removes the folders this run made, if they are still empty."""
    for d in made:
        try:
            os.rmdir(d)
        except OSError:
            return
