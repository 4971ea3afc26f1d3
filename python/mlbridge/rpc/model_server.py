"""The model side over gRPC (inference direction): the Python model serves,
compilers are clients (``mlbridge::GrpcModelRunner`` in C++, or
:class:`mlbridge.ModelClient`).

    with GrpcServer(policy) as server:          # 127.0.0.1, a free port
        print(server.port)
        server.wait()                            # until stop() or a Shutdown RPC

Many compilers may be served at once: each ``OpenSession`` gets its own
:class:`Session` (random 64-bit id, so a restarted server never mistakes an
old id for a new session). ``policy`` is shared by all sessions and called
under a lock unless ``concurrent=True``; with ``per_session=True`` it is a
factory called once per session (separate state, calls in parallel).
"""
from __future__ import annotations

import contextlib
import secrets
import threading
import time
from concurrent import futures
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

import grpc
from google.protobuf.message import DecodeError

from . import common as _c
from .common import ClientTLS, RetryPolicy, ServerTLS
from .._proto import service_pb2 as spb
from ..core.errors import MLBridgeError, ProtocolError
from ..formats.base import DEFAULT_MAX_MESSAGE
from ..formats.protobuf import ProtobufFormat, encode_varint, spec_from_proto, tensor_from_proto
from ..core.messages import PROTOCOL_VERSION
from ..core.session import ModelLike, Observation, Session, describe_error, end_session, start_session
from ..core.spec import TensorSpec, check_unique, required_features_problem
from .lifecycle import ServerLifecycle

__all__ = ["GrpcServer", "ServerTLS", "ClientTLS", "RetryPolicy"]

_SERVICE = "mlbridge.v1.ModelService"
_FMT = ProtobufFormat()


# How long a session whose stream ended waits for its CloseSession.
_CLOSE_GRACE_S = 2.0

class _Live:
    """Per-session state: the stats object, the policy and its lock."""

    __slots__ = ("session", "policy", "lock", "encode", "names", "index", "last", "zeros", "streaming")

    def __init__(self, session: Session, policy: Any, lock: Any) -> None:
        self.session = session
        self.policy = policy
        self.lock = lock
        # The stream loop's answer encoder (checks and layout worked out once per session).
        self.encode = _FMT.answer_encoder(session.advice)
        self.names = tuple(s.name for s in session.features)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.last = time.monotonic()   # time of the last call: unary sessions expire when idle
        self.zeros: Any = None
        self.streaming = False           # a stream owns it: ended by the stream, never expired


class _LazyTensors(Mapping):
    """Feature name -> array, decoded on first access (a policy that reads a
    few features of many pays for those only)."""

    __slots__ = ("_items", "_index", "_cache", "_where")

    def __init__(self, items: Any, index: Dict[str, int], where: str) -> None:
        self._items = items
        self._index = index
        self._cache: Dict[str, Any] = {}
        self._where = where

    def __getitem__(self, name: str) -> Any:
        arr = self._cache.get(name)
        if arr is None:
            tname, arr = tensor_from_proto(self._items[self._index[name]], self._where)
            if tname != name:
                raise ProtocolError(f"{self._where}: tensor {tname!r} where the header has {name!r}")
            self._cache[name] = arr
        return arr

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


class GrpcServer(ServerLifecycle):
    """Serve a policy to compilers over gRPC.

    ``address``: "host:port"; the default binds loopback only, port 0 picks a
    free port (see :attr:`port` after :meth:`start`). A busy port is an error
    (no SO_REUSEPORT sharing). A non-loopback address needs ``tls`` and/or
    ``token`` (or ``allow_insecure_remote=True``). ``token``: every call must
    carry ``authorization: Bearer TOKEN``. ``max_workers``: threads serving
    calls; each streaming session (the C++ runner's default) holds one while
    it lives, so it bounds the number of concurrent compiler sessions (more
    wait for a free thread). ``required_features``: names or
    specs the model needs; a session without them is refused at the handshake.
    ``session_idle_timeout``: a session used by unary ``Evaluate`` calls (one
    call per decision) that sees no call for this many seconds ends unclean
    ("expired"), so clients that die without ``CloseSession`` do not leak
    state; a later call on it is refused with NOT_FOUND saying so. Streaming
    sessions end with their stream instead. ``None`` = never.
    """

    def __init__(self, policy: Union[ModelLike, Callable[[], ModelLike]], address: str = "127.0.0.1:0", *,
                 tls: Optional[ServerTLS] = None, token: Optional[str] = None, max_workers: int = 64,
                 per_session: bool = False, concurrent: bool = False,
                 required_features: Optional[Iterable[Any]] = None, allow_insecure_remote: bool = False,
                 allow_shutdown_rpc: bool = True, max_message: int = DEFAULT_MAX_MESSAGE,
                 keep_sessions: int = 1000, session_idle_timeout: Optional[float] = 600.0) -> None:
        _c.check_remote(address, tls, token, allow_insecure_remote)
        if max_workers < 1:
            raise ValueError("max_workers must be >= 1")
        self.policy = policy
        self.address = address
        self.tls = tls
        self._token = _c.token_bytes(token)
        self.max_workers = max_workers
        self.per_session = per_session
        self.concurrent = concurrent
        self.allow_shutdown_rpc = allow_shutdown_rpc
        self.max_message = max_message
        self.required: List[Union[str, TensorSpec]] = [
            r if isinstance(r, str) else TensorSpec.coerce(r) for r in (required_features or ())]
        self._shared_lock: Any = contextlib.nullcontext() if concurrent else threading.Lock()
        self._live: Dict[int, _Live] = {}
        self._mutex = threading.Lock()
        self._ended: List[Session] = []
        self._keep = keep_sessions
        self.session_idle_timeout = session_idle_timeout
        self._expired: Dict[int, float] = {}   # recently expired id -> idle seconds (bounded)
        self._next_sweep = 0.0
        self._count = 0
        self._server: Optional[grpc.Server] = None
        self._port = 0
        self._stopped = threading.Event()
        self.shutdown_reason: Optional[str] = None

    # -- lifecycle ---------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound port (after start())."""
        if not self._port:
            raise MLBridgeError("GrpcServer.port: the server is not started")
        return self._port

    @property
    def target(self) -> str:
        """What a client dials: "host:port" with the bound port."""
        return _c.format_address(self.address, self.port)

    def start(self) -> "GrpcServer":
        """Bind and start serving (returns at once). Raises MLBridgeError if
        the address cannot be bound."""
        if self._server is not None:
            raise MLBridgeError("GrpcServer.start: already started")
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=self.max_workers,
                                                        thread_name_prefix="mlbridge-grpc"),
                             options=_c.server_options(self.max_message))
        handlers = {
            "OpenSession": grpc.unary_unary_rpc_method_handler(
                self._open, request_deserializer=spb.OpenSessionRequest.FromString,
                response_serializer=spb.OpenSessionReply.SerializeToString),
            # Replies are serialized by hand (bytes of Message{reply}).
            "Evaluate": grpc.unary_unary_rpc_method_handler(
                self._evaluate, request_deserializer=spb.EvaluateRequest.FromString),
            # Requests stay bytes: the stream's fast path reads them in place.
            "EvaluateStream": grpc.stream_stream_rpc_method_handler(self._evaluate_stream),
            "CloseSession": grpc.unary_unary_rpc_method_handler(
                self._close, request_deserializer=spb.CloseSessionRequest.FromString,
                response_serializer=spb.CloseSessionReply.SerializeToString),
            "Shutdown": grpc.unary_unary_rpc_method_handler(
                self._shutdown, request_deserializer=spb.ShutdownRequest.FromString,
                response_serializer=spb.ShutdownReply.SerializeToString),
        }
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(_SERVICE, handlers),))
        self._bind_and_start(server)
        return self

    def stop(self, grace: Optional[float] = 1.0) -> None:
        """Stop serving: new calls are refused, calls in flight get ``grace``
        seconds. Idempotent. Live sessions end (unclean)."""
        server = self._server
        if server is not None:
            server.stop(grace).wait()
        with self._mutex:
            live = list(self._live.values())
            self._live.clear()
        for lv in live:
            self._end(lv, False, "the server stopped")
        self._stopped.set()

    @property
    def sessions(self) -> List[Session]:
        """Ended sessions (the last ``keep_sessions``) then the live ones."""
        with self._mutex:
            return list(self._ended) + [lv.session for lv in self._live.values()]

    # -- handlers ------------------------------------------------------------------
    def _refusal(self, features: Any) -> Optional[str]:
        return required_features_problem(features, self.required)

    def _open(self, req: Any, context: grpc.ServicerContext) -> Any:
        self._auth(context)
        h = req.header
        if h.version != PROTOCOL_VERSION:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          f"schema version mismatch: the compiler speaks mlbridge protocol {h.version}, "
                          f"this model server speaks {PROTOCOL_VERSION}")
        try:
            feats = tuple(spec_from_proto(s, "feature") for s in h.features)
            adv = tuple(spec_from_proto(s, "advice") for s in h.advice)
            check_unique(feats, "feature", ProtocolError)
            check_unique(adv, "advice", ProtocolError)
        except ProtocolError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad session header: {exc}")
        with self._mutex:
            index = self._count
            self._count += 1
        sess = Session(index)
        sess.format = "grpc"
        sess.features, sess.advice = feats, adv
        refusal = self._refusal(feats)
        policy: Any = self.policy
        lock: Any = self._shared_lock
        if refusal is None and self.per_session:
            try:
                policy = self.policy()  # type: ignore[operator]
            except Exception as exc:
                refusal = describe_error(exc)
            lock = contextlib.nullcontext() if self.concurrent else threading.Lock()
        refusal = start_session(policy, sess, refusal, lock)
        if refusal is not None:
            self._remember(sess)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, f"the model refused the session: {refusal}")
        self._maybe_expire()
        sid = secrets.randbits(63) or 1
        with self._mutex:
            while sid in self._live:
                sid = secrets.randbits(63) or 1
            self._live[sid] = _Live(sess, policy, lock)
        return spb.OpenSessionReply(session=sid, version=PROTOCOL_VERSION)

    def _evaluate(self, req: Any, context: grpc.ServicerContext) -> bytes:
        if self._token is not None:
            _c.check_token(context, self._token)
        return self._evaluate_one(req, context)

    def _evaluate_stream(self, requests: Any, context: grpc.ServicerContext) -> Any:
        if self._token is not None:
            _c.check_token(context, self._token)
        one = self._evaluate_one
        state = {"sid": None, "completed": False}

        def end_if_broken() -> None:
            # A stream cancelled or broken (not half-closed): the compiler died.
            sid = state["sid"]
            if sid is not None and not state["completed"]:
                with self._mutex:
                    lv = self._live.pop(sid, None)   # once, whoever comes first
                if lv is not None:
                    self._end(lv, False, "the compiler's stream ended without CloseSession (compiler died?)")

        # gRPC may never resume a generator whose call was cancelled while it
        # waited at `yield`: the termination callback ends the session then.
        if not context.add_callback(end_if_broken):
            end_if_broken()   # already terminated
        fast: Optional[Callable[[bytes], Optional[bytes]]] = None
        try:
            for raw in requests:
                if fast is not None:
                    data = fast(raw)
                    if data is not None:
                        yield data
                        continue
                try:
                    req = spb.EvaluateRequest.FromString(raw)
                except DecodeError as exc:
                    context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"request is not an EvaluateRequest ({exc})")
                if state["sid"] != req.session:
                    state["sid"] = req.session
                    lv = self._live.get(req.session)
                    fast = None
                    if lv is not None:
                        lv.streaming = True
                        fast = self._fast_evaluator(req.session, lv)
                yield one(req, context)
            # Half-closed by the client (CloseSession follows), or cancelled
            # (the request iterator also just ends then, but the call is over).
            state["completed"] = context.is_active()
            if state["completed"] and state["sid"] is not None:
                # CloseSession should follow at once. gRPC can also report a
                # cancel as a plain end of the request stream, so a session
                # still open after a grace period ends unclean.
                grace = threading.Timer(_CLOSE_GRACE_S, self._end_if_open, (state["sid"],))
                grace.daemon = True
                grace.start()
        finally:
            end_if_broken()

    def _fast_evaluator(self, sid: int, lv: _Live) -> Optional[Callable[[bytes], Optional[bytes]]]:
        """For one stream of session ``sid``: ``fast(raw) -> reply bytes`` for a
        request that is exactly ``session`` then an observation of the
        session's features in canonical protobuf (what the C++ runner and
        ModelClient send), read in place (views into ``raw``) instead of a
        upb message and a decode per tensor (reader and answer encoder built
        here, once per stream); None for anything else (a
        context, another session, a session closed meanwhile...), which
        _evaluate_one then handles with its checks and errors."""
        sess = lv.session
        reader = _FMT.observation_reader(sess.features, self.max_message)   # once per stream
        if reader is None:
            return None
        read_at = reader.read_at
        prefix = b"\x08" + encode_varint(sid)
        start = len(prefix)
        live, monotonic = self._live, time.monotonic

        def fast(raw: bytes) -> Optional[bytes]:
            if not raw.startswith(prefix) or live.get(sid) is not lv:
                return None
            hit = read_at(raw, start, len(raw))
            if hit is None:
                return None
            lv.last = monotonic()
            return _decide(lv, *hit)
        return fast

    def _evaluate_one(self, req: Any, context: grpc.ServicerContext) -> bytes:
        lv = self._live.get(req.session)
        if lv is None:
            idle = self._expired.get(req.session)
            if idle is not None:
                context.abort(grpc.StatusCode.NOT_FOUND,
                              f"session {req.session} expired after {idle:.0f} s without a call "
                              f"(session_idle_timeout); open a new session")
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"unknown session {req.session} (closed, or the model server restarted)")
        lv.last = time.monotonic()
        sess = lv.session
        obs_msg = req.observation
        oid = obs_msg.id
        if req.HasField("context"):
            name = req.context.name
            sess.context = name
            sess.contexts += 1
            hook = getattr(lv.policy, "on_context", None)
            if hook is not None:
                try:
                    with lv.lock:
                        hook(name)
                except Exception as exc:
                    sess.errors += 1
                    return _FMT.error_payload(oid, describe_error(exc))
        if not req.HasField("observation"):
            return _FMT.reply_payload(-1, (), ())
        items = obs_msg.tensors
        if len(items) != len(lv.names):
            sess.errors += 1
            return _FMT.error_payload(oid, describe_error(ProtocolError(
                f"observation {oid} has {len(items)} tensors, the header has {len(lv.names)} features")))
        return _decide(lv, oid, _LazyTensors(items, lv.index, f"observation {oid}"))

    def _close(self, req: Any, context: grpc.ServicerContext) -> Any:
        self._auth(context)
        with self._mutex:
            lv = self._live.pop(req.session, None)
        if lv is not None:
            self._end(lv, True, None)
        return spb.CloseSessionReply()

    def _shutdown(self, req: Any, context: grpc.ServicerContext) -> Any:
        self._auth(context)
        if not self.allow_shutdown_rpc:
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "this server does not accept Shutdown calls")
        self.shutdown_reason = req.reason or "Shutdown RPC"
        threading.Thread(target=self.stop, args=(1.0,), daemon=True).start()
        return spb.ShutdownReply()

    # -- bookkeeping ---------------------------------------------------------------
    def _remember(self, sess: Session) -> None:
        sess.duration = time.monotonic() - sess.started
        with self._mutex:
            self._ended.append(sess)
            if len(self._ended) > self._keep:
                del self._ended[: len(self._ended) - self._keep]

    def expire_idle(self, now: Optional[float] = None) -> int:
        """Ends the non-streaming sessions idle for longer than
        ``session_idle_timeout`` (as of ``now``, default the monotonic clock).
        Runs by itself when sessions open; returns how many it ended."""
        if self.session_idle_timeout is None:
            return 0
        now = time.monotonic() if now is None else now
        with self._mutex:
            stale = [(sid, lv) for sid, lv in self._live.items()
                     if not lv.streaming and now - lv.last > self.session_idle_timeout]
            for sid, lv in stale:
                del self._live[sid]
                self._expired[sid] = now - lv.last
            while len(self._expired) > self._keep:
                del self._expired[next(iter(self._expired))]
        for sid, lv in stale:
            self._end(lv, False, f"expired: no call for {self._expired.get(sid, 0.0):.0f} s "
                                 f"(the compiler died without CloseSession?)")
        return len(stale)

    def _maybe_expire(self) -> None:
        # At most one sweep per second, on OpenSession: no timer thread needed,
        # and the state of dead clients is bounded by the rate of new ones.
        now = time.monotonic()
        if self.session_idle_timeout is not None and now >= self._next_sweep:
            self._next_sweep = now + min(1.0, self.session_idle_timeout)
            self.expire_idle(now)

    def _end_if_open(self, sid: int) -> None:
        with self._mutex:
            lv = self._live.pop(sid, None)
        if lv is not None:
            self._end(lv, False, "the compiler's stream ended but CloseSession never came (compiler died?)")

    def _end(self, lv: _Live, clean: bool, error: Optional[str]) -> None:
        sess = lv.session
        sess.clean = clean
        sess.error = error
        self._remember(sess)
        # A hook error is kept in the stats, never raised into gRPC's threads.
        end_session(lv.policy, sess, clean, raise_errors=False, lock=lv.lock)


def _decide(lv: _Live, oid: int, tensors: Any) -> bytes:
    """One decision of session ``lv``, however its request was read: the
    policy asked under the session's lock, its answer encoded as the stream
    loop encodes it, or a policy or answer error turned into an error reply
    (the session goes on, as in the framed stream formats). Returns the
    EvaluateReply's bytes."""
    sess = lv.session
    try:
        with lv.lock:
            answer = lv.policy(Observation(oid, sess.context, sess, tensors))
        data = lv.encode(oid, answer)
    except Exception as exc:
        sess.errors += 1
        return _FMT.error_payload(oid, describe_error(exc))
    sess.observations += 1
    return data[4:]   # the frame's payload: Message{reply}, which parses as EvaluateReply
