"""A Python object named as ``module:attr.path`` (a policy given as text: ``mlbridge
serve --policy``, a corpus policy ``python:MODULE:FN``)."""
from __future__ import annotations

import importlib
from typing import Any

from ..core.errors import ArgumentError


def load_callable(ref: str, argument: str = "policy") -> Any:
    """``module:attr.path`` -> the object; an :class:`ArgumentError` about
    ``argument`` says what is wrong."""
    mod_name, _, attr = ref.partition(":")
    if not mod_name or not attr:
        raise ArgumentError(argument, f"{{arg}} must look like module:function, got {ref!r}")
    try:
        obj: Any = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ArgumentError(argument, f"{{arg}} {ref}: cannot import {mod_name}: {exc}") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ArgumentError(argument, f"{{arg}} {ref}: {mod_name} has no {attr}")
        obj = getattr(obj, part)
    return obj
