"""Policy gradient on per-module rewards, as ml-compiler-opt's ``rl/`` trains
with PPO: a stochastic policy (``P(inline) = sigmoid(score)``) compiles each module,
every decision of the module shares the module's reward (undiscounted, the reward
comes at the end), the advantage is the reward minus a per-module baseline, and
the clipped PPO objective is maximized for a few epochs over the batch."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .imitation import Adam
from .policy import MLPPolicy


def _log_sigmoid(s: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0, -s)


@dataclass
class SampledDecisions:
    """The decisions of one compilation of one module."""
    module: str
    x: List[np.ndarray] = field(default_factory=list)      # network inputs, one row per decision
    actions: List[int] = field(default_factory=list)
    logp: List[float] = field(default_factory=list)        # log-probability of each action when taken
    reward: Optional[float] = None


class SamplingPolicy:
    """The policy as the compiler sees it while collecting: samples each decision
    and records it into a :class:`SampledDecisions` (one instance per compilation)."""

    def __init__(self, policy: MLPPolicy, traj: SampledDecisions, rng: np.random.Generator,
                 greedy: bool = False) -> None:
        self.policy, self.traj, self.rng, self.greedy = policy, traj, rng, greedy
        self._lock = threading.Lock()

    def __call__(self, obs: Any) -> int:
        x = self.policy.features(obs)
        s = float(self.policy.scores(x[None, :])[0])
        with self._lock:
            a = int(s > 0) if self.greedy else int(self.rng.random() < 1 / (1 + np.exp(-s)))
        lp = float(_log_sigmoid(np.float64(s if a else -s)))
        self.traj.x.append(x)
        self.traj.actions.append(a)
        self.traj.logp.append(lp)
        return a


class PPO:
    """Clipped PPO over trajectories with one reward each."""

    def __init__(self, policy: MLPPolicy, *, lr: float = 3e-3, clip: float = 0.2, epochs: int = 4,
                 entropy: float = 1e-3, baseline_decay: float = 0.8) -> None:
        self.policy, self.clip, self.epochs, self.entropy = policy, clip, epochs, entropy
        self.baseline_decay = baseline_decay
        self.opt = Adam(policy.dim, lr)
        self.baselines: Dict[str, float] = {}

    def advantages(self, trajs: Sequence[SampledDecisions]) -> np.ndarray:
        adv = []
        for t in trajs:
            b = self.baselines.get(t.module)
            adv.append(0.0 if b is None else float(t.reward) - b)
        for t in trajs:   # update the baselines after using them
            b = self.baselines.get(t.module)
            r = float(t.reward)
            self.baselines[t.module] = r if b is None else self.baseline_decay * b + (1 - self.baseline_decay) * r
        a = np.asarray(adv)
        return a / (a.std() + 1e-8) if a.std() > 0 else a

    def update(self, trajs: Sequence[SampledDecisions]) -> Dict[str, float]:
        trajs = [t for t in trajs if t.reward is not None and t.actions]
        if not trajs:
            return {"steps": 0.0}
        adv_mod = self.advantages(trajs)
        x = np.concatenate([np.asarray(t.x, np.float32) for t in trajs])
        a = np.concatenate([np.asarray(t.actions, np.float32) for t in trajs])
        old = np.concatenate([np.asarray(t.logp) for t in trajs])
        adv = np.concatenate([np.full(len(t.actions), adv_mod[i]) for i, t in enumerate(trajs)])
        stats: Dict[str, float] = {"steps": float(len(a))}
        for _ in range(self.epochs):
            s, acts = self.policy.forward(x)
            s64 = s.astype(np.float64)
            p = 1 / (1 + np.exp(-np.clip(s64, -30, 30)))
            logp = np.where(a > 0.5, _log_sigmoid(s64), _log_sigmoid(-s64))
            ratio = np.exp(np.clip(logp - old, -20, 20))
            unclipped = ratio * adv
            clipped = np.clip(ratio, 1 - self.clip, 1 + self.clip) * adv
            active = unclipped <= clipped                    # the min picks the unclipped term
            dlogp = np.where(active, ratio * adv, 0.0)      # d objective / d logp
            dscore = dlogp * (a - p)                        # d logp / d score = a - p
            ent = -(p * np.log(p + 1e-12) + (1 - p) * np.log(1 - p + 1e-12))
            dscore += self.entropy * (-(s64) * p * (1 - p))  # d entropy / d score
            grad = self.policy.backward(acts, (dscore / len(a)).astype(np.float32))
            self.policy.params = self.opt.step(self.policy.params, grad, maximize=True)
            stats.update(objective=float(np.minimum(unclipped, clipped).mean()), entropy=float(ent.mean()),
                         clip_fraction=float(np.mean(~active)), approx_kl=float(np.mean(old - logp)))
        return stats

    def state_dict(self) -> Dict[str, Any]:
        return {"opt": self.opt.state_dict(), "baselines": self.baselines}

    def load_state_dict(self, st: Dict[str, Any]) -> None:
        self.opt = Adam.from_state(st["opt"])
        self.baselines = {k: float(v) for k, v in st["baselines"].items()}
