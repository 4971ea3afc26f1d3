"""The Python model server over gRPC (inference direction), driven by the
Python ModelClient: results, per-session state, failures, security."""
from __future__ import annotations

import os
import queue
import socket
import sys
import tempfile
import threading
import time

import numpy as np

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/python: grpc_support
from grpc_support import Proc, make_certs, require_grpc  # noqa: E402

require_grpc()

import mlbridge  # noqa: E402
from conftest import child_env  # noqa: E402
from mlbridge import ChannelTimeout, MLBridgeError, PeerClosed, RemoteError, SpecMismatch  # noqa: E402
from mlbridge import ModelClient  # noqa: E402
from mlbridge import ClientTLS, GrpcServer, RetryPolicy, ServerTLS  # noqa: E402

FEATS = [("a", "int64_t", (1,)), ("b", "float", (2,))]
ADV = [("y", "int64_t", (1,))]
FAST = RetryPolicy(max_attempts=3, initial_backoff=0.02, max_backoff=0.1, total_seconds=1.0)


def double_a(obs):
    return obs["a"] * 2


def client(server, **kw):
    kw.setdefault("retry", FAST)
    return ModelClient(server.target, FEATS, ADV, **kw)


def test_lazy_import_and_exports():
    assert mlbridge.GrpcServer is GrpcServer
    assert mlbridge.ModelClient is ModelClient


def test_answers_and_context():
    seen = []

    class M(mlbridge.Model):
        def on_context(self, name):
            seen.append(name)

        def __call__(self, obs):
            return int(obs["a"][0]) + len(obs.context)

    with GrpcServer(M()) as srv, client(srv) as c:
        assert c.evaluate({"a": 5, "b": [1.0, 2.0]})[0].tolist() == [5]
        c.set_context("main")
        assert c.evaluate({"a": 5, "b": [1.0, 2.0]})[0].tolist() == [9]
        assert seen == ["main"]
    s = srv.sessions[0]
    assert s.clean and s.observations == 2 and s.format == "grpc"


def test_port_zero_reports_port_and_loopback_default():
    with GrpcServer(double_a) as srv:
        assert srv.port > 0
        assert srv.target == f"127.0.0.1:{srv.port}"
        # What the socket is really bound to, not what the server reports: a
        # server on 0.0.0.0 reporting 127.0.0.1 passed a connect test whenever
        # the host name resolved to 127.* (issue 26).
        bound = _listening_addresses(srv.port)
        assert bound, f"no listening socket on port {srv.port} in /proc/net/tcp*"
        assert all(a in ("127.0.0.1", "::1") for a in bound), bound


def _listening_addresses(port):
    """Local addresses of the sockets listening on PORT (/proc/net/tcp, tcp6)."""
    import ipaddress
    found = []
    for name, width in (("tcp", 4), ("tcp6", 16)):
        try:
            with open(f"/proc/net/{name}") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:   # no IPv6 in this kernel
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            host, p = local.split(":")
            if state != "0A" or int(p, 16) != port:   # 0A: LISTEN
                continue
            raw = bytes.fromhex(host)
            # The kernel prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, width, 4))
            ip = ipaddress.ip_address(raw)
            if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
                ip = ip.ipv4_mapped
            found.append(str(ip))
    return found


def test_busy_port_fails_loudly():
    with GrpcServer(double_a) as srv:
        other = GrpcServer(double_a, f"127.0.0.1:{srv.port}")
        with pytest.raises(MLBridgeError, match="cannot listen"):
            other.start()


def test_remote_needs_tls_or_token():
    with pytest.raises(ValueError, match="non-loopback"):
        GrpcServer(double_a, "0.0.0.0:0")
    GrpcServer(double_a, "0.0.0.0:0", token="t")   # explicit and protected: allowed


def test_handler_exception_reaches_client():
    def boom(obs):
        raise KeyError("no such thing")

    with GrpcServer(boom) as srv, client(srv) as c:
        with pytest.raises(RemoteError, match="KeyError") as ei:
            c.evaluate({"a": 1, "b": [0, 0]})
        assert ei.value.remote_type == "KeyError"
        with pytest.raises(RemoteError):   # the session goes on
            c.evaluate({"a": 1, "b": [0, 0]})
    assert srv.sessions[0].errors == 2


def test_wrong_advice_is_an_error_not_a_value():
    with GrpcServer(lambda obs: 1.5) as srv, client(srv) as c:
        with pytest.raises(RemoteError, match="SpecMismatch"):
            c.evaluate({"a": 1, "b": [0, 0]})


def test_deadline():
    release = threading.Event()

    def slow(obs):
        release.wait(5)
        return 0

    with GrpcServer(slow, concurrent=True) as srv:
        c = client(srv, timeout=0.2)
        t0 = time.monotonic()
        with pytest.raises(ChannelTimeout):
            c.evaluate({"a": 1, "b": [0, 0]})
        assert time.monotonic() - t0 < 2
        release.set()
        c.close()


def test_server_never_started():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(PeerClosed, match="gave up after"):
        ModelClient(f"127.0.0.1:{port}", FEATS, ADV, retry=FAST)
    assert time.monotonic() - t0 < 3


def test_required_features_refuse_session():
    with GrpcServer(double_a, required_features=["missing"]) as srv:
        with pytest.raises(SpecMismatch, match="requires feature 'missing'"):
            client(srv)
    assert srv.sessions[0].refused


def test_schema_version_mismatch():
    with GrpcServer(double_a) as srv:
        c = client(srv)
        with pytest.raises(SpecMismatch, match="schema version mismatch"):
            c._handshake(version=2)
        c.close()


def test_token():
    with GrpcServer(double_a, token="s3cret") as srv:
        with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
            client(srv)
        with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
            client(srv, token="wrong")
        with client(srv, token="s3cret") as c:
            assert c.evaluate({"a": 4, "b": [0, 0]})[0].tolist() == [8]


def test_tls_and_mutual_tls():
    with tempfile.TemporaryDirectory() as d:
        certs = make_certs(d)
        tls = ServerTLS(certs["server_cert"], certs["server_key"])
        with GrpcServer(double_a, tls=tls) as srv:
            with pytest.raises(PeerClosed):   # plaintext client refused
                client(srv)
            with client(srv, tls=ClientTLS(root_ca=certs["ca"])) as c:
                assert c.evaluate({"a": 3, "b": [0, 0]})[0].tolist() == [6]
        mtls = ServerTLS(os.path.join(d, "server_cert.pem"), os.path.join(d, "server_key.pem"),
                         client_ca=os.path.join(d, "ca.pem"))
        with GrpcServer(double_a, tls=mtls) as srv:
            with pytest.raises(PeerClosed):   # no client certificate
                client(srv, tls=ClientTLS(root_ca=certs["ca"]))
            ok = ClientTLS(root_ca=certs["ca"], cert_chain=certs["client_cert"], private_key=certs["client_key"])
            with client(srv, tls=ok) as c:
                assert c.evaluate({"a": 2, "b": [0, 0]})[0].tolist() == [4]


def test_shutdown_rpc_stops_server():
    srv = GrpcServer(double_a).start()
    c = client(srv)
    c.shutdown_server("test")
    assert srv.wait(10)
    assert srv.shutdown_reason == "test"


def test_per_session_state_no_cross_talk():
    class Counter(mlbridge.Model):
        def __init__(self):
            self.n = 0

        def __call__(self, obs):
            self.n += 1
            return int(obs["a"][0]) * 1000 + self.n

    with GrpcServer(Counter, per_session=True, max_workers=8) as srv:
        errors = []

        def worker(k):
            try:
                with client(srv) as c:
                    for i in range(1, 51):
                        got = int(c.evaluate({"a": k, "b": [0, 0]})[0][0])
                        if got != k * 1000 + i:
                            errors.append((k, i, got))
            except Exception as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    assert len(srv.sessions) == 8


def test_stream_ending_without_close_ends_session_unclean():
    import grpc

    ended = []
    done = threading.Event()

    class M(mlbridge.Model):
        def on_session_end(self, session, clean):
            ended.append(clean)
            done.set()

        def __call__(self, obs):
            return 1

    with GrpcServer(M()) as srv:
        c = client(srv)
        with grpc.insecure_channel(srv.target) as ch:
            call, req = _raw_stream(ch, c.session)
            q: "queue.Queue" = queue.Queue()
            q.put(req)

            def requests():
                while (r := q.get()) is not None:
                    yield r

            replies = call(requests())
            assert next(replies).reply.tensors[0].data == np.int64(1).tobytes()
            replies.cancel()                   # the "compiler" dies: no half-close, no CloseSession
            # Only now let the request iterator finish: releasing it before the
            # server saw the cancel could send a half-close first.
            assert done.wait(5)
            q.put(None)
        assert ended == [False]
        assert srv.sessions[-1].clean is False
        c._rpc.close()


def _request(session, oid=0, a=0, order=("a", "b")):
    """An EvaluateRequest with an observation of FEATS: a = [a], b = [0.5, a]
    (``order``: the tensors' order)."""
    from mlbridge._proto import service_pb2 as spb

    req = spb.EvaluateRequest(session=session)
    req.observation.SetInParent()
    req.observation.id = oid
    for name in order:
        t = req.observation.tensors.add(name=name, dtype=9 if name == "a" else 1, shape=[1 if name == "a" else 2])
        t.data = np.int64(a).tobytes() if name == "a" else np.array([0.5, a], np.float32).tobytes()
    return req


def _raw_stream(ch, session):
    """An EvaluateStream call made by hand, and one valid request for FEATS."""
    from mlbridge._proto import service_pb2 as spb

    call = ch.stream_stream("/mlbridge.v1.ModelService/EvaluateStream",
                            request_serializer=spb.EvaluateRequest.SerializeToString,
                            response_deserializer=spb.EvaluateReply.FromString)
    return call, _request(session)


def _stream_replies(srv, requests):
    """Sends serialized EvaluateRequests on one EvaluateStream; the reply bytes."""
    import grpc

    with grpc.insecure_channel(srv.target) as ch:
        call = ch.stream_stream("/mlbridge.v1.ModelService/EvaluateStream")   # bytes both ways
        return list(call(iter(requests)))


def _fast_path_requests(session):
    """Requests the fast path takes (canonical observations) and ones it
    leaves to the general path (a context, tensors out of order, an unknown
    field), with answers, wrong answers and policy errors."""
    from mlbridge._proto import service_pb2 as spb

    def obs(oid, a, order=("a", "b")):
        return _request(session, oid, a, order).SerializeToString()

    ctx = spb.EvaluateRequest(session=session)
    ctx.context.name = "f"
    return [obs(0, 1), obs(1, 5), obs(2, 2), obs(3, 3), ctx.SerializeToString(), obs(4, 7),
            obs(5, 1, order=("b", "a")), obs(6, 4) + b"\x20\x01", obs(7, 6), obs(8, 8)]


def test_stream_fast_path_matches_the_general_path(monkeypatch):
    """EvaluateStream reads a canonical observation in place
    (GrpcServer._fast_evaluator). Its replies are byte for byte those of the
    general path (_evaluate_one) for answers, wrong answers and policy
    errors; what it does not take (a context, another encoding) still goes
    the general way; kept feature arrays stay right."""
    kept = []

    def policy(obs):
        a = int(obs["a"][0])
        kept.append((obs.id, obs["b"]))
        if a == 2:
            raise ValueError("boom")
        if a == 3:
            return "not a number"
        return a * 10 + len(obs.context)

    def run(fast):
        general_calls = []
        with GrpcServer(policy) as srv:
            if not fast:
                monkeypatch.setattr(srv, "_fast_evaluator", lambda sid, lv: None)
            one = srv._evaluate_one
            monkeypatch.setattr(srv, "_evaluate_one", lambda req, ctx: general_calls.append(1) or one(req, ctx))
            c = client(srv)
            replies = _stream_replies(srv, _fast_path_requests(c.session))
            sess = srv.sessions[0]
            stats = (sess.observations, sess.errors, sess.contexts)
            c._rpc.close()
        return replies, len(general_calls), stats

    kept.clear()
    fast_replies, general, fast_stats = run(True)
    fast_kept = [(oid, b.tolist()) for oid, b in kept]
    kept.clear()
    slow_replies, all_general, slow_stats = run(False)
    assert fast_replies == slow_replies
    assert fast_stats == slow_stats
    assert all_general == 10
    assert general == 4   # the first request, the context, tensors out of order, an unknown field
    assert fast_kept == [(oid, b.tolist()) for oid, b in kept]
    assert [b for _, b in fast_kept[:2]] == [[0.5, 1.0], [0.5, 5.0]]


def test_stream_after_close_session_is_refused():
    """A session closed while its stream is open is over for the fast path
    too: the next observation gets NOT_FOUND, not an answer."""
    import grpc

    with GrpcServer(lambda obs: 1) as srv:
        c = client(srv)
        reqs = _fast_path_requests(c.session)
        q: "queue.Queue" = queue.Queue()

        def requests():
            while (r := q.get()) is not None:
                yield r

        with grpc.insecure_channel(srv.target) as ch:
            replies = ch.stream_stream("/mlbridge.v1.ModelService/EvaluateStream")(requests())
            for r in reqs[:2]:   # the general path, then the fast one
                q.put(r)
                next(replies)
            c.close()
            q.put(reqs[5])
            with pytest.raises(grpc.RpcError) as err:
                next(replies)
            q.put(None)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_stream_request_that_is_not_protobuf_is_refused():
    import grpc

    with GrpcServer(lambda obs: 1) as srv:
        c = client(srv)
        with pytest.raises(grpc.RpcError) as err:
            _stream_replies(srv, [b"\xff\xff\xff"])
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        c._rpc.close()


def test_an_observation_missing_a_feature_is_an_error_reply_and_the_session_goes_on():
    """A request whose observation has fewer tensors than the header's features
    (a broken compiler) gets an error reply naming both counts; the policy is
    not asked, and the next good observation is answered."""
    from mlbridge._proto import service_pb2 as spb

    asked = []
    with GrpcServer(lambda obs: asked.append(1) or 3) as srv:
        c = client(srv)
        short = _request(c.session, 0, 1, order=("a",))
        replies = _stream_replies(srv, [short.SerializeToString(), _request(c.session, 1, 2).SerializeToString()])
        bad, good = (spb.EvaluateReply.FromString(r) for r in replies)
        assert bad.reply.id == 0 and "observation 0 has 1 tensors, the header has 2 features" in bad.reply.error
        assert good.reply.id == 1 and not good.reply.error and len(asked) == 1
        c.close()
    assert srv.sessions[0].errors == 1 and srv.sessions[0].observations == 1


def test_clean_stream_end_then_close_is_clean():
    import grpc

    with GrpcServer(lambda obs: 1) as srv:
        c = client(srv)
        with grpc.insecure_channel(srv.target) as ch:
            call, req = _raw_stream(ch, c.session)
            assert len(list(call(iter([req, req])))) == 2     # half-closed after two requests
        c.close()
    assert srv.sessions[0].clean is True and srv.sessions[0].observations == 2


def test_server_subprocess_killed_mid_episode():
    with Proc([sys.executable, "-m", "mlbridge.testing.grpc_models", "--model", "const", "--value", "2"],
              env=child_env()) as p:
        c = ModelClient(p.target, FEATS, ADV, retry=FAST)
        assert c.evaluate({"a": 1, "b": [0, 0]})[0].tolist() == [2]
        p.kill()
        t0 = time.monotonic()
        with pytest.raises(PeerClosed):
            c.evaluate({"a": 1, "b": [0, 0]})
        assert time.monotonic() - t0 < 3
        c.close()


def test_idle_unary_sessions_expire_and_are_refused_with_the_reason():
    # One-call-per-decision clients that die without CloseSession must not
    # leak server state: idle sessions expire (checked with an explicit clock).
    ended = []

    class Policy:
        def __call__(self, obs):
            return obs["a"] * 2

        def on_session_end(self, sess, clean):
            ended.append((sess.index, clean, sess.error))

    with GrpcServer(Policy(), session_idle_timeout=30.0) as srv:
        idle, busy = client(srv), client(srv)
        assert idle.evaluate({"a": 1, "b": [0, 0]})[0].tolist() == [2]
        assert srv.expire_idle(time.monotonic() + 10) == 0            # not idle long enough
        assert busy.evaluate({"a": 3, "b": [0, 0]})[0].tolist() == [6]
        assert srv.expire_idle(time.monotonic() + 31) == 2            # both idle 31 s from now
        assert [e[1] for e in ended] == [False, False] and "expired" in ended[0][2]
        with pytest.raises(MLBridgeError, match="expired after"):
            idle.evaluate({"a": 1, "b": [0, 0]})
        fresh = client(srv)                                            # new sessions still work
        assert fresh.evaluate({"a": 4, "b": [0, 0]})[0].tolist() == [8]
        fresh.close()
    assert sum(1 for s in srv.sessions if s.error and "expired" in s.error) == 2


def test_streaming_sessions_never_expire_while_their_stream_lives():
    import grpc

    with GrpcServer(lambda obs: 1, session_idle_timeout=1.0) as srv:
        c = client(srv)
        q: "queue.Queue" = queue.Queue()
        with grpc.insecure_channel(srv.target) as ch:
            call, req = _raw_stream(ch, c.session)
            replies = call(iter(q.get, None))
            q.put(req)
            next(replies)
            assert srv.expire_idle(time.monotonic() + 3600) == 0     # owned by a live stream
            q.put(req)
            next(replies)
            q.put(None)
            assert len(list(replies)) == 0
        c.close()
    assert srv.sessions[0].clean is True and srv.sessions[0].observations == 2


class SlowHandshakeProxy:
    """Forwards TCP connections to ``port`` and holds the server's first bytes
    (its HTTP/2 SETTINGS) for ``delay`` seconds: a model slow to answer a new
    connection, as on a loaded machine."""

    def __init__(self, port: int, delay: float) -> None:
        self.target, self.delay = port, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.socks: list = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
                up = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                return
            self.socks += [conn, up]
            threading.Thread(target=self._pump, args=(conn, up, 0.0), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, conn, self.delay), daemon=True).start()

    @staticmethod
    def _pump(src, dst, delay: float) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if delay:
                    time.sleep(delay)   # the slow model (not a synchronization)
                    delay = 0.0
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "SlowHandshakeProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.listener.close()
        for s in self.socks:
            s.close()


def test_a_model_slow_to_answer_the_handshake_is_still_reached():
    """gRPC's ``min_reconnect_backoff_ms`` is its minimum connect timeout, not
    a backoff: set to our 20 ms initial backoff it gave each connection
    attempt about 100 ms, and a model whose HTTP/2 handshake took longer was
    abandoned on every attempt (UNAVAILABLE). The attempt now has the call's
    timeout."""
    slow = RetryPolicy(max_attempts=4, initial_backoff=0.02, max_backoff=0.05, total_seconds=5.0)
    with GrpcServer(double_a) as srv, SlowHandshakeProxy(int(srv.target.rpartition(":")[2]), 0.5) as proxy:
        with ModelClient(f"127.0.0.1:{proxy.port}", FEATS, ADV, retry=slow, timeout=5.0) as c:
            assert c.evaluate({"a": 2, "b": [0.0, 0.0]})[0].tolist() == [4]
