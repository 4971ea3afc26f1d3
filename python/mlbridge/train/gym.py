"""Gymnasium environments over compiler sessions.

A compiler session is callback-driven (the compiler asks, the model answers);
Gymnasium is step-driven (the agent calls ``reset``/``step``). ``CompilerEnv``
bridges the two. One episode is one compilation:

* **a local channel** (named pipes, or shared memory with ``transport="shm"``):
  the compiler (e.g. stock ``opt-19``) runs as a child process
  under :func:`mlbridge.run_compiler`; its session is served in a background
  thread whose policy hands each observation to ``step()`` through a bounded
  queue and waits for the action on another. Every wait has a timeout; a
  compiler that dies, hangs or fails ends the episode as *truncated* with
  ``info["error"]``, never a hang.
* **gRPC**: the compiler serves ``EnvironmentService`` (C++
  ``GrpcTrainingServer``, or :class:`mlbridge.rpc.environment_server.EnvironmentServer`);
  :class:`mlbridge.EnvironmentClient` is already step-driven. One session is
  one episode.

Observation space: a ``spaces.Dict`` of ``Box`` (dtype and shape of each
feature spec). Action space: ``Discrete(n)`` for a scalar integer advice
(``discrete=2`` by default: a 0/1 decision), ``Box`` otherwise. Reward: 0 per
step, and ``reward_fn(EpisodeResult)`` once at the end of a clean episode.

See docs/gym.md.
"""
from __future__ import annotations

import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import gymnasium
import numpy as np
from gymnasium import spaces

from ..core.ended import how_it_ended
from ..core.session import Model, Observation, Session
from ..transport import open_server
from ..transport.session_server import SessionServer
from ..core.spec import TensorSpec
from ..transport.supervise import CompileResult, run_compiler
from ..core.values import coerce
from ..problems import get as get_problem

__all__ = ["CompilerEnv", "EpisodeResult", "observation_space", "action_space", "llvm_inliner_env",
           "InlinerSizeReward"]


@dataclass
class EpisodeResult:
    """What the reward callback sees at the end of an episode."""

    decisions: int                           # questions answered in this episode
    command: Optional[List[str]] = None      # pipes: the compiler's command line
    result: Optional[CompileResult] = None   # pipes: exit status, stderr, sessions
    session: int = 0                         # gRPC: the session id
    name: str = ""                           # gRPC: the runner's name
    outcome: Dict[str, np.ndarray] = field(default_factory=dict)  # gRPC: the compiler's GetOutcome numbers
    extra: Dict[str, Any] = field(default_factory=dict)           # what the command factory returned


RewardFn = Callable[[EpisodeResult], Union[float, Tuple[float, Dict[str, Any]]]]
#: ``command(episode, options, rng) -> (argv with "{base}", extra)``.
CommandFn = Callable[[int, Dict[str, Any], np.random.Generator], Tuple[Sequence[str], Dict[str, Any]]]


# ---- spaces -----------------------------------------------------------------------
def _box(spec: TensorSpec) -> spaces.Box:
    dt = spec.np_dtype
    if dt == np.bool_:
        return spaces.Box(0, 1, spec.shape, np.bool_)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return spaces.Box(int(info.min), int(info.max), spec.shape, dt)
    info = np.finfo(dt)   # finite bounds: Box.sample() and check_env need them
    return spaces.Box(float(info.min), float(info.max), spec.shape, dt)


def observation_space(features: Sequence[Any]) -> spaces.Dict:
    """A Dict of Box spaces, one per feature spec (name, dtype, shape)."""
    return spaces.Dict({s.name: _box(s) for s in (TensorSpec.coerce(f) for f in features)})


def action_space(advice: Sequence[Any], discrete: Optional[int] = 2) -> spaces.Space:
    """``Discrete(discrete)`` for one integer advice of one element (LLVM's
    ``inlining_decision``), else a Box of the advice's dtype and shape."""
    specs = [TensorSpec.coerce(a) for a in advice]
    if len(specs) != 1:
        raise ValueError(f"CompilerEnv supports one advice tensor, got {len(specs)}")
    s = specs[0]
    if discrete and s.numel == 1 and np.issubdtype(s.np_dtype, np.integer):
        return spaces.Discrete(discrete)
    return _box(s)


def _zeros(space: spaces.Dict) -> Dict[str, np.ndarray]:
    return {k: np.zeros(b.shape, b.dtype) for k, b in space.spaces.items()}


# ---- backends: one episode at a time, step-driven ---------------------------------------
class _Cancelled(BaseException):
    """The agent ended the episode (reset or close). A BaseException, so the
    server never turns it into an error reply (framed formats would): it
    ends the session and run_compiler kills the compiler."""


_CANCEL = object()

# Events from a backend: ("obs", features, context), ("end", None, None) or
# ("error", message, None).
Event = Tuple[str, Any, Any]


class _StreamEpisode(Model):
    """One compiler run served in a background thread; hands observations out
    through a bounded queue and waits (bounded) for each action."""

    def __init__(self, cmd: Sequence[str], server: SessionServer, timeout: float, env: Optional[Dict[str, str]],
                 probe: bool = False) -> None:
        self.cmd = [str(a) for a in cmd]
        self.deadline = time.monotonic() + timeout
        self.probe = probe
        self.specs: Optional[Tuple[Tuple[TensorSpec, ...], Tuple[TensorSpec, ...]]] = None
        # Strict alternation: at most one observation and the end are ever queued.
        self.events: "queue.Queue[Event]" = queue.Queue(maxsize=2)
        self.actions: "queue.Queue[Any]" = queue.Queue(maxsize=1)
        self.cancelled = threading.Event()
        self.result: Optional[CompileResult] = None
        self.thread = threading.Thread(target=self._run, args=(server, timeout, env), daemon=True,
                                       name="mlbridge-gym-episode")
        self.thread.start()

    # -- compiler side (background thread) --
    def _run(self, server: SessionServer, timeout: float, env: Optional[Dict[str, str]]) -> None:
        try:
            self.result = run_compiler(self.cmd, self, server=server, timeout=timeout, env=env)
            self._post(("end", None, None))
        except _Cancelled:
            pass
        except BaseException as exc:   # reported to the agent, not lost
            self.result = getattr(exc, "result", None)
            self._post(("error", f"{type(exc).__name__}: {exc}", None))

    def _post(self, event: Event) -> None:
        try:
            self.events.put_nowait(event)
        except queue.Full:   # only after the agent walked away (cancelled)
            pass

    def on_session_start(self, session: Session) -> None:
        self.specs = (session.features, session.advice)
        if self.probe:
            self._post(("header", self.specs, None))
            raise _Cancelled("probe")   # refuses the session: the compiler is killed

    def __call__(self, obs: Observation) -> Any:
        if self.cancelled.is_set():
            raise _Cancelled()
        # Copies: the views point into the channel buffer, reused by the next read.
        self._post(("obs", {k: np.array(v) for k, v in obs.features.items()}, obs.context))
        try:
            action = self.actions.get(timeout=max(0.0, self.deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError("the agent sent no action before the episode timeout") from None
        if action is _CANCEL or self.cancelled.is_set():
            raise _Cancelled()   # run_compiler kills the compiler (LLVM 19 would spin)
        return action

    # -- agent side --
    def send(self, advice: Any) -> None:
        self.actions.put_nowait(advice)

    def next_event(self, timeout: float) -> Event:
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            self.cancel()
            return ("error", f"no observation and no end from the compiler within {timeout} s", None)

    def cancel(self, join: float = 10.0) -> None:
        self.cancelled.set()
        try:
            self.actions.put_nowait(_CANCEL)
        except queue.Full:
            pass   # an action is pending: the policy sees `cancelled` when it takes it
        self.thread.join(join)


class _StreamBackend:
    def __init__(self, command: CommandFn, timeout: float, step_timeout: float,
                 env: Optional[Dict[str, str]], transport: str = "pipe") -> None:
        self.command = command
        self.timeout = timeout
        self.step_timeout = step_timeout
        self.env = env
        self.transport = transport
        self.server = open_server(transport, format="auto", timeout=step_timeout)
        self.episode: Optional[_StreamEpisode] = None
        self.extra: Dict[str, Any] = {}
        self._abandoned: List[Tuple[threading.Thread, SessionServer]] = []

    def probe(self, rng: np.random.Generator) -> Tuple[Tuple[TensorSpec, ...], Tuple[TensorSpec, ...]]:
        cmd, _ = self.command(0, {}, rng)
        ep = _StreamEpisode(cmd, self.server, self.step_timeout, self.env, probe=True)
        kind, payload, _ = ep.next_event(self.step_timeout)
        ep.cancel()
        if kind != "header":
            detail = payload if kind == "error" else "the compiler ended without a session"
            if ep.result is not None and ep.result.stderr:
                detail += ": " + ep.result.stderr.decode(errors="replace")[-500:]
            raise RuntimeError(f"cannot read the compiler's feature specs ({' '.join(ep.cmd)}): {detail}")
        return payload

    def start(self, episode: int, options: Dict[str, Any], rng: np.random.Generator) -> Event:
        self.abort()
        cmd, self.extra = self.command(episode, options, rng)
        self.episode = _StreamEpisode(cmd, self.server, self.timeout, self.env)
        return self.episode.next_event(self.step_timeout)

    def act(self, advice: Any) -> Event:
        assert self.episode is not None
        self.episode.send(advice)
        return self.episode.next_event(self.step_timeout)

    def result(self, decisions: int) -> EpisodeResult:
        ep = self.episode
        return EpisodeResult(decisions, command=ep.cmd if ep else None, result=ep.result if ep else None,
                             extra=self.extra)

    def failure(self) -> str:
        """Why an ended episode is not clean ("" when it is)."""
        r = self.episode.result if self.episode else None
        if r is None:
            return "no result"
        if r.timed_out:
            return f"the compiler was killed at the episode timeout ({self.timeout} s)"
        if r.returncode != 0:
            return f"the compiler {how_it_ended(r.returncode)}: {r.stderr.decode(errors='replace')[-500:]}"
        return ""

    def abort(self) -> None:
        ep, self.episode = self.episode, None
        if ep is None:
            return
        ep.cancel(join=self.step_timeout + 5.0)
        if ep.thread.is_alive():
            # Still inside a channel read (bounded by step_timeout): leave that
            # server to it and serve the next episode on a fresh channel.
            self._abandoned.append((ep.thread, self.server))
            self.server = open_server(self.transport, format="auto", timeout=self.step_timeout)

    def close(self) -> None:
        self.abort()
        for thread, server in self._abandoned:
            thread.join(self.step_timeout + 5.0)
            server.close()
        self._abandoned.clear()
        self.server.close()


class _GrpcBackend:
    def __init__(self, target: str, step_timeout: float, fetch_outcome: bool, **client_kw: Any) -> None:
        from ..rpc.clients import EnvironmentClient
        self.client = EnvironmentClient(target, timeout=step_timeout, **client_kw)
        self.step_timeout = step_timeout
        self.fetch_outcome = fetch_outcome
        self.step: Any = None
        self.session = 0
        self.ended = True
        self._fetched: Tuple[int, Dict[str, np.ndarray]] = (0, {})

    def probe(self, rng: np.random.Generator) -> Tuple[Tuple[TensorSpec, ...], Tuple[TensorSpec, ...]]:
        event = self.start(0, {}, rng)
        if event[0] != "obs":
            raise RuntimeError(f"cannot read the compiler's feature specs from {self.client.target}: {event[1]}")
        info = self.step.info
        return info.features, info.advice   # the episode goes on: the first reset() reuses it

    def _next(self, session: int) -> Event:
        deadline = time.monotonic() + self.step_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return ("error", f"no observation from {self.client.target} within {self.step_timeout} s", None)
            try:
                step = self.client.next(session, timeout=left)
            except Exception as exc:   # MLBridgeError: unavailable, deadline, ...
                return ("error", f"{type(exc).__name__}: {exc}", None)
            if step is None:
                continue   # the server's own wait bound passed: ask again
            if session == 0 and step.ended:
                continue   # the end of an older session
            self.step, self.session = step, step.session
            if step.ended:
                self.ended = True
                return ("end", None, None)
            self.ended = False
            return ("obs", step.features, step.context)

    def start(self, episode: int, options: Dict[str, Any], rng: np.random.Generator) -> Event:
        if episode == 1 and self.step is not None and not self.ended and self.step.id == 0:
            return ("obs", self.step.features, self.step.context)   # the probe's episode
        self.abort()
        return self._next(0)

    def act(self, advice: Any) -> Event:
        try:
            self.client.act(self.step, advice)
        except Exception as exc:
            return ("error", f"{type(exc).__name__}: {exc}", None)
        return self._next(self.session)

    def _fetch_outcome(self) -> Dict[str, np.ndarray]:
        if not self.fetch_outcome:
            return {}
        if self._fetched[0] != self.session:
            # A compiler may report after its session's end: wait for it (bounded).
            out = self.client.outcome(self.session, wait=self.step_timeout)
            if out is None:
                from ..core.errors import ChannelTimeout
                raise ChannelTimeout(f"{self.client.target} reported no outcome for session {self.session} "
                                     f"within {self.step_timeout} s")
            self._fetched = (self.session, out)
        return self._fetched[1]

    def result(self, decisions: int) -> EpisodeResult:
        return EpisodeResult(decisions, session=self.session, outcome=self._fetch_outcome(),
                             name=self.step.info.name if self.step is not None and self.step.info else "")

    def failure(self) -> str:
        """The compiler reports an episode that failed on its side (outcome
        ``truncated`` or ``cancelled``, as the Python worker does)."""
        try:
            out = self._fetch_outcome()
        except Exception as exc:
            return f"GetOutcome: {type(exc).__name__}: {exc}"
        if out.get("truncated") is not None or out.get("cancelled") is not None:
            return f"the compiler worker's episode {self.session} did not end cleanly (see the worker's log)"
        return ""

    def abort(self) -> None:
        if self.step is not None and not self.ended:
            try:
                self.client.end_episode(self.session, "reset by the agent")
            except Exception:
                pass   # the session may be gone already
            self.ended = True

    def close(self) -> None:
        self.abort()
        self.client.close()


# ---- the environment --------------------------------------------------------------
class CompilerEnv(gymnasium.Env):
    """A Gymnasium environment whose episode is one compilation.

    A local channel: ``command`` is an argv list (``{base}`` is the channel;
    ``transport`` "pipe" or "shm" says which kind) or a
    factory ``command(episode, options, rng) -> (argv, extra)`` (e.g. to pick
    a source file per episode; ``extra`` reaches the reward callback). gRPC:
    ``target="host:port"`` of a compiler serving ``EnvironmentService``
    (``token``/``tls``/``retry`` go to :class:`EnvironmentClient`;
    ``fetch_outcome=True`` reads the episode's outcome (``GetOutcome``) into
    ``EpisodeResult.outcome``; a missing one truncates the episode).

    ``features``/``advice``: the specs, if known; otherwise the first
    compilation's header gives them (one extra compiler start). ``reward_fn``:
    called at the end of a clean episode; returns a float, or ``(float,
    info)``. ``discrete``: see :func:`action_space` (None: always a Box).
    ``step_timeout``: bound on each wait for the compiler; ``episode_timeout``:
    the compiler is killed after this long. ``failure_reward``: the reward of
    an episode that ends truncated by an error (``info["error"]`` says why).
    """

    metadata = {"render_modes": []}

    def __init__(self, command: Union[Sequence[str], CommandFn, None] = None, *, target: Optional[str] = None,
                 features: Optional[Sequence[Any]] = None, advice: Optional[Sequence[Any]] = None,
                 reward_fn: Optional[RewardFn] = None, discrete: Optional[int] = 2,
                 step_timeout: float = 30.0, episode_timeout: float = 300.0, failure_reward: float = 0.0,
                 env: Optional[Dict[str, str]] = None, fetch_outcome: bool = False, transport: str = "pipe",
                 **grpc_kw: Any) -> None:
        super().__init__()
        if (command is None) == (target is None):
            raise ValueError("CompilerEnv needs exactly one of command (pipes) or target (gRPC)")
        self.reward_fn = reward_fn
        self.failure_reward = float(failure_reward)
        self._backend: Any
        if command is not None:
            fn = command if callable(command) else (lambda _e, _o, _r, _c=list(command): (_c, {}))
            self._backend = _StreamBackend(fn, episode_timeout, step_timeout, env, transport)
        else:
            self._backend = _GrpcBackend(target, step_timeout, fetch_outcome, **grpc_kw)
        try:
            if features is None or advice is None:
                feats, adv = self._backend.probe(np.random.default_rng(0))
                features = feats if features is None else features
                advice = adv if advice is None else advice
        except BaseException:
            self._backend.close()
            raise
        self.features = tuple(TensorSpec.coerce(f) for f in features)
        self.advice = tuple(TensorSpec.coerce(a) for a in advice)
        self.observation_space = observation_space(self.features)
        self.action_space = action_space(self.advice, discrete)
        self._last = _zeros(self.observation_space)
        self._episodes = 0
        self._decisions = 0
        self._done = True     # no episode, or it ended
        self._empty = False   # the compilation asked nothing

    # -- helpers --
    def _obs(self, feats: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        out = {}
        for s in self.features:
            v = feats.get(s.name)
            if v is None:
                raise KeyError(f"the compiler did not send feature {s.name!r}")
            out[s.name] = np.asarray(v, dtype=s.np_dtype).reshape(s.shape)
        self._last = out
        return out

    def _advice(self, action: Any) -> np.ndarray:
        return coerce(np.asarray(action).reshape(self.advice[0].shape), self.advice[0], "advice")

    def _finish(self, kind: str, payload: Any) -> Tuple[float, bool, bool, Dict[str, Any]]:
        """(reward, terminated, truncated, info) of an ended episode."""
        self._done = True
        info: Dict[str, Any] = {"decisions": self._decisions}
        err = payload if kind == "error" else self._backend.failure()
        if err:
            info["error"] = err
            self._backend.abort()
            return self.failure_reward, False, True, info
        reward = 0.0
        if self.reward_fn is not None:
            try:
                got = self.reward_fn(self._backend.result(self._decisions))
            except Exception as exc:   # e.g. the output cannot be measured
                info["error"] = f"reward: {type(exc).__name__}: {exc}"
                return self.failure_reward, False, True, info
            if isinstance(got, tuple):
                got, more = got
                info.update(more)
            reward = float(got)
        return reward, True, False, info

    # -- Gymnasium API --
    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None):
        super().reset(seed=seed)
        self._episodes += 1
        self._decisions = 0
        self._done = False
        self._empty = False
        kind, payload, ctx = self._backend.start(self._episodes, dict(options or {}), self.np_random)
        if kind == "obs":
            return self._obs(payload), {"context": ctx}
        # No question at all (e.g. a module without calls): an all-zero
        # observation; the next step ends the episode whatever the action.
        self._empty = True
        self._pending = (kind, payload)
        return self._obs(_zeros(self.observation_space)), {"empty": True, **(
            {"error": payload} if kind == "error" else {})}

    def step(self, action: Any):
        if self._done:
            raise RuntimeError("CompilerEnv.step() called without reset() (or after the episode ended)")
        if self._empty:
            reward, term, trunc, info = self._finish(*self._pending)
            return self._copy_last(), reward, term, trunc, info
        kind, payload, ctx = self._backend.act(self._advice(action))
        self._decisions += 1
        if kind == "obs":
            return self._obs(payload), 0.0, False, False, {"context": ctx}
        reward, term, trunc, info = self._finish(kind, payload)
        return self._copy_last(), reward, term, trunc, info

    def abort_episode(self) -> None:
        """End the live episode now (the compiler is killed or its session
        cancelled); the next call must be reset()."""
        if self._backend is not None:
            self._backend.abort()
        self._done = True

    def _copy_last(self) -> Dict[str, np.ndarray]:
        # The final observation repeats the last one, in fresh arrays.
        return {k: v.copy() for k, v in self._last.items()}

    def close(self) -> None:
        backend = getattr(self, "_backend", None)
        if backend is not None:
            self._backend = None
            backend.close()
        d = getattr(self, "_cleanup_dir", None)
        if d is not None:
            self._cleanup_dir = None
            shutil.rmtree(d, ignore_errors=True)
        super().close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


# ---- stock LLVM 19: inlining for size ------------------------------------------------
class InlinerSizeReward:
    """Reward of an inlining episode, the inlining-size problem's:
    ``(baseline - size) / baseline`` where
    size is the ``.text`` bytes of the output (``llc -filetype=obj``) and
    the baseline is LLVM's own inliner in the same pipeline. Info carries
    ``text_size`` and ``baseline_size``. Baselines are computed once per file."""

    def __init__(self) -> None:
        self.baselines: Dict[str, int] = {}

    def baseline(self, ir: str, workdir: str) -> int:
        b = self.baselines.get(ir)
        if b is None:
            from .. import llvm
            out = os.path.join(workdir, "baseline.ll")
            subprocess.run([llvm.tool("opt"), "-passes=scc-oz-module-inliner", ir, "-S", "-o", out],
                           check=True, capture_output=True)
            b = self.baselines[ir] = llvm.text_size(out)
        return b

    def __call__(self, ep: EpisodeResult) -> Tuple[float, Dict[str, Any]]:
        from .. import llvm
        size = llvm.text_size(ep.extra["out"])
        base = self.baseline(ep.extra["ir"], ep.extra["workdir"])
        return get_problem("inlining-size").reward(base, size), {"text_size": size, "baseline_size": base,
                                                                  "file": ep.extra["name"]}


class _InlinerCommands:
    """The command factory of llvm_inliner_env: one opt-19 run per episode."""

    def __init__(self, files: Sequence[Any], work: str, extra_args: Sequence[str]) -> None:
        from .. import llvm
        self.files = [os.fspath(f) for f in files]
        self.work = work
        self.extra_args = list(extra_args)
        self.irs = [f if f.endswith((".ll", ".bc")) else
                    llvm.make_inlinable_ir(f, os.path.join(work, f"src{i}.ll"), level="-Oz")
                    for i, f in enumerate(self.files)]
        self.names = [os.path.splitext(os.path.basename(f))[0] for f in self.files]
        self.count = 0

    def __call__(self, _episode: int, options: Dict[str, Any], rng: np.random.Generator):
        from .. import llvm
        pick = options.get("file")
        if pick is None:
            k = int(rng.integers(len(self.irs)))
        elif isinstance(pick, (int, np.integer)):
            k = int(pick)
        else:
            k = self.files.index(os.fspath(pick))
        d = os.path.join(self.work, f"ep{self.count % 4}")   # a few rotating output folders
        self.count += 1
        os.makedirs(d, exist_ok=True)
        out = os.path.join(d, "out.ll")
        cmd = llvm.inline_command(self.irs[k], out, extra_args=self.extra_args)
        return cmd, {"ir": self.irs[k], "out": out, "workdir": d, "name": self.names[k], "index": k}


def llvm_inliner_env(sources: Union[str, Sequence[str]], *, workdir: Optional[str] = None,
                     reward_fn: Optional[RewardFn] = None, extra_args: Sequence[str] = (),
                     **env_kw: Any) -> CompilerEnv:
    """Stock ``opt-19`` inlining (``-passes=scc-oz-module-inliner
    -enable-ml-inliner=release``) as an environment; reward: ``.text`` size
    against LLVM's default heuristic (:class:`InlinerSizeReward`).

    ``sources``: ``.c`` files (made inlinable with ``clang-19 -Oz -Xclang
    -disable-llvm-passes``) or ``.ll`` files. Each episode compiles one of
    them: ``reset(options={"file": i})`` picks one (index or path), else it
    is drawn with the env's seeded RNG. Info at the end: ``text_size``,
    ``baseline_size``, ``file``.
    """
    files = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    if not files:
        raise ValueError("llvm_inliner_env: no source file")
    own_dir = workdir is None
    work = tempfile.mkdtemp(prefix="mlbridge-gym-") if own_dir else os.fspath(workdir)
    try:
        env = CompilerEnv(_InlinerCommands(files, work, extra_args), reward_fn=reward_fn or InlinerSizeReward(),
                          **env_kw)
    except BaseException:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)
        raise
    env.files = files          # type: ignore[attr-defined]
    if own_dir:
        env._cleanup_dir = work   # type: ignore[attr-defined]
    return env


def _register() -> None:
    """``gymnasium.make("mlbridge/LLVMInliner-v0", sources=[...])``."""
    if "mlbridge/LLVMInliner-v0" not in gymnasium.registry:
        gymnasium.register("mlbridge/LLVMInliner-v0", entry_point="mlbridge.train.gym:llvm_inliner_env",
                           disable_env_checker=True)


_register()
