"""Behavioral cloning: fit a policy to the decisions of a teacher (LLVM's -Oz
heuristic, as logged in ``inlining_default``), the warm start MLGO uses before
reinforcement learning. Full-batch Adam on the logistic loss, in numpy."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from .policy import MLPPolicy, slog


def fit_normalization(policy: MLPPolicy, raw: np.ndarray) -> None:
    """Sets the policy's input normalization from feature rows [m, n]."""
    s = slog(raw)
    policy.mu = s.mean(0).astype(np.float32)
    policy.sigma = np.maximum(s.std(0), 1e-3).astype(np.float32)


class Adam:
    """Adam on a flat parameter vector (ascent when ``maximize``)."""

    def __init__(self, size: int, lr: float = 1e-2, b1: float = 0.9, b2: float = 0.999) -> None:
        self.lr, self.b1, self.b2 = lr, b1, b2
        self.m = np.zeros(size, np.float64)
        self.v = np.zeros(size, np.float64)
        self.t = 0

    def step(self, params: np.ndarray, grad: np.ndarray, maximize: bool = False) -> np.ndarray:
        self.t += 1
        g = -grad if maximize else grad
        self.m = self.b1 * self.m + (1 - self.b1) * g
        self.v = self.b2 * self.v + (1 - self.b2) * g * g
        mh = self.m / (1 - self.b1 ** self.t)
        vh = self.v / (1 - self.b2 ** self.t)
        return (params - self.lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)

    def state_dict(self) -> Dict[str, Any]:
        return {"lr": self.lr, "m": self.m.tolist(), "v": self.v.tolist(), "t": self.t}

    @classmethod
    def from_state(cls, st: Dict[str, Any]) -> "Adam":
        a = cls(len(st["m"]), st["lr"])
        a.m, a.v, a.t = np.asarray(st["m"]), np.asarray(st["v"]), int(st["t"])
        return a


def fit_imitation(policy: MLPPolicy, raw: np.ndarray, labels: np.ndarray, *, epochs: int = 400,
                  lr: float = 1e-2, l2: float = 1e-4, normalize: bool = True,
                  weights: Optional[np.ndarray] = None, log: Optional[Any] = None) -> Dict[str, float]:
    """Fits ``policy`` (in place) so that ``score > 0`` predicts ``labels`` (0/1)
    from raw feature rows [m, n], each row weighted by ``weights`` (default 1).
    Returns the final (weighted) loss and the (unweighted) accuracy."""
    raw = np.asarray(raw)
    y = np.asarray(labels, np.float32).ravel()
    if raw.ndim != 2 or raw.shape[0] != y.size or raw.shape[1] != len(policy.names):
        raise ValueError(f"expected rows [m, {len(policy.names)}] and m labels, got {raw.shape} and {y.size}")
    w = np.ones(y.size, np.float32) if weights is None else np.asarray(weights, np.float32).ravel()
    if w.size != y.size or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise ValueError("weights: one finite, non-negative number per row, not all zero")
    w = w / w.sum()
    if normalize:
        fit_normalization(policy, raw)
    x = policy.inputs(raw)
    opt = Adam(policy.dim, lr)
    loss = acc = 0.0
    for epoch in range(epochs):
        s, acts = policy.forward(x)
        p = 1 / (1 + np.exp(-np.clip(s, -30, 30)))
        loss = float(w @ (np.logaddexp(0, s) - y * s)) + l2 * float(policy.params @ policy.params)
        acc = float(np.mean((s > 0) == (y > 0.5)))
        grad = policy.backward(acts, (p - y) * w) + 2 * l2 * policy.params
        policy.params = opt.step(policy.params, grad)
        if log is not None and (epoch % 50 == 0 or epoch == epochs - 1):
            log({"epoch": epoch, "loss": loss, "accuracy": acc})
    return {"loss": loss, "accuracy": acc, "samples": float(y.size), "positive": float(y.mean())}
