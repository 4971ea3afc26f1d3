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
