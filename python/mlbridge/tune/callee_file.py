"""Per-callee inlining answers given to the plugin beside a candidate's pipeline
(``-mlbridge-po-callees=FILE``, integrations/llvm/callee_answers.h): one
``NAME<TAB>0|1`` line per callee, applied as inlining attributes while the order
runs. Shared by the local candidates (run.py) and the Ray tasks."""
from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Optional, Sequence, Tuple

from ..corpus.compile import CompileOptions


def write_callees(callees: Sequence[Tuple[str, int]], folder: str, tag: str) -> Optional[str]:
    """CALLEES in a new file under FOLDER (its path), or None when there are none."""
    if not callees:
        return None
    fd, path = tempfile.mkstemp(dir=folder, prefix=f"{tag}-callees-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(f"{name}\t{int(answer)}\n" for name, answer in callees))
    return path


def with_callees(options: CompileOptions, path: Optional[str]) -> CompileOptions:
    """OPTIONS whose compiles also give the plugin the callee file at PATH."""
    if path is None:
        return options
    before = options.extra_args
    return dataclasses.replace(options, extra_args=lambda m: [*(before(m) if before else ()), "-mllvm",
                                                             f"-mlbridge-po-callees={path}"])
