"""Antithetic evolution strategies with rank shaping (Salimans et al. 2017), as
ml-compiler-opt's ``es/`` trains policies: gradient-free, so the fitness can be the
real thing (``.text`` bytes of real compiles), and resumable (``state_dict``).

:class:`ES` is ask/tell: ``ask()`` gives the candidates of one generation (the
current mean first, then ``2 * pairs`` antithetic perturbations), ``tell(f)`` takes
one fitness each (higher is better) and moves the mean. :func:`es_train` runs the
loop for a fitness function."""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np


def _ranks(f: np.ndarray) -> np.ndarray:
    """Centred ranks in [-0.5, 0.5]: robust to the scale of the fitness."""
    r = np.empty(len(f))
    r[np.argsort(f)] = np.arange(len(f))
    return r / max(len(f) - 1, 1) - 0.5


class ES:
    """One ES run. ``optimizer="adam"`` applies Adam to the ES gradient estimate
    (better for networks with hundreds of parameters); ``"sgd"`` is plain ascent."""

    def __init__(self, x0: np.ndarray, *, pairs: int = 6, sigma: float = 0.5, lr: float = 0.5,
                 seed: int = 0, optimizer: str = "sgd") -> None:
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be sgd or adam, not {optimizer!r}")
        self.pairs, self.sigma, self.lr, self.optimizer = pairs, sigma, lr, optimizer
        self.mean = np.asarray(x0, np.float64).ravel().copy()
        self.rng = np.random.default_rng(seed)
        self.generation = 0
        self.best, self.best_f = self.mean.copy(), -np.inf
        self.m = np.zeros_like(self.mean)
        self.v = np.zeros_like(self.mean)
        self._eps: Optional[np.ndarray] = None

    def ask(self) -> List[np.ndarray]:
        self._eps = self.rng.standard_normal((self.pairs, self.mean.size))
        return [self.mean.copy()] + [self.mean + self.sigma * e for e in self._eps] + \
               [self.mean - self.sigma * e for e in self._eps]

    def tell(self, fitness: Sequence[float]) -> Dict[str, Any]:
        if self._eps is None:
            raise RuntimeError("tell() without ask()")
        f = np.asarray(fitness, np.float64)
        if f.shape != (2 * self.pairs + 1,):
            raise ValueError(f"expected {2 * self.pairs + 1} fitness values, got {f.shape}")
        eps, self._eps = self._eps, None
        cands = [self.mean] + [self.mean + self.sigma * e for e in eps] + [self.mean - self.sigma * e for e in eps]
        k = int(np.argmax(f))
        if f[k] > self.best_f:
            self.best, self.best_f = cands[k].copy(), float(f[k])
        shaped = _ranks(f[1:])
        grad = (shaped[:self.pairs] - shaped[self.pairs:]) @ eps / (2 * self.pairs)
        if self.optimizer == "adam":
            t = self.generation + 1
            self.m = 0.9 * self.m + 0.1 * grad
            self.v = 0.999 * self.v + 0.001 * grad * grad
            step = (self.m / (1 - 0.9 ** t)) / (np.sqrt(self.v / (1 - 0.999 ** t)) + 1e-8)
        else:
            step = grad
        self.mean = self.mean + self.lr * step
        rec = {"generation": self.generation, "mean_fitness": float(f[0]), "best_fitness": self.best_f,
               "max_fitness": float(f.max()), "evaluations": len(f)}
        self.generation += 1
        return rec

    def state_dict(self) -> Dict[str, Any]:
        return {"mean": self.mean.tolist(), "best": self.best.tolist(), "best_f": self.best_f,
                "generation": self.generation, "m": self.m.tolist(), "v": self.v.tolist(),
                "rng": self.rng.bit_generator.state, "pairs": self.pairs, "sigma": self.sigma, "lr": self.lr,
                "optimizer": self.optimizer}

    @classmethod
    def from_state(cls, st: Dict[str, Any]) -> "ES":
        es = cls(np.asarray(st["mean"]), pairs=st["pairs"], sigma=st["sigma"], lr=st["lr"],
                 optimizer=st.get("optimizer", "sgd"))
        es.best, es.best_f = np.asarray(st["best"], np.float64), float(st["best_f"])
        es.generation = int(st["generation"])
        es.m, es.v = np.asarray(st["m"], np.float64), np.asarray(st["v"], np.float64)
        es.rng.bit_generator.state = st["rng"]
        return es


def es_train(fitness: Callable[[List[np.ndarray]], Sequence[float]], x0: np.ndarray, *,
             generations: int = 20, pairs: int = 6, sigma: float = 0.5, lr: float = 0.5,
             seed: int = 0, budget_s: Optional[float] = None,
             log: Optional[Callable[[Dict[str, Any]], None]] = None) -> Tuple[np.ndarray, float, List[Dict[str, Any]]]:
    """Runs :class:`ES` for ``generations`` or until ``budget_s`` seconds have
    passed. Returns (best parameters seen, their fitness, per-generation history)."""
    es = ES(x0, pairs=pairs, sigma=sigma, lr=lr, seed=seed)
    history: List[Dict[str, Any]] = []
    start = time.monotonic()
    for g in range(generations):
        if budget_s is not None and g > 0 and time.monotonic() - start >= budget_s:
            break
        rec = es.tell(fitness(es.ask()))
        rec["elapsed_s"] = time.monotonic() - start
        history.append(rec)
        if log is not None:
            log(rec)
    return es.best, es.best_f, history
