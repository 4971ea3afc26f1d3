"""gRPC clients.

* :class:`EnvironmentClient` — the training direction: a compiler process
  serves ``mlbridge.v1.EnvironmentService`` (C++ ``GrpcTrainingServer``) and
  the Python trainer drives it: take the next observation, send an action,
  end an episode, read the episode's outcome.
* :class:`ModelClient` — the inference direction from Python: what the C++
  ``GrpcModelRunner`` does, for tests, tools and Python "compilers".

Every call has a deadline; UNAVAILABLE is retried with bounded exponential
backoff and jitter (:class:`RetryPolicy`), then raised as PeerClosed.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import grpc
import numpy as np

from . import common as _c
from .common import ClientTLS, RetryPolicy
from .._proto import service_pb2 as spb
from ..core.errors import MLBridgeError, ProtocolError, RemoteError, SpecMismatch
from ..formats.base import DEFAULT_MAX_MESSAGE
from ..formats.protobuf import fill_spec_proto, fill_tensor_proto, spec_from_proto, tensor_from_proto
from ..core.messages import PROTOCOL_VERSION
from ..core.spec import TensorSpec
from ..core.values import coerce, coerce_all

__all__ = ["EnvironmentClient", "ModelClient", "Step", "SessionInfo", "RetryPolicy", "ClientTLS"]


class _Rpc:
    """A channel plus deadline, token and retry policy for every call."""

    def __init__(self, target: str, service: str, *, token: Optional[str], tls: Optional[ClientTLS],
                 timeout: float, retry: Optional[RetryPolicy], max_message: int,
                 channel: Optional[grpc.Channel] = None) -> None:
        self.target = target
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.metadata = _c.auth_metadata(token)
        opts = _c.channel_options(max_message, self.retry, timeout)
        if tls is not None and tls.server_name:
            opts.append(("grpc.ssl_target_name_override", tls.server_name))
        self._own = channel is None
        if channel is None:
            channel = (grpc.secure_channel(target, tls.credentials(), options=opts) if tls is not None
                       else grpc.insecure_channel(target, options=opts))
        self.channel = channel
        self.service = service

    def method(self, name: str, req_cls: Any, rep_cls: Any) -> Callable[..., Any]:
        return self.channel.unary_unary(f"/{self.service}/{name}", request_serializer=req_cls.SerializeToString,
                                        response_deserializer=rep_cls.FromString)

    def call(self, what: str, fn: Callable[..., Any], req: Any, *, timeout: Optional[float] = None,
             retry: bool = True) -> Any:
        p = self.retry
        start = time.monotonic()
        backoff = max(p.initial_backoff, 0.001)
        attempts = 0
        while True:
            attempts += 1
            try:
                return fn(req, timeout=self.timeout if timeout is None else timeout, metadata=self.metadata)
            except grpc.RpcError as exc:
                code = exc.code() if hasattr(exc, "code") else None
                if code == grpc.StatusCode.UNAVAILABLE and retry:
                    pause = random.uniform(backoff / 2, backoff)
                    if attempts < p.max_attempts and time.monotonic() - start + pause < p.total_seconds:
                        time.sleep(pause)
                        backoff = min(backoff * 2, p.max_backoff)
                        continue
                err = _c.status_error(exc, f"{what} ({self.target})")
                if code == grpc.StatusCode.UNAVAILABLE:
                    err.args = (f"{err.args[0]} (gave up after {attempts} attempts in "
                                f"{time.monotonic() - start:.2f} s)",)
                raise err from None

    def close(self) -> None:
        if self._own:
            self.channel.close()


# ---- inference direction ------------------------------------------------------------
class ModelClient:
    """One session with a model server (Python's GrpcServer or any
    ModelService). ``evaluate(features)`` returns the advice arrays.

    ``features``/``advice``: TensorSpecs (or tuples accepted by
    TensorSpec.coerce). Opens the session at construction (the handshake).
    """

    def __init__(self, target: str, features: Sequence[Any], advice: Sequence[Any], *,
                 token: Optional[str] = None, tls: Optional[ClientTLS] = None, timeout: float = 10.0,
                 retry: Optional[RetryPolicy] = None, max_message: int = DEFAULT_MAX_MESSAGE,
                 channel: Optional[grpc.Channel] = None, client: str = "python") -> None:
        self.features = tuple(TensorSpec.coerce(f) for f in features)
        self.advice = tuple(TensorSpec.coerce(a) for a in advice)
        self._rpc = _Rpc(target, "mlbridge.v1.ModelService", token=token, tls=tls, timeout=timeout, retry=retry,
                         max_message=max_message, channel=channel)
        self._open = self._rpc.method("OpenSession", spb.OpenSessionRequest, spb.OpenSessionReply)
        self._eval = self._rpc.method("Evaluate", spb.EvaluateRequest, spb.EvaluateReply)
        self._close = self._rpc.method("CloseSession", spb.CloseSessionRequest, spb.CloseSessionReply)
        self._shutdown = self._rpc.method("Shutdown", spb.ShutdownRequest, spb.ShutdownReply)
        self.client = client
        self.session = 0
        self._next_id = 0
        self._context: Optional[str] = None
        self._handshake()

    def _handshake(self, version: int = PROTOCOL_VERSION) -> None:
        req = spb.OpenSessionRequest(client=self.client)
        req.header.version = version
        for s in self.features:
            fill_spec_proto(req.header.features.add(), s)
        for s in self.advice:
            fill_spec_proto(req.header.advice.add(), s)
        rep = self._rpc.call("OpenSession", self._open, req)
        if rep.version != PROTOCOL_VERSION:
            raise SpecMismatch(f"schema version mismatch: the model server speaks mlbridge protocol "
                               f"{rep.version}, this client {PROTOCOL_VERSION}")
        self.session = rep.session

    def set_context(self, name: str) -> None:
        """Names what follows; sent with the next observation."""
        self._context = name
        self._next_id = 0

    def evaluate(self, features: Union[Mapping[str, Any], Sequence[Any]]) -> List[np.ndarray]:
        """Send one observation; returns the advice arrays (in advice order).
        Raises RemoteError with the model's message if the model failed."""
        if isinstance(features, Mapping):
            arrays = coerce_all(features, self.features, "feature")
        else:
            arrays = [coerce(v, s, "feature") for v, s in zip(features, self.features)]
        oid = self._next_id
        self._next_id += 1
        req = spb.EvaluateRequest(session=self.session)
        if self._context is not None:
            req.context.name = self._context
        req.observation.id = oid
        req.observation.SetInParent()
        for s, a in zip(self.features, arrays):
            fill_tensor_proto(req.observation.tensors.add(), s, a)
        rep = self._rpc.call("Evaluate", self._eval, req).reply
        self._context = None
        if rep.error:
            raise RemoteError(rep.error, id=oid)
        if rep.id != oid:
            raise ProtocolError(f"reply for observation {rep.id} to observation {oid}")
        if len(rep.tensors) != len(self.advice):
            raise SpecMismatch(f"{len(rep.tensors)} advice tensors, expected {len(self.advice)}")
        out = []
        for t, s in zip(rep.tensors, self.advice):
            name, arr = tensor_from_proto(t, f"reply {oid}")
            if name != s.name or arr.dtype != s.np_dtype or arr.shape != s.shape:
                raise SpecMismatch(f"advice {name!r} {arr.dtype} {list(arr.shape)} does not match {s}")
            out.append(arr)
        return out

    def close(self) -> None:
        """Ends the session (the model sees a clean end) and the channel."""
        if self.session:
            try:
                self._rpc.call("CloseSession", self._close, spb.CloseSessionRequest(session=self.session),
                               retry=False)
            except MLBridgeError:
                pass
            self.session = 0
        self._rpc.close()

    def shutdown_server(self, reason: str = "") -> None:
        self._rpc.call("Shutdown", self._shutdown, spb.ShutdownRequest(reason=reason))

    def __enter__(self) -> "ModelClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---- training direction ---------------------------------------------------------------
@dataclass
class SessionInfo:
    """A compiler session (one runner) on the environment server."""

    session: int
    features: Tuple[TensorSpec, ...]
    advice: Tuple[TensorSpec, ...]
    name: str


@dataclass
class Step:
    """One observation waiting for an action (``ended``: the session is over
    and there is no observation)."""

    session: int
    id: int
    context: str
    features: Dict[str, np.ndarray]
    info: Optional[SessionInfo]
    ended: bool = False
    worker: int = 0   # index of the environment in a WorkerPool


class EnvironmentClient:
    """Drive a compiler's training server (C++ ``GrpcTrainingServer``).

        env = EnvironmentClient("127.0.0.1:PORT")
        while (step := env.next()) is not None and not step.ended:
            env.act(step, policy(step.features))
    """

    def __init__(self, target: str, *, token: Optional[str] = None, tls: Optional[ClientTLS] = None,
                 timeout: float = 10.0, retry: Optional[RetryPolicy] = None,
                 max_message: int = DEFAULT_MAX_MESSAGE) -> None:
        self._rpc = _Rpc(target, "mlbridge.v1.EnvironmentService", token=token, tls=tls, timeout=timeout,
                         retry=retry, max_message=max_message)
        m = self._rpc.method
        self._hello = m("Hello", spb.HelloRequest, spb.HelloReply)
        self._get_session = m("GetSession", spb.GetSessionRequest, spb.GetSessionReply)
        self._get_obs = m("GetObservation", spb.GetObservationRequest, spb.GetObservationReply)
        self._act = m("SendAction", spb.SendActionRequest, spb.SendActionReply)
        self._end = m("EndEpisode", spb.EndEpisodeRequest, spb.EndEpisodeReply)
        self._shutdown = m("Shutdown", spb.ShutdownRequest, spb.ShutdownReply)
        self._outcome = m("GetOutcome", spb.GetOutcomeRequest, spb.GetOutcomeReply)
        self._sessions: Dict[int, SessionInfo] = {}
        self.hello()

    @property
    def target(self) -> str:
        return self._rpc.target

    def hello(self, version: int = PROTOCOL_VERSION) -> int:
        """The handshake; raises SpecMismatch on a schema version mismatch."""
        rep = self._rpc.call("Hello", self._hello, spb.HelloRequest(version=version))
        if rep.version != PROTOCOL_VERSION:
            raise SpecMismatch(f"schema version mismatch: the compiler speaks mlbridge protocol {rep.version}, "
                               f"this trainer {PROTOCOL_VERSION}")
        return rep.version

    def session(self, session: int) -> SessionInfo:
        info = self._sessions.get(session)
        if info is None:
            rep = self._rpc.call("GetSession", self._get_session, spb.GetSessionRequest(session=session))
            info = SessionInfo(rep.session, tuple(spec_from_proto(s, "feature") for s in rep.header.features),
                               tuple(spec_from_proto(s, "advice") for s in rep.header.advice), rep.name)
            self._sessions[session] = info
        return info

    def _step(self, rep: Any) -> Optional[Step]:
        if rep.timeout:
            return None
        info = self.session(rep.session)
        if rep.session_ended:
            return Step(rep.session, -1, rep.context, {}, info, ended=True)
        o = rep.observation
        feats = dict(tensor_from_proto(t, f"observation {o.id}") for t in o.tensors)
        return Step(rep.session, o.id, rep.context, feats, info)

    def next(self, session: int = 0, timeout: Optional[float] = None) -> Optional[Step]:
        """The next observation of ``session`` (0: any session), a Step with
        ``ended`` when that session is over, or None if nothing came within
        the server's wait bound (call again)."""
        rep = self._rpc.call("GetObservation", self._get_obs, spb.GetObservationRequest(session=session),
                             timeout=timeout)
        return self._step(rep)

    def next_future(self, session: int = 0, timeout: Optional[float] = None) -> Any:
        """Non-blocking next(): a grpc future; pass its result() to step_from()."""
        return self._get_obs.future(spb.GetObservationRequest(session=session),
                                    timeout=self._rpc.timeout if timeout is None else timeout,
                                    metadata=self._rpc.metadata)

    def step_from(self, future: Any) -> Optional[Step]:
        try:
            rep = future.result()
        except grpc.RpcError as exc:
            raise _c.status_error(exc, f"GetObservation ({self.target})") from None
        return self._step(rep)

    def _action(self, step: Step, advice: Any = None, error: Optional[str] = None) -> Any:
        req = spb.SendActionRequest(session=step.session)
        req.action.id = step.id
        if error is not None:
            req.action.error = error
        else:
            specs = (step.info or self.session(step.session)).advice
            for s, a in zip(specs, coerce_all(advice, specs, "advice")):
                fill_tensor_proto(req.action.tensors.add(), s, a)
        return req

    def act(self, step: Step, advice: Any = None, *, error: Optional[str] = None) -> None:
        """Answer a step with advice (checked against the session's advice
        specs) or with an error message (the compiler gets kAborted)."""
        self._rpc.call("SendAction", self._act, self._action(step, advice, error))

    def act_future(self, step: Step, advice: Any) -> Any:
        return self._act.future(self._action(step, advice), timeout=self._rpc.timeout, metadata=self._rpc.metadata)

    def end_episode(self, session: int, reason: str = "") -> None:
        """The compiler's pending and later evaluate() calls of this session fail (CANCELLED)."""
        self._rpc.call("EndEpisode", self._end, spb.EndEpisodeRequest(session=session, reason=reason))

    def outcome(self, session: int, wait: float = 0.0,
                timeout: Optional[float] = None) -> Optional[Dict[str, np.ndarray]]:
        """The outcome the compiler reported for ``session`` (C++
        ``GrpcTrainingServer::setOutcome``): named arrays such as ``reward``
        or ``text_size``. ``None`` if it is not reported (yet) after the
        server waited up to ``wait`` seconds (0: answer at once; the server
        also bounds the wait, 10 s by default). Raises RemoteError
        (NOT_FOUND) for an unknown session or one whose outcome the server
        no longer keeps. ``timeout``: the call's deadline on top of ``wait``
        (default: the client's timeout)."""
        if wait < 0:
            raise ValueError(f"outcome: wait must be >= 0, got {wait}")
        wait_ms = min(int(round(wait * 1000)), 0xFFFFFFFF)
        req = spb.GetOutcomeRequest(session=session, wait_ms=wait_ms)
        rep = self._rpc.call("GetOutcome", self._outcome, req,
                             timeout=wait + (self._rpc.timeout if timeout is None else timeout))
        if not rep.ready:
            return None
        out: Dict[str, np.ndarray] = {}
        for t in rep.outcome:
            name, arr = tensor_from_proto(t, f"outcome of session {session}")
            if name in out:
                raise ProtocolError(f"outcome of session {session}: tensor {name!r} twice")
            out[name] = arr
        return out

    def shutdown(self, reason: str = "") -> None:
        """Ask the compiler process to stop serving."""
        self._rpc.call("Shutdown", self._shutdown, spb.ShutdownRequest(reason=reason))

    def close(self) -> None:
        self._rpc.close()

    def __enter__(self) -> "EnvironmentClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
