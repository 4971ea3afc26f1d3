"""What a corpus holds: its modules with their sizes, and a summary of their
command lines (optimization levels, targets, the flags every module shares)."""
from __future__ import annotations

import os
from collections import Counter
from typing import Any, Dict, List, Sequence

from .layout import Corpus, CorpusError

#: cc1 arguments that name the module's own files: left out of "distinct commands"
_PER_FILE_WITH_VALUE = {"-main-file-name", "-dumpdir", "-fthinlto-index", "-split-dwarf-file",
                        "-split-dwarf-output", "-coverage-notes-file", "-coverage-data-file"}
_PER_FILE_PREFIXES = ("-fcoverage-compilation-dir=", "-fdebug-compilation-dir=",
                      "-fthinlto-index=", "-fmodule-file=")


def _shared_part(args: Sequence[str]) -> List[str]:
    out: List[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in _PER_FILE_WITH_VALUE:
            skip = True
            continue
        if a.startswith(_PER_FILE_PREFIXES):
            continue
        out.append(a)
    return out


def _value_after(args: Sequence[str], flag: str) -> str:
    try:
        return args[args.index(flag) + 1]
    except (ValueError, IndexError):
        return ""


def _opt_level(args: Sequence[str]) -> str:
    levels = [a for a in args if a.startswith("-O") and len(a) <= 4]
    return levels[-1] if levels else "-O0"


def describe(corpus: Corpus) -> Dict[str, Any]:
    """Modules (name, .bc bytes, optimization level) and the command summary."""
    modules: List[Dict[str, Any]] = []
    opt, targets, shared_cmds = Counter(), Counter(), Counter()
    common: List[str] = []
    for i, m in enumerate(corpus.modules):
        try:
            size = os.path.getsize(m.bc)
        except OSError as exc:
            raise CorpusError(f"{m.bc}: cannot read ({exc.strerror})") from None
        try:
            args = m.command()
        except OSError as exc:
            raise CorpusError(f"{m.command_file}: cannot read ({exc.strerror})") from None
        level = _opt_level(args)
        opt[level] += 1
        targets[_value_after(args, "-triple") or "?"] += 1
        shared = _shared_part(args)
        shared_cmds[tuple(shared)] += 1
        common = list(shared) if i == 0 else [a for a in common if a in set(shared)]
        modules.append({"name": m.name, "bc_bytes": size, "opt": level, "args": len(args)})
    return {
        "root": corpus.root, "modules": len(modules), "has_thinlto": corpus.has_thinlto,
        "global_command_override": corpus.global_command_override,
        "bc_bytes": sum(m["bc_bytes"] for m in modules),
        "opt_levels": dict(opt.most_common()), "targets": dict(targets.most_common()),
        "distinct_commands": len(shared_cmds),
        "common_args": common, "module_list": modules,
    }
