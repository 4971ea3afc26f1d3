"""Where the bytes went: a policy's .text change against -Oz, function by function.

Two objects of one module (the -Oz compile and the policy's) are compared by
their function symbols (elf.function_sizes). A function the policy's object
lacks was inlined into all of its callers (or became dead); one only the policy
has was kept out of line where -Oz inlined it; the others grew or shrank as
their callees were inlined or not.
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence

from .elf import function_sizes

KINDS = ("removed", "added", "shrunk", "grown")


@dataclass(frozen=True)
class FunctionChange:
    module: str
    function: str
    oz: int        # bytes at -Oz (0: the function is not in the -Oz object)
    policy: int    # bytes under the policy (0: not in the policy's object)

    @property
    def delta(self) -> int:
        return self.policy - self.oz

    @property
    def kind(self) -> str:
        if not self.policy:
            return "removed"
        if not self.oz:
            return "added"
        return "shrunk" if self.delta < 0 else "grown"


def compare_functions(module: str, oz_object: str, policy_object: str) -> List[FunctionChange]:
    """The functions whose size differs between the two objects (ElfError if one is malformed)."""
    oz, pol = function_sizes(oz_object), function_sizes(policy_object)
    return [FunctionChange(module, name, oz.get(name, 0), pol.get(name, 0))
            for name in sorted(oz.keys() | pol.keys()) if oz.get(name, 0) != pol.get(name, 0)]


def summarize(changes: Iterable[FunctionChange], top: int = 10) -> Dict[str, Any]:
    """Totals per kind of change and the `top` largest changes each way (JSON-ready)."""
    changes = list(changes)
    kinds = {k: {"functions": 0, "bytes": 0} for k in KINDS}
    for c in changes:
        kinds[c.kind]["functions"] += 1
        kinds[c.kind]["bytes"] += c.delta
    by_delta = sorted(changes, key=lambda c: (c.delta, c.module, c.function))
    row = lambda c: {"module": c.module, "function": c.function, "oz": c.oz, "policy": c.policy,  # noqa: E731
                     "delta": c.delta, "kind": c.kind}
    return {"kinds": kinds, "changed_functions": len(changes), "delta": sum(c.delta for c in changes),
            "saved_most": [row(c) for c in by_delta[:top] if c.delta < 0],
            "grew_most": [row(c) for c in reversed(by_delta[-top:]) if c.delta > 0]}


def where_summary(scores: Iterable[Any], top: int = 10) -> Dict[str, Any]:
    """The function changes of an evaluation's scores (``evaluate(where=True)``),
    summed up (``summarize``), with the number of modules compared and C++ names
    demangled."""
    scores = list(scores)
    summary = summarize((c for s in scores for c in (s.functions or [])), top=top)
    summary["modules_compared"] = sum(1 for s in scores if s.functions is not None)
    rows = summary["saved_most"] + summary["grew_most"]
    for r, name in zip(rows, demangle([r["function"] for r in rows])):
        r["function"] = name
    return summary


def demangle(names: Sequence[str], cxxfilt: Optional[str] = None, timeout: float = 10.0) -> List[str]:
    """C++ names demangled by llvm-cxxfilt / c++filt when one is installed (one
    process for all names); the names as they are otherwise."""
    tool = cxxfilt or next((t for t in ("llvm-cxxfilt-19", "llvm-cxxfilt", "c++filt") if shutil.which(t)), None)
    if not tool or not names:
        return list(names)
    try:
        p = subprocess.run([tool], input="\n".join(names).encode(), capture_output=True, timeout=timeout,
                           check=True)
    except (OSError, subprocess.SubprocessError):
        return list(names)
    out = p.stdout.decode(errors="replace").split("\n")
    return out[:len(names)] if len(out) >= len(names) else list(names)
