"""The coreset: a few orders that together do best over the training modules,
chosen greedily, and the figures that say how well a choice generalizes.

A module's result under a set S of orders is its smallest object among -Oz and
the orders of S (what the plugin keeps), as a ratio to -Oz's stored bytes; a
policy's figure is the geomean of those ratios, each project weighted equally
(a project of 249 tiny files does not outvote one of 9 large ones)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from .labels import ModuleLabels


def cost(size: Sequence[int]) -> int:
    """What the plugin compares: stored bytes plus the dynamic relocations PIC code
    will cost in the program (labels without that figure count 0)."""
    return int(size[0]) + (int(size[2]) if len(size) > 2 else 0)


def ratio_matrix(rows: Sequence[ModuleLabels]) -> np.ndarray:
    """[modules, orders]: each order's cost / -Oz's; a failed order is inf."""
    out = np.full((len(rows), len(rows[0].orders) if rows else 0), np.inf)
    for i, r in enumerate(rows):
        oz = max(1, cost(r.oz))
        for j, s in enumerate(r.orders):
            if s is not None:
                out[i, j] = cost(s) / oz
    return out


def project_weights(rows: Sequence[ModuleLabels]) -> np.ndarray:
    """1 / (modules of its project), normalized to sum 1."""
    counts: Dict[str, int] = {}
    for r in rows:
        counts[r.corpus] = counts.get(r.corpus, 0) + 1
    w = np.array([1.0 / counts[r.corpus] for r in rows])
    return w / w.sum()


def kept(ratios: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Per module, the ratio the plugin keeps when it tries the orders CHOSEN
    ([modules, k] indices, or [k] for every module) beside -Oz."""
    if chosen.ndim == 1:
        chosen = np.broadcast_to(chosen, (ratios.shape[0], chosen.size))
    if chosen.shape[1] == 0:
        return np.ones(ratios.shape[0])
    picked = np.take_along_axis(ratios, chosen, axis=1)
    return np.minimum(1.0, picked.min(axis=1))


def score(ratios: np.ndarray, chosen: np.ndarray, weights: np.ndarray) -> float:
    """Weighted geomean of the kept ratios (1.0 = -Oz; 0.98 = 2 % smaller)."""
    return float(np.exp(weights @ np.log(kept(ratios, chosen))))


def greedy(ratios: np.ndarray, weights: np.ndarray, k: int, among: Optional[Sequence[int]] = None) -> List[int]:
    """K orders, each the one that lowers the weighted geomean most given those
    before it: the first k of the list are the best fixed set of size k the
    greedy finds, for every k (so one list serves every --tries)."""
    logs = np.log(np.minimum(1.0, ratios))          # inf -> 0 (a failure keeps -Oz)
    logs[~np.isfinite(logs)] = 0.0
    pool = list(range(ratios.shape[1])) if among is None else list(among)
    best = np.zeros(ratios.shape[0])
    out: List[int] = []
    for _ in range(min(k, len(pool))):
        gains = [(weights @ np.minimum(best, logs[:, j]), j) for j in pool if j not in out]
        value, j = min(gains)
        if value >= weights @ best and out:
            break                                    # nothing left helps
        out.append(j)
        best = np.minimum(best, logs[:, j])
    return out


def oracle(ratios: np.ndarray, weights: np.ndarray) -> float:
    """Every candidate tried: the most any choice among them could give."""
    return score(ratios, np.arange(ratios.shape[1]), weights)
