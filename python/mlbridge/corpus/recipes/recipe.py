"""A recipe: a pinned source release of one project, and how to compile its C/C++
sources file by file. Declarative; ``prepare`` is the script hook for the few
projects that generate a file before compiling."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

from ..programs import Program


@dataclass(frozen=True)
class Recipe:
    name: str
    version: str
    #: "c" or "c++" (the project's main language, for `corpus list`)
    language: str
    domain: str
    #: lines of the compiled sources and their headers, as `corpus build` counts them
    lines: int
    #: globs under the unpacked source, relative to its top folder
    sources: Tuple[str, ...]
    exclude: Tuple[str, ...] = ()
    #: -I folders, relative to the top folder
    include: Tuple[str, ...] = ()
    defines: Tuple[str, ...] = ()
    cflags: Tuple[str, ...] = ()
    cxxflags: Tuple[str, ...] = ("-std=c++17",)
    #: the sdist on PyPI: distribution name (None: `local`), its archive sha256
    pypi: Optional[str] = None
    sha256: str = ""
    #: a folder of the repository (relative to its root) instead of a download
    local: Optional[str] = None
    description: str = ""
    #: "train" or "eval": projects split whole (docs/training.md); nothing is
    #: chosen on an "eval" project
    split: str = "train"
    #: what the modules link into, as the project ships it (programs.json; the
    #: linked and LTO settings)
    programs: Tuple[Program, ...] = ()
    #: called with the unpacked top folder before compiling (generates files)
    prepare: Optional[Callable[[str], None]] = field(default=None, compare=False)
