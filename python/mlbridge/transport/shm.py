"""Shared-memory channel: the compiler and the model exchange the same byte
streams as over named pipes, through two rings in one file ``BASE.shm``
mapped by both processes (docs/shm.md). A waiting side spins for a bounded
time, then sleeps on a futex (``syscall(SYS_futex)`` through ctypes, which
releases the GIL).

:class:`ShmServer` is the shared-memory adapter of :class:`SessionServer`
(the same policies, formats, sessions and statistics as :class:`~mlbridge.PipeServer`);
:class:`ShmClient` is :class:`~mlbridge.PipeClient` on it. The C++ side is ``ShmModelRunner``.

The offsets below are those of ``src/shm/layout.h``: change both together.
The Python side relies on x86-64's ordering of plain loads and stores (TSO);
other machines are refused with an error.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import platform
import select
import stat
import struct
import threading
import time
from typing import Any, Callable, Iterable, Optional

from .channel import Deadline, InputBuffer, channel_base, rearm_and_fill, remove_channel_dir
from .client import PipeClient
from ..core.errors import ChannelTimeout, MLBridgeError, PeerClosed, ProtocolError
from .session_server import SessionServer

__all__ = ["ShmServer", "ShmClient", "ShmServerChannel", "ShmClientChannel", "DEFAULT_SPIN_US", "DEFAULT_RING_BYTES"]

#: Default busy-wait budget per wait, in microseconds (0 = never spin).
DEFAULT_SPIN_US = 50
#: Default capacity of each ring; longer messages stream through in pieces.
DEFAULT_RING_BYTES = 1 << 20

MAGIC = b"MLBRSHM1"
LAYOUT_VERSION = 1
CONTROL_BYTES = 4096
MIN_RING, MAX_RING = 4096, 1 << 30
SERVER_GONE = 0xFFFFFFFF
# u32 word indexes (byte offset / 4), as in src/shm/layout.h.
VERSION, DATA_OFFSET, REQUEST_BYTES, REPLY_BYTES, SERVER_PID = 2, 3, 4, 5, 6
CLIENT_PID, SESSION, CLIENT_CLOSED, CLIENT_WAITING, REQ_TAIL, REP_HEAD, CLIENT_BELL, CLIENT_CPU = range(16, 24)
ACCEPTED, SERVER_CLOSED, SERVER_WAITING, REQ_HEAD, REP_TAIL, SERVER_BELL, SERVER_CPU = range(32, 39)

_MASK = 0xFFFFFFFF
#: The "waiting" word of a side that sleeps for freed ring space (1: any event).
_WAIT_SPACE = 2
#: Futex sleeps are cut into slices this long so that a dead peer is noticed.
_SLICE_MS = 20

# ---------------------------------------------------------------------------
# futex and friends, through libc
# ---------------------------------------------------------------------------

_SYS_FUTEX = {"x86_64": 202, "amd64": 202}.get(platform.machine().lower())
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1
_libc: Any = None


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _check_platform() -> None:
    global _libc
    if _SYS_FUTEX is None or not hasattr(os, "pidfd_open"):
        raise MLBridgeError(f"the shared-memory channel needs Linux on x86-64 (this is {platform.machine()}); "
                            "use PipeServer")
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.syscall.restype = ctypes.c_long
        lib.sched_getcpu.restype = ctypes.c_int
        lib.sched_getcpu.argtypes = []
        _libc = lib


class _Futex:
    """One bell's futex calls, their ctypes arguments built once: each call
    through ctypes costs 1-2 us, a third of it converting the arguments (one
    message waits once and wakes once). One thread per endpoint waits."""

    __slots__ = ("_addr", "_ts", "_ts_ref")

    def __init__(self, addr: int) -> None:
        self._addr = ctypes.c_void_p(addr)
        self._ts = _Timespec(0, 0)
        self._ts_ref = ctypes.byref(self._ts)

    def wait(self, expected: int, timeout_ms: int) -> bool:
        """Sleeps while the u32 bell equals ``expected``; False on timeout."""
        ts = self._ts
        ts.tv_sec, ts.tv_nsec = divmod(timeout_ms, 1000)
        ts.tv_nsec *= 1000000
        r = _libc.syscall(_SYS_FUTEX, self._addr, _FUTEX_WAIT, ctypes.c_long(expected), self._ts_ref, None, 0)
        return not (r != 0 and ctypes.get_errno() == errno.ETIMEDOUT)

    def wake(self) -> None:
        _libc.syscall(_SYS_FUTEX, self._addr, _FUTEX_WAKE, 0x7FFFFFFF, None, None, 0)


# A locked instruction orders our earlier stores before later loads (x86):
# acquiring and releasing an uncontended lock is one, for ~0.1 us.
_fence_lock = threading.Lock()


def _fence() -> None:
    _fence_lock.acquire()
    _fence_lock.release()


class _PeerWatch:
    """Whether the peer process still runs (a pidfd turns readable at exit, even as a zombie)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd = -1
        self._poll: Any = None
        try:
            self._fd = os.pidfd_open(pid)
        except OSError:
            return
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)

    def alive(self) -> bool:
        return self._poll is not None and not self._poll.poll(0)

    def close(self) -> None:
        fd, self._fd = self._fd, -1   # forgotten first: see ServerChannel._close_blocking
        if fd >= 0:
            os.close(fd)
        self._poll = None


_NOBODY = _PeerWatch.__new__(_PeerWatch)
_NOBODY.pid, _NOBODY._fd, _NOBODY._poll = 0, -1, None

# ---------------------------------------------------------------------------
# one mapped region, either end
# ---------------------------------------------------------------------------


class _End:
    """Rings, bells and the spin-then-block wait; ``server`` picks the side."""

    def __init__(self, fd: int, path: str, server: bool, spin_us: float) -> None:
        self.fd = fd
        self.path = path
        self.server = server
        self.spin_ns = int(max(0.0, spin_us) * 1000)
        size = os.fstat(fd).st_size
        # Populated now, so that no page faults land inside a request.
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        self.mm = mmap.mmap(fd, size, flags, mmap.PROT_READ | mmap.PROT_WRITE)
        self.mv = memoryview(self.mm)
        self.w = self.mv.cast("I")
        self._anchor = ctypes.c_char.from_buffer(self.mm)
        self.addr = ctypes.addressof(self._anchor)
        w = self.w
        req_cap, rep_cap = w[REQUEST_BYTES], w[REPLY_BYTES]
        req = w[DATA_OFFSET]
        rep = req + req_cap
        if server:
            self.out_off, self.out_cap, self.out_tail_w, self.out_head_w = rep, rep_cap, REP_TAIL, REP_HEAD
            self.in_off, self.in_cap, self.in_tail_w, self.in_head_w = req, req_cap, REQ_TAIL, REQ_HEAD
            self.my_bell, self.peer_bell, self.my_waiting, self.peer_waiting = (SERVER_BELL, CLIENT_BELL,
                                                                                SERVER_WAITING, CLIENT_WAITING)
            self.my_cpu, self.peer_cpu = SERVER_CPU, CLIENT_CPU
        else:
            self.out_off, self.out_cap, self.out_tail_w, self.out_head_w = req, req_cap, REQ_TAIL, REQ_HEAD
            self.in_off, self.in_cap, self.in_tail_w, self.in_head_w = rep, rep_cap, REP_TAIL, REP_HEAD
            self.my_bell, self.peer_bell, self.my_waiting, self.peer_waiting = (CLIENT_BELL, SERVER_BELL,
                                                                                CLIENT_WAITING, SERVER_WAITING)
            self.my_cpu, self.peer_cpu = CLIENT_CPU, SERVER_CPU
        self.my_futex = _Futex(self.addr + self.my_bell * 4)
        self.peer_futex = _Futex(self.addr + self.peer_bell * 4)
        self.out_ring = self.mv[self.out_off:self.out_off + self.out_cap]
        self.in_ring = self.mv[self.in_off:self.in_off + self.in_cap]
        self.out_tail = w[self.out_tail_w]
        self.in_head = w[self.in_head_w]
        self.session = 0
        self.peer = _NOBODY

    # -- bells -------------------------------------------------------------------
    def signal(self, freed_space: bool = False) -> None:
        """Bump our bell; wake the peer if it sleeps for this kind of event
        (freed space wakes only a producer waiting for space)."""
        w = self.w
        w[self.my_bell] = (w[self.my_bell] + 1) & _MASK
        _fence()
        waiting = w[self.peer_waiting]
        if (waiting == _WAIT_SPACE) if freed_space else waiting:
            self.my_futex.wake()

    def ring(self) -> None:
        """Bump our bell and wake unconditionally (cold paths)."""
        w = self.w
        w[self.my_bell] = (w[self.my_bell] + 1) & _MASK
        _fence()
        self.my_futex.wake()

    def wait(self, check: Callable[[], Optional[str]], deadline: Deadline,
             watch: Optional[Callable[[], bool]] = None, waiting: int = 1) -> Optional[str]:
        """Spin, then sleep, until ``check()`` says something; None on timeout.

        Returns "closed" when the peer process died. ``watch``: polled once a
        slice; True ends the wait with "watch".
        """
        e = check()
        if e is not None:
            return e
        w = self.w
        cpu = _libc.sched_getcpu()
        if self.spin_ns and w[self.peer_cpu] != cpu:
            end = time.perf_counter_ns() + self.spin_ns
            clock = time.perf_counter_ns
            while True:
                e = check()
                if e is not None:
                    return e
                if clock() >= end:
                    break
        w[self.my_cpu] = cpu & _MASK
        bell = self.peer_futex
        while True:
            seen = w[self.peer_bell]
            w[self.my_waiting] = waiting
            e = check()
            left = deadline.remaining_ms()
            if e is not None or left == 0:
                w[self.my_waiting] = 0
                return e
            woken = bell.wait(seen, _SLICE_MS if left < 0 else min(left, _SLICE_MS))
            w[self.my_waiting] = 0
            if not woken:
                if self.peer is not _NOBODY and not self.peer.alive():
                    return check() or "closed"
                if watch is not None and watch():
                    return "watch"

    # -- rings -------------------------------------------------------------------
    def available(self) -> int:
        return (self.w[self.in_tail_w] - self.in_head) & _MASK

    def read_into(self, buf: InputBuffer, need: int) -> int:
        """Move every available byte (room for ``need`` from buf.start) into ``buf``."""
        n = (self.w[self.in_tail_w] - self.in_head) & _MASK
        if not n:
            return 0
        cap = self.in_cap
        if n > cap:
            raise ProtocolError(f"the ring counters in {self.path} are inconsistent (corrupted control page?)")
        at = self.in_head & (cap - 1)
        src = self.in_ring
        with buf.free_view(max(need, buf.avail + n)) as dst:
            n = min(n, len(dst))
            first = min(n, cap - at)
            dst[:first] = src[at:at + first]
            if n > first:
                dst[first:n] = src[:n - first]
        buf.commit(n)
        self.in_head = (self.in_head + n) & _MASK
        self.w[self.in_head_w] = self.in_head
        self.signal(True)
        return n

    def write(self, data: Any, deadline: Deadline, closed: Callable[[], bool], what: str) -> None:
        mv = memoryview(data).cast("B")
        try:
            total = mv.nbytes
            off = 0
            w = self.w
            cap = self.out_cap
            ring = self.out_ring
            while off < total:
                used = (self.out_tail - w[self.out_head_w]) & _MASK
                if used > cap:
                    raise ProtocolError(f"{what}: the ring counters in {self.path} are inconsistent")
                space = cap - used
                if space == 0:
                    w[self.out_tail_w] = self.out_tail
                    self.signal()
                    e = self.wait(lambda: "ready" if (self.out_tail - w[self.out_head_w]) & _MASK < cap
                                  else ("closed" if closed() else None), deadline, waiting=_WAIT_SPACE)
                    if e is None:
                        raise ChannelTimeout(f"{what}: write of {total} bytes timed out ({off} written)")
                    if e == "closed":
                        raise PeerClosed(f"{what}: the peer went away")
                    continue
                n = min(space, total - off)
                at = self.out_tail & (cap - 1)
                first = min(n, cap - at)
                ring[at:at + first] = mv[off:off + first]
                if n > first:
                    ring[:n - first] = mv[off + first:off + n]
                off += n
                self.out_tail = (self.out_tail + n) & _MASK
            w[self.out_tail_w] = self.out_tail
            self.signal()
        finally:
            mv.release()

    def close(self) -> None:
        self.peer.close()
        for attr in ("_anchor", "w", "out_ring", "in_ring", "mv"):
            obj = getattr(self, attr, None)
            if isinstance(obj, memoryview):
                obj.release()
            setattr(self, attr, None)
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:   # a view still exported: the mapping dies with it
                pass
            self.mm = None
        fd, self.fd = self.fd, -1   # forgotten first: see ServerChannel._close_blocking
        if fd >= 0:
            os.close(fd)


def _memory_folder() -> Optional[str]:
    """Where a fresh channel folder goes: a memory file system if there is one
    (on a disk file system the region's dirty pages would be written back)."""
    for d in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if d and os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK):
            return d
    return None


def _shm_path(base: str) -> str:
    return base + ".shm"


def _ring_size(n: int) -> int:
    size = MIN_RING
    while size < n and size < MAX_RING:
        size <<= 1
    return size


def _header_ok(fd: int) -> bool:
    head = os.pread(fd, 24, 0)
    if len(head) < 24 or head[:8] != MAGIC:
        return False
    version, data_off, req, rep = struct.unpack_from("<IIII", head, 8)
    size = os.fstat(fd).st_size
    return (version == LAYOUT_VERSION and data_off == CONTROL_BYTES and all(
        MIN_RING <= c <= MAX_RING and not c & (c - 1) for c in (req, rep)) and size >= CONTROL_BYTES + req + rep)


# ---------------------------------------------------------------------------
# model side
# ---------------------------------------------------------------------------

class ShmServerChannel:
    """The model's end of ``BASE.shm``: a :class:`SessionChannel`.

    The region is created under a temporary name and renamed into place, so
    a compiler never maps a half-written one. One session at a time: a
    compiler claims the channel (bumps ``session``), the model accepts it
    (discarding stale request bytes) and serves it until the compiler ends
    it, leaves or dies.
    """

    def __init__(self, base: Optional[str] = None, *, spin_us: float = DEFAULT_SPIN_US,
                 ring_bytes: int = DEFAULT_RING_BYTES) -> None:
        _check_platform()
        self._created_dir: Optional[str] = None
        self._end: Optional[_End] = None
        base, self._created_dir = channel_base(base, _memory_folder())
        self.base = base
        self.path = _shm_path(base)
        self.buf = InputBuffer()
        self._active = False
        self._watch_poll: Any = None
        try:
            self._refuse_if_served()
            cap = _ring_size(int(ring_bytes))
            tmp = f"{self.path}.tmp.{os.getpid()}"
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                os.ftruncate(fd, CONTROL_BYTES + 2 * cap)
                os.pwrite(fd, struct.pack("<IIIII", LAYOUT_VERSION, CONTROL_BYTES, cap, cap, os.getpid()), 8)
                os.pwrite(fd, struct.pack("<I", _MASK), CLIENT_CPU * 4)
                os.pwrite(fd, struct.pack("<I", _MASK), SERVER_CPU * 4)
                os.pwrite(fd, MAGIC, 0)
                self._end = _End(fd, self.path, True, spin_us)
                os.rename(tmp, self.path)
            except BaseException:
                if self._end is None:
                    os.close(fd)
                os.unlink(tmp)
                raise
        except BaseException:
            self.close()
            raise

    def _refuse_if_served(self) -> None:
        # Two models on one channel would split sessions between them.
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return
        try:
            if _header_ok(fd):
                pid, = struct.unpack("<I", os.pread(fd, 4, SERVER_PID * 4))
                closed, = struct.unpack("<I", os.pread(fd, 4, SERVER_CLOSED * 4))
                if closed != SERVER_GONE and _PeerWatch(pid).alive():
                    raise MLBridgeError(f"another model (pid {pid}) is already serving {self.base}")
        finally:
            os.close(fd)

    @property
    def spin_us(self) -> float:
        return self._end.spin_ns / 1000 if self._end else 0.0

    # -- session state ---------------------------------------------------------
    def _ended(self) -> bool:
        e = self._end
        w = e.w
        return w[CLIENT_CLOSED] == e.session or w[SESSION] != e.session

    def _accept(self) -> None:
        e = self._end
        w = e.w
        e.session = w[SESSION]
        e.peer.close()
        e.peer = _PeerWatch(w[CLIENT_PID])
        # Request bytes a dead compiler left are not this session's.
        e.in_head = w[REQ_TAIL]
        w[REQ_HEAD] = e.in_head
        self.buf.clear()
        w[ACCEPTED] = e.session
        e.ring()
        self._active = True

    def _finish_session(self) -> None:
        if self._active:
            self._active = False
            self._end.peer.close()
            self._end.peer = _NOBODY

    # -- the SessionChannel interface ----------------------------------------
    def refiller(self, deadline: Deadline) -> Callable[[], bool]:
        """``deadline.rearm(); fill(1, deadline)`` as one call, like the pipe channel's."""
        return rearm_and_fill(self.fill, deadline)

    def fill(self, need: int, deadline: Deadline) -> bool:
        """Buffer until ``need`` bytes are there; False at the end of the session."""
        buf = self.buf
        e = self._end
        while buf.end - buf.start < need:
            if not self._active:
                return False
            if e.read_into(buf, need):
                continue
            ev = e.wait(lambda: "data" if e.available() else ("closed" if self._ended() else None), deadline)
            if ev is None:
                raise ChannelTimeout(f"no data from the compiler within the timeout ({self.path})")
            if ev == "closed" and not e.available():
                return False
        return True

    def wait_start(self, deadline: Deadline, watch: Iterable[int] = ()) -> str:
        """Idle wait for a session's first bytes: "data", "eof", "watch" or "timeout"."""
        if self.buf.avail:
            return "data"
        e = self._end
        poll = None
        watch = list(watch)
        if watch:
            poll = select.poll()
            for fd in watch:
                poll.register(fd, select.POLLIN)
        w = e.w

        def check() -> Optional[str]:
            if self._active:
                if e.available():
                    return "data"
                if self._ended():
                    return "eof"
                return None
            return "new" if w[SESSION] != w[ACCEPTED] else None

        while True:
            ev = e.wait(check, deadline, (lambda: bool(poll.poll(0))) if poll is not None else None)
            if ev == "new":
                self._accept()
                continue
            if ev == "data":
                e.read_into(self.buf, 1)
                return "data"
            if ev in ("eof", "closed"):
                if not self._active:
                    continue
                if e.available():
                    continue
                self._finish_session()
                return "eof"
            if ev == "watch":
                return "watch"
            if poll is not None and poll.poll(0):
                return "watch"
            return "timeout"

    def pending(self) -> int:
        """Request bytes buffered or waiting in the ring."""
        e = self._end
        return self.buf.avail + (e.available() if e is not None and self._active else 0)

    def reopen_out(self) -> None:
        """After the end of a session: forget it (the next compiler claims anew)."""
        self._finish_session()

    def drain_in(self) -> int:
        """Nothing to drain: a compiler discards stale replies when it connects."""
        return 0

    def hang_up(self) -> None:
        """End the session from the model side: the compiler sees the channel closed."""
        e = self._end
        if self._active:
            e.w[SERVER_CLOSED] = e.session
            e.ring()
        self._finish_session()
        self.buf.clear()

    def write(self, data: Any, deadline: Deadline) -> None:
        """Send bytes to the compiler; a compiler that ended or died raises PeerClosed."""
        e = self._end
        if not self._active or self._ended():
            raise PeerClosed(f"reply: the compiler ended the session ({self.path})")
        e.write(data, deadline, lambda: self._ended() or not e.peer.alive(), "reply")

    def close(self) -> None:
        """Tell compilers the model is gone; remove the file and folder this channel created."""
        e = self._end
        if e is not None:
            try:
                e.w[SERVER_CLOSED] = SERVER_GONE
                e.ring()
                # Unlink only our own file (a new model may have replaced it).
                try:
                    st, mine = os.stat(self.path), os.fstat(e.fd)
                    if (st.st_ino, st.st_dev) == (mine.st_ino, mine.st_dev):
                        os.unlink(self.path)
                except FileNotFoundError:
                    pass
            finally:
                e.close()
                self._end = None
        self._created_dir = remove_channel_dir(self._created_dir)


class ShmServer(SessionServer):
    """Serve compiler sessions over shared memory: ``BASE.shm`` instead of FIFOs.

    ``spin_us``: busy-wait budget (microseconds of CPU) before each wait
    sleeps; 0 never spins. ``ring_bytes``: capacity of each ring. Every other
    argument and method is :class:`SessionServer`'s, as for PipeServer.
    Replies cannot go stale: a session is accepted before it is served.
    """

    def __init__(self, base: Optional[str] = None, *, spin_us: float = DEFAULT_SPIN_US,
                 ring_bytes: int = DEFAULT_RING_BYTES, **kwargs: Any) -> None:
        self._shm_args = dict(spin_us=spin_us, ring_bytes=ring_bytes)
        super().__init__(base, **kwargs)

    def _open_channel(self, base: Optional[str]) -> Any:
        return ShmServerChannel(base, **self._shm_args)

    @property
    def path(self) -> str:
        """The region file ``BASE.shm``."""
        return self.channel.path

    def pending_input(self) -> bool:
        return self.channel.pending() > 0


# ---------------------------------------------------------------------------
# compiler side
# ---------------------------------------------------------------------------

class ShmClientChannel:
    """The compiler's end: maps ``BASE.shm``, claims the channel (an exclusive
    ``flock``, released at close or death), and waits for the model to
    accept, retrying until the timeout while no live model is there."""

    def __init__(self, base: str, timeout: Optional[float], *, spin_us: float = DEFAULT_SPIN_US) -> None:
        _check_platform()
        self.base = os.fspath(base)
        self.path = _shm_path(self.base)
        self.buf = InputBuffer(1 << 12)
        self._end: Optional[_End] = None
        deadline = Deadline(timeout)
        delay = 0.001
        try:
            while True:
                why = self._try_open(spin_us)
                if why is None:
                    break
                if deadline.expired():
                    raise ChannelTimeout(f"no model at {self.base}: {why}")
                left = deadline.remaining_ms()
                time.sleep(min(delay, left / 1000.0) if left >= 0 else delay)
                delay = min(delay * 2, 0.05)
            self._claim(deadline)
        except BaseException:
            self.close()
            raise

    def _try_open(self, spin_us: float) -> Optional[str]:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            return f"{self.path} does not exist"
        except OSError as exc:
            raise PeerClosed(f"cannot open {self.path}: {exc.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or not _header_ok(fd):
                raise MLBridgeError(f"{self.path} is not a shared-memory channel of layout version {LAYOUT_VERSION}")
            if st.st_uid != os.geteuid() or st.st_mode & 0o077:
                raise MLBridgeError(f"channel file {self.path} is not private (mode {stat.S_IMODE(st.st_mode):04o})")
            end = _End(fd, self.path, False, spin_us)
        except BaseException:
            os.close(fd)
            raise
        pid = end.w[SERVER_PID]
        if end.w[SERVER_CLOSED] == SERVER_GONE or not _PeerWatch(pid).alive():
            end.close()
            return f"the model that created {self.path} (pid {pid}) is gone"
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            end.close()
            return f"another compiler is using {self.path}"
        end.peer = _PeerWatch(pid)
        self._end = end
        return None

    def _claim(self, deadline: Deadline) -> None:
        e = self._end
        w = e.w
        s = (w[SESSION] + 1) & _MASK
        if s in (0, SERVER_GONE):
            s = 1
        w[CLIENT_PID] = os.getpid()
        w[SESSION] = s
        e.session = s
        e.ring()
        ev = e.wait(lambda: "ok" if w[ACCEPTED] == s else ("closed" if self._closed_word() else None), deadline)
        if ev is None:
            raise ChannelTimeout(f"the model at {self.path} did not accept the session within the timeout")
        if ev == "closed":
            raise PeerClosed(f"the model at {self.path} closed the channel")
        # Replies a previous compiler left unread are not ours.
        e.in_head = w[REP_TAIL]
        w[REP_HEAD] = e.in_head
        e.out_tail = w[REQ_TAIL]

    def _closed_word(self) -> bool:
        c = self._end.w[SERVER_CLOSED]
        return c == self._end.session or c == SERVER_GONE

    def _gone(self) -> PeerClosed:
        e = self._end
        if not e.peer.alive():
            return PeerClosed(f"the model process (pid {e.peer.pid}) died ({self.path})")
        return PeerClosed(f"model closed the channel {self.path}")

    def write(self, data: Any, deadline: Deadline) -> None:
        """Send bytes to the model; a model that goes away raises PeerClosed."""
        if self._closed_word():
            raise self._gone()
        self._end.write(data, deadline, self._closed_word, f"channel {self.path}")

    def fill(self, need: int, deadline: Deadline) -> None:
        """Buffer until ``need`` bytes are there; PeerClosed when the model hangs up or dies."""
        buf = self.buf
        e = self._end
        while buf.end - buf.start < need:
            if e.read_into(buf, need):
                continue
            ev = e.wait(lambda: "data" if e.available() else ("closed" if self._closed_word() else None), deadline)
            if ev is None:
                raise ChannelTimeout(f"no reply from the model at {self.path} within the timeout")
            if ev == "closed" and not e.available():
                raise self._gone()

    def drain(self) -> int:
        """Nothing to drain: stale replies were discarded when the session was claimed."""
        return 0

    def pending(self) -> int:
        """Bytes already buffered or waiting in the reply ring."""
        return self.buf.avail + (self._end.available() if self._end else 0)

    def close(self) -> None:
        e = self._end
        if e is None:
            return
        self._end = None
        try:
            if e.session:
                e.w[CLIENT_CLOSED] = e.session
                e.ring()
        finally:
            e.close()   # closing the descriptor releases the claim


class ShmClient(PipeClient):
    """:class:`~mlbridge.PipeClient` over shared memory (``BASE.shm``, made by an ShmServer)."""

    def __init__(self, base: str, features: Any, advice: Any, *, spin_us: float = DEFAULT_SPIN_US,
                 **kwargs: Any) -> None:
        self._spin_us = spin_us
        super().__init__(base, features, advice, **kwargs)

    def _open_channel(self, base: str, timeout: Optional[float]) -> Any:
        return ShmClientChannel(base, timeout, spin_us=self._spin_us)
