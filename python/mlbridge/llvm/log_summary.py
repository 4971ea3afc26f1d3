"""One training log summed up: what ``mlbridge log show`` prints."""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from .training_log import TrainingLog, read_training_log, relative_reward


def summarize(path: str, *, labels: Optional[Sequence[str]] = None,
              check: Optional[Callable[[TrainingLog], None]] = None) -> Dict[str, Any]:
    """What a training log holds, JSON-ready (``mlbridge log show``): its
    features, contexts, decisions, reward, and whether ml-compiler-opt's
    inlining runner would keep it. CHECK (a problem's) may refuse the log.
    LABELS names the values of the advice (a problem whose answer indexes a
    table, as phase ordering's steps): the decisions are then counted by name,
    and each context lists its own in order."""
    log = read_training_log(path)
    if check is not None:
        check(log)
    out: Dict[str, Any] = {
        "log": path,
        "features": [{"name": s.name, "type": s.dtype, "shape": list(s.shape)} for s in log.features],
        "score": log.score.to_dict() if log.score else None,
        "advice": log.advice.to_dict() if log.advice else None,
        "contexts": [{"name": t.context, "observations": t.steps} for t in log.trajectories],
        "observations": log.observations,
        "decisions": {},
    }
    for name in ("inlining_decision", "inlining_default"):
        vals = [t.features[name].reshape(-1) for t in log.trajectories if name in t.features]
        if vals:
            v = np.concatenate(vals)
            out["decisions"][name] = {str(k): int(c) for k, c in zip(*np.unique(v, return_counts=True))}
    shapes = {s.name: s.shape for s in log.features}
    if labels is not None and log.advice is not None and log.advice.name in shapes:
        name = log.advice.name
        for c, t in zip(out["contexts"], log.trajectories):
            c["decisions"] = [_label(labels, v) for v in t.features[name].reshape(-1).tolist()]
        out["decisions"][name] = dict(Counter(d for c in out["contexts"] for d in c["decisions"]))
    if "inlining_decision" in shapes and shapes["inlining_decision"] == shapes.get("inlining_default"):
        out["decisions"]["agree_with_default"] = sum(
            int((t.features["inlining_decision"] == t.features["inlining_default"]).sum()) for t in log.trajectories)
    reward: Dict[str, Any] = {"delta_size": log.module_score()}
    if log.sizes is not None:
        reward.update(policy_size=log.sizes["policy_size"], baseline_size=log.sizes["baseline_size"],
                      relative=relative_reward(log.sizes["policy_size"], log.sizes["baseline_size"]))
    out["reward"] = reward
    # ml-compiler-opt's inlining runner keeps a module only with exactly one
    # context and at least one step (its reader's rules already held: we parsed).
    out["ml_compiler_opt_usable"] = len(log.trajectories) == 1 and log.observations > 0
    return out


def _label(labels: Sequence[str], value: int) -> str:
    """A value's name; the value itself where the table has none (a log of a newer table)."""
    return labels[value] if 0 <= value < len(labels) else str(value)
