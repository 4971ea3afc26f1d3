"""run_compiler: serve a child compiler, bound it in time, leave nothing behind."""
from __future__ import annotations

import os
import select
import sys
import time

import pytest

import mlbridge
from conftest import HELPERS, child_env

FAKE = os.path.join(HELPERS, "fake_compiler.py")


def cmd(fmt, mode, n=3):
    return [sys.executable, FAKE, "{base}", fmt, mode, str(n)]


def policy(obs):
    return obs["x"] * 10


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_runs_compiler_and_serves(fmt):
    res = mlbridge.run_compiler(cmd(fmt, "ok", 4), policy, timeout=30, env=child_env())
    assert res.returncode == 0 and res.ok and not res.timed_out, res.stderr
    assert res.stdout.decode().split() == ["0", "10", "20", "30"]
    assert res.decisions == 4
    (s,) = res.sessions
    assert s.format == fmt and s.clean


def test_child_that_never_opens_the_channel():
    t0 = time.monotonic()
    res = mlbridge.run_compiler(cmd("bitstream", "quiet"), policy, timeout=30, env=child_env())
    assert time.monotonic() - t0 < 10
    assert res.returncode == 0 and res.sessions == [] and res.decisions == 0
    assert b"no decision needed" in res.stdout


def test_hung_child_is_killed_on_timeout():
    t0 = time.monotonic()
    res = mlbridge.run_compiler(cmd("bitstream", "hang"), policy, timeout=1.0, env=child_env())
    assert time.monotonic() - t0 < 5
    assert res.timed_out and not res.ok and res.returncode == -9


def test_bitstream_policy_error_kills_spinning_compiler():
    def bad(obs):
        raise RuntimeError("policy bug")

    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="policy bug") as ei:
        mlbridge.run_compiler(cmd("bitstream", "spin_on_error"), bad, timeout=60, env=child_env())
    assert time.monotonic() - t0 < 10, "the child must be killed, not waited for"
    res = ei.value.result
    assert res.returncode == -9 and res.sessions == []


def test_framed_policy_error_reaches_compiler():
    def bad(obs):
        raise ValueError("no advice for you")

    res = mlbridge.run_compiler(cmd("json", "remote_error"), bad, timeout=30, env=child_env())
    assert res.returncode == 3
    assert b"ValueError: no advice for you" in res.stderr
    (s,) = res.sessions
    assert s.errors == 1


def test_grandchildren_are_killed():
    res = mlbridge.run_compiler(cmd("protobuf", "grandchild", 2), policy, timeout=30, env=child_env())
    assert res.returncode == 0
    gpid = int(res.stdout.split()[0])
    try:
        fd = os.pidfd_open(gpid)
    except ProcessLookupError:
        return   # already gone and reaped
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert p.poll(5000), "the grandchild survived run_compiler"
    finally:
        os.close(fd)


def test_chatty_compiler_does_not_block():
    res = mlbridge.run_compiler(cmd("json", "spam", 2), policy, timeout=30, env=child_env())
    assert res.returncode == 0
    assert len(res.stdout) > (1 << 20) and len(res.stderr) >= (1 << 20)
    assert res.decisions == 2


def test_given_server_is_reused_and_kept():
    with mlbridge.PipeServer(timeout=10) as srv:
        for fmt in ("bitstream", "protobuf"):
            res = mlbridge.run_compiler(cmd(fmt, "ok", 2), policy, server=srv, timeout=30, env=child_env())
            assert res.ok and res.decisions == 2
        assert os.path.exists(srv.base + ".in")
        assert [s.index for s in res.sessions] == [1]


def test_missing_executable_raises_and_cleans_up():
    with pytest.raises(FileNotFoundError):
        mlbridge.run_compiler(["/nonexistent/compiler", "{base}"], policy, timeout=5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_supervisor_leaves_no_compiler_behind(tmp_path):
    # The supervisor (a Python process running run_compiler) dies by SIGKILL
    # while its compiler waits on the channel: the compiler must die too, not
    # linger (stock LLVM 19 spins forever on a channel nobody serves).
    import signal
    import subprocess
    pidfile = tmp_path / "compiler.pid"
    compiler = ("import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); "
                "time.sleep(600)")
    supervisor = ("import sys, mlbridge; "
                  "mlbridge.run_compiler([sys.executable, '-c', sys.argv[1], sys.argv[2]], lambda o: 0, timeout=600)")
    sup = subprocess.Popen([sys.executable, "-c", supervisor, compiler, str(pidfile)], env=child_env(),
                           stdin=subprocess.DEVNULL)
    try:
        # Wait (bounded) for the compiler to report its pid.
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            assert sup.poll() is None, "the supervisor exited early"
            select.select([], [], [], 0.02)
        pid = int(pidfile.read_text())
        fd = os.pidfd_open(pid)
    finally:
        sup.send_signal(signal.SIGKILL)
        sup.wait(10)
    try:
        p = select.poll()
        p.register(fd, select.POLLIN)
        assert p.poll(10_000), f"compiler {pid} still alive 10 s after its supervisor was killed"
    finally:
        os.close(fd)
