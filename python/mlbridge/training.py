"""Training compiler policies with :mod:`mlbridge.gym` environments.

* :class:`LinearPolicy` — a numpy linear policy over signed-log features,
  exportable to ONNX (:meth:`LinearPolicy.export_onnx`) with ops the built-in
  engine runs (docs/engine.md), so the compiler can load it in-process.
* :func:`es_train` — antithetic evolution strategies with rank shaping: honest,
  gradient-free, and fine on two cores for a few dozen parameters.
* :func:`evaluate` — run policies for whole episodes on a set of envs in threads.
* :class:`EnvironmentServer` — a compiler worker for remote trainers: serves
  ``mlbridge.v1.EnvironmentService`` over a pipe :class:`CompilerEnv` (e.g.
  stock ``opt-19``), so a trainer on another machine drives it with
  ``CompilerEnv(target=...)`` or :class:`mlbridge.EnvironmentClient`. It also
  serves the episode's outcome (reward and size numbers) by ``GetOutcome``
  (:meth:`mlbridge.EnvironmentClient.outcome`).

    python -m mlbridge.training worker tests/corpus/*.c [--address 0.0.0.0:7001 --token-file T]

See docs/training.md.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import queue
import signal
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._lifecycle import ServerLifecycle

_log = logging.getLogger("mlbridge.training")

__all__ = ["LinearPolicy", "es_train", "evaluate", "run_episode", "EpisodeStats", "EnvironmentServer",
           "outcome_reward", "main"]


# ---- the policy ---------------------------------------------------------------------
class LinearPolicy:
    """``decision = (w . slog(x) + b > 0)`` with ``slog(x) = sign(x) *
    log(1 + |x|)`` over the features in ``names`` (each int64 [1], LLVM's
    inliner features). Computed in float32, like the exported ONNX graph."""

    def __init__(self, names: Sequence[str], params: Optional[np.ndarray] = None,
                 output: str = "inlining_decision") -> None:
        self.names = list(names)
        self.output = output
        self.params = (np.zeros(len(self.names) + 1, np.float32) if params is None
                       else np.asarray(params, np.float32).reshape(len(self.names) + 1).copy())

    @property
    def dim(self) -> int:
        return len(self.names) + 1

    def features(self, obs: Any) -> np.ndarray:
        x = np.array([obs[n][0] for n in self.names], dtype=np.float32)
        return np.sign(x) * np.log(np.abs(x) + np.float32(1))

    def __call__(self, obs: Any) -> int:
        """The decision (0/1) for one observation (a dict or an Observation)."""
        w, b = self.params[:-1], self.params[-1]
        return int(np.float32(self.features(obs) @ w + b) > 0)

    def export_onnx(self, path: str, opset: int = 17) -> str:
        """Write the policy as ONNX: inputs = the feature names (int64 [1]
        each, in order), output ``inlining_decision`` int64 [1]. Ops: Concat,
        Cast, Abs, Sign, Add, Log, Mul, Reshape, Gemm, Greater."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        n = len(self.names)
        w = self.params[:-1].astype(np.float32).reshape(n, 1)
        b = self.params[-1:].astype(np.float32)
        inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
                 numpy_helper.from_array(np.ones(1, np.float32), "one"),
                 numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
                 numpy_helper.from_array(np.array([1, n], np.int64), "row_shape"),
                 numpy_helper.from_array(np.array([1], np.int64), "out_shape")]
        nodes = [
            helper.make_node("Concat", self.names, ["xi"], axis=0),
            helper.make_node("Cast", ["xi"], ["x"], to=TensorProto.FLOAT),
            helper.make_node("Abs", ["x"], ["ax"]),
            helper.make_node("Sign", ["x"], ["sx"]),
            helper.make_node("Add", ["ax", "one"], ["ax1"]),
            helper.make_node("Log", ["ax1"], ["lx"]),
            helper.make_node("Mul", ["sx", "lx"], ["t"]),
            helper.make_node("Reshape", ["t", "row_shape"], ["row"]),
            helper.make_node("Gemm", ["row", "W", "B"], ["score"]),
            helper.make_node("Greater", ["score", "zero"], ["yes"]),
            helper.make_node("Cast", ["yes"], ["yes64"], to=TensorProto.INT64),
            helper.make_node("Reshape", ["yes64", "out_shape"], [self.output]),
        ]
        graph = helper.make_graph(
            nodes, "mlbridge_linear_inliner",
            [helper.make_tensor_value_info(nm, TensorProto.INT64, [1]) for nm in self.names],
            [helper.make_tensor_value_info(self.output, TensorProto.INT64, [1])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="mlbridge.training")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)
        return path

    def to_json(self) -> Dict[str, Any]:
        return {"names": self.names, "params": [float(v) for v in self.params], "output": self.output}

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "LinearPolicy":
        return cls(obj["names"], np.asarray(obj["params"], np.float32), obj.get("output", "inlining_decision"))


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


# ---- a compiler worker for remote trainers -------------------------------------------
class EnvironmentServer(ServerLifecycle):
    """Serve ``mlbridge.v1.EnvironmentService`` over a pipe ``CompilerEnv``:
    each session is one episode (one compilation); a trainer's
    ``GetObservation`` starts the next episode when none is live. Episodes
    cycle through ``options_cycle`` (reset options, e.g. ``[{"file": 0},
    {"file": 1}]``). The outcome of an ended session (``reward`` and the
    numbers in the final info, float64 [1] each) is served by ``GetOutcome``;
    the last ``max_outcomes`` outcomes are kept.

    Listens on loopback by default; a non-loopback address needs ``tls``
    and/or ``token`` (or ``allow_insecure_remote=True``), as GrpcServer.
    One trainer at a time: calls are served in order under one lock.
    """

    def __init__(self, env: Any, address: str = "127.0.0.1:0", *, tls: Any = None, token: Optional[str] = None,
                 allow_insecure_remote: bool = False, options_cycle: Optional[Sequence[Dict[str, Any]]] = None,
                 name: str = "", max_outcomes: int = 1000) -> None:
        from . import _grpc_common as _c
        _c.check_remote(address, tls, token, allow_insecure_remote)
        self.env = env
        self.address = address
        self.tls = tls
        self._token = _c.token_bytes(token)
        self.cycle = list(options_cycle or [{}])
        self.name = name
        self._lock = threading.Lock()
        self._reported = threading.Condition(self._lock)   # an outcome was recorded
        self.max_outcomes = max(1, int(max_outcomes))
        self._server: Any = None
        self._port = 0
        self._stopped = threading.Event()
        self._episode = 0
        self._sid = 0                  # the live (or last) session
        self._live = False             # an episode is running
        self._pending: Any = None      # ("obs", id, features, context) or ("end",)
        self._ended: Dict[int, Dict[str, np.ndarray]] = {}   # session -> outcome (bounded)
        self._names: Dict[int, str] = {}

    # -- lifecycle --
    def start(self) -> "EnvironmentServer":
        import grpc
        from . import _grpc_common as _c
        from ._proto import service_pb2 as spb
        self._spb = spb
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="mlbridge-env"),
                             options=_c.server_options(64 << 20))

        def h(fn: Any, req: Any, rep: Any) -> Any:
            return grpc.unary_unary_rpc_method_handler(fn, request_deserializer=req.FromString,
                                                       response_serializer=rep.SerializeToString)
        env_handlers = {
            "Hello": h(self._hello, spb.HelloRequest, spb.HelloReply),
            "GetSession": h(self._get_session, spb.GetSessionRequest, spb.GetSessionReply),
            "GetObservation": h(self._get_observation, spb.GetObservationRequest, spb.GetObservationReply),
            "SendAction": h(self._send_action, spb.SendActionRequest, spb.SendActionReply),
            "EndEpisode": h(self._end_episode, spb.EndEpisodeRequest, spb.EndEpisodeReply),
            "Shutdown": h(self._shutdown, spb.ShutdownRequest, spb.ShutdownReply),
            "GetOutcome": h(self._outcome, spb.GetOutcomeRequest, spb.GetOutcomeReply),
        }
        server.add_generic_rpc_handlers((
            grpc.method_handlers_generic_handler("mlbridge.v1.EnvironmentService", env_handlers),
        ))
        self._bind_and_start(server)
        return self

    @property
    def port(self) -> int:
        return self._port

    @property
    def target(self) -> str:
        from . import _grpc_common as _c
        return _c.format_address(self.address, self._port)

    def stop(self, grace: Optional[float] = 1.0) -> None:
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        self._stopped.set()

    # -- handlers --
    def _hello(self, req: Any, context: Any) -> Any:
        self._auth(context)
        from .messages import PROTOCOL_VERSION
        return self._spb.HelloReply(version=PROTOCOL_VERSION)

    def _get_session(self, req: Any, context: Any) -> Any:
        import grpc
        from .formats.protobuf import _fill_spec
        from .messages import PROTOCOL_VERSION
        self._auth(context)
        with self._lock:
            if req.session not in self._names:
                context.abort(grpc.StatusCode.NOT_FOUND, f"unknown session {req.session}")
            rep = self._spb.GetSessionReply(session=req.session, name=self._names[req.session],
                                            ended=req.session in self._ended)
        rep.header.version = PROTOCOL_VERSION
        for s in self.env.features:
            _fill_spec(rep.header.features.add(), s)
        for s in self.env.advice:
            _fill_spec(rep.header.advice.add(), s)
        return rep

    def _new_episode(self) -> None:
        opts = dict(self.cycle[self._episode % len(self.cycle)])
        self._episode += 1
        obs, info = self.env.reset(options=opts)
        self._sid += 1
        label = opts.get("file", self._episode - 1)
        self._names[self._sid] = f"{self.name or 'episode'} {label}"
        self._live = True
        self._pending = ("obs", 0, obs, info.get("context", ""))

    def _get_observation(self, req: Any, context: Any) -> Any:
        import grpc
        from .formats.protobuf import _fill_tensor
        self._auth(context)
        with self._lock:
            if req.session not in (0, self._sid):
                if req.session in self._ended:
                    return self._spb.GetObservationReply(session=req.session, session_ended=True)
                context.abort(grpc.StatusCode.NOT_FOUND, f"unknown session {req.session}")
            if not self._live:
                if req.session != 0:
                    return self._spb.GetObservationReply(session=self._sid, session_ended=True)
                self._new_episode()
            if self._pending[0] == "end":
                self._live = False
                return self._spb.GetObservationReply(session=self._sid, session_ended=True)
            _, oid, obs, ctx = self._pending
            rep = self._spb.GetObservationReply(session=self._sid, context=ctx)
            rep.observation.id = oid
            for s in self.env.features:
                _fill_tensor(rep.observation.tensors.add(), s, obs[s.name])
            return rep

    def _finish(self, reward: float, info: Dict[str, Any]) -> None:
        out = {"reward": np.array([reward], np.float64)}
        for k, v in info.items():
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                out[k] = np.array([v], np.float64)
        self._ended[self._sid] = out
        while len(self._ended) > self.max_outcomes:
            self._ended.pop(next(iter(self._ended)))
        # Names outlive outcomes (a dropped outcome is told from an unknown
        # session), but not forever: memory stays bounded on long runs.
        while len(self._names) > 10 * self.max_outcomes:
            self._names.pop(next(iter(self._names)))
        self._pending = ("end",)
        self._reported.notify_all()

    def _send_action(self, req: Any, context: Any) -> Any:
        import grpc
        from .formats.protobuf import _tensor
        self._auth(context)
        with self._lock:
            if req.session != self._sid or not self._live or self._pending[0] != "obs":
                context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"session {req.session} has no pending observation")
            if req.action.id != self._pending[1]:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                              f"action for observation {req.action.id}, pending is {self._pending[1]}")
            if req.action.error:
                self.env.abort_episode()   # the trainer failed: end this compilation
                self._finish(float("nan"), {"cancelled": 1})
                return self._spb.SendActionReply()
            try:
                tensors = dict(_tensor(t, f"action {req.action.id}") for t in req.action.tensors)
                spec = self.env.advice[0]
                advice = tensors[spec.name]
                if advice.dtype != spec.np_dtype or advice.shape != spec.shape:
                    raise ValueError(f"advice {spec.name!r} is {advice.dtype} {list(advice.shape)}, expected {spec}")
            except Exception as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad action: {exc}")
            obs, reward, terminated, truncated, info = self.env.step(advice)
            if terminated or truncated:
                if truncated:
                    # The reason stays here: the outcome carries numbers only.
                    _log.warning("episode %d truncated: %s", self._sid, info.get("error"))
                    info = dict(info, truncated=1)
                self._finish(reward, info)
            else:
                self._pending = ("obs", self._pending[1] + 1, obs, info.get("context", ""))
        return self._spb.SendActionReply()

    def _end_episode(self, req: Any, context: Any) -> Any:
        self._auth(context)
        with self._lock:
            if req.session == self._sid and self._live and self._pending[0] == "obs":
                self.env.abort_episode()
                self._finish(float("nan"), {"cancelled": 1})
        return self._spb.EndEpisodeReply()

    #: Longest a GetOutcome call waits for an outcome (seconds).
    max_wait = 10.0

    def _outcome(self, req: Any, context: Any) -> Any:
        """GetOutcome: ready with the numbers once the episode ended; not
        ready while it runs (after waiting up to ``wait_ms``); NOT_FOUND for
        an unknown session or a dropped outcome."""
        import grpc
        from .formats.protobuf import _fill_tensor
        from .spec import TensorSpec
        self._auth(context)
        wait = min(req.wait_ms / 1000.0, self.max_wait)
        left = context.time_remaining()
        if left is not None:
            wait = max(0.0, min(wait, left - 0.05))   # answer "not ready" before the call's deadline
        deadline = time.monotonic() + wait
        with self._reported:
            while True:
                out = self._ended.get(req.session)
                if out is not None:
                    break
                if req.session not in self._names:
                    context.abort(grpc.StatusCode.NOT_FOUND, f"unknown session {req.session}")
                if req.session != self._sid or not self._live:
                    context.abort(grpc.StatusCode.NOT_FOUND,
                                  f"the outcome of session {req.session} was dropped (the worker keeps its "
                                  f"last {self.max_outcomes} outcomes)")
                left = deadline - time.monotonic()
                if left <= 0 or self._stopped.is_set() or not context.is_active():
                    return self._spb.GetOutcomeReply(session=req.session, ready=False, session_ended=False)
                self._reported.wait(min(left, 0.1))   # wake to notice a cancelled call
        rep = self._spb.GetOutcomeReply(session=req.session, ready=True, session_ended=True)
        for k, v in out.items():
            _fill_tensor(rep.outcome.add(), TensorSpec(k, "double", [1]), v)
        return rep

    def _shutdown(self, req: Any, context: Any) -> Any:
        self._auth(context)
        threading.Thread(target=self.stop, args=(1.0,), daemon=True).start()
        return self._spb.ShutdownReply()


# ---- command line -------------------------------------------------------------------
def main(argv: Optional[List[str]] = None) -> int:
    """``worker SOURCES...``: an inliner compiler worker (stock opt-19) for
    remote trainers. Prints ``{"port": N}`` once listening; stops on a
    Shutdown RPC, SIGTERM or SIGINT."""
    ap = argparse.ArgumentParser(prog="python -m mlbridge.training")
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker", help="serve opt-19 inlining episodes over gRPC (EnvironmentService)")
    w.add_argument("sources", nargs="+", help=".c or .ll files; episodes cycle through them")
    w.add_argument("--address", default="127.0.0.1:0", help="host:port to listen on (default loopback, free port)")
    w.add_argument("--token-file", help="file holding the bearer token every call must carry")
    w.add_argument("--tls-cert", help="server certificate chain (PEM)")
    w.add_argument("--tls-key", help="server private key (PEM)")
    w.add_argument("--tls-client-ca", help="require client certificates signed by this CA (mutual TLS)")
    w.add_argument("--name", default="", help="worker name in session names")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")

    from .gym import llvm_inliner_env
    token = None
    if args.token_file:
        with open(args.token_file) as f:
            token = f.read().strip()
    tls = None
    if args.tls_cert or args.tls_key:
        from ._grpc_common import ServerTLS
        tls = ServerTLS(args.tls_cert, args.tls_key, args.tls_client_ca)
    env = llvm_inliner_env(args.sources)
    try:
        server = EnvironmentServer(env, args.address, tls=tls, token=token, name=args.name or f"pid {os.getpid()}",
                                   options_cycle=[{"file": i} for i in range(len(args.sources))])
        server.start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: threading.Thread(target=server.stop, daemon=True).start())
        print(json.dumps({"port": server.port, "files": len(args.sources)}), flush=True)
        server.wait()
        server.stop()
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
