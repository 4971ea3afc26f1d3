"""One model process, many compiler sessions on the same channel."""
from __future__ import annotations

import os
import stat
import threading

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.transport.channel import ClientChannel, Deadline
from mlbridge.core.errors import MLBridgeError
from mlbridge.formats import get_format

FEATS = [T("x", "int64_t", [1])]
ADV = [T("d", "int64_t", [1])]


def echo(obs):
    return obs["x"]


def test_mixed_formats_many_sessions(serve):
    order = ["bitstream", "json", "protobuf", "protobuf", "bitstream", "json", "bitstream"]
    st = serve(echo, sessions=len(order))
    for i, fmt in enumerate(order):
        with mlbridge.PipeClient(st.base, FEATS, ADV, format=fmt, timeout=5) as c:
            c.set_context(f"fn{i}")
            for k in range(3):
                assert c.evaluate({"x": i * 100 + k}).tolist() == [i * 100 + k]
    sessions = st.join()
    assert [s.format for s in sessions] == order
    assert [s.index for s in sessions] == list(range(len(order)))
    assert all(s.clean and s.observations == 3 and s.contexts == 1 for s in sessions)


def test_serve_counts_sessions_and_times_out():
    with mlbridge.PipeServer(timeout=5) as srv:
        def clients():
            for fmt in ("json", "bitstream", "protobuf"):
                with mlbridge.PipeClient(srv.base, FEATS, ADV, format=fmt, timeout=5) as c:
                    c.evaluate({"x": 1})
        t = threading.Thread(target=clients)
        t.start()
        stats = srv.serve(echo, sessions=3, timeout=5)
        t.join(10)
        assert [s.format for s in stats] == ["json", "bitstream", "protobuf"]
        with pytest.raises(mlbridge.ChannelTimeout) as ei:
            srv.serve(echo, sessions=1, timeout=0.2)
        assert ei.value.sessions == []
        assert srv.serve(echo, timeout=0.1) == []   # sessions=None: idle timeout ends it


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_stale_reply_never_reaches_next_session(serve, fmt):
    """Compiler 1 sends an observation and dies without reading the reply;
    compiler 2 must get its own answer, not that one."""
    st = serve(echo, sessions=2)
    f = get_format(fmt)
    ch = ClientChannel(st.base, 5)
    ch.write(f.preamble() + f.header(FEATS, ADV) + f.observation(0, FEATS, [np.array([111])]), Deadline(5))
    if fmt != "bitstream":
        ch.fill(1, Deadline(5))      # the header ack has come: the model is in the session
    ch.close()                        # dies: the reply to 111 stays unread
    st.wait_session()
    with mlbridge.PipeClient(st.base, FEATS, ADV, format=fmt, timeout=5) as c:
        assert c.evaluate({"x": 222}).tolist() == [222]
        assert c.evaluate({"x": 333}).tolist() == [333]
    first, second = st.join()
    assert first.observations == 1
    assert second.clean and second.observations == 2


def test_stale_reply_in_pipe_when_next_compiler_connects(serve):
    """Even if compiler 2 connects before the model noticed compiler 1's death,
    it never takes compiler 1's reply as its own (framed ids, client drain)."""
    release = threading.Event()

    def slow_first(obs):
        if obs["x"][0] == 111:
            release.wait(5)
        return obs["x"]

    st = serve(slow_first, sessions=2)
    f = get_format("json")
    ch = ClientChannel(st.base, 5)
    ch.write(f.preamble() + f.header(FEATS, ADV) + f.observation(0, FEATS, [np.array([111])]), Deadline(5))
    ch.fill(1, Deadline(5))
    ch.close()
    release.set()
    st.wait_session()
    with mlbridge.PipeClient(st.base, FEATS, ADV, format="json", timeout=5) as c:
        assert c.evaluate({"x": 5}).tolist() == [5]
    st.join()


def test_new_header_without_eof_starts_a_new_session(serve):
    """Two compilers' bytes back to back in one stream (the first closed and
    the second opened before the model saw end of stream). The bitstream
    compiler's observation is not answered: its question was followed by
    another session's bytes, so it gave up, and its answer (no reply id in
    bitstream) would be read by the next compiler as its own."""
    st = serve(echo, sessions=3)
    b, j = get_format("bitstream"), get_format("json")
    stream = (b.header(FEATS, ADV) + b.observation(0, FEATS, [np.array([1])])
              + j.preamble() + j.header(FEATS, ADV) + j.observation(0, FEATS, [np.array([2])])
              + j.header(FEATS, ADV) + j.observation(0, FEATS, [np.array([3])]) + j.end())
    ch = ClientChannel(st.base, 5)
    ch.write(stream, Deadline(5))
    want = b"".join([j.ack(), j.reply(0, ADV, [np.array([2])]), j.ack(), j.reply(0, ADV, [np.array([3])])])
    ch.fill(len(want), Deadline(5))
    assert bytes(ch.buf.data[ch.buf.start:ch.buf.end]) == want
    ch.close()
    s1, s2, s3 = st.join()
    assert (s1.format, s1.clean, s1.observations) == ("bitstream", False, 0) and "gave up" in s1.error
    assert (s2.format, s2.clean) == ("json", False)
    assert s2.error == "a new session began before this one sent its end message"
    assert (s3.format, s3.clean, s3.observations) == ("json", True, 1)


def test_recorded_sessions(serve, tmp_path):
    rec = tmp_path / "rec"
    st = serve(lambda obs: obs["x"] * 2, sessions=2, record_dir=str(rec))
    for fmt in ("bitstream", "protobuf"):
        with mlbridge.PipeClient(st.base, FEATS, ADV, format=fmt, timeout=5) as c:
            c.set_context("main")
            for k in range(3):
                c.evaluate({"x": k})
    s1, s2 = st.join()
    assert s1.record == (str(rec / "session-0000.out"), str(rec / "session-0000.in"))
    for s in (s1, s2):
        records = list(mlbridge.read_log(s.record[0], replies=s.record[1]))
        assert [(r.context, r.id, int(r.features["x"][0]), int(r.advice[0])) for r in records] == \
            [("main", k, k, 2 * k) for k in range(3)]
    # the bitstream replies file is what LLVM reads as a replay: 3 x 8 bytes
    assert open(s1.record[1], "rb").read() == np.array([0, 2, 4], np.int64).tobytes()


def test_channel_is_private(tmp_path):
    with mlbridge.PipeServer() as srv:
        folder = os.path.dirname(srv.base)
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        for suffix in (".in", ".out"):
            st = os.stat(srv.base + suffix)
            assert stat.S_ISFIFO(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert not os.path.exists(folder), "close() removes what it created"


def test_named_base_in_new_folder(tmp_path):
    base = tmp_path / "new" / "chan"
    with mlbridge.PipeServer(str(base)) as srv:
        assert srv.base == str(base)
        assert stat.S_IMODE(os.stat(base.parent).st_mode) == 0o700
        # FIFOs are recreated 0600 even after a hang-up swapped them
        srv.channel.hang_up()
        assert stat.S_IMODE(os.stat(str(base) + ".in").st_mode) == 0o600
    assert not os.path.exists(str(base) + ".in")


def test_shared_folder_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    with pytest.raises(MLBridgeError, match="accessible by other users"):
        mlbridge.PipeServer(str(shared / "chan"))
    os.chmod(shared, 0o1777)
    with pytest.raises(MLBridgeError, match="0700"):
        mlbridge.PipeServer(str(shared / "chan"))
    assert not os.path.exists(str(shared / "chan.in"))


def test_second_server_on_same_base_refused(tmp_path):
    base = str(tmp_path / "one")
    with mlbridge.PipeServer(base):
        with pytest.raises(MLBridgeError, match="already serving"):
            mlbridge.PipeServer(base)
    with mlbridge.PipeServer(base):   # free again
        pass


def test_not_a_fifo_refused(tmp_path):
    base = tmp_path / "f"
    (tmp_path / "f.in").write_text("regular file")
    with pytest.raises(MLBridgeError, match="not a FIFO"):
        mlbridge.PipeServer(str(base))


def test_direct_call_binds_a_python_call_and_leaves_the_rest():
    """The server calls a policy object's Python __call__ as a bound method
    (the interpreter's fast path); anything else is called as it is. Either
    way the answer is the policy's."""
    import functools

    from mlbridge.core.session import direct_call

    class Doubler(mlbridge.Model):
        def __call__(self, obs):
            return obs * 2

    m = Doubler()
    bound = direct_call(m)
    assert bound.__self__ is m and bound(21) == m(21) == 42

    def plain(obs):
        return obs + 1

    assert direct_call(plain) is plain
    part = functools.partial(plain)
    assert direct_call(part) is part and direct_call(part)(1) == 2
    assert direct_call(abs) is abs
