"""The artefacts a corpus's project ships: what its modules link into.

Per-object sums hide most of what inlining can save (an external function
inlined at every call site stays in its object; only the linker or LTO can drop
it), so whole-program settings (``settings.py``) link the modules the way the
project ships them and measure the linked file. This file describes those
links, beside the corpus in ``ROOT/programs.json`` (a name LLVM's tools do not
use, so a corpus stays readable by them)::

    {"programs": [
      {"name": "liblz4.so", "kind": "shared",
       "modules": ["lz4libs/*"],              # globs over module names (default: all)
       "exports": ["LZ4_*", "LZ4F_*"],        # shared: the public API (version-script globs)
       "libs": ["m"]}                         # -l libraries the link needs
    ]}

``kind`` is ``shared`` (a shared library exporting only ``exports``: a C
library's public API, or ``PyInit_*`` for a CPython extension) or
``executable`` (one module defines ``main``; nothing is exported). Recipes
declare their programs and ``corpus build`` writes the file; for a corpus
extracted from your own build, write it by hand (docs/corpus.md).

Everything here is untrusted input: names are checked, counts bounded.
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Tuple

from ..core.files import write_json_atomic
from .layout import Corpus, CorpusError, Module, read_json

PROGRAMS = "programs.json"
KINDS = ("shared", "executable")
MAX_PROGRAMS = 256
MAX_PATTERNS = 4096
MAX_FILE_BYTES = 4 << 20
# A program's file name, a library name for -l, an export glob: no paths, no
# options, nothing a shell or a version script would read as syntax.
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$")
_EXPORT = re.compile(r"^[A-Za-z_*?][A-Za-z0-9_*?.$]{0,255}$")


@dataclass(frozen=True)
class Program:
    """One artefact: which modules it links and what it exports."""
    name: str
    kind: str = "shared"
    modules: Tuple[str, ...] = ("*",)
    exports: Tuple[str, ...] = ()
    libs: Tuple[str, ...] = ()

    def members(self, corpus: Corpus) -> List[Module]:
        """The corpus modules this program links, in corpus order; CorpusError if a
        pattern matches none (a recipe or file that went stale)."""
        out: List[Module] = []
        for pat in self.modules:
            hit = [m for m in corpus.modules if fnmatch.fnmatchcase(m.name, pat)]
            if not hit:
                raise CorpusError(f"{os.path.join(corpus.root, PROGRAMS)}: program {self.name}: "
                                  f"module pattern {pat!r} matches no module")
            out += [m for m in hit if m not in out]
        return [m for m in corpus.modules if m in out]

    def as_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"name": self.name, "kind": self.kind, "modules": list(self.modules)}
        if self.exports:
            d["exports"] = list(self.exports)
        if self.libs:
            d["libs"] = list(self.libs)
        return d


def _strings(where: str, prog: str, key: str, value: Any, pattern: "re.Pattern[str]") -> Tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_PATTERNS or not all(isinstance(v, str) for v in value):
        raise CorpusError(f"{where}: program {prog}: {key} must be a list of at most {MAX_PATTERNS} strings")
    for v in value:
        if not pattern.match(v):
            raise CorpusError(f"{where}: program {prog}: {key} entry {v!r} is not allowed")
    return tuple(value)


def _module_globs(where: str, prog: str, value: Any) -> Tuple[str, ...]:
    if not isinstance(value, list) or not value or len(value) > MAX_PATTERNS:
        raise CorpusError(f"{where}: program {prog}: modules must be a non-empty list of globs")
    for v in value:
        if not isinstance(v, str) or not v or "\0" in v or len(v) > 4096:
            raise CorpusError(f"{where}: program {prog}: module glob {v!r} is not a string")
    return tuple(value)


def program_from_dict(d: Any, where: str = PROGRAMS) -> Program:
    """One entry of programs.json, checked (CorpusError naming WHERE, the file
    with its path, and the entry)."""
    if not isinstance(d, dict):
        raise CorpusError(f"{where}: each program must be an object")
    name = d.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise CorpusError(f"{where}: program name {name!r} must be a plain file name")
    unknown = set(d) - {"name", "kind", "modules", "exports", "libs"}
    if unknown:
        raise CorpusError(f"{where}: program {name}: unknown key(s) {', '.join(sorted(unknown))}")
    kind = d.get("kind", "shared")
    if kind not in KINDS:
        raise CorpusError(f"{where}: program {name}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    modules = _module_globs(where, name, d.get("modules", ["*"]))
    exports = _strings(where, name, "exports", d.get("exports", []), _EXPORT)
    libs = _strings(where, name, "libs", d.get("libs", []), _NAME)
    if kind == "shared" and not exports:
        raise CorpusError(f"{where}: program {name}: a shared library needs its export list (\"exports\")")
    if kind == "executable" and exports:
        raise CorpusError(f"{where}: program {name}: an executable exports nothing (drop \"exports\")")
    return Program(name, kind, modules, exports, libs)


def load_programs(corpus: Corpus) -> List[Program]:
    """ROOT/programs.json, checked against the corpus (every module glob matches)."""
    path = os.path.join(corpus.root, PROGRAMS)
    if not os.path.isfile(path):
        raise CorpusError(f"{corpus.root}: no {PROGRAMS}: the linked and LTO settings need the programs the "
                          "modules link into (docs/corpus.md, \"Programs\")")
    desc = read_json(path, MAX_FILE_BYTES)   # CorpusError naming it when it cannot be read
    if not isinstance(desc, dict) or not isinstance(desc.get("programs"), list) or not desc["programs"]:
        raise CorpusError(f"{path}: expected an object with a non-empty \"programs\" list")
    if len(desc["programs"]) > MAX_PROGRAMS:
        raise CorpusError(f"{path}: more than {MAX_PROGRAMS} programs")
    progs = [program_from_dict(p, path) for p in desc["programs"]]
    if len({p.name for p in progs}) != len(progs):
        raise CorpusError(f"{path}: a program name is used twice")
    for p in progs:
        p.members(corpus)
    return progs


def write_programs(root: str, programs: Sequence[Program]) -> str:
    """Writes ROOT/programs.json (through a temporary name); returns its path."""
    return write_json_atomic(os.path.join(root, PROGRAMS), {"programs": [p.as_dict() for p in programs]},
                             indent=2, newline=True)

