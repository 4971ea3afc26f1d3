"""Run a compiler as a child process and serve its decisions until it exits."""
from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, List, Mapping, Optional, Sequence

from ..core.session import ModelLike, Session
from .pipe_server import PipeServer
from .session_server import SessionServer

__all__ = ["CompileResult", "run_compiler"]


@dataclass
class CompileResult:
    """What a supervised compiler run produced."""
    returncode: Optional[int]
    stdout: bytes
    stderr: bytes
    sessions: List[Session] = field(default_factory=list)
    decisions: int = 0
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


# Linux: a supervised compiler is killed when the thread that started it dies
# (PR_SET_PDEATHSIG, set by util-linux's `setpriv` just before it execs the
# compiler), so a supervisor killed with SIGKILL never leaves a compiler behind
# (stock LLVM 19 spins forever on a channel nobody serves). Not a preexec_fn:
# running Python in the forked child of a threaded process (gRPC's threads and
# fork handlers) can crash it.
_SETPRIV = shutil.which("setpriv") if sys.platform.startswith("linux") else None


def _die_with_parent(args: List[str], env: Optional[Mapping[str, str]]) -> List[str]:
    if not _SETPRIV or not args:
        return args
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    if shutil.which(args[0], path=path) is None:
        return args   # Popen reports it as before (FileNotFoundError, PermissionError)
    return [_SETPRIV, "--pdeathsig", "KILL", "--", *args]


# The child gets its own process group (killed as a whole), but stays in our
# session: Linux schedules each session as one group (autogroup), and a
# compiler in a session of its own waits behind every other session on a busy
# machine each time it is woken by an answer (3-5x the wall time measured under
# load, bench/advisor_overhead.py). Python < 3.11 has no process_group.
_OWN_GROUP = {"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}


class _Child:
    """A child in its own process group, watched without reaping it early
    (so its group id cannot be reused before we kill the group)."""

    def __init__(self, args: Sequence[str], env: Optional[Mapping[str, str]], cwd: Optional[str]) -> None:
        self.proc = subprocess.Popen(
            _die_with_parent(list(args), env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None, cwd=cwd, **_OWN_GROUP,
        )
        self.pgid = self.proc.pid
        self.pidfd: Optional[int] = None
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(self.proc.pid)
            except OSError:
                self.pidfd = None
        self.out: List[bytes] = []
        self.err: List[bytes] = []
        self._readers = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for t in self._readers:
            t.start()

    @staticmethod
    def _drain(stream: Any, sink: List[bytes]) -> None:
        # Keep reading so a chatty compiler never blocks on a full stdout pipe.
        try:
            for chunk in iter(lambda: stream.read1(1 << 16), b""):
                sink.append(chunk)
        except (OSError, ValueError):
            pass

    def exited(self) -> bool:
        if self.pidfd is not None:
            p = select.poll()
            p.register(self.pidfd, select.POLLIN)
            return bool(p.poll(0))
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def kill_group(self) -> None:
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def finish(self) -> Optional[int]:
        """Kill whatever is left of the group, reap the child, collect output."""
        self.kill_group()
        rc = self.proc.wait()
        for t in self._readers:
            t.join(timeout=5.0)
        for s in (self.proc.stdout, self.proc.stderr):
            try:
                s.close()
            except OSError:
                pass
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None
        return rc


def run_compiler(cmd: Sequence[Any], policy: ModelLike, *, server: Optional[SessionServer] = None,
                 format: str = "auto", timeout: Optional[float] = 60.0,
                 env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> CompileResult:
    """Run ``cmd`` (``{base}`` in an argument or an ``env`` value is replaced by
    the channel base)
    and answer its decisions with ``policy`` until it exits.

    The child gets no stdin and its own process group; the whole group is
    killed on ``timeout`` (``timed_out`` is then True) and, in any case, before
    returning, so no process is left behind; on Linux the compiler is also
    killed if the supervising process dies, even by SIGKILL. A compiler that never opens the
    channel (e.g. LLVM regalloc without a decision) is fine: the wait ends when
    it exits. A policy error in bitstream (which cannot report it) kills the
    compiler (LLVM 19 would spin forever) and is re-raised, with the partial
    CompileResult as its ``result`` attribute.
    """
    own = server is None
    srv = server if server is not None else PipeServer(format=format, timeout=timeout)
    sessions: List[Session] = []
    timed_out = threading.Event()
    done = threading.Event()
    child: Optional[_Child] = None
    try:
        args = [str(a).replace("{base}", srv.base) for a in cmd]
        if env is not None:   # a linker takes the plugin's channel from its environment
            env = {k: str(v).replace("{base}", srv.base) for k, v in env.items()}
        child = _Child(args, env, cwd)

        def watchdog() -> None:
            if not done.wait(timeout):
                timed_out.set()
                child.kill_group()

        dog = threading.Thread(target=watchdog, daemon=True)
        if timeout is not None:
            dog.start()
        watch = [child.pidfd] if child.pidfd is not None else []
        # Without a pidfd, look at the child between short idle waits.
        idle = None if watch else 0.05
        while True:
            s = srv.serve_session(policy, timeout=idle, watch=watch, on_abort=child.kill_group)
            if s is not None:
                sessions.append(s)
                continue
            if child.exited():
                # Bytes written just before exiting are still worth serving.
                if srv.pending_input():
                    continue
                break
        done.set()
        rc = child.finish()
        out, err = b"".join(child.out), b"".join(child.err)
        child = None
        return CompileResult(rc, out, err, sessions, sum(s.observations for s in sessions), timed_out.is_set())
    except BaseException as exc:
        done.set()
        if child is not None:
            rc = child.finish()
            result = CompileResult(rc, b"".join(child.out), b"".join(child.err), sessions,
                                   sum(s.observations for s in sessions), timed_out.is_set())
            child = None
            try:
                exc.result = result  # type: ignore[attr-defined]
            except AttributeError:
                pass
        raise
    finally:
        done.set()
        if child is not None:
            child.finish()
        if own:
            srv.close()
