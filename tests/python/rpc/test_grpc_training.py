"""Training direction: the C++ compiler serves (GrpcTrainingServer, in the
stand-in tests/grpc/testenv.cc), the Python trainer drives it."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/python: grpc_support
from grpc_support import Proc, require_grpc, find_testenv  # noqa: E402

require_grpc()

from mlbridge import RemoteError, SpecMismatch  # noqa: E402
from mlbridge import EnvironmentClient  # noqa: E402


def test_observation_action_episode():
    with Proc([find_testenv(), "--threads", "1", "--steps", "10"]) as p:
        with EnvironmentClient(p.target) as env:
            n = 0
            while True:
                step = env.next()
                if step is None:
                    continue
                if step.ended:
                    break
                assert step.context == "episode-0"
                assert step.id == n
                assert [s.name for s in step.info.features] == ["x", "v"]
                assert step.features["v"].dtype == np.float32
                env.act(step, -int(step.features["x"][0]))
                n += 1
            assert n == 10
        assert p.wait() == 0


def test_wrong_action_rejected_by_trainer_side_check():
    with Proc([find_testenv(), "--threads", "1", "--steps", "1", "--timeout-ms", "3000"]) as p:
        with EnvironmentClient(p.target) as env:
            step = env.next()
            with pytest.raises(SpecMismatch):
                env.act(step, 1.5)        # a float for an int64 action: refused before sending
            env.act(step, -int(step.features["x"][0]))
            assert env.next(step.session).ended
        assert p.wait() == 0


def test_end_episode():
    with Proc([find_testenv(), "--threads", "1", "--steps", "5", "--expect-cancel"]) as p:
        with EnvironmentClient(p.target) as env:
            step = env.next()
            env.end_episode(step.session, "enough for today")
            assert env.next(step.session).ended
        assert p.wait() == 0


def test_shutdown_rpc():
    with Proc([find_testenv(), "--threads", "0", "--wait-shutdown"]) as p:
        with EnvironmentClient(p.target) as env:
            env.shutdown("done")
        assert p.wait(10) == 0


def test_token():
    with Proc([find_testenv(), "--threads", "0", "--wait-shutdown", "--token", "tok"]) as p:
        with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
            EnvironmentClient(p.target)
        with pytest.raises(RemoteError, match="UNAUTHENTICATED"):
            EnvironmentClient(p.target, token="nope")
        with EnvironmentClient(p.target, token="tok") as env:
            env.shutdown()
        assert p.wait(10) == 0


def test_schema_version_mismatch():
    with Proc([find_testenv(), "--threads", "0", "--wait-shutdown"]) as p:
        with EnvironmentClient(p.target) as env:
            with pytest.raises(SpecMismatch, match="schema version mismatch"):
                env.hello(version=99)
            env.shutdown()
        assert p.wait(10) == 0


def test_many_compiler_threads_one_trainer():
    with Proc([find_testenv(), "--threads", "8", "--steps", "25"]) as p:
        with EnvironmentClient(p.target) as env:
            ended, steps, sessions = 0, 0, set()
            while ended < 8:
                step = env.next()
                if step is None:
                    continue
                if step.ended:
                    ended += 1
                    continue
                sessions.add(step.session)
                env.act(step, -int(step.features["x"][0]))
                steps += 1
            assert steps == 200 and len(sessions) == 8
        assert p.wait() == 0


# ---- episode outcomes (GetOutcome) ------------------------------------------------
def test_outcome_reported_by_the_cpp_compiler():
    # testenv reports {"reward": right/steps, "action_sum", "steps"} after each finish().
    with Proc([find_testenv(), "--threads", "1", "--steps", "4", "--wait-shutdown"]) as p:
        with EnvironmentClient(p.target) as env:
            with pytest.raises(RemoteError, match="NOT_FOUND"):
                env.outcome(123456789)
            step = env.next()
            assert step is not None and not step.ended
            assert env.outcome(step.session) is None              # the episode runs: not reported
            xs = []
            while not step.ended:
                xs.append(int(step.features["x"][0]))
                env.act(step, -xs[-1])
                step = env.next(step.session)
            out = env.outcome(step.session, wait=10.0)             # reported after the end: waits for it
            assert out is not None
            assert set(out) == {"reward", "action_sum", "steps"}
            assert out["reward"].dtype == np.float64 and out["reward"].shape == (1,)
            assert out["reward"][0] == 1.0
            assert out["action_sum"].dtype == np.int64 and out["action_sum"][0] == -sum(xs)
            assert out["steps"][0] == 4 == len(xs)
            assert env.outcome(step.session)["action_sum"][0] == -sum(xs)   # stays readable
            env.shutdown("done")
        assert p.wait(10) == 0


def test_outcome_of_many_sessions_from_the_cpp_compiler():
    with Proc([find_testenv(), "--threads", "4", "--steps", "5", "--wait-shutdown"]) as p:
        with EnvironmentClient(p.target) as env:
            sums, ended = {}, []
            while len(ended) < 4:
                step = env.next()
                if step is None:
                    continue
                if step.ended:
                    ended.append(step.session)
                    continue
                sums[step.session] = sums.get(step.session, 0) - int(step.features["x"][0])
                env.act(step, -int(step.features["x"][0]))
            for sid in ended:
                out = env.outcome(sid, wait=10.0)
                assert out is not None and out["action_sum"][0] == sums[sid] and out["steps"][0] == 5
            env.shutdown()
        assert p.wait(10) == 0


class CountingEnv:
    """A stand-in for a pipe CompilerEnv under training.EnvironmentServer:
    `steps` decisions (x = step), reward = the sum of the decisions."""

    def __init__(self, steps: int = 3) -> None:
        from mlbridge import TensorSpec
        self.features = (TensorSpec("x", "int64_t", [1]),)
        self.advice = (TensorSpec("decision", "int64_t", [1]),)
        self.steps = steps
        self.i = self.total = 0

    def reset(self, options=None):
        self.i = self.total = 0
        return {"x": np.array([0], np.int64)}, {"context": "fake"}

    def step(self, advice):
        self.total += int(advice[0])
        self.i += 1
        done = self.i >= self.steps
        reward = float(self.total) if done else 0.0
        return {"x": np.array([self.i], np.int64)}, reward, done, False, {"decisions": self.i}

    def abort_episode(self):
        pass


def play_worker_episode(env, decision: int):
    step = env.next()
    assert step is not None and not step.ended
    while not step.ended:
        env.act(step, decision)
        step = env.next(step.session)
    return step.session


def test_outcome_served_by_the_python_worker():
    import threading
    from mlbridge.rpc.environment_server import EnvironmentServer
    with EnvironmentServer(CountingEnv(3), max_outcomes=1) as server:
        with EnvironmentClient(server.target) as env:
            with pytest.raises(RemoteError, match="NOT_FOUND"):
                env.outcome(424242)
            step = env.next()
            assert env.outcome(step.session) is None               # the episode runs
            assert env.outcome(step.session, wait=0.2) is None     # a bounded wait, then "not ready"
            env.act(step, 1)
            step = env.next(step.session)
            env.act(step, 1)
            step = env.next(step.session)
            # A waiting GetOutcome sees the outcome the last action produces (whichever comes first).
            got = []
            waiter = threading.Thread(target=lambda: got.append(env.outcome(step.session, wait=10.0)))
            waiter.start()
            env.act(step, 0)
            waiter.join(20)
            assert not waiter.is_alive()
            first = step.session
            out = got[0]
            assert out is not None and set(out) == {"reward", "decisions"}
            assert out["reward"].dtype == np.float64 and out["reward"].tolist() == [2.0]
            assert out["decisions"].tolist() == [3.0]
            assert env.next(first).ended
            # The worker keeps max_outcomes=1: the next episode's outcome drops the first.
            second = play_worker_episode(env, 1)
            assert env.outcome(second)["reward"][0] == 3.0
            with pytest.raises(RemoteError, match="dropped"):
                env.outcome(first)
