"""Running whole episodes of Gymnasium compiler environments, in threads."""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple





# ---- running episodes ---------------------------------------------------------------
@dataclass
class EpisodeStats:
    """One finished episode of one policy."""
    policy: int                 # index in the list given to evaluate()
    reward: float
    info: Dict[str, Any] = field(default_factory=dict)
    error: Optional[str] = None


def run_episode(env: Any, policy: Callable[[Any], Any], options: Optional[Dict[str, Any]] = None,
                max_steps: int = 1_000_000) -> Tuple[float, Dict[str, Any]]:
    """One whole episode; returns (total reward, final info)."""
    obs, info = env.reset(options=options)
    total = 0.0
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        total += float(reward)
        if terminated or truncated:
            return total, info
    raise RuntimeError(f"episode longer than {max_steps} steps")


def evaluate(envs: Sequence[Any], policies: Sequence[Callable[[Any], Any]],
             episodes: Sequence[Optional[Dict[str, Any]]]) -> List[List[EpisodeStats]]:
    """Run every policy for every entry of ``episodes`` (reset options, e.g.
    ``{"file": i}``), spread over ``envs`` (one thread each: compilers run
    in parallel). Returns, per policy, its EpisodeStats in ``episodes`` order."""
    jobs: "queue.Queue[Tuple[int, int]]" = queue.Queue()
    for p in range(len(policies)):
        for e in range(len(episodes)):
            jobs.put((p, e))
    out: List[List[Optional[EpisodeStats]]] = [[None] * len(episodes) for _ in policies]
    errors: List[BaseException] = []

    def work(env: Any) -> None:
        while not errors:
            try:
                p, e = jobs.get_nowait()
            except queue.Empty:
                return
            try:
                reward, info = run_episode(env, policies[p], episodes[e])
            except BaseException as exc:   # raised below, after the other threads stop
                errors.append(exc)
                return
            out[p][e] = EpisodeStats(p, reward, info, info.get("error"))

    threads = [threading.Thread(target=work, args=(env,), daemon=True) for env in envs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [[s for s in row if s is not None] for row in out]


def outcome_reward(ep: Any) -> Tuple[float, Dict[str, Any]]:
    """Reward callback for ``CompilerEnv(target=..., fetch_outcome=True)``
    against an :class:`EnvironmentServer` (or a C++ compiler that reports a
    ``reward`` with ``GrpcTrainingServer::setOutcome``): the outcome's
    reward, and its other numbers (``text_size``, ``baseline_size``, ...) in
    the final info."""
    if "reward" not in ep.outcome:
        raise KeyError("the compiler reported no reward for this episode")
    return float(ep.outcome["reward"][0]), {k: float(v.reshape(-1)[0]) for k, v in ep.outcome.items()}
