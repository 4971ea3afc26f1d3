"""A compiler worker for remote trainers: serves ``mlbridge.v1.EnvironmentService`` over a pipe ``CompilerEnv``."""
from __future__ import annotations

import logging
import threading
import time
from concurrent import futures
from typing import Any, Dict, Optional, Sequence

import numpy as np

from .lifecycle import ServerLifecycle



_log = logging.getLogger(__name__)

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
        from ..rpc import common as _c
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
        from ..rpc import common as _c
        from .._proto import service_pb2 as spb
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
        from ..rpc import common as _c
        return _c.format_address(self.address, self._port)

    def stop(self, grace: Optional[float] = 1.0) -> None:
        if self._server is not None:
            self._server.stop(grace).wait()
            self._server = None
        self._stopped.set()

    # -- handlers --
    def _hello(self, req: Any, context: Any) -> Any:
        self._auth(context)
        from ..core.messages import PROTOCOL_VERSION
        return self._spb.HelloReply(version=PROTOCOL_VERSION)

    def _get_session(self, req: Any, context: Any) -> Any:
        import grpc
        from ..formats.protobuf import fill_spec_proto
        from ..core.messages import PROTOCOL_VERSION
        self._auth(context)
        with self._lock:
            if req.session not in self._names:
                context.abort(grpc.StatusCode.NOT_FOUND, f"unknown session {req.session}")
            rep = self._spb.GetSessionReply(session=req.session, name=self._names[req.session],
                                            ended=req.session in self._ended)
        rep.header.version = PROTOCOL_VERSION
        for s in self.env.features:
            fill_spec_proto(rep.header.features.add(), s)
        for s in self.env.advice:
            fill_spec_proto(rep.header.advice.add(), s)
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
        from ..formats.protobuf import fill_tensor_proto
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
                fill_tensor_proto(rep.observation.tensors.add(), s, obs[s.name])
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
        from ..formats.protobuf import tensor_from_proto
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
                tensors = dict(tensor_from_proto(t, f"action {req.action.id}") for t in req.action.tensors)
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
        from ..formats.protobuf import fill_tensor_proto
        from ..core.spec import TensorSpec
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
            fill_tensor_proto(rep.outcome.add(), TensorSpec(k, "double", [1]), v)
        return rep

    def _shutdown(self, req: Any, context: Any) -> Any:
        self._auth(context)
        threading.Thread(target=self.stop, args=(1.0,), daemon=True).start()
        return self._spb.ShutdownReply()
