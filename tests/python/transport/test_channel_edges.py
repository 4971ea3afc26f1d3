"""Issue 26, mutation testing of transport/channel.py (a second sample),
pipe_server.py and transport/__init__.py (docs/testing.md, "Mutation
testing"): what the runs showed no test held. Each test names the mutants it
kills."""
from __future__ import annotations

import os
import stat

import pytest

from mlbridge.core.errors import ChannelTimeout, PeerClosed
from mlbridge.transport.channel import ClientChannel, Deadline, ServerChannel, rearm_and_fill

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation


def test_rearm_and_fill_restarts_the_deadline_and_asks_for_one_byte():
    """channel.rearm_and_fill mutant 1 (the shared-memory refiller): each call
    starts the message's clock over and reads at least one byte."""
    calls = []
    d = Deadline(5.0, lazy=True)
    d._at()                     # the clock of an earlier message
    d.at -= 100.0               # long expired
    refill = rearm_and_fill(lambda need, dl: calls.append((need, dl, dl.expired())) or True, d)
    assert refill() is True
    assert calls == [(1, d, False)]


def test_client_drain_discards_a_dead_compilers_replies():
    """ClientChannel.drain mutant 12: bytes waiting in BASE.in before a
    client's header (replies a dead compiler left unread) are discarded and
    counted; nothing is left to be taken for the first answer."""
    ch = ServerChannel()
    try:
        os.write(ch.in_fd, b"stale reply")
        cc = ClientChannel(ch.base, 5.0)
        try:
            assert cc.pending() == len(b"stale reply")
            assert cc.drain() == len(b"stale reply")
            assert cc.pending() == 0
            assert cc.drain() == 0
        finally:
            cc.close()
    finally:
        ch.close()


def test_client_write_to_a_model_that_closed_its_reply_pipe_is_peer_closed():
    """ClientChannel.write mutant 4 (no hang-up watch on BASE.in): a model
    that closed its end of BASE.in (gone as far as replies go) while the
    compiler's message waits for room in a full BASE.out ends the write with
    PeerClosed at once, not a ChannelTimeout after the whole timeout."""
    ch = ServerChannel()
    try:
        cc = ClientChannel(ch.base, 5.0)
        try:
            fd, ch.in_fd = ch.in_fd, -1
            os.close(fd)   # the model's only write end of BASE.in; it keeps BASE.out, unread
            with pytest.raises(PeerClosed, match="went away"):
                cc.write(b"x" * (8 << 20), Deadline(60.0))   # far more than the pipe holds
        finally:
            cc.close()
    finally:
        ch.close()


# ---- transport/__init__.py: open_server ------------------------------------------

def test_open_server_makes_the_transport_asked_for(tmp_path):
    """open_server: "pipe" is a PipeServer on BASE.in/BASE.out, "shm" a
    ShmServer on BASE.shm with the default spin budget unless one is given;
    the other arguments reach the server."""
    from mlbridge.transport import open_server
    from mlbridge.transport.pipe_server import PipeServer
    from mlbridge.transport.shm import DEFAULT_SPIN_US, ShmServer

    base = str(tmp_path / "p" / "ch")
    with open_server("pipe", base, format="json", timeout=3.0) as srv:
        assert type(srv) is PipeServer
        assert srv.channel.base == base and stat.S_ISFIFO(os.stat(base + ".in").st_mode)
        assert srv.format == "json" and srv.timeout == 3.0
    with open_server("shm", str(tmp_path / "s" / "ch"), format="bitstream", timeout=2.0) as srv:
        assert type(srv) is ShmServer
        assert srv.path == str(tmp_path / "s" / "ch") + ".shm"
        assert srv.channel.spin_us == DEFAULT_SPIN_US
        assert srv.format == "bitstream" and srv.timeout == 2.0
    with open_server("shm", None, spin_us=7) as srv:
        assert srv.channel.spin_us == 7.0
    with open_server("shm", None, spin_us=0) as srv:
        assert srv.channel.spin_us == 0.0


def test_open_server_refuses_an_unknown_transport():
    from mlbridge.transport import open_server
    with pytest.raises(ValueError, match=r"^unknown transport 'tcp' \(one of pipe, shm\)$"):
        open_server("tcp")


# ---- pipe_server.py ------------------------------------------------------------

def test_pipe_server_pending_input_sees_buffered_and_waiting_bytes():
    """PipeServer.pending_input: False on a quiet channel; True with one byte
    waiting in BASE.out, and with one byte already read into the buffer."""
    from mlbridge.transport.pipe_server import PipeServer
    with PipeServer(format="bitstream", timeout=5) as srv:
        assert srv.pending_input() is False
        w = os.open(srv.channel.out_path, os.O_WRONLY | os.O_NONBLOCK)
        try:
            os.write(w, b"x")
            assert srv.pending_input() is True
            assert srv.channel.wait_start(Deadline(5.0)) == "data"   # reads it into the buffer
            assert srv.channel.buf.avail == 1
            assert srv.pending_input() is True
        finally:
            os.close(w)


# ---- channel.py: ServerChannel.fill without a blocking descriptor ------------------

def test_fill_when_base_out_was_removed_mid_session_reads_by_polling():
    """ServerChannel.fill mutant 40: BASE.out removed while a compiler holds
    it (a temporary folder's cleanup) leaves no path to open the blocking
    descriptor, so fill() polls the descriptor it has: a one-byte message is
    data, the compiler's close is end of stream (False), both at once."""
    ch = ServerChannel()
    try:
        w = os.open(ch.out_path, os.O_WRONLY | os.O_NONBLOCK)
        os.unlink(ch.out_path)
        try:
            os.write(w, b"x")
            assert ch.fill(1, Deadline(30.0)) is True
            assert bytes(ch.buf.data[ch.buf.start:ch.buf.end]) == b"x"
            ch.buf.consume(1)
        finally:
            os.close(w)
        assert ch.fill(1, Deadline(30.0)) is False
        assert ch._blk_fd == -1   # it did poll
    finally:
        ch.close()


# ---- channel.py: InputBuffer ---------------------------------------------------------

def test_input_buffer_never_overwrites_bytes_a_kept_view_reads():
    """InputBuffer._reuse mutant 28: a message's tail that must move to the
    front to make room (the rest of it does not fit after it) moves into a
    fresh bytearray while a numpy view of the consumed bytes is alive; the
    view keeps its values, and the message arrives whole."""
    import numpy as np
    from mlbridge.transport.channel import InputBuffer

    r, w = os.pipe()
    try:
        buf = InputBuffer(16)
        os.write(w, bytes(range(1, 13)))
        assert buf.read_from(r, 12) == 12
        kept = np.frombuffer(buf.data, np.uint8, 8, 0)   # a policy's array of the first message
        kept.flags.writeable = False
        buf.consume(8)                                   # 4 bytes of the next message remain
        os.write(w, bytes(range(13, 19)))
        while buf.avail < 10:                             # 10 bytes from start: more than fit at offset 8
            buf.read_from(r, 10)
        assert kept.tolist() == list(range(1, 9))
        assert bytes(buf.data[buf.start:buf.end]) == bytes(range(9, 19))
        # Without a view, the tail moves to the front (in place or not).
        del kept
        buf.consume(8)
        os.write(w, bytes(range(19, 33)))
        while buf.avail < 16:
            buf.read_from(r, 16)
        assert bytes(buf.data[buf.start:buf.end]) == bytes(range(17, 33))
    finally:
        os.close(r)
        os.close(w)
