"""PipeServer reads block (no poll per message) but stay bounded by the
timeout: a watchdog wakes a read that outlives it (transport/channel.py)."""
from __future__ import annotations

import os
import threading
import time

import numpy as np

import mlbridge
from conftest import connect_raw, serve_session_in_thread
from mlbridge import TensorSpec as T
from mlbridge.formats import get_format

B = get_format("bitstream")
FEATS = [T("x", "int64_t", [1])]
ADV = [T("a", "int64_t", [1])]


def _plus_one_session(srv, got: list):
    """A session whose policy answers x + 1, its header and first question
    (x = 1) written and answered: (serving thread, fin, fout)."""
    t = serve_session_in_thread(srv, lambda obs: int(obs["x"][0]) + 1, got, timeout=5)
    fin, fout = connect_raw(srv.base)
    os.write(fout, B.header(FEATS, ADV) + B.observation(0, FEATS, [np.array([1])]))
    assert os.read(fin, 8) == np.int64(2).tobytes()
    return t, fin, fout


def _ends_with_timeout(t, got: list, observations: int) -> None:
    """The session ends with ChannelTimeout after ``observations`` answers.
    Only a generous upper bound on the wait: a lower one raced the server,
    whose deadline starts at its read, before this clock (issue 26); ending
    early would show as a ChannelTimeout where an answer was expected."""
    t.join(10)
    assert not t.is_alive(), "the session did not end within 10 s of a 0.3 s timeout"
    sess = got[0]
    assert sess.observations == observations and sess.clean is False and "ChannelTimeout" in sess.error, sess.error


def test_stalled_compiler_times_out_then_next_session_is_clean():
    with mlbridge.PipeServer(format="bitstream", timeout=0.3) as srv:
        got: list = []
        t, fin, fout = _plus_one_session(srv, got)
        os.write(fout, b'{"observation":1}\n')       # then nothing: the compiler hangs mid-message
        _ends_with_timeout(t, got, 1)
        os.close(fout)
        os.close(fin)

        # The next compiler meets fresh FIFOs: no byte of the old session, no
        # stale wake-up. Its pauses span watchdog periods (timeout / 8) yet stay
        # far below the timeout: a pause of 0.24 s against 0.3 s raced it on a
        # loaded machine (issue 26).
        srv.timeout = 4.0
        got.clear()
        t = serve_session_in_thread(srv, lambda obs: int(obs["x"][0]) * 2, got, timeout=5)
        fin, fout = connect_raw(srv.base)
        os.write(fout, B.header(FEATS, ADV))
        for i in range(3):
            time.sleep(0.6 * i)    # over a watchdog period (0.5 s), under a third of the timeout
            os.write(fout, B.observation(i, FEATS, [np.array([i + 5])]))
            assert os.read(fin, 8) == np.int64(2 * (i + 5)).tobytes()
        os.close(fout)
        t.join(10)
        os.close(fin)
        assert got[0].clean is True and got[0].observations == 3, got[0]


def test_no_timeout_means_reads_wait():
    with mlbridge.PipeServer(format="bitstream", timeout=None) as srv:
        got: list = []
        t = serve_session_in_thread(srv, lambda obs: 7, got, timeout=5)
        fin, fout = connect_raw(srv.base)
        os.write(fout, B.header(FEATS, ADV))
        time.sleep(0.3)
        os.write(fout, B.observation(0, FEATS, [np.array([1])]))
        assert os.read(fin, 8) == np.int64(7).tobytes()
        os.close(fout)
        t.join(10)
        os.close(fin)
        assert got[0].clean is True and got[0].observations == 1


def test_forked_child_still_times_out():
    """The watchdog thread does not survive fork(): the child starts its own."""
    with mlbridge.PipeServer(format="bitstream", timeout=0.3) as srv:
        got: list = []
        t = serve_session_in_thread(srv, lambda obs: 1, got, timeout=5)
        fin, fout = connect_raw(srv.base)
        os.write(fout, B.header(FEATS, ADV) + B.observation(0, FEATS, [np.array([1])]))
        assert os.read(fin, 8) == np.int64(1).tobytes()
        os.close(fout)
        t.join(10)
        os.close(fin)
        assert srv.channel._watchdog is not None
        pid = os.fork()
        if pid == 0:   # the child: a compiler that stalls mid-message must time out
            code = 1
            try:
                child: list = []
                t = serve_session_in_thread(srv, lambda obs: 1, child, timeout=5)
                fin, fout = connect_raw(srv.base)
                os.write(fout, B.header(FEATS, ADV) + b'{"observation":0}\n')
                t.join(5)
                code = 0 if child and "ChannelTimeout" in (child[0].error or "") else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


def test_compiler_silent_between_messages_times_out():
    """The hot loop's read after a reply (ServerChannel.refiller, the buffer
    empty) is bounded too: a compiler that goes quiet at a message boundary,
    pipe still open, ends the session with ChannelTimeout. Three questions
    first, one write each: the first reads set up the blocking descriptor, so
    the silent wait is the refiller's own read (whose wake-up byte must not
    reach the decoder, which would call it a protocol error)."""
    with mlbridge.PipeServer(format="bitstream", timeout=0.3) as srv:
        got: list = []
        t, fin, fout = _plus_one_session(srv, got)
        for i in (1, 2):
            os.write(fout, B.observation(i, FEATS, [np.array([i + 1])]))
            assert os.read(fin, 8) == np.int64(i + 2).tobytes()
        _ends_with_timeout(t, got, 3)   # nothing more is written
        os.close(fout)
        os.close(fin)
