"""One training log summed up: what ``mlbridge log show`` prints."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from .training_log import read_training_log, relative_reward


def summarize(path: str) -> Dict[str, Any]:
    """What a training log holds, JSON-ready (``mlbridge log show``): its
    features, contexts, decisions, reward, and whether ml-compiler-opt's
    inlining runner would keep it."""
    log = read_training_log(path)
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
