"""``mlbridge corpus evaluate CORPUS --policy P``: score a policy against -Oz
(``--problem inlining-size``, .text bytes) or against the default eviction advisor
(``--problem regalloc-eviction``, the register-allocation score).

``cli/corpus.py`` registers it with ``add_parser(corpus_subparsers)``; until
then (and for scripts) ``python -m mlbridge.cli.corpus_evaluate CORPUS ...``
runs the same command.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from typing import Any, Dict, List, Optional

from ..corpus.settings import SETTINGS
from . import problem as problem_flag
from .errors import UsageError, usage_error

#: failures printed on stderr before "... and N more" (all are in --json)
MAX_FAILURES_SHOWN = 10


def add_parser(corpus_sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = corpus_sub.add_parser(
        "evaluate", help="score a policy: .text bytes per module against -Oz (or a register-allocation score)",
        description="Recompile every module of CORPUS with its own command under --policy and under its "
                    "-Oz heuristic (the same command without the plugin); report .text bytes per module and "
                    "in total. With --problem regalloc-eviction: each module optimized to IR by its own "
                    "command, then llc-19 with the default eviction advisor and with --policy deciding; report "
                    "the register-allocation score (lower is better), spills and reloads. Exit 0 when every "
                    "module compiled, 1 when some failed (each shown with its command), 2 on a usage error.")
    p.add_argument("corpus", help="a corpus folder (corpus_description.json, NAME.bc, NAME.cmd)")
    p.add_argument("--policy", required=True, metavar="{oz,MODEL.onnx,python:MODULE:FN,callees:FILE}",
                   help="oz (or default): the baseline, the -Oz heuristic or the default eviction advisor; "
                        "MODEL.onnx: the model in-process (LLVM plugin); "
                        "python:MODULE:FN: FN(observation) answered in this process over pipes; "
                        "callees:FILE: -Oz's heuristic but every call of a listed callee answered as listed "
                        "(NAME<TAB>0|1 lines, * for every other callee)")
    p.add_argument("--linker-policy", default=None, metavar="{oz,MODEL.onnx,python:MODULE:FN,callees:FILE}",
                   help="lto and thinlto: who decides in the linker's LTO backends (default: --policy); "
                        "--policy then decides in the compiles only")
    p.add_argument("--setting", choices=SETTINGS, default="objects",
                   help="where sizes are measured: objects, each module's object (default); linked, the "
                        "programs of the corpus's programs.json linked by lld with --gc-sections; lto, the "
                        "same programs with full LTO, the policy deciding in the pre-link compiles and in "
                        "lld's LTO backend; thinlto, with ThinLTO, the policy in every backend "
                        "(docs/corpus.md, \"Settings\")")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel compiles (default: all cores)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per compile (default 300)")
    p.add_argument("--plugin", default=None,
                   help="libMLBridgeLLVM.so (default: $MLBRIDGE_LLVM_PLUGIN, else build/libMLBridgeLLVM.so)")
    p.add_argument("--clang", default=None, help="clang to run (default: clang-19)")
    p.add_argument("--llc", default=None,
                   help="regalloc-eviction: llc to run (default: $MLBRIDGE_LLVM_TOOLS_DIR/llc, else llc-19)")
    p.add_argument("--cache-dir", default=None,
                   help="where -Oz sizes are cached (default: $XDG_CACHE_HOME/mlbridge/oz-text; "
                        "regalloc-eviction's default-advisor scores: .../regalloc-eviction-baseline)")
    p.add_argument("--no-cache", action="store_true", help="compile the -Oz baseline again")
    p.add_argument("--json", action="store_true", help="print the results as JSON on stdout (no table)")
    p.add_argument("--csv", metavar="FILE", default=None, help="write one row per module")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="plot the per-module change, sorted")
    p.add_argument("--rows", type=int, default=30,
                   help="table rows: the modules with the largest change (0: all; default 30)")
    p.add_argument("--log", metavar="DIR", default=None,
                   help="also write training logs (LLVM's format, docs/training-logs.md): DIR/NAME.log per "
                        "module, or in a whole-program setting DIR/PROGRAM/ (each member's compile and each "
                        "LTO backend in the linker), rewards set from the measured sizes; with --policy oz "
                        "the stock heuristic's decisions are logged (imitation data)")
    p.add_argument("--where", type=int, nargs="?", const=10, default=None, metavar="N",
                   help="where the bytes went: compare each module's two objects function by function "
                        "(functions inlined away, kept out of line, grown, shrunk; bytes of function code) and "
                        "show the N largest changes each way (default 10); compiles the -Oz baseline instead "
                        "of using the cache")
    problem_flag.add_argument(p)
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..corpus import layout
    from ..corpus.compile import CompileOptions, CompileSetupError, Policy, Toolchain
    from ..corpus.evaluate import BaselineCache, check_ir_problem, default_cache_dir, evaluate
    from ..problems import ProblemError
    from ..corpus.programs import load_programs
    from ..corpus.settings import Setting, find_lld
    from ..corpus.evaluation_files import plot_deltas, write_csv
    from ..corpus.where import where_summary
    from .progress import Progress

    problem = problem_flag.checked(args, "corpus evaluate", args.setting)
    on_ir = problem.compiles_to == "ir"   # regalloc-eviction: scored on IR, in its own unit
    valued = on_ir or problem.unit != ".text bytes"   # phase-ordering: objects, in stored bytes
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("-j must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.where is not None and args.where < 0:
        raise UsageError("--where N: N must be 0 or more")
    for flag, path, ext in (("--csv", args.csv, None), ("--plot", args.plot, ".png")):
        if path is None:
            continue
        if ext and not path.lower().endswith(ext):
            raise UsageError(f"{flag} {path}: the file name must end with {ext}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise UsageError(f"{flag} {path}: folder {folder} does not exist")
    try:
        corpus = layout.load(args.corpus)
        if not corpus.modules:
            raise UsageError(f"{args.corpus}: the corpus has no modules")
        if args.policy.startswith("python:") or (args.linker_policy or "").startswith("python:"):
            sys.path.insert(0, os.getcwd())   # python:MODULE:FN finds modules next to the user
        setting = Setting.parse(args.setting)
        if args.linker_policy is not None and not setting.lto:
            raise UsageError(f"--linker-policy: the {setting.name} setting has no LTO backend (lto, thinlto)")
        policy = Policy.parse(args.policy)
        if args.linker_policy is not None:
            policy = policy.with_linker(Policy.parse(args.linker_policy, "linker_policy"))
        # phase ordering plots its stored bytes and compares its objects' functions as the
        # inliner does; it writes no training logs
        if valued and not on_ir and args.log:
            raise UsageError(f"--log: the {problem.name} problem writes no training logs")
        if on_ir:   # no objects, and a score that is not bytes: nothing to plot against -Oz
            if args.plot is not None:
                raise UsageError(f"--plot: plots the size change against -Oz; the {problem.name} problem is "
                                 f"reported in {problem.unit} (use --json or --csv)")
            try:
                check_ir_problem(problem, policy, where=args.where is not None, log_dir=args.log,
                                 thinlto=corpus.has_thinlto)
            except ProblemError as exc:
                raise usage_error(exc) from None
        elif args.llc is not None:
            raise UsageError(f"--llc: the {problem.name} problem does not run llc")
        uses_plugin = policy.uses_plugin or policy.in_linker.uses_plugin
        toolchain = Toolchain.find(args.clang, args.plugin,
                                   need_plugin=(problem.in_plugin and uses_plugin) or bool(args.log),
                                   llc=args.llc, need_llc=on_ir)
        units = len(corpus.modules)
        if setting.whole_program:
            find_lld(toolchain.clang)
            units = len(load_programs(corpus))
    except (layout.CorpusError, CompileSetupError) as exc:
        raise usage_error(exc) from None
    cache = None if args.no_cache else BaselineCache(args.cache_dir or default_cache_dir(problem))

    with Progress(units, "evaluate", quiet=args.quiet, unit="program" if setting.whole_program else "module") as bar:
        def done(score: Any) -> None:
            bar.update(1, postfix=os.path.basename(score.module))

        ev = evaluate(corpus, policy, toolchain, jobs=args.jobs,
                      options=CompileOptions(timeout=args.timeout, thinlto=corpus.has_thinlto), cache=cache,
                      on_done=done, where=args.where is not None, setting=setting, log_dir=args.log,
                      problem=problem)
    if args.log and not args.quiet:
        print(f"training logs: {ev.logged} in {args.log}", file=sys.stderr)

    data = ev.as_dict()
    if args.where is not None:
        data["where"] = where_summary(ev.scores, args.where)
    if args.csv:
        (write_ir_csv if valued else write_csv)(args.csv, data)
    if args.plot:
        plot_deltas(args.plot, data)
    if args.json:
        json.dump(data, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        (print_ir_table if valued else print_table)(data, rows=args.rows)
        if "where" in data:
            print_where(data["where"], unit=_unit(data), stored=valued)
    report_failures(data)
    report_capped(data)
    return 1 if data["total"]["failed"] else 0


def report_capped(data: Dict[str, Any], stream: Any = None) -> None:
    """One line when LLVM's ML inliner stopped asking the policy somewhere (its size
    cap): those sizes are partly the cap's decisions, not the policy's."""
    t = data["total"]
    if t.get("capped"):
        unit = _unit(data)
        print(f"mlbridge: note: in {t['capped_modules']} {unit}(s) LLVM's ML inliner refused {t['capped']} call "
              "site(s) without asking the policy: the module outgrew its size cap "
              "(-ml-advisor-size-increase-threshold; docs/llvm-plugin.md, \"The size cap\")",
              file=stream or sys.stderr)


def report_failures(data: Dict[str, Any], stream: Any = None) -> None:
    stream = stream or sys.stderr
    unit = _unit(data)
    failed = [m for m in data["modules"] if not m["ok"]]
    for m in failed[:MAX_FAILURES_SHOWN]:
        for e in m["errors"]:
            print(f"mlbridge: {unit} {m['module']} failed ({e['run']}): {e['error']}\n  command: {e['command']}",
                  file=stream)
    if len(failed) > MAX_FAILURES_SHOWN:
        print(f"mlbridge: ... and {len(failed) - MAX_FAILURES_SHOWN} more failed {unit}s (all in --json)",
              file=stream)
    if failed:
        print(f"mlbridge: {len(failed)} of {len(data['modules'])} {unit}s failed", file=stream)


def _unit(data: Dict[str, Any]) -> str:
    """What a row is: a module (objects setting) or a program (linked, lto)."""
    return "module" if data.get("setting", "objects") == "objects" else "program"


def _fmt_delta(delta: Optional[int], pct: Optional[float]) -> List[str]:
    if delta is None:
        return ["-", "-"]
    return [f"{delta:+,}", f"{pct:+.2f}%" if pct is not None else "-"]


def print_table(data: Dict[str, Any], rows: int = 30, stream: Any = None) -> None:
    """Per-module and total .text bytes; rich on a terminal, plain columns otherwise."""
    stream = stream or sys.stdout
    mods = data["modules"]
    shown = mods
    if rows and len(mods) > rows:
        shown = sorted(mods, key=lambda m: -abs(m["delta"] or 0) if m["ok"] else float("-inf"))[:rows]
    unit = _unit(data)
    header = [unit, "-Oz .text", "policy .text", "delta", "delta %"]
    body = [[m["module"], _num(m["oz_text"]), _num(m["policy_text"]), *_fmt_delta(m["delta"], m["delta_pct"])]
            if m["ok"] else [m["module"], _num(m["oz_text"]), _num(m["policy_text"]), "FAILED", ""]
            for m in shown]
    t = data["total"]
    total = [f"total ({t['ok']} {unit}s)", _num(t["oz_text"]), _num(t["policy_text"]),
             *_fmt_delta(t["delta"], t["delta_pct"])]
    title = (f"policy {data['policy']} vs -Oz on {data['corpus']} ({data.get('setting', 'objects')}): "
             f"{t['smaller']} smaller, {t['larger']} larger, "
             f"{t['failed']} failed; {data['wall_seconds']:.1f} s with -j{data['jobs']}")
    if len(shown) < len(mods):
        title += f" (the {len(shown)} largest changes of {len(mods)} {unit}s shown)"
    if stream.isatty():
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            pass
        else:
            table = Table(title=title, show_footer=True)
            for i, h in enumerate(header):
                table.add_column(h, footer=total[i], justify="left" if i == 0 else "right")
            for r in body:
                table.add_row(*r)
            Console(file=stream).print(table)
            return
    widths = [max(len(r[i]) for r in [header, total] + body) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))  # noqa: E731
    print(title, file=stream)
    print(line(header), file=stream)
    for r in body:
        print(line(r), file=stream)
    print(line(total), file=stream)


#: --csv's columns for a problem measured on IR
IR_CSV_FIELDS = ["module", "ok", "baseline_score", "policy_score", "delta", "delta_pct", "reward", "decisions",
                 "baseline_spills", "policy_spills", "baseline_reloads", "policy_reloads",
                 "baseline_spill_reload_cost", "policy_spill_reload_cost", "baseline_seconds", "policy_seconds",
                 "baseline_cached", "error", "command"]


def write_ir_csv(path: str, data: Dict[str, Any]) -> None:
    """One row per module of a problem measured on IR (its errors and commands joined)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=IR_CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for m in data["modules"]:
            errs = m.get("errors") or []
            w.writerow(dict(m, error="; ".join(f"{e['run']}: {e['error']}" for e in errs),
                            command=" ;; ".join(e["command"] for e in errs)))


def _score(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _pair(a: Optional[float], b: Optional[float]) -> str:
    return "-" if a is None or b is None else f"{a:,.0f} -> {b:,.0f}"


def print_ir_table(data: Dict[str, Any], rows: int = 30, stream: Any = None) -> None:
    """A problem measured on IR (regalloc-eviction): per module and in total, the
    baseline's and the policy's score, the change, the policy's decisions, and
    spills and reloads (baseline -> policy)."""
    stream = stream or sys.stdout
    mods = data["modules"]
    shown = mods
    if rows and len(mods) > rows:
        shown = sorted(mods, key=lambda m: -abs(m["delta_pct"] or 0) if m["ok"] else float("-inf"))[:rows]
    unit = _unit(data)
    spills = data["unit"] != "stored bytes"   # phase ordering has no spills to show
    header = [unit, "default score", "policy score", "delta", "delta %", "decisions"] + \
        (["spills", "reloads"] if spills else [])
    if not spills:
        header[1:3] = ["-Oz stored", "policy stored"]

    def row(name: str, m: Dict[str, Any]) -> List[str]:
        if not m["ok"]:
            return [name, _score(m["baseline_score"]), _score(m["policy_score"]), "FAILED", "", ""] + \
                (["", ""] if spills else [])
        return [name, _score(m["baseline_score"]), _score(m["policy_score"]), f"{m['delta']:+,.1f}",
                f"{m['delta_pct']:+.2f}%" if m["delta_pct"] is not None else "-", f"{m['decisions'] or 0:,}"] + \
            ([_pair(m["baseline_spills"], m["policy_spills"]), _pair(m["baseline_reloads"], m["policy_reloads"])]
             if spills else [])

    body = [row(m["module"], m) for m in shown]
    t = data["total"]
    total = row(f"total ({t['ok']} {unit}s)", dict(t, ok=True))
    title = (f"policy {data['policy']} vs {data['baseline']} on {data['corpus']} ({data['problem']}: "
             f"{data['unit']}, lower is better): {t['better']} better, {t['worse']} worse, {t['failed']} failed; "
             f"{data['wall_seconds']:.1f} s with -j{data['jobs']}")
    if len(shown) < len(mods):
        title += f" (the {len(shown)} largest changes of {len(mods)} {unit}s shown)"
    widths = [max(len(r[i]) for r in [header, total] + body) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(widths[0]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r))  # noqa: E731
    print(title, file=stream)
    print(line(header), file=stream)
    for r in body:
        print(line(r), file=stream)
    print(line(total), file=stream)


_KIND_TEXT = {"removed": "inlined into every caller or dead (only at -Oz)",
              "added": "kept out of line (only under the policy)",
              "shrunk": "smaller under the policy", "grown": "larger under the policy"}
#: the same kinds when a pass pipeline, not the inliner, differs: a function one
#: object lacks may also have been merged (mergefunc) or dropped by other passes
_KIND_TEXT_PIPELINE = dict(_KIND_TEXT, removed="only in -Oz's object (inlined, merged or dropped)",
                           added="only in the policy's object")


def print_where(w: Dict[str, Any], stream: Any = None, unit: str = "module", stored: bool = False) -> None:
    """The --where summary. STORED: the evaluation is in stored bytes (phase
    ordering), of which function code is a part: the header says so."""
    stream = stream or sys.stdout
    print(f"\nwhere the bytes went: {w['changed_functions']:,} functions changed in "
          f"{w['modules_compared']} {unit}s, {w['delta']:+,} bytes"
          + (" of function code (the stored bytes above also count data)" if stored else ""), file=stream)
    for kind, text in (_KIND_TEXT_PIPELINE if stored else _KIND_TEXT).items():
        k = w["kinds"][kind]
        print(f"  {k['functions']:>6,} functions {text}: {k['bytes']:+,} bytes", file=stream)
    for title, rows in (("saved most", w["saved_most"]), ("grew most", w["grew_most"])):
        if not rows:
            continue
        print(f"  {title}:", file=stream)
        width = max(len(f"{r['delta']:+,}") for r in rows)
        for r in rows:
            name = r["function"] if len(r["function"]) <= 70 else r["function"][:67] + "..."
            print(f"    {r['delta']:>+{width},}  {r['oz']:>7,} -> {r['policy']:<7,}  {name}  "
                  f"({os.path.basename(r['module'])})", file=stream)


def _num(v: Optional[int]) -> str:
    return "-" if v is None else f"{v:,}"


def main(argv: Optional[List[str]] = None) -> int:
    """Standalone: ``python -m mlbridge.cli.corpus_evaluate CORPUS --policy P`` (the
    same as ``mlbridge corpus evaluate``), with the command's errors and exit codes."""
    from . import _Parser
    from . import main as cli_main
    ap = _Parser(prog="mlbridge corpus")
    sub = ap.add_subparsers(dest="corpus_cmd", required=True, parser_class=_Parser)
    add_parser(sub)
    return cli_main(["evaluate"] + list(sys.argv[1:] if argv is None else argv), parser=ap)


if __name__ == "__main__":
    sys.exit(main())
