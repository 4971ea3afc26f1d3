"""Many compiler workers at once.

* :class:`WorkerPool` — the training direction over gRPC: N compiler
  processes (or threads), each serving ``EnvironmentService`` at an address;
  the trainer collects one observation from every worker concurrently and
  sends the actions concurrently. Every step is tagged with its worker and
  session, so every answer goes to the worker (and session) that asked.
* :func:`serve_pipe_workers` — the same over named pipes: one PipeServer per
  channel, served concurrently by one policy.

One model serving many compilers in inference mode needs nothing more:
:class:`mlbridge.GrpcServer` serves concurrent sessions with per-session state.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

from .common import ClientTLS, RetryPolicy
from .clients import EnvironmentClient, Step

__all__ = ["WorkerPool", "PoolStats", "serve_pipe_workers"]


@dataclass
class PoolStats:
    steps: int = 0
    sessions_ended: int = 0
    per_worker: List[int] = field(default_factory=list)


class WorkerPool:
    """Drive several compiler environments (a list of "host:port" targets).

        with WorkerPool(targets) as pool:
            while pool.active:
                steps = pool.collect()                  # one per worker that has one
                pool.act(steps, [policy(s) for s in steps])

    ``collect()`` waits (concurrently) for the next observation of every
    active worker; a worker whose sessions have all ended and that reports
    nothing new stays active until ``retire(i)``, or ``run(...,
    sessions_per_worker=K)`` stops it after K ended sessions.
    """

    def __init__(self, targets: Sequence[str], *, token: Optional[str] = None, tls: Optional[ClientTLS] = None,
                 timeout: float = 10.0, retry: Optional[RetryPolicy] = None) -> None:
        self.envs = [EnvironmentClient(t, token=token, tls=tls, timeout=timeout, retry=retry) for t in targets]
        self._active = set(range(len(self.envs)))

    @property
    def active(self) -> List[int]:
        return sorted(self._active)

    def retire(self, worker: int) -> None:
        self._active.discard(worker)

    def collect(self, wait: Optional[float] = None) -> List[Step]:
        """The next step of every active worker, fetched concurrently. Workers
        with nothing within their server's wait bound are left out."""
        futures = [(i, self.envs[i].next_future(0, wait)) for i in self.active]
        out: List[Step] = []
        for i, fut in futures:
            step = self.envs[i].step_from(fut)
            if step is not None:
                step.worker = i
                out.append(step)
        return out

    def act(self, steps: Sequence[Step], actions: Sequence[Any]) -> None:
        """Send each step's action to its own worker, concurrently."""
        if len(steps) != len(actions):
            raise ValueError(f"{len(steps)} steps but {len(actions)} actions")
        futures = [self.envs[s.worker].act_future(s, a) for s, a in zip(steps, actions) if not s.ended]
        for fut in futures:
            fut.result()

    def run(self, policy: Callable[[Step], Any], sessions_per_worker: int = 1,
            max_steps: Optional[int] = None) -> PoolStats:
        """collect/act until every worker has ended ``sessions_per_worker``
        sessions (or ``max_steps`` steps). ``policy(step)`` -> advice."""
        stats = PoolStats(per_worker=[0] * len(self.envs))
        ended: Dict[int, int] = {}
        while self._active and (max_steps is None or stats.steps < max_steps):
            steps = self.collect()
            live = [s for s in steps if not s.ended]
            for s in steps:
                if s.ended:
                    stats.sessions_ended += 1
                    ended[s.worker] = ended.get(s.worker, 0) + 1
                    if ended[s.worker] >= sessions_per_worker:
                        self.retire(s.worker)
            self.act(live, [policy(s) for s in live])
            for s in live:
                stats.per_worker[s.worker] += 1
            stats.steps += len(live)
        return stats

    def shutdown(self, reason: str = "") -> None:
        """Ask every worker's training server to stop."""
        for env in self.envs:
            env.shutdown(reason)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def serve_pipe_workers(policy: Any, bases: Sequence[Optional[str]], sessions: Optional[int] = 1,
                       timeout: Optional[float] = 30.0, **server_kw: Any) -> List[List[Any]]:
    """Serve ``sessions`` sessions on each of several pipe channels at once
    (one thread per channel; the policy is called under one lock, so it need
    not be thread-safe). Returns each channel's session stats, in order.
    Raises the first error of any channel after all threads end."""
    from ..transport.pipe_server import PipeServer

    lock = threading.Lock()

    def locked(obs: Any) -> Any:
        with lock:
            return policy(obs)

    for hook in ("on_session_start", "on_context", "on_session_end"):
        fn = getattr(policy, hook, None)
        if fn is not None:
            def wrap(*a: Any, _fn: Any = fn) -> Any:
                with lock:
                    return _fn(*a)
            setattr(locked, hook, wrap)
    servers = [PipeServer(b, **server_kw) for b in bases]
    results: List[List[Any]] = [[] for _ in servers]
    errors: List[BaseException] = []

    def serve(i: int) -> None:
        try:
            results[i] = servers[i].serve(locked, sessions=sessions, timeout=timeout)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=serve, args=(i,), daemon=True) for i in range(len(servers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in servers:
        s.close()
    if errors:
        raise errors[0]
    return results
