"""The shared-memory channel (docs/shm.md): ShmServer and ShmClient in every
format, across processes, with the C++ runner (the C API test program against
this ShmServer), and the failure paths: no model, a second model, a model or a
compiler killed mid-session, garbage, policy errors, shared folders."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mlbridge
from mlbridge.core.errors import ChannelTimeout, MLBridgeError, PeerClosed, RemoteError
from conftest import child_env, wait_ready

FORMATS = ["bitstream", "json", "protobuf"]
FEATS = [("x", "int64_t", [3]), ("w", "float", [2])]
ADV = [("y", "int64_t", [1])]


def policy(obs):
    if obs["x"][0] < 0:
        raise ValueError("negative")
    return np.int64(obs["x"].sum())


class Served:
    """An ShmServer serving sessions on a thread."""

    def __init__(self, sessions: int = 1, **kw) -> None:
        kw.setdefault("timeout", 5.0)
        self.server = mlbridge.ShmServer(**kw)
        self.sessions = []
        self.errors = []
        self.done = threading.Semaphore(0)
        self.thread = threading.Thread(target=self._run, args=(sessions,), daemon=True)
        self.thread.start()

    def _run(self, n: int) -> None:
        for _ in range(n):
            try:
                s = self.server.serve_session(policy, timeout=10.0)
                if s is None:
                    break
                self.sessions.append(s)
            except Exception as exc:
                self.errors.append(exc)
            finally:
                self.done.release()

    def close(self) -> None:
        """Joins the server thread; an exception it caught fails the test (it
        was kept in a list nobody read; issue 26)."""
        self.thread.join(15.0)
        assert not self.thread.is_alive()
        self.server.close()
        assert not self.errors, f"the server thread raised: {self.errors!r}"

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, exc_type, *_) -> None:
        if exc_type is None:
            self.close()
        else:   # the test's own failure is the one to report
            self.thread.join(15.0)
            self.server.close()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("spin_us", [0, 50])
def test_round_trip_in_process(fmt, spin_us):
    with Served(sessions=2, spin_us=spin_us) as srv:
        assert os.stat(srv.server.path).st_mode & 0o777 == 0o600
        assert os.stat(os.path.dirname(srv.server.path)).st_mode & 0o777 == 0o700
        for _ in range(2):   # sessions one after another on one channel
            with mlbridge.ShmClient(srv.server.base, FEATS, ADV, format=fmt, timeout=5.0, spin_us=spin_us) as c:
                if fmt != "bitstream":
                    c.set_context("f")
                for i in range(50):
                    y = c.evaluate({"x": [i, 1, 2], "w": [0.5, 1.5]})
                    assert y.dtype == np.int64 and y.shape == (1,) and y[0] == i + 3
    assert [s.observations for s in srv.sessions] == [50, 50]
    assert all(s.clean for s in srv.sessions), srv.sessions


def test_large_messages_stream_through_a_small_ring():
    with Served(sessions=1, ring_bytes=4096) as srv:
        n = 20000   # 160 KB per observation through a 4 KB ring
        with mlbridge.ShmClient(srv.server.base, [("x", "int64_t", [n])], ADV, format="protobuf", timeout=5.0) as c:
            for i in range(5):
                x = np.arange(n, dtype=np.int64) + i
                assert c.evaluate({"x": x})[0] == x.sum()


def test_policy_error_is_reported_and_the_session_goes_on():
    with Served(sessions=1) as srv:
        with mlbridge.ShmClient(srv.server.base, FEATS, ADV, format="json", timeout=5.0) as c:
            with pytest.raises(RemoteError, match="negative"):
                c.evaluate({"x": [-1, 0, 0], "w": [0, 0]})
            assert c.evaluate({"x": [1, 1, 1], "w": [0, 0]})[0] == 3
    assert srv.sessions[0].errors == 1


def test_no_model_is_a_timeout(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(ChannelTimeout, match="does not exist"):
        mlbridge.ShmClient(str(tmp_path / "nobody"), FEATS, ADV, timeout=0.2)
    assert time.monotonic() - t0 < 3


def test_second_model_on_one_channel_is_refused():
    with mlbridge.ShmServer() as a:
        with pytest.raises(MLBridgeError, match="already serving"):
            mlbridge.ShmServer(a.base)


def test_shared_folder_is_refused(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    with pytest.raises(MLBridgeError, match="accessible by other users"):
        mlbridge.ShmServer(str(folder / "chan"))


def test_model_never_accepting_is_a_timeout():
    with mlbridge.ShmServer() as srv:   # exists, never serves
        with pytest.raises(ChannelTimeout, match="did not accept"):
            mlbridge.ShmClient(srv.base, FEATS, ADV, timeout=0.3)


def _start_model(procs, base):
    p = procs.start([sys.executable, "-m", "mlbridge.testing.bench_model", "--base", base, "--model", "echo",
                     "--transport", "shm", "--idle-timeout", "60"], stdout=subprocess.PIPE)
    wait_ready(p)
    return p


@pytest.mark.parametrize("fmt", FORMATS)
def test_model_in_another_process_then_killed(procs, tmp_path, fmt):
    folder = tmp_path / "ch"
    folder.mkdir(mode=0o700)
    base = str(folder / "chan")
    p = _start_model(procs, base)
    c = mlbridge.ShmClient(base, [("x", "double", [2])], [("y", "double", [2])], format=fmt, timeout=10.0)
    try:
        assert list(c.evaluate({"x": [1.5, -2.0]})) == [1.5, -2.0]
        procs.kill(p)
        t0 = time.monotonic()
        with pytest.raises(PeerClosed, match="died|closed"):
            c.evaluate({"x": [1.0, 2.0]})
        assert time.monotonic() - t0 < 9
        with pytest.raises(MLBridgeError, match="unusable"):
            c.evaluate({"x": [1.0, 2.0]})
    finally:
        c.close()


def test_compiler_killed_mid_session_then_next_session_is_served(procs, tmp_path):
    with Served(sessions=2) as srv:
        code = ("import sys, os, signal, mlbridge\n"
                "c = mlbridge.ShmClient(sys.argv[1], [('x','int64_t',[3]),('w','float',[2])], [('y','int64_t',[1])],"
                " format='json', timeout=5)\n"
                "print(int(c.evaluate({'x':[1,2,3],'w':[0,0]})[0]), flush=True)\n"
                "os.kill(os.getpid(), signal.SIGKILL)\n")
        p = procs.python(code, srv.server.base, stdout=subprocess.PIPE)
        assert p.stdout.readline().strip() == b"6"
        p.wait()
        assert srv.done.acquire(timeout=10)
        with mlbridge.ShmClient(srv.server.base, FEATS, ADV, format="protobuf", timeout=5.0) as c:
            assert c.evaluate({"x": [4, 5, 6], "w": [0, 0]})[0] == 15
    first, second = srv.sessions
    assert first.clean is False and first.observations == 1
    assert second.clean and second.observations == 1


def test_garbage_from_the_compiler_ends_only_that_session():
    with Served(sessions=2) as srv:
        ch = mlbridge.transport.shm.ShmClientChannel(srv.server.base, 5.0)
        try:
            ch.write(b"MLBR\x01J\x00\x00" + b"\x05\x00\x00\x00garba", mlbridge.transport.channel.Deadline(5.0))
            with pytest.raises(PeerClosed):
                ch.fill(10, mlbridge.transport.channel.Deadline(5.0))   # the error reply, then the hang-up
                ch.fill(1 << 20, mlbridge.transport.channel.Deadline(5.0))
        finally:
            ch.close()
        with mlbridge.ShmClient(srv.server.base, FEATS, ADV, format="json", timeout=5.0) as c:
            assert c.evaluate({"x": [1, 1, 1], "w": [0, 0]})[0] == 3
    assert srv.sessions[0].clean is False and "ProtocolError" in (srv.sessions[0].error or "")


def test_cpp_runner_against_python_model():
    """The C++ ShmModelRunner (through the C API test program) against ShmServer, in every format."""
    build = os.environ.get("MLBRIDGE_BUILD_DIR")
    exe = os.path.join(build, "tests", "c", "mlbridge_c_shm_test") if build else ""
    if not exe or not os.access(exe, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail("the C shm test program is not built")
        pytest.skip("MLBRIDGE_BUILD_DIR/tests/c/mlbridge_c_shm_test not built")
    env = child_env(MLBRIDGE_TEST_PYTHON=sys.executable)
    for case in ("round_trip_bitstream", "round_trip_json", "round_trip_protobuf", "model_killed_protobuf"):
        r = subprocess.run([exe, case], env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, (case, r.stderr.decode(errors="replace"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_refused_session_reaches_the_compiler(fmt):
    with Served(sessions=2, required_features=["missing"]) as srv:
        for _ in range(2):   # the model stays usable after a refusal
            with pytest.raises((RemoteError, PeerClosed), match="missing|closed"):
                with mlbridge.ShmClient(srv.server.base, FEATS, ADV, format=fmt, timeout=5.0) as c:
                    c.evaluate({"x": [1, 2, 3], "w": [0, 0]})   # bitstream learns at its first request
    assert [bool(s.refused) for s in srv.sessions] == [True, True]
