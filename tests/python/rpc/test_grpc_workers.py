"""Many workers: 16 compiler processes at once, both directions; every
answer must reach the worker (and session) that asked."""
from __future__ import annotations

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/python: grpc_support
from grpc_support import Proc, require_grpc, find_testenv  # noqa: E402

require_grpc()

import mlbridge  # noqa: E402
from conftest import child_env  # noqa: E402
from mlbridge import GrpcServer  # noqa: E402
from mlbridge import WorkerPool  # noqa: E402

N = 16

# A compiler process: one session, 40 decisions, each feature tagged with
# its worker id; exits 0 only if every answer was its own.
COMPILER = r"""
import sys
from mlbridge import ModelClient, RetryPolicy
target, k = sys.argv[1], int(sys.argv[2])
c = ModelClient(target, [("worker", "int64_t", (1,)), ("step", "int64_t", (1,))], [("y", "int64_t", (2,))],
                retry=RetryPolicy(max_attempts=5, total_seconds=10))
for i in range(40):
    y = c.evaluate({"worker": k, "step": i})[0].tolist()
    if y != [k, i]:
        print(f"worker {k} step {i}: got {y}", file=sys.stderr)
        sys.exit(1)
c.close()
"""


def test_one_model_server_16_compiler_processes():
    class Echo(mlbridge.Model):
        def __init__(self):
            self.worker = None

        def __call__(self, obs):
            w = int(obs["worker"][0])
            if self.worker is None:
                self.worker = w          # per-session state: must stay this session's
            assert self.worker == w, "cross-talk between sessions"
            return [w, int(obs["step"][0])]

    with GrpcServer(Echo, per_session=True, max_workers=N) as srv:
        procs = [subprocess.Popen([sys.executable, "-c", COMPILER, srv.target, str(k)], env=child_env(),
                                  stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for k in range(N)]
        try:
            codes = [p.wait(120) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        errs = [p.stderr.read() for p in procs]
        for p in procs:
            p.stderr.close()
        assert codes == [0] * N, errs
    sessions = srv.sessions
    assert len(sessions) == N and all(s.clean and s.observations == 40 and s.errors == 0 for s in sessions)


def test_worker_pool_drives_16_compiler_processes():
    path = find_testenv()
    procs = []
    try:
        for _ in range(N):
            procs.append(Proc([path, "--threads", "1", "--steps", "20"]))
        with WorkerPool([p.target for p in procs]) as pool:
            stats = pool.run(lambda step: -int(step.features["x"][0]), sessions_per_worker=1)
        assert stats.steps == N * 20
        assert stats.per_worker == [20] * N
        assert [p.wait() for p in procs] == [0] * N   # every action was the right one
    finally:
        for p in procs:
            p.kill()
