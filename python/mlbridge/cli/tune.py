"""``mlbridge tune``: make one program smaller, the way PGO makes one faster
(tune/run.py, docs/tuning.md).

    mlbridge tune CORPUS -o OUT [--budget-minutes 60] [-j N] [--setting linked|objects|lto] [--check CMD]
    mlbridge tune flags OUT/tuning.json     # the clang flags that apply it to any build (lto: the link flags)
    mlbridge tune show OUT/tuning.json      # what it holds; --sources: which of them it covers
    mlbridge tune log OUT -o DIR            # the kept orders as training logs (problems/phase_ordering/logs.py)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

from .errors import UsageError, usage_error

_ACTIONS = ("flags", "show", "log")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune", help="search per-module pass orders that make one program smaller; write a tuning file",
        description="Search, per module of CORPUS (`mlbridge corpus build` or `corpus extract`, with "
                    "programs.json for --setting linked), the pass order that clang-19 runs in place of -Oz's, "
                    "judged by the stored bytes (code + read-only + initialized data) of the linked programs. "
                    "Writes OUT/tuning.json (apply it with the flags of `mlbridge tune flags`), OUT/report.md, "
                    "OUT/report.json and OUT/curve.png. Resumable: OUT/checkpoint.json; a stopped tune started "
                    "again with the same OUT goes on. Also: `mlbridge tune flags FILE`, `mlbridge tune show FILE`, "
                    "`mlbridge tune log OUT -o DIR` (a finished or stopped tune's kept orders as training logs "
                    "for `mlbridge log show|export --problem phase-ordering`).")
    p.add_argument("corpus", help="corpus folder (or `flags` / `show` followed by a tuning file, or `log` "
                   "followed by a tune's output folder)")
    p.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    p.add_argument("-o", "--out", default=None, help="output folder (the checkpoint lives there)")
    p.add_argument("--budget-minutes", type=float, default=60.0,
                   help="wall minutes of search, over all runs into OUT (default 60)")
    p.add_argument("-j", "--jobs", type=int, default=0, help="compiles at a time (default: all cores)")
    p.add_argument("--setting", choices=("linked", "objects", "lto"), default="linked",
                   help="linked (default): modules are kept tuned only where the linked programs shrink; "
                        "objects: each module's object alone; lto: each program's full-LTO link pipeline "
                        "(applied by link flags, `mlbridge tune flags FILE --program NAME`)")
    p.add_argument("--program", default=None, metavar="NAME",
                   help="flags: the program whose link pipeline to print (a tuning file of --setting lto)")
    p.add_argument("--check", default=None, metavar="CMD",
                   help="a shell command run on each linked program ({program} is its path): the tuned build "
                        "must print what -Oz's prints, else the modules responsible go back to -Oz")
    p.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="compile candidates as Ray tasks on this cluster (`local`: a Ray instance here); every "
                        "node needs the corpus, clang and the plugin at the same paths")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=120.0, help="per candidate compile, seconds")
    p.add_argument("--clang", default=None)
    p.add_argument("--plugin", default=None, help="libMLBridgeLLVM.so (default: $MLBRIDGE_LLVM_PLUGIN or build/)")
    p.add_argument("--sources", nargs="*", default=None, help="show: source files to say the file covers or not")
    p.add_argument("--compile-commands", default=None, metavar="JSON",
                   help="show: a build's compile_commands.json: its source files, as --sources")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run_tune)


def run_tune(args: argparse.Namespace) -> int:
    if args.corpus in _ACTIONS:
        if len(args.rest) != 1:
            raise UsageError(f"usage: mlbridge tune {args.corpus} " +
                             ("TUNE_OUT -o DIR" if args.corpus == "log" else "TUNING_FILE"))
        return {"flags": run_flags, "show": run_show, "log": run_log}[args.corpus](args)
    if args.rest:
        raise UsageError(f"unexpected argument {args.rest[0]!r}")
    if not args.out:
        raise UsageError("-o/--out is required")
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..corpus.settings import find_lld
    from ..tune.run import TuneArgumentError, TuneOptions, tune
    opts = TuneOptions(setting=args.setting, budget_minutes=args.budget_minutes, jobs=args.jobs, seed=args.seed,
                       timeout=args.timeout, check=args.check, ray=args.ray)
    try:
        opts.validate()
        toolchain = Toolchain.find(args.clang, args.plugin, need_plugin=True)
        if args.setting != "objects":
            find_lld(toolchain.clang)
    except (TuneArgumentError, CompileSetupError) as exc:
        raise usage_error(exc) from None
    if args.ray is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UsageError("--ray needs Ray (pip install 'ray[default]')") from None
    from .progress import Progress
    # a bar over the budget's seconds on a terminal; plain lines otherwise (logs, CI)
    with Progress(int(args.budget_minutes * 60), "tune", quiet=args.quiet, unit="s") as bar:
        def say(line: str) -> None:
            if not bar.is_bar:
                bar.write(f"mlbridge tune: {line}")

        def tick(spent: float, budget: float, status: str) -> None:
            if bar.is_bar:
                bar.update(max(0, int(spent * 60) - bar.n), postfix=status)
        try:
            report = tune(args.corpus, args.out, toolchain, opts, progress=say, tick=tick)
        except TuneArgumentError as exc:
            raise usage_error(exc) from None
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        from ..tune.report import markdown
        text = markdown(report)
        print(text.split("## Where the bytes went")[0].rstrip())
        print(f"\ntuning file: {os.path.join(args.out, 'tuning.json')}; per module: "
              f"{os.path.join(args.out, 'report.md')}")
    failed = report["total"]["failed_baselines"]
    return 1 if failed else 0


def _read(path: str) -> Any:
    from ..tune.tuning_file import TuningFileError, read
    try:
        return read(path)
    except TuningFileError as exc:
        raise UsageError(str(exc)) from None


def run_flags(args: argparse.Namespace) -> int:
    from ..corpus.compile import CompileSetupError, find_plugin
    from ..tune.tuning_file import TuningFileError, flags, link_flags
    import shlex
    tf = _read(args.rest[0])
    if tf.link or args.program is not None:
        # --setting lto: the link's pipeline, for the link line of a -flto -fuse-ld=lld build
        try:
            print(shlex.join(link_flags(tf, args.program)))
        except TuningFileError as exc:
            raise UsageError(f"{args.rest[0]}: {exc}") from None
        if not tf.modules:
            return 0
    try:
        plugin = find_plugin(args.plugin)
    except CompileSetupError as exc:
        raise usage_error(exc) from None
    print(shlex.join(flags(plugin, args.rest[0])))
    return 0


def run_show(args: argparse.Namespace) -> int:
    tf = _read(args.rest[0])
    rows: List[Dict[str, Any]] = [dict(key=k, **{f: v.get(f) for f in ("oz_bytes", "bytes")},
                                       order=" ".join(v.get("order") or []), callees=len(v.get("callees") or {}))
                                  for k, v in sorted(tf.modules.items())]
    out: Dict[str, Any] = {"llvm_major": tf.llvm_major, "about": tf.about, "modules": rows,
                           "link": {k: {f: v.get(f) for f in ("oz_bytes", "bytes", "order")}
                                    for k, v in sorted(tf.link.items())}}
    if args.compile_commands:
        args.sources = (args.sources or []) + _compile_command_sources(args.compile_commands)
    if args.sources is not None:
        srcs = [os.path.normpath(os.path.abspath(s)) for s in args.sources]
        out["covered"] = [s for s in srcs if tf.find(s) is not None]
        out["not_covered"] = [s for s in srcs if tf.find(s) is None]
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    oz = sum(r["oz_bytes"] or 0 for r in rows)
    new = sum(r["bytes"] or 0 for r in rows)
    print(f"tuning file for LLVM {tf.llvm_major}: {len(rows)} source files, stored bytes {oz:,} -> {new:,} "
          f"when tuned ({100.0 * (new - oz) / oz if oz else 0.0:+.2f} %)")
    for r in rows:
        print(f"  {r['key']}: {r['oz_bytes']} -> {r['bytes']}: {r['order']}"
              + (f" (+ {r['callees']} callee answers)" if r["callees"] else ""))
    for name, e in out["link"].items():
        print(f"  link of {name} (LTO): {e['oz_bytes']} -> {e['bytes']}: {' '.join(e['order'] or [])}")
    if args.sources is not None:
        n, k = len(out["covered"]) + len(out["not_covered"]), len(out["covered"])
        print(f"mlbridge: note: the tuning file covers {k} of {n} source files; the other {n - k} compile as -Oz"
              + (f" ({', '.join(os.path.basename(s) for s in out['not_covered'][:5])}"
                 f"{', ...' if n - k > 5 else ''})" if n - k else ""))
    return 0


def run_log(args: argparse.Namespace) -> int:
    """``tune log TUNE_OUT -o DIR``: problems/phase_ordering/logs.py; exit code 1
    when a module's features could not be measured (its log is not written)."""
    from ..corpus.compile import CompileSetupError, Toolchain
    from ..problems.phase_ordering.logs import TuneLogError, read_tune, write_tune_logs
    if not args.out:
        raise UsageError("usage: mlbridge tune log TUNE_OUT -o DIR")
    say = (lambda line: None) if args.quiet or args.json else (
        lambda line: print(f"mlbridge tune log: {line}", file=sys.stderr, flush=True))
    try:
        tune = read_tune(args.rest[0])   # a folder that is not a tune's is said before any tool is looked for
        toolchain = Toolchain.find(args.clang, args.plugin, need_plugin=True)
        summary = write_tune_logs(tune, args.out, toolchain, jobs=args.jobs, timeout=args.timeout, progress=say)
    except CompileSetupError as exc:
        raise usage_error(exc) from None
    except TuneLogError as exc:
        raise UsageError(str(exc)) from None
    for module, why in sorted(summary["failed"].items()):
        print(f"mlbridge: {module}: no log: its features could not be measured: {why}", file=sys.stderr)
    if args.json:
        json.dump(summary, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        logs = summary["logs"]
        print(f"{len(logs)} logs ({sum(e['steps'] for e in logs)} steps) of a "
              f"{'finished' if summary['finished'] else 'stopped'} tune -> {args.out}; "
              f"{len(summary['left_at_oz'])} modules left at -Oz have none")
    return 1 if summary["failed"] else 0


def _compile_command_sources(path: str) -> List[str]:
    """The source files of a compile_commands.json, absolute (its "directory" + "file")."""
    try:
        with open(path, encoding="utf-8") as f:
            entries = json.load(f)
        if not isinstance(entries, list):
            raise ValueError("not a list of compile commands")
        return [os.path.join(e["directory"], e["file"]) for e in entries
                if isinstance(e, dict) and isinstance(e.get("file"), str) and isinstance(e.get("directory"), str)]
    except (OSError, ValueError) as exc:
        raise UsageError(f"--compile-commands {path}: {exc}") from None
