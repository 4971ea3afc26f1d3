"""The problems mlbridge trains and scores, by name (docs/problems.md), one
folder each: ``inlining/``, ``eviction/``, ``phase_ordering/`` (the problem in
``problem.py``, beside the code that trains its policies); ``base.py`` is what
every problem answers.

``get("inlining-size")`` returns the problem; ``resolve`` takes a name or a
Problem, as every library function's ``problem=`` does."""
from __future__ import annotations

from typing import Dict, Union

from .base import COMMANDS, IllegalAnswer, Problem, ProblemError
# the definitions only: a problem's trainers import corpus/ and train/, which import this registry
from .eviction.problem import RegallocEviction
from .inlining.problem import InliningForSize
from .phase_ordering.problem import PhaseOrdering

#: every problem, by name; the first is the default of ``--problem``
PROBLEMS: Dict[str, Problem] = {p.name: p for p in (InliningForSize(), RegallocEviction(), PhaseOrdering())}
DEFAULT = "inlining-size"

__all__ = ["COMMANDS", "DEFAULT", "PROBLEMS", "IllegalAnswer", "Problem", "ProblemError", "get", "resolve"]


def get(name: str) -> Problem:
    """The problem called NAME; a ProblemError listing the known ones otherwise."""
    try:
        return PROBLEMS[name]
    except (KeyError, TypeError):
        raise ProblemError("problem", f"{{arg}} {name!r}: no such problem (known: {', '.join(PROBLEMS)})") from None


def resolve(problem: Union[str, Problem]) -> Problem:
    return problem if isinstance(problem, Problem) else get(problem)
