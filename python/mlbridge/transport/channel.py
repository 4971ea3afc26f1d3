"""Named-pipe channel: the FIFO pair ``BASE.in`` (model -> compiler) and
``BASE.out`` (compiler -> model), as docs/protocol.md "Named pipes" says.

Every read, write and open is bounded by a deadline: the model's reads of
BASE.out block (a watchdog thread enforces the deadline), everything else
waits in ``select.poll``. Reads go into one growable bytearray that decoders
parse in place.
"""
from __future__ import annotations

import errno
import fcntl
import os
import select
import stat
import struct
import sys
import tempfile
import termios
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Optional, Sequence

from ..core.errors import ChannelTimeout, MLBridgeError, PeerClosed

__all__ = ["InputBuffer", "ServerChannel", "ClientChannel", "Deadline", "PIPE_SIZE"]

#: Pipe capacity requested for both FIFOs (Linux F_SETPIPE_SZ): a whole
#: observation of up to this size is written and read in one system call.
PIPE_SIZE = 1 << 20

_POLLIN = select.POLLIN
_POLLOUT = select.POLLOUT
_POLLHUP = select.POLLHUP
_POLLERR = select.POLLERR


_UNARMED = -1.0   # Deadline.at before the clock was read (a real deadline is a monotonic time >= 0)


class Deadline:
    """A point in time; ``None`` seconds means never.

    ``lazy=True``: the clock starts at the first question asked (a wait that
    is actually needed), and :meth:`rearm` starts it over without a new
    object; hot paths keep one per channel, so a message whose bytes are
    already there costs no clock read and no allocation.
    """

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: Optional[float], lazy: bool = False) -> None:
        self.seconds = None if seconds is None else max(0.0, seconds)
        if seconds is None:
            self.at: Optional[float] = None
        else:
            self.at = _UNARMED if lazy else time.monotonic() + self.seconds

    def rearm(self) -> None:
        """Start over: the clock starts again at the next question."""
        if self.seconds is not None:
            self.at = _UNARMED

    def _at(self) -> Optional[float]:
        at = self.at
        if at == _UNARMED:
            at = self.at = time.monotonic() + self.seconds   # type: ignore[operator]
        return at

    def remaining_ms(self) -> int:
        """Milliseconds left for poll(); -1 = forever; 0 = expired."""
        at = self._at()
        if at is None:
            return -1
        left = at - time.monotonic()
        return 0 if left <= 0 else max(1, int(left * 1000 + 0.999))

    def expired(self) -> bool:
        at = self._at()
        return at is not None and time.monotonic() >= at


def _set_pipe_size(fd: int) -> None:
    # Best effort: bigger pipes let a large observation cross in one write/read.
    op = getattr(fcntl, "F_SETPIPE_SZ", None)
    if op is None:
        return
    try:
        if fcntl.fcntl(fd, getattr(fcntl, "F_GETPIPE_SZ", op)) < PIPE_SIZE:
            fcntl.fcntl(fd, op, PIPE_SIZE)
    except OSError:
        pass


_readv = os.readv   # a module global: one lookup less per read


def _local_count() -> int:
    x = object()   # one holder: this local
    return sys.getrefcount(x)


# Hot-path shortcuts read reference counts: the channel to skip a resize that
# looks for buffer exports (ServerChannel.refiller), the server to reuse an
# Observation nobody kept. They rely on CPython up to 3.13 counting a local
# passed to getrefcount twice (the local and the argument). Elsewhere (other
# interpreters; 3.14 may borrow the argument's reference) reference_count()
# is 0, never the count a shortcut expects, so the safe path always runs.
if sys.implementation.name == "cpython" and sys.version_info < (3, 14) and _local_count() == 2:
    reference_count = sys.getrefcount
else:
    def reference_count(obj: Any) -> int:
        return 0


def rearm_and_fill(fill: Callable[[int, Deadline], bool], deadline: Deadline) -> Callable[[], bool]:
    """A channel's refiller in general: ``deadline.rearm(); fill(1, deadline)``
    as one call (ServerChannel.refiller's fallback, ShmServerChannel's)."""
    def refill() -> bool:
        deadline.rearm()
        return fill(1, deadline)
    return refill


def pending_bytes(fd: int) -> int:
    """Bytes waiting in a pipe (FIONREAD)."""
    try:
        buf = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
        return struct.unpack("i", buf)[0]
    except OSError:
        return 0


class InputBuffer:
    """One growable bytearray that a file descriptor is read into.

    Decoders may hand out read-only numpy views of consumed bytes. The buffer
    never overwrites bytes while such a view is alive: before reusing space it
    checks for exports and, if any remain (a policy kept an array), continues
    in a fresh bytearray and leaves the old one to the views.
    """

    __slots__ = ("data", "start", "end", "home")

    def __init__(self, size: int = 1 << 16) -> None:
        self.data = bytearray(size)
        self.start = 0
        self.end = 0
        # Where an empty buffer starts filling again. A reader that knows the
        # length of the next message's text prefix sets it so that the tensor
        # bytes after the prefix land aligned: numpy on a misaligned float32
        # view takes a slow path (np.dot of 50,000 floats: 4x slower).
        self.home = 0

    @property
    def avail(self) -> int:
        return self.end - self.start

    def consume(self, n: int) -> None:
        self.start += n

    def clear(self) -> None:
        self.start = self.end
        self._reuse(0)

    def _exported(self) -> bool:
        # A bytearray refuses to resize while buffer exports (numpy views) exist;
        # pop+append is an O(1) resize round trip that detects exactly that.
        data = self.data
        try:
            last = data.pop()
        except BufferError:
            return True
        data.append(last)
        return False

    def _reuse(self, need: int) -> None:
        """Make room so that ``need`` bytes from ``start`` fit."""
        n = self.end - self.start
        cap = len(self.data)
        if n == 0 and self.start != self.home:
            if self._exported():
                self.data = bytearray(max(cap, need))
                cap = len(self.data)
            home = self.home if self.home + need <= cap else 0
            self.start = self.end = home
            if home + need <= cap:
                return
        if self.start + need <= cap:
            return
        if need <= cap and not self._exported():
            self.data[0:n] = self.data[self.start:self.end]   # same length: no resize
        else:
            size = cap
            while size < need:
                size *= 2
            new = bytearray(size)
            new[0:n] = self.data[self.start:self.end]
            self.data = new
        self.start, self.end = 0, n

    def free_view(self, need: int) -> memoryview:
        """The free space after ``end`` (with room for ``need`` bytes from
        start), to be filled and then committed; release the view before the
        next call."""
        if self.start + need > len(self.data) or (self.start == self.end and self.start != self.home):
            self._reuse(need)
        return memoryview(self.data)[self.end:]

    def commit(self, n: int) -> None:
        """Count ``n`` bytes written into free_view() as buffered."""
        self.end += n

    def read_from(self, fd: int, need: int) -> int:
        """One read from ``fd`` into free space (room for ``need`` bytes from start).

        Returns bytes read, 0 at end of stream; raises BlockingIOError when empty.
        """
        if self.start + need > len(self.data) or (self.start == self.end and self.start != self.home):
            self._reuse(need)
        end = self.end
        n = os.readv(fd, [memoryview(self.data)[end:]])
        self.end = end + n
        return n


def _poll(fds: Sequence[tuple], deadline: Deadline) -> list:
    p = select.poll()
    for fd, ev in fds:
        p.register(fd, ev)
    while True:
        ms = deadline.remaining_ms()
        try:
            return p.poll(ms)
        except InterruptedError:  # pragma: no cover - PEP 475 retries already
            continue


def write_all(fd: int, data: Any, deadline: Deadline, *, watch_hup: Optional[int] = None,
              what: str = "channel") -> None:
    """Write every byte of ``data`` to a non-blocking fd before the deadline.

    ``watch_hup``: an fd whose hang-up means the peer is gone (the model
    watches BASE.out while writing to BASE.in, which it also holds open).
    """
    off = 0
    if type(data) is bytes:
        # The common case: the message fits the pipe and goes in one call,
        # without a memoryview or a clock read.
        try:
            off = os.write(fd, data)
        except BlockingIOError:
            pass
        except BrokenPipeError:
            raise PeerClosed(f"{what}: the peer closed its end (EPIPE)") from None
        if off == len(data):
            return
    mv = memoryview(data).cast("B")
    total = mv.nbytes
    try:
        while True:
            try:
                off += os.write(fd, mv[off:] if off else mv)
            except BlockingIOError:
                pass
            except BrokenPipeError:
                raise PeerClosed(f"{what}: the peer closed its end (EPIPE)") from None
            if off >= total:
                return
            fds = [(fd, _POLLOUT)]
            if watch_hup is not None:
                fds.append((watch_hup, 0))
            events = _poll(fds, deadline)
            if not events:
                raise ChannelTimeout(f"{what}: write of {total} bytes timed out ({off} written)")
            for efd, ev in events:
                if efd == fd and ev & _POLLERR:
                    raise PeerClosed(f"{what}: the peer closed its end")
                if efd == watch_hup and ev & _POLLHUP:
                    raise PeerClosed(f"{what}: the peer went away while a reply was being written")
    finally:
        mv.release()


# ---------------------------------------------------------------------------
# Model side
# ---------------------------------------------------------------------------

def _private_dir(path: str, created: bool) -> None:
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise MLBridgeError(f"{path} is not a folder")
    if st.st_uid != os.geteuid():
        raise MLBridgeError(f"channel folder {path} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o077:
        if created:
            os.chmod(path, 0o700)
        else:
            raise MLBridgeError(
                f"channel folder {path} is accessible by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
                "use a private folder (mode 0700), or no base to get a fresh one"
            )


def remove_channel_dir(folder: Optional[str]) -> None:
    """Removes the folder :func:`channel_base` created, if it is empty now.
    Returns None, for ``self._created_dir = remove_channel_dir(...)``."""
    if folder is not None:
        try:
            os.rmdir(folder)
        except OSError:
            pass
    return None


def channel_base(base: Optional[str], parent: Optional[str] = None) -> tuple:
    """The model's channel base and the folder it had to create (or None).

    ``base`` None: a fresh private temporary folder (under ``parent`` if
    given). Otherwise the folder of ``base`` is created (0700) if missing,
    and must be private.
    """
    if base is None:
        folder = tempfile.mkdtemp(prefix="mlbridge-", dir=parent)
        return os.path.join(folder, "channel"), folder
    base = os.path.abspath(os.fspath(base))
    folder = os.path.dirname(base)
    created = None
    if not os.path.isdir(folder):
        os.makedirs(folder, mode=0o700, exist_ok=True)
        created = folder
    _private_dir(folder, created is not None)
    return base, created


class _ReadWatchdog:
    """Bounds ServerChannel's blocking reads: a daemon thread that looks, a
    few times per timeout, whether the read in progress has outlived its
    deadline, and wakes it if so (ServerChannel._kick). Costs the reader
    nothing per message: it only publishes which deadline it waits on."""

    def __init__(self, channel: "ServerChannel") -> None:
        self._channel = weakref.ref(channel)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mlbridge-read-watchdog", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            ch = self._channel()
            if ch is None:
                return
            d = ch._reading
            period = 0.5 if d is None or d.seconds is None else min(0.5, max(0.005, d.seconds / 8))
            if d is not None and d.expired():
                ch._kick(d)
            del ch, d
            if self._stop.wait(period):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)


# Channels with a watchdog: a forked child has none of their threads, so it
# starts its own at its next blocking read.
_WATCHED: "weakref.WeakSet[ServerChannel]" = weakref.WeakSet()


def _forget_watchdogs() -> None:
    for ch in list(_WATCHED):
        ch._watchdog = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_watchdogs)


def _close_fds(obj: Any, *attrs: str) -> None:
    """Close the descriptors held in ``obj``'s attributes and mark them closed (-1)."""
    for attr in attrs:
        fd = getattr(obj, attr)
        if fd >= 0:
            setattr(obj, attr, -1)   # first: an exception while closing must not leave it to close twice
            try:
                os.close(fd)
            except OSError:
                pass


class ServerChannel:
    """The model's end: creates the folder and FIFOs, holds them open between sessions.

    ``base`` None creates a private temporary folder. The model opens
    ``BASE.in`` read-write (never blocks, keeps the pipe alive between
    sessions) and ``BASE.out`` read-only non-blocking, once.
    """

    def __init__(self, base: Optional[str] = None) -> None:
        self._created_dir: Optional[str] = None
        self._created: list = []
        self.in_fd = -1
        self.out_fd = -1
        base, self._created_dir = channel_base(base)
        self.base = base
        self.in_path = base + ".in"
        self.out_path = base + ".out"
        self.buf = InputBuffer()
        self._poller: Any = None
        self._poller_fd = -1
        # Blocking reads bounded by a watchdog (see fill): the descriptor, the
        # out_fd it was opened for, and what the watchdog looks at.
        self._blk_fd = -1
        self._blk_for = -1
        self._reading: Optional[Deadline] = None
        self._kicked = False
        self._watchdog: Optional[_ReadWatchdog] = None
        try:
            for path in (self.in_path, self.out_path):
                self._make_fifo(path)
            self._refuse_if_served()
            self.in_fd = os.open(self.in_path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
            self.out_fd = os.open(self.out_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            _set_pipe_size(self.in_fd)
            _set_pipe_size(self.out_fd)
        except BaseException:
            self.close()
            raise

    def _make_fifo(self, path: str) -> None:
        try:
            os.mkfifo(path, 0o600)
            self._created.append(path)
        except FileExistsError:
            st = os.lstat(path)
            if not stat.S_ISFIFO(st.st_mode):
                raise MLBridgeError(f"{path} exists and is not a FIFO") from None
            if st.st_uid != os.geteuid():
                raise MLBridgeError(f"FIFO {path} belongs to another user") from None
        os.chmod(path, 0o600)

    def _refuse_if_served(self) -> None:
        # A write-only non-blocking open succeeds only if someone reads BASE.out:
        # another live model. Two models on one channel would split sessions.
        try:
            fd = os.open(self.out_path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno in (errno.ENXIO, errno.ENOENT):
                return
            raise
        os.close(fd)
        raise MLBridgeError(f"another model is already serving {self.base}")

    # -- reading BASE.out ------------------------------------------------------
    def _out_poller(self) -> Any:
        # One poll object per BASE.out descriptor, kept: this is the hot path.
        p = self._poller
        if p is None or self._poller_fd != self.out_fd:
            p = self._poller = select.poll()
            p.register(self.out_fd, _POLLIN)
            self._poller_fd = self.out_fd
        return p

    def fill(self, need: int, deadline: Deadline) -> bool:
        """Read until ``need`` bytes are buffered; False at end of stream.

        The read blocks, like a hand-written agent's: one system call per
        message, no poll() and no clock read. The deadline still holds: a
        watchdog thread (one per channel, waking a few times per timeout)
        sees a read that outlives it and wakes the reader by writing one byte
        into BASE.out; the reader then raises ChannelTimeout and the session
        is hung up (fresh FIFOs), so the byte never reaches a later session.
        Without a timeout the read blocks too, with no watchdog: a poll()
        before each read would put a second wake-up and system call between
        the compiler's write and the answer (issue 24: 15-26 against 9-13 us
        from the compiler's write to the read's return, stock llc-19, medians
        per decision; docs/llvm-interop.md). Without a
        blocking descriptor, poll() waits instead.
        """
        buf = self.buf
        fd = self._blk_fd if self._blk_for == self.out_fd else self._blocking_fd()
        if fd >= 0:
            if self._watchdog is None and deadline.seconds is not None:
                self._watchdog = _ReadWatchdog(self)
                _WATCHED.add(self)
            while buf.end - buf.start < need:
                self._reading = deadline
                try:
                    n = buf.read_from(fd, need)
                finally:
                    self._reading = None
                if self._kicked:
                    self._timed_out()
                if n == 0:
                    return False
            return True
        fd = self.out_fd
        poller = self._out_poller()
        while buf.end - buf.start < need:
            events = poller.poll(deadline.remaining_ms())
            if not events:
                raise ChannelTimeout(f"no data from the compiler within the timeout ({self.base})")
            try:
                if buf.read_from(fd, need) == 0:
                    return False
            except BlockingIOError:
                continue
        return True

    def refiller(self, deadline: Deadline) -> Callable[[], bool]:
        """For one session's hot loop: a function that restarts ``deadline``
        and reads into the empty buffer, i.e. ``deadline.rearm(); fill(1,
        deadline)``, with the same read, watchdog and errors in one call (this
        runs once per decision). Anything unusual (no blocking descriptor yet,
        no watchdog yet for a timeout, a policy that kept a view of the
        buffer) goes through fill()."""
        fill = self.fill
        buf = self.buf
        timed = deadline.seconds is not None
        # rearm() without a call: with a timeout the clock starts when the
        # watchdog looks; without one there is no clock (``at`` stays None).
        unarmed = _UNARMED if timed else None

        def refill() -> bool:
            deadline.at = unarmed
            fd = self._blk_fd
            if fd < 0 or self._blk_for != self.out_fd or (self._watchdog is None and timed):
                return fill(1, deadline)   # the blocking descriptor (and a timeout's watchdog) start there
            data = buf.data
            # Is a view of the old bytes alive (a policy kept an array)? Every
            # buffer export holds a reference to the bytearray, so with only
            # buf.data, `data` and the argument holding it there is none;
            # otherwise InputBuffer._exported() says for sure.
            if reference_count(data) != 3 and buf._exported():
                return fill(1, deadline)   # fill() moves to a fresh buffer
            home = buf.home
            buf.start = buf.end = home
            self._reading = deadline
            try:
                n = _readv(fd, [memoryview(data)[home:]])
            finally:
                self._reading = None
            if self._kicked:
                self._timed_out()
            buf.end = home + n
            return n > 0
        return refill

    def _timed_out(self) -> None:
        """The watchdog woke the read (see fill): the wait outlived its deadline."""
        self._kicked = False
        raise ChannelTimeout(f"no data from the compiler within the timeout ({self.base})")

    def _blocking_fd(self) -> int:
        """A blocking descriptor on the current BASE.out (same pipe as out_fd)."""
        if self._blk_for != self.out_fd:
            self._close_blocking()
            try:
                fd = os.open(self.out_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
            except OSError:
                return -1
            if os.fstat(fd).st_ino != os.fstat(self.out_fd).st_ino:   # the path was replaced meanwhile
                os.close(fd)
                return -1
            self._blk_fd, self._blk_for = fd, self.out_fd
        return self._blk_fd

    def _close_blocking(self) -> None:
        # Forget the descriptor before closing it: a signal handler that raises
        # (SIGTERM -> SystemExit) between the two must not make a later close()
        # close the number again, by then perhaps another file's.
        fd = self._blk_fd
        self._blk_fd = self._blk_for = -1
        if fd >= 0:
            os.close(fd)

    def _kick(self, deadline: Deadline) -> None:
        """Watchdog side: wake a read that is still waiting on ``deadline``."""
        if self._reading is not deadline:
            return
        self._kicked = True
        try:
            fd = os.open(self.out_path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        try:
            os.write(fd, b"\0")
        except OSError:
            pass
        finally:
            os.close(fd)

    def wait_start(self, deadline: Deadline, watch: Iterable[int] = ()) -> str:
        """Idle wait for a session's first bytes: "data", "eof", "watch" or "timeout"."""
        if self.buf.avail:
            return "data"
        fds = [(self.out_fd, _POLLIN)] + [(w, _POLLIN) for w in watch]
        events = _poll(fds, deadline)
        if not events:
            return "timeout"
        for fd, _ in events:
            if fd == self.out_fd:
                try:
                    n = self.buf.read_from(fd, 1)
                except BlockingIOError:
                    return "data" if self.buf.avail else "retry"
                return "data" if n else "eof"
        return "watch"

    def reopen_out(self) -> None:
        """After end of stream: open BASE.out again, then close the old descriptor.

        The new descriptor exists before the old closes, so the pipe always has
        a reader and a compiler that is already connecting loses nothing.
        """
        new = os.open(self.out_path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        old, self.out_fd = self.out_fd, new
        os.close(old)
        self._close_blocking()
        _set_pipe_size(new)

    def drain_in(self) -> int:
        """Discard reply bytes a dead compiler left unread in BASE.in."""
        total = 0
        while True:
            n = pending_bytes(self.in_fd)
            if n <= 0:
                return total
            try:
                total += len(os.read(self.in_fd, n))
            except BlockingIOError:
                return total

    def hang_up(self) -> None:
        """End the session from the model side (bitstream has no error message).

        Both FIFOs are replaced by fresh ones at the same paths (rename is
        atomic), then the old descriptors are closed: the compiler of the
        failed session, which holds the old FIFOs, sees end of stream on
        BASE.in and EPIPE on BASE.out, while a compiler that connects next
        opens the new FIFOs and never meets the old session's bytes or
        hang-up. Nothing waits for the old compiler.
        """
        fresh = []
        try:
            for path, flags in ((self.out_path, os.O_RDONLY), (self.in_path, os.O_RDWR)):
                tmp = f"{path}.{os.getpid()}.new"
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                os.mkfifo(tmp, 0o600)
                os.chmod(tmp, 0o600)
                fd = os.open(tmp, flags | os.O_NONBLOCK | os.O_CLOEXEC)
                fresh.append((tmp, path, fd))
            # Renames back to back: the window where a connecting compiler
            # could get one old and one new FIFO is as short as possible.
            for tmp, path, _ in fresh:
                os.rename(tmp, path)
        except BaseException:
            for tmp, _, fd in fresh:
                os.close(fd)
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
            raise
        old_out, old_in = self.out_fd, self.in_fd
        self.out_fd, self.in_fd = fresh[0][2], fresh[1][2]
        self._close_blocking()
        self._kicked = False
        for fd in (old_out, old_in):
            if fd >= 0:
                os.close(fd)
        _set_pipe_size(self.out_fd)
        _set_pipe_size(self.in_fd)
        self.buf.clear()

    # -- writing BASE.in -------------------------------------------------------
    def write(self, data: Any, deadline: Deadline) -> None:
        """Send bytes to the compiler; a compiler that hangs up aborts the write."""
        write_all(self.in_fd, data, deadline, watch_hup=self.out_fd, what="reply")

    def close(self) -> None:
        """Close descriptors and remove the FIFOs and folder this channel created."""
        if self._watchdog is not None:
            self._watchdog.stop()
            self._watchdog = None
        self._close_blocking()
        _close_fds(self, "in_fd", "out_fd")
        for path in self._created:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self._created = []
        self._created_dir = remove_channel_dir(self._created_dir)


# ---------------------------------------------------------------------------
# Compiler side
# ---------------------------------------------------------------------------

class ClientChannel:
    """The compiler's end. Opens ``BASE.in`` for reading, then ``BASE.out`` for
    writing (LLVM's order), retrying with a short bounded backoff until the
    timeout while the model is not there yet."""

    def __init__(self, base: str, timeout: Optional[float]) -> None:
        self.base = os.fspath(base)
        self.in_path = self.base + ".in"
        self.out_path = self.base + ".out"
        self.in_fd = -1
        self.out_fd = -1
        self.buf = InputBuffer(1 << 12)
        deadline = Deadline(timeout)
        try:
            self.in_fd = self._open(self.in_path, os.O_RDONLY, deadline)
            self.out_fd = self._open(self.out_path, os.O_WRONLY, deadline)
        except BaseException:
            self.close()
            raise

    def _open(self, path: str, mode: int, deadline: Deadline) -> int:
        delay = 0.001
        while True:
            try:
                fd = os.open(path, mode | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as exc:
                # ENOENT: no model yet; ENXIO: FIFO exists but nobody reads it yet.
                if exc.errno not in (errno.ENOENT, errno.ENXIO):
                    raise PeerClosed(f"cannot open {path}: {exc.strerror}") from None
                if deadline.expired():
                    why = "does not exist" if exc.errno == errno.ENOENT else "has no model reading it"
                    raise ChannelTimeout(f"no model at {self.base}: {path} {why}") from None
                left = deadline.remaining_ms()
                time.sleep(min(delay, left / 1000.0) if left >= 0 else delay)
                delay = min(delay * 2, 0.05)
                continue
            if mode == os.O_WRONLY:
                _set_pipe_size(fd)
            return fd

    def write(self, data: Any, deadline: Deadline) -> None:
        """Send bytes to the model; a model that goes away raises PeerClosed."""
        write_all(self.out_fd, data, deadline, watch_hup=self.in_fd, what=f"channel {self.base}")

    def fill(self, need: int, deadline: Deadline) -> None:
        """Read until ``need`` bytes are buffered; PeerClosed at end of stream."""
        buf = self.buf
        fd = self.in_fd
        while buf.end - buf.start < need:
            events = _poll(((fd, _POLLIN),), deadline)
            if not events:
                raise ChannelTimeout(f"no reply from the model at {self.base} within the timeout")
            try:
                n = buf.read_from(fd, need)
            except BlockingIOError:
                continue
            if n == 0:
                raise PeerClosed(f"model closed the channel {self.base}")

    def drain(self) -> int:
        """Discard bytes waiting in BASE.in (a FIFO; a regular file is a replay)."""
        total = 0
        if not stat.S_ISFIFO(os.fstat(self.in_fd).st_mode):
            return 0
        while True:
            n = pending_bytes(self.in_fd)
            if n <= 0:
                return total
            try:
                got = os.read(self.in_fd, n)
            except BlockingIOError:
                return total
            if not got:
                return total
            total += len(got)

    def pending(self) -> int:
        """Bytes already buffered or waiting in BASE.in."""
        return self.buf.avail + pending_bytes(self.in_fd)

    def close(self) -> None:
        _close_fds(self, "out_fd", "in_fd")
