"""Issue 24: without a timeout, ServerChannel's reads of BASE.out block too
(one system call per message, no poll() before it and no watchdog thread),
so the compiler's write wakes the read itself, as it does a hand-written
agent's. What must still hold: end of stream, a compiler that dies in the
middle of a message, and a later session with a timeout, which is bounded
again (transport/channel.py, ServerChannel.fill and refiller).

No sleeps: each step waits for the answer it needs; ``join(10)`` only
bounds a hang."""
from __future__ import annotations

import os
import threading

import numpy as np

import mlbridge
from conftest import connect_raw, serve_session_in_thread
from mlbridge import TensorSpec as T
from mlbridge.formats import get_format

B = get_format("bitstream")
FEATS = [T("x", "int64_t", [1])]
ADV = [T("a", "int64_t", [1])]


def _ask(fin: int, fout: int, i: int, x: int, header: bool = False) -> int:
    msg = (B.header(FEATS, ADV) if header else b"") + B.observation(i, FEATS, [np.array([x])])
    os.write(fout, msg)
    got = os.read(fin, 8)
    assert len(got) == 8, got
    return int(np.frombuffer(got, np.int64)[0])


def _session(srv, got: list):
    t = serve_session_in_thread(srv, lambda obs: int(obs["x"][0]) + 1, got)
    fin, fout = connect_raw(srv.base)
    return t, fin, fout


def _ended(t: threading.Thread, got: list):
    t.join(10)
    assert not t.is_alive(), "the session did not end (a read that never returns?)"
    assert len(got) == 1 and not isinstance(got[0], BaseException), got
    return got[0]


def test_untimed_reads_block_without_poll_or_watchdog():
    """The per-message reads of a session without a timeout go through the
    blocking descriptor: poll() (ServerChannel._out_poller) is never asked,
    no watchdog thread starts, and the answers are right. Fails on a channel
    that polls before each read when there is no deadline."""
    with mlbridge.PipeServer(format="bitstream", timeout=None) as srv:
        ch = srv.channel
        polled: list = []
        real = ch._out_poller

        def counting_poller():
            polled.append(1)
            return real()

        ch._out_poller = counting_poller
        got: list = []
        t, fin, fout = _session(srv, got)
        try:
            assert _ask(fin, fout, 0, 1, header=True) == 2
            for i in range(1, 5):
                assert _ask(fin, fout, i, 10 * i) == 10 * i + 1
            # Answer 4 was read, so observation 4 was read through fill or
            # the refiller: the blocking descriptor exists, on this BASE.out.
            assert ch._blk_fd >= 0 and ch._blk_for == ch.out_fd
        finally:
            os.close(fout)
        sess = _ended(t, got)
        os.close(fin)
        assert sess.clean is True and sess.observations == 5, sess
        assert polled == [], "a read without a timeout waited in poll()"
        assert ch._watchdog is None, "no deadline, yet a watchdog thread was started"


def test_untimed_compiler_dying_mid_message_ends_the_session():
    """A compiler that dies halfway through an observation while the model
    waits in the blocking read without a timeout: the read sees end of
    stream, the session ends as truncated (not clean), and the server serves
    the next compiler on fresh FIFOs."""
    with mlbridge.PipeServer(format="bitstream", timeout=None) as srv:
        got: list = []
        t, fin, fout = _session(srv, got)
        assert _ask(fin, fout, 0, 1, header=True) == 2
        half = B.observation(1, FEATS, [np.array([5])])
        os.write(fout, half[: len(half) // 2])
        os.close(fout)     # dies: no more bytes, the pipe has no writer
        sess = _ended(t, got)
        os.close(fin)
        assert sess.clean is False and sess.observations == 1, sess
        assert "truncated" in (sess.error or ""), sess.error

        got.clear()
        t, fin, fout = _session(srv, got)
        assert _ask(fin, fout, 0, 41, header=True) == 42
        os.close(fout)
        sess = _ended(t, got)
        os.close(fin)
        assert sess.clean is True and sess.observations == 1, sess


def test_a_timed_session_after_an_untimed_one_is_bounded_again():
    """A session without a timeout starts no watchdog; the next session has
    a timeout and a compiler that goes silent at a message boundary: its
    blocking read must still end with ChannelTimeout (the watchdog starts
    then). Fails, by hanging, on a channel that keeps reading without one."""
    with mlbridge.PipeServer(format="bitstream", timeout=None) as srv:
        got: list = []
        t, fin, fout = _session(srv, got)
        assert _ask(fin, fout, 0, 1, header=True) == 2
        assert _ask(fin, fout, 1, 2) == 3
        os.close(fout)
        assert _ended(t, got).clean is True
        os.close(fin)
        assert srv.channel._watchdog is None

        srv.timeout = 0.3
        got.clear()
        t, fin, fout = _session(srv, got)
        try:
            for i in range(3):   # the later reads are the refiller's blocking ones
                assert _ask(fin, fout, i, i, header=(i == 0)) == i + 1
            sess = _ended(t, got)   # nothing more is written: the watchdog must wake the read
        finally:
            os.close(fout)
            os.close(fin)
        assert sess.observations == 3 and sess.clean is False, sess
        assert "ChannelTimeout" in (sess.error or ""), sess.error
        assert srv.channel._watchdog is not None
