"""The problems mlbridge trains and scores, by name (docs/problems.md).

``get("inlining-size")`` returns the problem; ``resolve`` takes a name or a
Problem, as every library function's ``problem=`` does."""
from __future__ import annotations

from typing import Dict, Union

from .base import COMMANDS, Problem, ProblemError
from .inlining_size import InliningForSize
from .phase_ordering import PhaseOrdering
from .regalloc_eviction import RegallocEviction

#: every problem, by name; the first is the default of ``--problem``
PROBLEMS: Dict[str, Problem] = {p.name: p for p in (InliningForSize(), RegallocEviction(), PhaseOrdering())}
DEFAULT = "inlining-size"

__all__ = ["COMMANDS", "DEFAULT", "PROBLEMS", "Problem", "ProblemError", "get", "resolve"]


def get(name: str) -> Problem:
    """The problem called NAME; a ProblemError listing the known ones otherwise."""
    try:
        return PROBLEMS[name]
    except (KeyError, TypeError):
        raise ProblemError("problem", f"{{arg}} {name!r}: no such problem (known: {', '.join(PROBLEMS)})") from None


def resolve(problem: Union[str, Problem]) -> Problem:
    return problem if isinstance(problem, Problem) else get(problem)
