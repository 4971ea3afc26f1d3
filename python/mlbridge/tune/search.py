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

Inlining is searched with the order (a candidate is an order and a set of
per-callee answers): once a module has had CALLEES_AFTER orders, a share of the
proposals keeps the best order and changes the answer for every call of one
callee, taken from the callees -Oz's inliner was asked about (its
``questions``, most calls first), to the other answer: the per-callee search of
``train room``, inside the order that won.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from .actions import INLINE, LTO, OZ, RANDOM_STEPS, STABLE_STEPS, STEPS, UNSTABLE, stable

Order = Tuple[int, ...]
#: per-callee inlining answers, sorted by name: (callee, 1 inline every call / 0 none)
Callees = Tuple[Tuple[str, int], ...]


class Proposal(NamedTuple):
    """One compile's choice: the order, the callee answers, and whether it is a
    change of callee answers on the best order (else a proposed order)."""
    order: Order
    callees: Callees = ()
    flip: bool = False


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
#: callee answers are searched once a module has had this many candidates ...
CALLEES_AFTER = 16
#: ... in this share of its proposals, while a callee is left to try
CALLEES_SHARE = 0.3
#: the callees searched per module (the most called first)
MAX_QUESTIONS = 400


def seeds(whole: int = OZ) -> List[Order]:
    """Orders every module tries first: the whole pipeline it is compiled with
    (WHOLE: -Oz's, or the LTO link's for a program under LTO) followed by cleanup
    steps (a floor near it where random orders do poorly), and an order of the
    phase-ordering groups in roughly -Oz's own sequence."""
    return [
        (whole, 15),                                   # the pipeline, then merge identical functions
        (whole, 18, 16),                               # then switches as branches, argument promotion
        (0, 10, 11, 3, 12, 1, 7, 9, 4, 5, 6, 8, 13, 2, 14, 15),
    ]


@dataclass
class OrderSearch:
    """The search state of one module (a checkpoint holds it: as_dict/from_dict)."""
    name: str
    oz_bytes: int
    seed: int = 0
    #: the whole pipeline its seeds start from (actions.OZ; actions.LTO: a program's link under LTO)
    whole: int = OZ
    best_order: Optional[Order] = None
    best_bytes: Optional[int] = None
    best_callees: Callees = ()
    #: the callees -Oz's inliner was asked about, most calls first, with -Oz's answer
    #: (the one most of their calls got); None until the tuner has asked the compiler
    questions: Optional[List[Tuple[str, int]]] = None
    #: bytes the kept changes of callee answers saved, each on the best before it
    callee_saved: int = 0
    tried: int = 0
    failed: int = 0
    seconds: float = 0.0
    #: (candidates tried, best bytes) each time the best improved
    curve: List[Tuple[int, int]] = field(default_factory=list)
    seen: Set[Order] = field(default_factory=set)
    pending: Set[Order] = field(default_factory=set)
    #: (order, callees) changes of callee answers tried, or being tried now
    seen_callees: Set[Tuple[Order, Callees]] = field(default_factory=set)
    pending_callees: Set[Tuple[Order, Callees]] = field(default_factory=set)
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

    @property
    def wants_questions(self) -> bool:
        """The callee search is due and the callees are not known yet."""
        return self.questions is None and self.tried >= CALLEES_AFTER and self.best_order is not None

    def propose_candidate(self, pool: Sequence[Order] = ()) -> Proposal:
        """The next candidate: a change of one callee's answer on the best order
        (in CALLEES_SHARE of the proposals once they are due, while one is left),
        else the next order (propose) with the best order's callee answers."""
        if self.questions and self.best_order is not None and self.tried >= CALLEES_AFTER and \
                self._rng.random() < CALLEES_SHARE:   # type: ignore[union-attr]
            callees = self._callee_change()
            if callees is not None:
                self.pending_callees.add((self.best_order, callees))
                return Proposal(self.best_order, callees, True)
        return Proposal(self.propose(pool), self.best_callees)

    def record(self, order: Order, size: Optional[int], seconds: float = 0.0, callees: Callees = (),
               flip: bool = False) -> bool:
        """What ORDER with CALLEES measured (None: it failed); True if it is the
        new best. FLIP: a change of callee answers (propose_candidate)."""
        if flip:
            self.pending_callees.discard((order, callees))
            self.seen_callees.add((order, callees))
        else:
            self.pending.discard(order)
            self.seen.add(order)
        self.tried += 1
        self.seconds += seconds
        if size is None:
            self.failed += 1
            return False
        if self.best_bytes is None or size < self.best_bytes or (size == self.best_bytes and
                                                                 len(order) + len(callees) <
                                                                 len(self.best_order or ()) + len(self.best_callees)):
            if flip and self.best_bytes is not None:
                self.callee_saved += self.best_bytes - size
            self.best_order, self.best_bytes, self.best_callees = order, size, callees
            self.curve.append((self.tried, size))
            return True
        return False

    def _callee_change(self) -> Optional[Callees]:
        """The best callee answers with one more callee answered against -Oz's
        answer, the first such change not tried on the best order; None if none is left."""
        have = dict(self.best_callees)
        for name, oz in self.questions or ():
            if name in have:
                continue
            c = tuple(sorted({**have, name: 1 - oz}.items()))
            key = (self.best_order, c)
            if key not in self.seen_callees and key not in self.pending_callees:
                return c   # type: ignore[return-value]
        return None

    # -- proposals --
    def _next(self, pool: Sequence[Order] = ()) -> Order:
        for s in seeds(self.whole):
            if s not in self.seen:
                return s
        if pool and self._rng.random() < POOL_SHARE:
            fresh = [o for o in pool if o not in self.seen and o not in self.pending and stable(o)]
            if fresh:
                return fresh[self._rng.randrange(len(fresh))]
        if self.tried < RANDOM_FIRST + len(seeds(self.whole)) or self.best_order is None or \
                self._rng.random() < RANDOM_SHARE:
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
        o = [i for i in order if i not in UNSTABLE] or [self.whole]   # a best order of an older tune may hold one
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
        return {"name": self.name, "oz_bytes": self.oz_bytes, "seed": self.seed, "whole": self.whole,
                "best_order": list(self.best_order) if self.best_order is not None else None,
                "best_bytes": self.best_bytes, "best_callees": [list(c) for c in self.best_callees],
                "questions": [list(q) for q in self.questions] if self.questions is not None else None,
                "callee_saved": self.callee_saved, "tried": self.tried, "failed": self.failed,
                "seconds": round(self.seconds, 3), "curve": [list(c) for c in self.curve],
                "seen": sorted(list(o) for o in self.seen),
                "seen_callees": sorted([list(o), [list(c) for c in cs]] for o, cs in self.seen_callees)}

    @staticmethod
    def from_dict(d: Dict[str, Any]) -> "OrderSearch":
        s = OrderSearch(str(d["name"]), int(d["oz_bytes"]), int(d.get("seed", 0)), int(d.get("whole", OZ)))
        if s.whole not in (OZ, LTO):
            raise ValueError(f"module {s.name}: its whole pipeline {s.whole} is not a whole-pipeline step")
        best = d.get("best_order")
        s.best_order = tuple(int(i) for i in best) if best is not None else None
        s.best_bytes = int(d["best_bytes"]) if d.get("best_bytes") is not None else None
        s.tried, s.failed, s.seconds = int(d.get("tried", 0)), int(d.get("failed", 0)), float(d.get("seconds", 0.0))
        s.curve = [(int(a), int(b)) for a, b in d.get("curve", [])]
        s.seen = {tuple(int(i) for i in o) for o in d.get("seen", [])}
        s.best_callees = _callees(d.get("best_callees", []))
        s.callee_saved = int(d.get("callee_saved", 0))
        q = d.get("questions")
        s.questions = [(str(n), int(a)) for n, a in q] if q is not None else None
        s.seen_callees = {(tuple(int(i) for i in o), _callees(cs)) for o, cs in d.get("seen_callees", [])}
        for o in list(s.seen) + ([s.best_order] if s.best_order else []) + [o for o, _ in s.seen_callees]:
            if any(not 0 <= i < len(STEPS) for i in o):
                raise ValueError(f"module {s.name}: step index out of range in {list(o)}")
        s._rng = random.Random(f"{s.seed}:{s.name}:{s.tried}")
        return s


def _callees(items: Sequence[Sequence[Any]]) -> Callees:
    out = tuple(sorted((str(n), int(a)) for n, a in items))
    if any(a not in (0, 1) for _, a in out):
        raise ValueError(f"a callee answer is not 0 or 1 in {list(out)}")
    return out


def parse_trace(text: str, sizes: Optional[Dict[str, int]] = None,
                limit: int = MAX_QUESTIONS) -> List[Tuple[str, int]]:
    """The plugin's inliner trace (``caller<TAB>callee<TAB>answer`` per question)
    as questions: each callee with the answer most of its calls got, in the
    order worth trying. SIZES: code bytes per function of -Oz's object. Two
    kinds alternate: callees -Oz kept out of line, smallest body first (inlining
    all calls of a small function is the likeliest to pay), and callees -Oz
    inlined, the most calls of a body that is still in the object first (its
    copies are what keeping it out of line saves). Ties by name: the same trace
    gives the same list."""
    sizes = sizes or {}
    asked: Dict[str, List[int]] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[1] and parts[2] in ("0", "1"):
            counts = asked.setdefault(parts[1], [0, 0])
            counts[int(parts[2])] += 1
    unknown = 1 << 30
    kept_out = sorted((n for n, c in asked.items() if c[1] <= c[0]), key=lambda n: (sizes.get(n, unknown), n))
    inlined = sorted((n for n, c in asked.items() if c[1] > c[0]),
                     key=lambda n: (-(sizes.get(n, 0) > 0), -(asked[n][0] + asked[n][1]), n))
    out: List[Tuple[str, int]] = []
    for i in range(max(len(kept_out), len(inlined))):
        out += [(kept_out[i], 0)] if i < len(kept_out) else []
        out += [(inlined[i], 1)] if i < len(inlined) else []
    return out[:limit]
