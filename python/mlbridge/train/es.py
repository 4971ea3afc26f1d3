"""Antithetic evolution strategies with rank shaping (gradient-free; fine on two cores for a few dozen parameters)."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np




# ---- evolution strategies -----------------------------------------------------------
def _ranks(f: np.ndarray) -> np.ndarray:
    """Centred ranks in [-0.5, 0.5]: robust to the scale of the fitness."""
    r = np.empty(len(f))
    r[np.argsort(f)] = np.arange(len(f))
    return r / max(len(f) - 1, 1) - 0.5


def es_train(fitness: Callable[[List[np.ndarray]], Sequence[float]], x0: np.ndarray, *,
             generations: int = 20, pairs: int = 6, sigma: float = 0.5, lr: float = 0.5,
             seed: int = 0, budget_s: Optional[float] = None,
             log: Optional[Callable[[Dict[str, Any]], None]] = None) -> Tuple[np.ndarray, float, List[Dict[str, Any]]]:
    """Antithetic ES (Salimans et al. 2017) with rank shaping. ``fitness``
    gets a list of parameter vectors (the current mean first, then ``2 *
    pairs`` perturbations) and returns one number each (higher is better).
    Stops after ``generations`` or once ``budget_s`` seconds have passed.
    Returns (best parameters seen, their fitness, per-generation history)."""
    rng = np.random.default_rng(seed)
    mean = np.asarray(x0, np.float64).copy()
    best, best_f = mean.copy(), -np.inf
    history: List[Dict[str, Any]] = []
    start = time.monotonic()
    for g in range(generations):
        if budget_s is not None and g > 0 and time.monotonic() - start >= budget_s:
            break
        eps = rng.standard_normal((pairs, mean.size))
        cands = [mean] + [mean + sigma * e for e in eps] + [mean - sigma * e for e in eps]
        f = np.asarray(fitness(cands), np.float64)
        k = int(np.argmax(f))
        if f[k] > best_f:
            best, best_f = cands[k].copy(), float(f[k])
        shaped = _ranks(f[1:])
        grad = (shaped[:pairs] - shaped[pairs:]) @ eps / (2 * pairs)
        mean = mean + lr * grad
        rec = {"generation": g, "mean_fitness": float(f[0]), "best_fitness": best_f,
               "elapsed_s": time.monotonic() - start, "evaluations": len(cands)}
        history.append(rec)
        if log is not None:
            log(rec)
    return best, best_f, history
