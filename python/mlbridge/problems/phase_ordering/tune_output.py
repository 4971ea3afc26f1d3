"""What a finished or stopped ``mlbridge tune`` kept, per module, read from its
output folder without running the tuner (docs/tuning.md):

* ``checkpoint.json``: every module's search, with its best order and sizes;
* ``tuning.json``, once the tune finished: what ships. In the linked setting a
  module whose best object did not make the programs smaller, or one a
  miscompile sent back, is not in it, so a finished tune's kept orders are the
  tuning file's; a stopped tune's are the checkpoint's best orders that beat -Oz.

Sizes are the module's object's stored bytes (code + read-only + initialized
data) with the kept order and with -Oz, as the tune measured them."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ...core.errors import BAD_JSON, MLBridgeError
from ...tune import tuning_file
from ...tune.actions import STEPS
from ...tune.checkpoint import CHECKPOINT, read_checkpoint
from ...tune.run import TUNING
from ...tune.search import OrderSearch


class TuneOutputError(MLBridgeError):
    """A folder that is not a usable tune output (the message is one line and
    names the file)."""


@dataclass(frozen=True)
class KeptOrder:
    """One module's kept order (indices into tune/actions.py's STEPS) and its sizes."""
    module: str
    order: Tuple[int, ...]
    oz_bytes: int
    bytes: int


@dataclass
class TuneOutput:
    folder: str
    corpus: str
    setting: str
    #: the clang the tune compiled with (``clang --version``'s first line)
    clang: str
    #: tuning.json was written: the kept orders are the tuning file's
    finished: bool
    kept: List[KeptOrder] = field(default_factory=list)
    #: modules the tune left at -Oz, and why
    left_at_oz: Dict[str, str] = field(default_factory=dict)


def read_tune_output(folder: str) -> TuneOutput:
    """The kept orders of the tune in FOLDER; TuneOutputError naming what is wrong."""
    path = os.path.join(folder, CHECKPOINT)
    if not os.path.isfile(path):
        raise TuneOutputError(f"{folder}: not a `mlbridge tune` output folder (no {CHECKPOINT})")
    try:
        ck = read_checkpoint(path)
        out = TuneOutput(folder, str(ck["corpus"]), str(ck["setting"]), str(ck["clang"]), False)
        if out.setting == "lto":
            # its units are programs' link pipelines, not modules' orders
            raise TuneOutputError(f"{folder}: a tune of the lto setting searched programs' link pipelines, not "
                                  "modules' orders: tune log reads tunes of the objects or linked setting")
        searches: Dict[str, Tuple[str, Optional[OrderSearch]]] = {}
        for name, md in ck["modules"].items():
            if md.get("error"):
                out.left_at_oz[name] = f"its -Oz compile failed: {md['error']}"
                continue
            searches[name] = (str(md.get("source") or ""), md["search"])
    except OSError as exc:
        raise TuneOutputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (*BAD_JSON, KeyError, TypeError, AttributeError) as exc:
        raise TuneOutputError(f"{path}: damaged checkpoint ({type(exc).__name__}: {exc})") from None
    if os.path.exists(os.path.join(folder, TUNING)):
        out.finished = True
        _kept_by_tuning_file(out, searches)
    else:
        for name, (_, s) in sorted(searches.items()):
            if s is not None and s.gain > 0 and s.best_order and s.best_bytes is not None:
                out.kept.append(KeptOrder(name, s.best_order, s.oz_bytes, s.best_bytes))
            else:
                out.left_at_oz[name] = "no order beat -Oz" if s is not None else "not searched yet"
    return out


def _kept_by_tuning_file(out: TuneOutput, searches: Dict[str, Tuple[str, Optional[OrderSearch]]]) -> None:
    """A finished tune: the modules its tuning file names (keyed by source path,
    as the tuner keyed them), with the file's order."""
    path = os.path.join(out.folder, TUNING)
    try:
        tf = tuning_file.read(path)
    except tuning_file.TuningFileError as exc:
        raise TuneOutputError(str(exc)) from None
    keys = tuning_file.source_keys(src for src, _ in searches.values() if src)
    index = {s.name: i for i, s in enumerate(STEPS)}
    for name, (src, s) in sorted(searches.items()):
        entry = tf.modules.get(keys.get(os.path.normpath(src), "")) if src else None
        if entry is None or s is None:
            out.left_at_oz[name] = "not in the tuning file: the tune left it at -Oz"
            continue
        try:
            order = tuple(index[str(n)] for n in entry["order"])
            if not order:
                raise ValueError("an empty order")
            # the checkpoint may have gone on after the file was written: the file's sizes then
            if order == s.best_order and s.best_bytes is not None:
                kept = KeptOrder(name, order, s.oz_bytes, s.best_bytes)
            else:
                kept = KeptOrder(name, order, int(entry["oz_bytes"]), int(entry["bytes"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise TuneOutputError(f"{path}: damaged (module {name}: {type(exc).__name__}: {exc})") from None
        out.kept.append(kept)
