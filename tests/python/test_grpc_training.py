"""Training direction: the C++ compiler serves (GrpcTrainingServer, in the
stand-in tests/grpc/testenv.cc), the Python trainer drives it."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpc_support import Proc, require_grpc, find_testenv  # noqa: E402

require_grpc()

from mlbridge import RemoteError, SpecMismatch  # noqa: E402
from mlbridge.grpc_client import EnvironmentClient  # noqa: E402


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
