"""serve_pipe_workers: one Python model serving several compilers, each on
its own pipe channel, at once."""
from __future__ import annotations

import os
import tempfile
import threading

import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.rpc.workers import serve_pipe_workers

FEATS = [T("x", "int64_t", [1])]
ADV = [T("d", "int64_t", [1])]


class NotReentrant:
    """Fails loudly if two channels' threads ever call it at the same time."""

    def __init__(self) -> None:
        self.busy = threading.Lock()
        self.calls = 0
        self.starts = 0
        self.ends = []

    def __call__(self, obs):
        if not self.busy.acquire(blocking=False):
            raise AssertionError("policy entered concurrently")
        try:
            self.calls += 1
            return obs["x"] * 10 + 1
        finally:
            self.busy.release()

    def on_session_start(self, session):
        assert self.busy.acquire(blocking=False), "hook entered concurrently"
        self.starts += 1
        self.busy.release()

    def on_session_end(self, session, clean):
        self.ends.append(clean)


def compiler(base, worker, fmt, n, out, errors):
    try:
        with mlbridge.PipeClient(base, FEATS, ADV, format=fmt, timeout=10) as c:
            out[worker] = [int(c.evaluate({"x": worker * 1000 + k})[0]) for k in range(n)]
    except BaseException as exc:  # reported by the test
        errors.append(exc)


def test_every_answer_reaches_its_worker_and_the_policy_is_serialized():
    n_workers, n = 6, 40
    fmts = ["bitstream", "json", "protobuf"]
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        bases = [os.path.join(d, f"w{i}") for i in range(n_workers)]
        policy = NotReentrant()
        out, errors = {}, []
        result = {}

        def serve():
            result["stats"] = serve_pipe_workers(policy, bases, sessions=1, timeout=20)

        server = threading.Thread(target=serve)
        server.start()
        clients = [threading.Thread(target=compiler, args=(bases[i], i, fmts[i % 3], n, out, errors))
                   for i in range(n_workers)]
        for t in clients:
            t.start()
        for t in clients:
            t.join(30)
        server.join(30)
        assert not server.is_alive() and not errors
    for i in range(n_workers):
        assert out[i] == [(i * 1000 + k) * 10 + 1 for k in range(n)]
    stats = result["stats"]
    assert len(stats) == n_workers
    assert [s[0].format for s in stats] == [fmts[i % 3] for i in range(n_workers)]
    assert all(len(s) == 1 and s[0].clean and s[0].observations == n for s in stats)
    assert policy.calls == n_workers * n and policy.starts == n_workers
    assert policy.ends == [True] * n_workers


def test_a_channel_nobody_opens_times_out_after_the_others_finish():
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o700)
        bases = [os.path.join(d, "used"), os.path.join(d, "idle")]
        out, errors = {}, []
        t = threading.Thread(target=compiler, args=(bases[0], 0, "bitstream", 3, out, errors))
        t.start()
        with pytest.raises(mlbridge.ChannelTimeout):
            serve_pipe_workers(lambda obs: obs["x"], bases, sessions=1, timeout=1.0)
        t.join(10)
        assert not errors and out[0] == [0, 1, 2]
