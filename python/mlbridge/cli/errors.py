"""User mistakes on the command line: one clear line and exit code 2, never a traceback."""
from __future__ import annotations

import importlib
from typing import Any


class UsageError(Exception):
    """A mistake the user can fix (bad flag value, missing file, not a corpus)."""


def load_callable(ref: str, what: str) -> Any:
    """``module:attr.path`` -> the object; a UsageError names what is wrong."""
    mod_name, _, attr = ref.partition(":")
    if not mod_name or not attr:
        raise UsageError(f"{what} must look like module:function, got {ref!r}")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ImportError as exc:
        raise UsageError(f"{what} {ref}: cannot import {mod_name}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{what} {ref}: {mod_name} has no {attr}")
        obj = getattr(obj, part)
    return obj
