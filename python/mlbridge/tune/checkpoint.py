"""A tune's checkpoint (OUT/checkpoint.json) read back and checked: one reader
for the tuner resuming (run.py) and for what reads a tune's kept orders
(problems/phase_ordering/tune_output.py)."""
from __future__ import annotations

import json
from typing import Any, Dict

from .actions import STEPS
from .search import OrderSearch

CHECKPOINT = "checkpoint.json"
CHECKPOINT_FORMAT = "mlbridge-tune-checkpoint"
CHECKPOINT_VERSION = 1


def read_checkpoint(path: str) -> Dict[str, Any]:
    """The checkpoint at PATH, every module's ``search`` an OrderSearch (None
    where it has none). OSError if it cannot be read; ValueError (a JSON error
    too), KeyError, TypeError or AttributeError if it is damaged, of another
    version, or holds steps that are not this mlbridge's."""
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    if not isinstance(d, dict) or d.get("format") != CHECKPOINT_FORMAT:
        raise ValueError("not a tune checkpoint")
    if d.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"version {d.get('version')!r}, this mlbridge reads {CHECKPOINT_VERSION}")
    steps = d["steps"]
    # orders are indices into the step table, which only grows (actions.py)
    if not isinstance(steps, list) or steps != [s.pipeline for s in STEPS][:len(steps)]:
        raise ValueError("its steps are not this mlbridge's")
    for md in d["modules"].values():
        md["search"] = OrderSearch.from_dict(md["search"]) if md.get("search") is not None else None
    return d
