"""The search over one module's pass orders: random orders, then local changes
to the best one found (a (1+1) evolution strategy over sequences), with every
order tried at most once.

Pure bookkeeping, no compiler: ``OrderSearch.propose()`` gives the next order
to try, ``record(order, bytes)`` says what it measured. The tuner (run.py)
decides which module gets the next compile. Measured on real programs
(docs/tuning.md): the winners replace -Oz's pipeline entirely with about a dozen
steps, the inliner step almost always among them, and the median random order is
larger than -Oz; so random orders are drawn with the inliner step in most of
them, and once a few are in, most proposals change the best order a little.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .actions import INLINE, OZ, RANDOM_STEPS, STABLE_STEPS, STEPS, UNSTABLE, stable

Order = Tuple[int, ...]

#: orders proposed by random draws before local changes take over
RANDOM_FIRST = 8
#: a random order's length
MIN_LEN, MAX_LEN = 6, 18
#: orders never grow past this (compile time grows with them)
LIMIT_LEN = 32
#: after the first RANDOM_FIRST, the share of proposals that are fresh random orders
RANDOM_SHARE = 0.2
#: the share of proposals taken from the program's pool of winning orders, while it has new ones
POOL_SHARE = 0.25


def seeds() -> List[Order]:
    """Orders every module tries first: -Oz's whole pipeline followed by cleanup
    steps (a floor near -Oz for modules where random orders do poorly), and an
    order of the phase-ordering groups in roughly -Oz's own sequence."""
    return [
        (OZ, 15),                                      # -Oz, then merge identical functions
        (OZ, 18, 16),                                  # -Oz, switches as branches, argument promotion
        (0, 10, 11, 3, 12, 1, 7, 9, 4, 5, 6, 8, 13, 2, 14, 15),
    ]


@dataclass
class OrderSearch:
    """The search state of one module (a checkpoint holds it: as_dict/from_dict)."""
    name: str
    oz_bytes: int
    seed: int = 0
    best_order: Optional[Order] = None
    best_bytes: Optional[int] = None
    tried: int = 0
    failed: int = 0
    seconds: float = 0.0
    #: (candidates tried, best bytes) each time the best improved
    curve: List[Tuple[int, int]] = field(default_factory=list)
    seen: Set[Order] = field(default_factory=set)
    pending: Set[Order] = field(default_factory=set)
    _rng: Optional[random.Random] = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._rng is None:
            self._rng = random.Random(f"{self.seed}:{self.name}:{self.tried}")

    @property
    def gain(self) -> int:
        """Bytes saved against -Oz so far (0 until something beats it)."""
        return max(0, self.oz_bytes - self.best_bytes) if self.best_bytes is not None else 0

    def propose(self, pool: Sequence[Order] = ()) -> Order:
        """The next order to try: not tried before and not being tried now. POOL:
        orders that won on other modules of the program, tried here too (what wins
        on one module often wins on its neighbours: a coreset of orders)."""
        for _ in range(200):
            o = self._next(pool)
            if o not in self.seen and o not in self.pending:
                self.pending.add(o)
                return o
        o = self._random()                          # a crowded neighbourhood: anything new
        while o in self.seen or o in self.pending:
            o = o + (RANDOM_STEPS[self._rng.randrange(len(RANDOM_STEPS))],) if len(o) < LIMIT_LEN else self._random()
        self.pending.add(o)
        return o

    def record(self, order: Order, size: Optional[int], seconds: float = 0.0) -> bool:
        """What ORDER measured (None: it failed); True if it is the new best."""
        self.pending.discard(order)
        self.seen.add(order)
        self.tried += 1
        self.seconds += seconds
        if size is None:
            self.failed += 1
            return False
        if self.best_bytes is None or size < self.best_bytes or (size == self.best_bytes and
                                                                 len(order) < len(self.best_order or ())):
            self.best_order, self.best_bytes = order, size
            self.curve.append((self.tried, size))
            return True
        return False

    # -- proposals --
    def _next(self, pool: Sequence[Order] = ()) -> Order:
        for s in seeds():
            if s not in self.seen:
                return s
        if pool and self._rng.random() < POOL_SHARE:
            fresh = [o for o in pool if o not in self.seen and o not in self.pending and stable(o)]
            if fresh:
                return fresh[self._rng.randrange(len(fresh))]
        if self.tried < RANDOM_FIRST + len(seeds()) or self.best_order is None or self._rng.random() < RANDOM_SHARE:
            return self._random()
        return self._mutate(self.best_order)

    def _random(self) -> Order:
        r = self._rng
        n = r.randint(MIN_LEN, MAX_LEN)
        # the whole -Oz step only through seeds and changes; never an unstable step
        steps = [RANDOM_STEPS[r.randrange(len(RANDOM_STEPS))] for _ in range(n)]
        if r.random() < 0.9 and INLINE not in steps:
            steps[r.randrange(max(1, n // 2))] = INLINE
        return tuple(steps)

    def _mutate(self, order: Order) -> Order:
        r = self._rng
        o = [i for i in order if i not in UNSTABLE] or [OZ]   # a best order of an older tune may hold one
        for _ in range(1 if r.random() < 0.6 else r.randint(2, 3)):
            op = r.random()
            if op < 0.3 and len(o) > 1:                              # replace a step
                o[r.randrange(len(o))] = STABLE_STEPS[r.randrange(len(STABLE_STEPS))]
            elif op < 0.55 and len(o) < LIMIT_LEN:                   # insert one
                o.insert(r.randrange(len(o) + 1), STABLE_STEPS[r.randrange(len(STABLE_STEPS))])
            elif op < 0.8 and len(o) > 1:                            # delete one
                del o[r.randrange(len(o))]
            elif len(o) > 1:                                         # swap two
                i, j = r.randrange(len(o)), r.randrange(len(o))
                o[i], o[j] = o[j], o[i]
        return tuple(o)

    # -- checkpoint --
    def as_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "oz_bytes": self.oz_bytes, "seed": self.seed,
                "best_order": list(self.best_order) if self.best_order is not None else None,
                "best_bytes": self.best_bytes, "tried": self.tried, "failed": self.failed,
                "seconds": round(self.seconds, 3), "curve": [list(c) for c in self.curve],
                "seen": sorted(list(o) for o in self.seen)}

    @staticmethod
    def from_dict(d: Dict[str, Any]) -> "OrderSearch":
        s = OrderSearch(str(d["name"]), int(d["oz_bytes"]), int(d.get("seed", 0)))
        best = d.get("best_order")
        s.best_order = tuple(int(i) for i in best) if best is not None else None
        s.best_bytes = int(d["best_bytes"]) if d.get("best_bytes") is not None else None
        s.tried, s.failed, s.seconds = int(d.get("tried", 0)), int(d.get("failed", 0)), float(d.get("seconds", 0.0))
        s.curve = [(int(a), int(b)) for a, b in d.get("curve", [])]
        s.seen = {tuple(int(i) for i in o) for o in d.get("seen", [])}
        for o in list(s.seen) + ([s.best_order] if s.best_order else []):
            if any(not 0 <= i < len(STEPS) for i in o):
                raise ValueError(f"module {s.name}: step index out of range in {list(o)}")
        s._rng = random.Random(f"{s.seed}:{s.name}:{s.tried}")
        return s
