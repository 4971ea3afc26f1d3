"""User mistakes on the command line: one clear line and exit code 2, never a traceback."""
from __future__ import annotations

from typing import Any

from ..core.errors import ArgumentError


class UsageError(Exception):
    """A mistake the user can fix (bad flag value, missing file, not a corpus)."""


#: library arguments whose flag is not ``--`` + the name
_SHORT_FLAGS = {"out": "-o", "dst": "-o"}


def flag(argument: str) -> str:
    """The command line's flag for a library argument (``linker_policy`` -> ``--linker-policy``)."""
    return _SHORT_FLAGS.get(argument) or "--" + argument.replace("_", "-")


def describe(exc: BaseException) -> str:
    """A library error in the command line's words: an :class:`ArgumentError`
    names the flag the user gave."""
    return exc.worded(flag(exc.argument)) if isinstance(exc, ArgumentError) else str(exc)


def usage_error(exc: BaseException) -> UsageError:
    """A library error the user can fix, as the command line's one line."""
    return UsageError(describe(exc))


def load_callable(ref: str, argument: str = "policy") -> Any:
    """``module:attr.path`` -> the object; a UsageError names the flag and what is wrong."""
    from ..corpus.python_callable import load_callable as load
    try:
        return load(ref, argument)
    except ArgumentError as exc:
        raise usage_error(exc) from exc.__cause__
