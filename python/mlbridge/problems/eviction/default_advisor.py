"""LLVM 19's *default* eviction advisor, answering the interactive channel:
:class:`DefaultAdvisor` takes one observation (policy.py's 33 candidates) and
answers what ``DefaultEvictionAdvisor::tryFindEvictionCandidate``
(RegAllocEvictionAdvisor.cpp) would have picked, so that llc-19 with
``-regalloc-enable-advisor=release`` and this policy can reproduce stock
llc-19 (bench/eviction_default_exact.py measures how often it does).

Why it can match: MLRegAllocEvictAdvisor.cpp visits the allocation order as
the default does, masks out exactly the registers the default skips before
costing (``canAllocatePhysReg``, interference with a physical register, more
than ``EvictInterferenceCutoff`` interferences on a unit, fixed or ``RS_Done``
interference, a newer cascade unless urgent), and sends per register the
default's cost inputs: ``nr_broken_hints`` (the sum over units of satisfied
hints, as the default's ``BrokenHints``), ``use_def_density`` (the largest
interfering spill weight, the default's ``MaxWeight``), ``is_local`` (the
interferences the local-reassignment rule refuses) and ``is_hint``. The
``_by_max`` normalization divides a feature by one positive number per
question, which keeps its order.

What the features cannot decide (the answer is then a guess, noted where made):

- ``CostPerUseLimit``: ``tryAssign`` asks for a cheaper register than a free
  costly one (x86-64's R8-R15); the default then allows no broken hint and
  applies the local rule from the first register. The channel does not say
  which question this is: it is treated as an ordinary one.
- unspillable ranges: their infinite weight makes LLVM's normalized weights
  NaN (the infinite one) or 0 (all finite ones, the allocated range's
  included), so once one interference is unspillable the other weights are
  lost; lighter-than-self is then unknowable (we read 0 < 0: not lighter).
- urgent evictions (the allocated range unspillable): ``nr_urgent`` counts the
  cascade-breaking ones, but the default refuses an equal cascade and adds 10
  broken hints per older one; the two normalized counts cannot be summed, so
  the cost is ranked (urgent, broken hints, weight). Whether an unspillable
  interference is urgent (register class sizes) is not sent: it is not evicted.
- local reassignment (``canReassign``) is folded into ``is_local`` by LLVM;
  urgent interferences skip the default's local rule but are counted there.
- ties: two weights that differ by less than float precision after division
  by the largest one compare equal (the first in order wins, as in LLVM)."""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple

import numpy as np

CANDIDATES = 33
SELF = CANDIDATES - 1   # the live range being allocated: answering it evicts nothing


def _col(obs: Mapping[str, Any], name: str) -> np.ndarray:
    return np.asarray(obs[name]).reshape(-1)


class Costs(NamedTuple):
    """One question's inputs to the default rule (column 32 is the allocated range)."""
    mask: np.ndarray         # bool [33]
    urgent: np.ndarray       # nr_urgent [33]
    hints: np.ndarray        # BrokenHints / largest [33]
    weight: np.ndarray       # MaxWeight / largest [32]; NaN (an unspillable interference) read as inf
    self_weight: float       # the allocated range's weight, as sent (NaN when unspillable)
    unspillable: bool        # the allocated range must evict (urgent)
    evictable: np.ndarray    # bool [32]: the rule may evict this register (weights alone)
    local: np.ndarray        # is_local [33]
    is_hint: np.ndarray      # is_hint [33]


def costs(obs: Mapping[str, Any]) -> Costs:
    """The default rule's inputs for one question, read once (also the search's
    cost order: problems/eviction/search.py)."""
    mask = _col(obs, "mask") != 0
    weight = _col(obs, "use_def_density").astype(np.float64)   # MaxWeight / largest
    # LLVM masks column 32 when the range is unspillable and must evict
    # (MustFindEviction); a limited question about an unspillable range
    # sends its infinite weight, normalized to NaN.
    unspillable = bool(not mask[SELF] or np.isnan(weight[SELF]))
    w = np.where(np.isnan(weight[:SELF]), np.inf, weight[:SELF])   # NaN: an unspillable interference
    if unspillable:
        # Urgent: every spillable interference may go regardless of weight;
        # an unspillable one only from a larger class (not sent: refused).
        evictable = np.isfinite(w)
    else:
        # shouldEvict with IsHint false (tryFindEvictionCandidate passes false):
        # evict only when the allocated range is strictly heavier than every interference.
        evictable = w < weight[SELF]
    return Costs(mask, _col(obs, "nr_urgent").astype(np.float64), _col(obs, "nr_broken_hints").astype(np.float64),
                 w, float(weight[SELF]), unspillable, evictable, _col(obs, "is_local"), _col(obs, "is_hint"))


class DefaultAdvisor:
    """``advisor(obs) -> index_to_evict``: DefaultEvictionAdvisor's choice (module docstring)."""

    def __call__(self, obs: Mapping[str, Any]) -> int:
        return self.choose(costs(obs), obs)

    def choose(self, c: Costs, obs: Mapping[str, Any]) -> int:
        """The choice from the question's costs C (``costs(obs)``, read once by a
        caller that needs them too: the search's ranking)."""
        mask, urgent, hints, w, local, is_hint = c.mask, c.urgent, c.hints, c.weight, c.local, c.is_hint
        unspillable = c.unspillable
        cand = np.arange(SELF)
        ok = cand[mask[:SELF] & c.evictable]
        best, best_cost = -1, (np.inf, np.inf, np.inf)   # EvictionCost::setMax
        for i in ok.tolist():
            # Once a register was found (MaxCost not max), evicting a local
            # interference for a local range is refused (canEvictInterferenceBasedOnCost).
            if best >= 0 and local[i] > 0 and not unspillable:
                continue
            cost = (urgent[i], hints[i], w[i])   # EvictionCost operator<: BrokenHints, then MaxWeight
            if not cost < best_cost:             # ties: the first in allocation order stays
                continue
            best, best_cost = i, cost
            if is_hint[i]:                       # "Stop if the hint can be used."
                break
        if best >= 0:
            return best
        if mask[SELF]:
            return SELF                          # NoRegister: evict nothing
        # MustFindEviction with nothing the rule accepts (an unspillable
        # interference the rule cannot judge): the cheapest legal register.
        legal = cand[mask[:SELF]]
        weight = _col(obs, "use_def_density").astype(np.float64)
        order = np.lexsort((legal, weight[legal], hints[legal], urgent[legal]))
        return int(legal[order[0]])
