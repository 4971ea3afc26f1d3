"""Edges of the pipe transport that mutation testing (docs/testing.md) found
untested: each test names the mutants it kills.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import child_env

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

# A model process that serves one session and exits without closing its
# server: the read watchdog's thread must not keep the process alive.
FORGETFUL = r"""
import threading
import numpy as np
import mlbridge
F = [mlbridge.TensorSpec("x", "int64_t", [1])]
A = [mlbridge.TensorSpec("d", "int64_t", [1])]
srv = mlbridge.PipeServer(format="bitstream", timeout=5)

def compiler():
    with mlbridge.PipeClient(srv.base, F, A, format="bitstream", timeout=5) as c:
        assert int(c.evaluate({"x": 2})[0]) == 3

t = threading.Thread(target=compiler)
t.start()
s = srv.serve_session(lambda obs: int(obs["x"][0]) + 1, timeout=10)
t.join()
assert s.observations == 1 and s.clean, s
assert srv.channel._watchdog is not None   # the blocking reads started it
print("served", flush=True)
# no srv.close(): the interpreter's exit must not wait for the watchdog
"""


def test_a_model_that_never_closes_its_server_still_exits():
    """channel._ReadWatchdog.__init__ mutant 7 (a non-daemon watchdog
    thread): the process hung at exit, joining it."""
    r = subprocess.run([sys.executable, "-c", FORGETFUL], env=child_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout == "served\n", r.stderr[-2000:]


def test_write_all_writes_every_byte_when_the_pipe_is_full_or_the_data_is_not_bytes():
    """channel.write_all mutant 3: a first write that finds the pipe full,
    and data given as a bytearray or memoryview (not bytes), still deliver
    every byte in order. A reader thread drains the pipe: it blocks in
    read(), no sleeps."""
    import os
    import threading
    from mlbridge.transport.channel import Deadline, write_all

    r, w = os.pipe()
    try:
        os.set_blocking(w, False)
        filler = b"\0" * 4096
        full = 0
        while True:   # fill the pipe: the next write would block
            try:
                full += os.write(w, filler)
            except BlockingIOError:
                break
        got = bytearray()
        want = full + 3 + 5 + 7

        def drain():
            while len(got) < want:
                chunk = os.read(r, 65536)
                if not chunk:
                    return
                got.extend(chunk)

        t = threading.Thread(target=drain)
        t.start()
        write_all(w, b"abc", Deadline(30))
        write_all(w, bytearray(b"defgh"), Deadline(30))
        write_all(w, memoryview(b"ijklmno"), Deadline(30))
        t.join(30)
        assert not t.is_alive()
        assert bytes(got[full:]) == b"abcdefghijklmno" and len(got) == want
    finally:
        os.close(r)
        os.close(w)


def test_a_compiler_gone_after_the_preamble_ends_its_session_saying_so(serve):
    """server.PipeServer._run mutant 79: a session whose stream ends before
    any header is not clean, and says why."""
    import mlbridge
    from test_faults import ADV, FEATS, echo, raw_session
    from mlbridge.formats import get_format
    st = serve(echo, sessions=2)
    raw_session(st.base, get_format("json").preamble())
    st.wait_session()
    with mlbridge.PipeClient(st.base, FEATS, ADV, format="json", timeout=5) as c:
        assert c.evaluate({"x": 9}).tolist() == [9]
    gone, good = st.join()
    assert gone.clean is False and gone.error == "end of stream before the session header", gone
    assert good.clean and good.observations == 1


SERVE_FOREVER = r"""
import json, sys
import mlbridge
srv = mlbridge.PipeServer(timeout=10)
print(json.dumps({"event": "ready", "base": srv.base}), flush=True)
srv.serve_forever(lambda obs: int(obs["x"][0]) * 3)
"""


def test_serve_forever_serves_one_session_after_another(procs):
    """server.PipeServer.serve_forever mutant 2 (the policy not passed on):
    sessions in several formats, one after another, each answered."""
    import subprocess as sp
    import mlbridge
    from conftest import wait_ready
    p = procs.python(SERVE_FOREVER, stdout=sp.PIPE)
    base = wait_ready(p)["base"]
    feats, adv = [("x", "int64_t", [1])], [("d", "int64_t", [1])]
    for fmt, x in (("json", 2), ("bitstream", 5), ("protobuf", 7)):
        with mlbridge.PipeClient(base, feats, adv, format=fmt, timeout=10) as c:
            assert c.evaluate({"x": x}).tolist() == [3 * x]
    assert p.poll() is None   # still serving


def test_a_write_bigger_than_the_ring_to_a_dead_model_fails(procs, tmp_path):
    """shm._End.write mutant 45: a compiler whose message does not fit the
    ring waits for space; the model dying meanwhile is PeerClosed, not a
    wait that never ends (the thread's join bounds a hang, generously)."""
    import threading
    import numpy as np
    import mlbridge
    from mlbridge.core.errors import PeerClosed
    from test_shm import _start_model
    folder = tmp_path / "ch"
    folder.mkdir(mode=0o700)
    base = str(folder / "chan")
    p = _start_model(procs, base)
    n = 1 << 19   # 4 MiB of doubles: more than the ring holds
    c = mlbridge.ShmClient(base, [("x", "double", [n])], [("y", "double", [n])], format="protobuf", timeout=10.0)
    try:
        x = np.arange(n, dtype=np.float64)
        assert np.array_equal(c.evaluate({"x": x}), x)   # the model echoes it, through the ring
        procs.kill(p)
        got = {}

        def ask():
            try:
                c.evaluate({"x": x})
            except BaseException as exc:  # noqa: BLE001 - checked below
                got["e"] = exc

        t = threading.Thread(target=ask, daemon=True)
        t.start()
        t.join(60)
        assert not t.is_alive(), "a write into a full ring, to a dead model, never ended"
        assert isinstance(got.get("e"), PeerClosed), got
    finally:
        c.close()


def test_shared_memory_refuses_a_platform_without_futex_or_pidfd(monkeypatch):
    """shm._check_platform mutant 1: either missing is enough to refuse."""
    import os
    import pytest
    from mlbridge.core.errors import MLBridgeError
    from mlbridge.transport import shm
    shm._check_platform()   # this machine has both
    with monkeypatch.context() as m:
        m.setattr(shm, "_SYS_FUTEX", None)
        with pytest.raises(MLBridgeError, match="needs Linux on x86-64"):
            shm._check_platform()
    with monkeypatch.context() as m:
        m.delattr(os, "pidfd_open")
        with pytest.raises(MLBridgeError, match="needs Linux on x86-64"):
            shm._check_platform()


def test_a_refused_framed_session_answers_each_observation_with_its_own_id(serve):
    """session_server._discard mutant 12 (the refusal sent without the
    observation's id): a compiler that goes on asking after its session was
    refused gets, per question, an error naming that question."""
    import numpy as np

    import mlbridge
    from mlbridge.formats import get_format
    from mlbridge.formats.framing import FramedReplyDecoder
    from mlbridge.transport.channel import ClientChannel, Deadline

    feats = [mlbridge.TensorSpec("x", "int64_t", [1])]
    adv = [mlbridge.TensorSpec("d", "int64_t", [1])]
    st = serve(lambda obs: 0, required_features=["missing"])
    j = get_format("json")
    ch = ClientChannel(st.base, 5)
    ch.write(j.preamble() + j.header(feats, adv) + j.observation(7, feats, [np.array([1])]) + j.end(),
             Deadline(5))
    dec = FramedReplyDecoder(j)
    replies = []
    while len(replies) < 2:
        got = dec.decode(ch.buf.data, ch.buf.start, ch.buf.end)
        if got is None:
            ch.fill(ch.buf.avail + 1, Deadline(5))
            continue
        replies.append(got[0])
        ch.buf.start = got[1]
    ch.close()
    (s,) = st.join()
    assert s.refused and "missing" in s.refused
    assert [r.id for r in replies] == [-1, 7]
    assert replies[1].error.startswith("session refused: ") and "missing" in replies[1].error
