"""Candidate orders from ``mlbridge tune`` runs on training projects: each
module's best order where it beat -Oz. They are taken in turn from each
project (so every project contributes), and within a project by the bytes they
saved (an order that saved 40 % of a 200-byte table file is a fluke of that
file more often than an order that saved 3 % of 50 KB of code).

A tune of an evaluation-split project is refused: what the policy learns must
not have seen the projects it is judged on (docs/training.md, the split)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ....core.errors import ArgumentError
from ....corpus.recipes import recipes
from ....tune.actions import STEPS, order_names, pipeline_text, stable
from ....tune.search import seeds


class CandidateError(ArgumentError):
    """A tune folder that cannot be used (the message is one line)."""

    def __init__(self, message: str) -> None:
        super().__init__("tunes", message)


@dataclass(frozen=True)
class Candidate:
    order: Tuple[int, ...]
    #: the share of -Oz's stored bytes it saved on the module it was found on (0 for seeds)
    gain: float
    #: where it was found ("corpus:module"), or "seed"
    origin: str
    #: the stored bytes it saved there
    saved: int = 0

    @property
    def pipeline(self) -> str:
        return pipeline_text(self.order)

    @property
    def names(self) -> str:
        return order_names(self.order)


#: the speed check's codec programs (benchmark_corpus) named otherwise than their recipe
_ALIASES = {"zstd": "zstandard"}


def evaluation_projects() -> Dict[str, str]:
    """Corpus folder name -> recipe name, for the recipes of the evaluation split."""
    out = {r.name: r.name for r in recipes().values() if r.split == "eval"}
    out.update({alias: name for alias, name in _ALIASES.items() if name in out})
    return out


def project_of(corpus: str) -> str:
    """The project a corpus folder holds: its name, or its parent's when the folder
    is only called ``corpus`` (the speed check's programs: ``OUT/lz4/corpus``)."""
    path = os.path.normpath(corpus)
    name = os.path.basename(path)
    return os.path.basename(os.path.dirname(path)) if name == "corpus" else name


def from_tunes(tune_dirs: Sequence[str], limit: int) -> List[Candidate]:
    """Up to LIMIT distinct orders: the seeds every tune starts from, then the
    tunes' per-module winners, one project after another, each project's by the
    bytes they saved."""
    evals = evaluation_projects()
    found: Dict[str, List[Candidate]] = {}
    for d in tune_dirs:
        path = os.path.join(d, "checkpoint.json")
        try:
            with open(path, encoding="utf-8") as f:
                ck = json.load(f)
            corpus = str(ck["corpus"])
            modules = ck["modules"]
        except OSError as exc:
            raise CandidateError(f"{{arg}} {d}: no tune checkpoint ({exc.strerror or exc})") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise CandidateError(f"{{arg}} {path}: damaged ({type(exc).__name__}: {exc})") from None
        if ck.get("setting") == "lto":
            # its best "orders" are programs' link pipelines, not orders for a module
            raise CandidateError(f"{{arg}} {d}: a tune of the lto setting (link pipelines): give tunes of the "
                                 "objects or linked setting")
        project = project_of(corpus)
        if project in evals:
            raise CandidateError(f"{{arg}} {d}: a tune of {project}, an evaluation-split project: "
                                 "train on training projects only")
        for name, m in modules.items():
            s = (m or {}).get("search") or {}
            order, got, oz = s.get("best_order"), s.get("best_bytes"), s.get("oz_bytes")
            if not order or not got or not oz or got >= oz:
                continue
            key = tuple(int(i) for i in order)
            if not all(0 <= i < len(STEPS) for i in key):
                raise CandidateError(f"{{arg}} {path}: module {name}: a step outside the tuner's table")
            if not stable(key):
                continue                     # the same sources would not give the same bytes twice
            found.setdefault(project, []).append(Candidate(key, 1.0 - got / oz, f"{project}:{name}", int(oz - got)))
    out = [Candidate(tuple(s), 0.0, "seed") for s in seeds()]
    known = {c.order for c in out}
    queues = [sorted(v, key=lambda c: (-c.saved, -c.gain, c.order)) for _, v in sorted(found.items())]
    while len(out) < limit and any(queues):
        for q in queues:
            while q and q[0].order in known:
                q.pop(0)
            if q and len(out) < limit:
                c = q.pop(0)
                out.append(c)
                known.add(c.order)
    return out[:limit]
