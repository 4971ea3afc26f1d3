"""Shared fixtures: the package from the source tree, threaded servers,
subprocess helpers that never leave a process behind."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")
VECTORS = os.path.join(ROOT, "tests", "vectors")
HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers")

# Test the source tree, not whatever copy is installed.
if sys.path[0] != PYDIR:
    sys.path.insert(0, PYDIR)

import mlbridge  # noqa: E402


def child_env(**extra: str) -> Dict[str, str]:
    """Environment for Python subprocesses that must import this mlbridge."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if env.get("MUTANT_UNDER_TEST") == "stats":
        # mutmut's coverage pass (scripts/mutation.sh): a child's hits would be lost
        # anyway, and recording them needs mutmut's config, read from the child's
        # working folder. A child under a real mutant keeps it, so it can kill it.
        del env["MUTANT_UNDER_TEST"]
    env.update(extra)
    return env


class ServerThread:
    """A PipeServer serving in a background thread; errors are kept, not lost."""

    def __init__(self, policy: Any, sessions: Optional[int] = 1, wait: float = 10.0, **kw: Any) -> None:
        kw.setdefault("timeout", 5.0)
        self.server = mlbridge.PipeServer(**kw)
        self.policy = policy
        self.sessions: List[mlbridge.Session] = []
        self._error: Optional[BaseException] = None
        self._error_read = False
        self._n = sessions
        self._wait = wait
        #: released once per finished session: wait on it instead of sleeping
        self.finished = threading.Semaphore(0)
        self.thread = threading.Thread(target=self._run, daemon=True)

    @property
    def base(self) -> str:
        return self.server.base

    @property
    def error(self) -> Optional[BaseException]:
        """What the server thread raised. A test that expects an error reads
        it here; one nobody read fails the test at teardown (issue 26)."""
        self._error_read = True
        return self._error

    @error.setter
    def error(self, exc: Optional[BaseException]) -> None:
        self._error = exc

    def check_error(self) -> None:
        if self._error is not None and not self._error_read:
            raise AssertionError(f"the server thread raised, and the test never looked: {self._error!r}") \
                from self._error

    def _run(self) -> None:
        try:
            if self._n is None:
                self.sessions.extend(self.server.serve(self.policy, sessions=None, timeout=self._wait))
            else:
                for _ in range(self._n):
                    try:
                        s = self.server.serve_session(self.policy, timeout=self._wait)
                    except Exception as exc:   # bitstream policy errors surface here
                        self.error = exc
                        continue
                    finally:
                        self.finished.release()
                    if s is None:
                        break
                    self.sessions.append(s)
        except BaseException as exc:  # pragma: no cover - reported by join()
            self.error = exc

    def __enter__(self) -> "ServerThread":
        self.thread.start()
        return self

    def wait_session(self, timeout: float = 10.0) -> None:
        """Block until the server has finished one more session."""
        assert self.finished.acquire(timeout=timeout), "server did not finish a session"

    def join(self, timeout: float = 15.0) -> List[mlbridge.Session]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "server thread did not finish"
        return self.sessions

    def __exit__(self, *exc: Any) -> None:
        self.thread.join(15.0)
        self.server.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., ServerThread]]:
    """serve(policy, sessions=1, **PipeServer kwargs) -> running ServerThread."""
    started: List[ServerThread] = []

    def start(policy: Any, sessions: Optional[int] = 1, **kw: Any) -> ServerThread:
        st = ServerThread(policy, sessions, **kw)
        started.append(st)
        return st.__enter__()

    yield start
    for st in started:
        st.__exit__(None, None, None)
    for st in started:
        st.check_error()


class Procs:
    """Subprocesses started by a test, each in its own process group; all are
    killed and reaped at the end of the test."""

    def __init__(self) -> None:
        self.procs: List[subprocess.Popen] = []

    def start(self, args: List[str], **kw: Any) -> subprocess.Popen:
        kw.setdefault("env", child_env())
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(args, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def python(self, code: str, *args: str, **kw: Any) -> subprocess.Popen:
        return self.start([sys.executable, "-c", code, *args], **kw)

    def kill(self, p: subprocess.Popen) -> None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()

    def close(self) -> None:
        for p in self.procs:
            self.kill(p)
            for s in (p.stdout, p.stderr):
                if s is not None:
                    s.close()


@pytest.fixture
def procs() -> Iterator[Procs]:
    ps = Procs()
    yield ps
    ps.close()


def wait_ready(p: subprocess.Popen, timeout: float = 20.0) -> Dict[str, Any]:
    """Read the ``{"event":"ready",...}`` line a helper process prints."""
    import select
    fd = p.stdout.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    line = b""
    while not line.endswith(b"\n"):
        if not poller.poll(int(timeout * 1000)):
            raise TimeoutError("helper process did not become ready")
        chunk = os.read(fd, 1)
        if not chunk:
            raise RuntimeError(f"helper process exited (rc={p.wait()})")
        line += chunk
    return json.loads(line)


@pytest.fixture
def testpeer() -> str:
    """Path of the C++ test peer (MLBRIDGE_TESTPEER). Missing: skip locally,
    fail under CI (CI set), so CI never passes without cross-language tests."""
    path = os.environ.get("MLBRIDGE_TESTPEER")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("MLBRIDGE_TESTPEER is not set under CI: the cross-language tests must run")
        pytest.skip("MLBRIDGE_TESTPEER not set (C++ test peer not built)")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        found = shutil.which(path)
        if not found:
            pytest.fail(f"MLBRIDGE_TESTPEER={path!r} is not an executable")
        path = found
    return path


def _live_children() -> List[str]:
    """Direct children of this process that are still running (not zombies)."""
    me = str(os.getpid())
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[1] == me and fields[0] != "Z":
            out.append(f"{pid} {stat[stat.index('(') + 1:stat.rindex(')')]}")
    return out


def kill_children(prefix: str) -> int:
    """SIGKILL this process's running children whose name starts with PREFIX (a
    compiler dying mid-session, for the failure-path tests); returns how many."""
    killed = 0
    for entry in _live_children():
        pid, name = entry.split(" ", 1)
        if name.startswith(prefix):
            try:
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
    return killed


@pytest.fixture(autouse=True)
def no_process_left_behind() -> Iterator[None]:
    """Every test must reap what it started: a leftover compiler or model
    process is a failure, not noise."""
    before = set(_live_children())
    yield
    import time
    deadline = time.monotonic() + 2.0   # a process being torn down gets a moment
    left = [c for c in _live_children() if c not in before]
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = [c for c in _live_children() if c not in before]
    assert not left, f"processes left behind: {left}"


# -- a raw bitstream compiler against a server, for the read-path tests ---------------

def serve_session_in_thread(srv: Any, policy: Any, out: list, timeout: float = 10.0) -> threading.Thread:
    """Serve one session of ``srv`` in a daemon thread; its Session, or the
    exception serve_session raised, is appended to ``out``."""
    def run() -> None:
        try:
            out.append(srv.serve_session(policy, timeout=timeout))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            out.append(exc)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def connect_raw(base: str) -> tuple:
    """A compiler's FIFO ends, opened in LLVM's order: (BASE.in read, BASE.out write)."""
    fin = os.open(base + ".in", os.O_RDONLY)
    fout = os.open(base + ".out", os.O_WRONLY)
    return fin, fout
