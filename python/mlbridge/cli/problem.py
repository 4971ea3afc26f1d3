"""``--problem NAME``: which problem a command works on (docs/problems.md)."""
from __future__ import annotations

import argparse

from ..problems import DEFAULT, PROBLEMS, Problem, ProblemError, get
from .errors import usage_error


def add_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--problem", default=DEFAULT, metavar="{" + ",".join(PROBLEMS) + "}",
                   help=f"what the policy decides (default {DEFAULT}; docs/problems.md)")


def checked(args: argparse.Namespace, command: str, setting: str = "objects") -> Problem:
    """The problem --problem names, if COMMAND serves it in SETTING; one usage line otherwise."""
    try:
        problem = get(args.problem)
        problem.check(command, setting)
    except ProblemError as exc:
        raise usage_error(exc) from None
    return problem
