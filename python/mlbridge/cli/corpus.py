"""``mlbridge corpus``: corpora of IR modules in LLVM's MLGO layout (docs/corpus.md).

Sub-commands: ``extract`` (from a build), ``combine``, ``build``/``list`` (recipes of
real projects), ``info``. Optional sub-command modules (``OPTIONAL``, each with
``add_parser(corpus_sub)``) are added when they exist, e.g. ``corpus_evaluate``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import shutil
import sys
from typing import Any, Dict, List, Optional

from .errors import UsageError, usage_error
from .progress import Progress

#: sub-command modules of `corpus` that live in their own file; skipped when absent
OPTIONAL = ["corpus_evaluate"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("corpus", help="corpora of IR modules: extract, build, inspect, score",
                       description="Corpora of IR modules in LLVM's MLGO layout (extract_ir's): "
                       "one .bc and one .cmd per module plus corpus_description.json.")
    cs = c.add_subparsers(dest="corpus_cmd", required=True, metavar="SUBCOMMAND",
                          parser_class=type(c))

    e = cs.add_parser("extract", help="a corpus from a build (objects with embedded bitcode, "
                      "compile_commands.json, ThinLTO, raw bitcode)",
                      description="Extracts each module's bitcode (.llvmbc) and cc1 command "
                      "(.llvmcmd) into OUT, in extract_ir's layout. Build with clang "
                      "-Xclang -fembed-bitcode=all. Re-running redoes only changed inputs.")
    e.add_argument("input", nargs="?", help="compile_commands.json, an lld params file, or a "
                   "folder of objects / bitcode (not needed with --thinlto local)")
    e.add_argument("-o", "--output", required=True, help="the corpus folder to write")
    e.add_argument("--input-type", choices=["auto", "json", "params", "directory", "bitcode"],
                   default="auto", help="auto: .json file -> json, folder -> directory of *.o "
                   "(bitcode when it holds *.bc and no *.o), other file -> params")
    e.add_argument("--thinlto", choices=["distributed", "local"], default=None,
                   help="distributed: also copy each module's -fthinlto-index; local: take "
                   "*.3.import.bc and *.thinlto.bc from --obj-base-dir (lld --save-temps=import "
                   "--thinlto-emit-index-files)")
    e.add_argument("--obj-base-dir", default="", help="folder the paths of a params file (or a "
                   "local ThinLTO link) are relative to (default: current folder)")
    e.add_argument("--default-args", default=None, help="flags for raw bitcode (or local ThinLTO), "
                   "written as global_command_override, e.g. \"-O2 -mcpu=x86-64\"")
    e.add_argument("--cmd-filter", default=None, help="keep only modules with a command argument "
                   "matching this regex (e.g. '^-Oz$')")
    e.add_argument("--bitcode-section", default=".llvmbc")
    e.add_argument("--cmd-section", default=".llvmcmd")
    e.add_argument("--objcopy", default=None, help="llvm-objcopy for non-ELF objects (Mach-O, COFF)")
    e.add_argument("--allow-missing", action="store_true", help="objects without embedded bitcode "
                   "(e.g. from assembly) are skipped, not failures")
    _common(e)
    e.set_defaults(run=run_extract)

    cb = cs.add_parser("combine", help="combine the corpora in ROOT's sub-folders into one",
                       description="As LLVM's combine_training_corpus: ROOT/*/ are corpora; "
                       "ROOT/corpus_description.json then lists all their modules as SUB/NAME.")
    cb.add_argument("root")
    cb.add_argument("--json", action="store_true", help="print the written description")
    cb.set_defaults(run=run_combine)

    b = cs.add_parser("build", help="download, compile (clang-19 -Oz) and extract a recipe",
                      description="Builds the pinned release of a project into a cached corpus "
                      "(see `mlbridge corpus list`). Prints the corpus folder.")
    b.add_argument("names", nargs="+", metavar="NAME", help="recipe names, or `all`")
    b.add_argument("--cache", default=None, help="cache folder (default "
                   "${XDG_CACHE_HOME:-~/.cache}/mlbridge/corpora); the corpus is CACHE/NAME")
    b.add_argument("--cc", default="clang-19")
    b.add_argument("--cxx", default="clang++-19")
    _common(b)
    b.set_defaults(run=run_build)

    ls = cs.add_parser("list", help="the recipes `corpus build` knows")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--cache", default=None, help="show which are built in this cache")
    ls.set_defaults(run=run_list)

    i = cs.add_parser("info", help="modules, sizes and command lines of a corpus")
    i.add_argument("corpus", help="a corpus folder, or the name of a built recipe")
    i.add_argument("--cache", default=None)
    i.add_argument("--all", action="store_true", help="every module (default: the 20 largest)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(run=run_info)

    for name in OPTIONAL:
        try:
            mod = importlib.import_module(f".{name}", __package__)
        except ImportError:
            continue
        mod.add_parser(cs)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel jobs (default: all cores)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def _jobs(args: argparse.Namespace) -> Optional[int]:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    return args.jobs


def _report_failures(outcomes: List[Any], quiet: bool, limit: int = 50) -> None:
    shown = 0
    for o in outcomes:
        if o.status != "failed":
            continue
        if shown < limit:
            print(f"mlbridge: {o.name}: {o.reason}" + (f" ({o.path})" if o.path and o.path != o.name else ""),
                  file=sys.stderr)
        shown += 1
    if shown > limit:
        print(f"mlbridge: ... and {shown - limit} more failures (--json lists them all)", file=sys.stderr)


# ---- extract --------------------------------------------------------------------------

def run_extract(args: argparse.Namespace) -> int:
    from ..corpus import extract as ex
    jobs = _jobs(args)
    pre: List[Any] = []
    override = shlex.split(args.default_args) if args.default_args is not None else None
    if args.thinlto == "local":
        if args.input is not None:
            raise UsageError("--thinlto local reads --obj-base-dir, not an INPUT")
        base = args.obj_base_dir or "."
        if not os.path.isdir(base):
            raise UsageError(f"--obj-base-dir {base}: not a folder")
        sources = ex.sources_from_lld_thinlto(base)
    else:
        if args.input is None:
            raise UsageError("give an INPUT (compile_commands.json, params file or folder)")
        if not os.path.exists(args.input):
            raise UsageError(f"{args.input}: no such file or folder")
        kind = ex.input_kind(args.input) if args.input_type == "auto" else args.input_type
        if kind in ("directory", "bitcode") and not os.path.isdir(args.input):
            raise UsageError(f"{args.input}: not a folder (--input-type {kind})")
        if kind in ("json", "params") and not os.path.isfile(args.input):
            raise UsageError(f"{args.input}: not a file (--input-type {kind})")
        if kind == "bitcode":
            inside = os.path.relpath(os.path.abspath(args.output), os.path.abspath(args.input))
            if not inside.startswith(".."):
                raise UsageError("the output folder must not be inside the bitcode folder")
            if args.thinlto:
                raise UsageError("--thinlto does not apply to raw bitcode")
            if override is None:
                override = []          # make_corpus writes an empty override when given none
        elif override is not None:
            raise UsageError("--default-args applies to raw bitcode and --thinlto local only")
        sources, pre = ex.sources_of(args.input, kind, args.obj_base_dir)
    if args.cmd_filter is not None:
        import re
        try:
            re.compile(args.cmd_filter)
        except re.error as exc:
            raise UsageError(f"--cmd-filter: not a regular expression: {exc}") from None
    objcopy = args.objcopy
    if objcopy is not None and shutil.which(objcopy) is None:
        raise UsageError(f"--objcopy {objcopy}: not found")
    opts = ex.Options(thinlto=args.thinlto, cmd_filter=args.cmd_filter,
                      bitcode_section=args.bitcode_section, cmd_section=args.cmd_section, objcopy=objcopy)
    with Progress(len(sources), "extract", quiet=args.quiet, unit="module") as prog:
        report = ex.extract(sources, args.output, options=opts, jobs=jobs, global_command_override=override,
                            pre_outcomes=pre, on_done=lambda o: prog.update(1, postfix=o.name))
    if args.allow_missing:
        ex.skip_missing_bitcode(report, opts)
    return _finish_extract(report, args)


def _finish_extract(report: Any, args: argparse.Namespace) -> int:
    s = report.summary()
    if args.json:
        print(json.dumps(s, indent=1))
    else:
        _report_failures(report.outcomes, args.quiet)
        if not args.quiet:
            print(f"{s['modules']} modules in {s['output']} ({s['extracted']} extracted, {s['unchanged']} "
                  f"unchanged, {s['excluded']} excluded, {s['skipped']} skipped, {s['failed']} failed)",
                  file=sys.stderr)
    return 1 if report.failures else 0


# ---- combine ------------------------------------------------------------------------

def run_combine(args: argparse.Namespace) -> int:
    from ..corpus.combine import combine
    if not os.path.isdir(args.root):
        raise UsageError(f"{args.root}: not a folder")
    desc = combine(args.root)
    if args.json:
        print(json.dumps(desc, indent=1))
    else:
        print(f"{len(desc['modules'])} modules in {os.path.join(args.root, 'corpus_description.json')}",
              file=sys.stderr)
    return 0


# ---- recipes ------------------------------------------------------------------------

def _recipes() -> Dict[str, Any]:
    from ..corpus.recipes import recipes
    return recipes()


def run_list(args: argparse.Namespace) -> int:
    from ..corpus.recipes.build import count_lines, default_cache, repo_root, source_files
    cache = args.cache or default_cache()
    rows = []
    for r in _recipes().values():
        built = os.path.isfile(os.path.join(cache, r.name, "corpus_description.json"))
        lines = r.lines
        tree = repo_root()
        top = os.path.join(tree, r.local) if r.local and tree else ""
        if top and os.path.isdir(top):     # files of the tree: counted, they change
            lines = count_lines(r, top, source_files(r, top))
        rows.append({"name": r.name, "version": r.version, "language": r.language, "lines": lines,
                     "domain": r.domain, "source": f"PyPI {r.pypi}" if r.pypi else r.local,
                     "built": built, "description": r.description})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    _table(rows, ["name", "version", "language", "lines", "domain", "source", "built"])
    total = sum(r["lines"] for r in rows if r["name"] != "tests")
    print(f"{len(rows)} recipes, {total:,} lines without `tests`; cache: {cache}")
    return 0


def _table(rows: List[Dict[str, Any]], cols: List[str]) -> None:
    def fmt(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else ""
        if isinstance(v, int):
            return f"{v:,}"
        return str(v)
    cells = [[fmt(r[c]) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    right = [all(isinstance(r[c], int) and not isinstance(r[c], bool) for r in rows) for c in cols]
    line = lambda vals: "  ".join(v.rjust(w) if rj else v.ljust(w) for v, w, rj in zip(vals, widths, right))
    print(line(cols).rstrip())
    for row in cells:
        print(line(row).rstrip())


def run_build(args: argparse.Namespace) -> int:
    from ..corpus.recipes.build import build
    jobs = _jobs(args)
    known = _recipes()
    names = [n for n in known if n != "tests"] if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown recipe {', '.join(unknown)} (known: {', '.join(known)}, or all)")
    failed = False
    results = []
    for name in names:
        prog: List[Optional[Progress]] = [None]

        def on_total(stage: str, n: int) -> None:
            if prog[0] is not None:
                prog[0].close()
            prog[0] = Progress(n, f"{name}: {stage}", quiet=args.quiet, unit="file")

        def step(n: int, what: str) -> None:
            if prog[0] is not None:
                prog[0].update(n, postfix=what)

        try:
            res = build(known[name], cache=args.cache, jobs=jobs, cc=args.cc, cxx=args.cxx,
                        progress=step, on_total=on_total)
        finally:
            if prog[0] is not None:
                prog[0].close()
        results.append(res.summary())
        if res.failed:
            failed = True
            for o in res.compile_failures:
                print(f"mlbridge: {name}: {o.name}: {o.reason}", file=sys.stderr)
            if res.extract_report:
                _report_failures(res.extract_report.outcomes, args.quiet)
        if not args.json:
            ex = res.extract_report.summary() if res.extract_report else {}
            if not args.quiet:
                print(f"{name}: {ex.get('modules', 0)} modules, {res.lines:,} lines, compiled "
                      f"{res.compiled} ({res.up_to_date} up to date) in {res.seconds.get('total', 0):.1f} s",
                      file=sys.stderr)
            print(res.corpus)
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], indent=1))
    return 1 if failed else 0


# ---- info ---------------------------------------------------------------------------

def run_info(args: argparse.Namespace) -> int:
    from ..corpus.info import describe
    from ..corpus.layout import CorpusError, load
    from ..corpus.recipes.build import default_cache
    root = args.corpus
    from ..corpus.layout import DESCRIPTION
    if not os.path.isfile(os.path.join(root, DESCRIPTION)) and os.sep not in root:
        cached = os.path.join(args.cache or default_cache(), root)
        if os.path.isdir(cached):
            root = cached
        elif root in _recipes():
            raise UsageError(f"recipe {root} is not built yet: mlbridge corpus build {root}")
    try:
        corpus = load(root)
        d = describe(corpus)
    except CorpusError as exc:
        raise usage_error(exc) from None
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    mods = sorted(d["module_list"], key=lambda m: -m["bc_bytes"])
    shown = mods if args.all else mods[:20]
    if shown:
        _table([{"module": m["name"], "bc_bytes": m["bc_bytes"], "opt": m["opt"], "args": m["args"]}
                for m in shown], ["module", "bc_bytes", "opt", "args"])
    if len(shown) < len(mods):
        print(f"... {len(mods) - len(shown)} more (--all)")
    print(f"corpus: {d['root']}")
    print(f"modules: {d['modules']}, bitcode: {d['bc_bytes']:,} bytes, ThinLTO: "
          f"{'yes' if d['has_thinlto'] else 'no'}")
    if d["global_command_override"] is not None:
        print(f"global command override: {' '.join(d['global_command_override']) or '(empty)'}")
    print("optimization levels: " + ", ".join(f"{k} x{v}" for k, v in d["opt_levels"].items()))
    print("targets: " + ", ".join(f"{k} x{v}" for k, v in d["targets"].items()))
    print(f"distinct commands (without per-file arguments): {d['distinct_commands']}")
    common = d["common_args"]
    if common:
        text = " ".join(common)
        print(f"shared by every module ({len(common)} args): {text[:300]}{' ...' if len(text) > 300 else ''}")
    return 0
