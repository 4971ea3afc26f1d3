"""mlbridge.train.gym: Gymnasium environments over compiler sessions.

Most tests use a stand-in compiler (a Python PipeClient that asks N
questions), so they are fast and can inject faults (death, hang); the LLVM
tests use stock opt-19 (skipped when it is missing, failed under CI).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gymnasium  # noqa: E402  required (python/requirements-dev.txt): missing fails, never skips
from gymnasium import spaces  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

import mlbridge  # noqa: E402
from mlbridge import llvm  # noqa: E402
from mlbridge.train.gym import CompilerEnv, action_space, llvm_inliner_env, observation_space  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
PYDIR = str(ROOT / "python")
CORPUS = sorted(str(p) for p in (ROOT / "tests" / "corpus").glob("*.c"))

# A compiler: asks `n` questions (x = i, y = [i/2, -1]) in a wire format,
# prints each answer, then behaves as `mode` says: ok (exit 0), die (exit 3
# after 2 answers), hang (stops asking after 2 answers and sleeps: a stuck
# compiler).
FAKE = r"""
import os, sys, time
sys.path.insert(0, sys.argv[4])
import mlbridge
base, n, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
F = [mlbridge.TensorSpec("x", "int64_t", [1]), mlbridge.TensorSpec("y", "float", [2])]
A = [mlbridge.TensorSpec("decision", "int64_t", [1])]
Client = mlbridge.ShmClient if sys.argv[6] == "shm" else mlbridge.PipeClient
with Client(base, F, A, format=sys.argv[5], timeout=20) as c:
    for i in range(n):
        if i == 2 and mode == "die":
            sys.stdout.flush()
            os._exit(3)
        if i == 2 and mode == "hang":
            time.sleep(60)
        print(int(c.evaluate({"x": i, "y": [i / 2, -1.0]})[0]), flush=True)
"""


def fake(n: int = 4, mode: str = "ok", fmt: str = "bitstream", transport: str = "pipe"):
    return [sys.executable, "-c", FAKE, "{base}", str(n), mode, PYDIR, fmt, transport]


def answers(ep) -> float:
    """Reward: how many 1s the compiler received (proves actions arrive)."""
    return float(sum(int(v) for v in ep.result.stdout.split()))


def play(env, policy, options=None):
    obs, info = env.reset(options=options)
    steps, total = 0, 0.0
    while True:
        obs, r, term, trunc, info = env.step(policy(obs))
        steps += 1
        total += r
        if term or trunc:
            return steps, total, term, trunc, info


def test_spaces_from_specs():
    obs = observation_space([("a", "int64_t", [1]), ("b", "float", [2, 3]), ("c", "uint8_t", [4])])
    assert isinstance(obs, spaces.Dict) and list(obs.spaces) == ["a", "b", "c"]
    assert obs["a"].dtype == np.int64 and obs["a"].shape == (1,)
    assert obs["b"].dtype == np.float32 and obs["b"].shape == (2, 3)
    assert obs["c"].low.min() == 0 and obs["c"].high.max() == 255
    assert action_space([("d", "int64_t", [1])]) == spaces.Discrete(2)
    assert action_space([("d", "int64_t", [1])], discrete=5) == spaces.Discrete(5)
    box = action_space([("d", "int64_t", [1])], discrete=None)
    assert isinstance(box, spaces.Box) and box.dtype == np.int64
    fbox = action_space([("p", "float", [1])])
    assert isinstance(fbox, spaces.Box) and fbox.dtype == np.float32
    with pytest.raises(ValueError):
        action_space([("a", "int64_t", [1]), ("b", "int64_t", [1])])


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_episode_is_one_compilation_and_actions_reach_the_compiler(fmt):
    env = CompilerEnv(fake(4, fmt=fmt), reward_fn=answers)
    try:
        assert set(env.observation_space.spaces) == {"x", "y"}
        assert env.action_space == spaces.Discrete(2)
        obs, info = env.reset(seed=1)
        assert obs["x"][0] == 0 and obs["y"].dtype == np.float32
        seen = [int(obs["x"][0])]
        rewards = []
        for a in (1, 0, 1, 1):
            obs, r, term, trunc, info = env.step(a)
            rewards.append(r)
            if not term:
                seen.append(int(obs["x"][0]))
        assert seen == [0, 1, 2, 3]
        assert term and not trunc and info["decisions"] == 4
        assert rewards == [0.0, 0.0, 0.0, 3.0]    # reward only at the end, from the callback
        with pytest.raises(RuntimeError):
            env.step(0)                            # the episode is over
        # A second episode is a second compilation on the same channel.
        steps, total, term, _, _ = play(env, lambda o: 0)
        assert (steps, total, term) == (4, 0.0, True)
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["ok", "die"])
def test_episodes_over_shared_memory(mode):
    """The environment serves on any SessionServer: here shared memory, with
    the compiler on ShmClient; a compiler that dies still truncates."""
    env = CompilerEnv(fake(4, mode=mode, transport="shm"), reward_fn=answers, transport="shm", step_timeout=10.0)
    try:
        assert type(env._backend.server).__name__ == "ShmServer"
        steps, total, term, trunc, info = play(env, lambda o: 1)
        if mode == "ok":
            assert (steps, total, term, trunc) == (4, 4.0, True, False)
            assert info["decisions"] == 4
        else:
            assert trunc and not term and steps == 2 and "failed with exit status 3" in info["error"]
        steps, total, term, _, _ = play(env, lambda o: 0)   # the next compilation, same channel
        assert term or mode == "die"
    finally:
        env.close()


def test_unknown_transport_is_refused():
    with pytest.raises(ValueError, match="unknown transport 'tcp'"):
        CompilerEnv(fake(1), transport="tcp")


def test_check_env_passes():
    env = CompilerEnv(fake(3), reward_fn=answers)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_compiler_death_truncates_with_error():
    env = CompilerEnv(fake(5, "die"), reward_fn=answers, failure_reward=-1.0,
                      features=[("x", "int64_t", [1]), ("y", "float", [2])],
                      advice=[("decision", "int64_t", [1])])
    try:
        steps, total, term, trunc, info = play(env, lambda o: 1)
        assert steps == 2 and trunc and not term and total == -1.0
        assert "failed with exit status 3" in info["error"]
        # The env stays usable.
        env.reset()
    finally:
        env.close()


def test_hung_compiler_truncates_within_step_timeout():
    # The step timeout is what detects the hang, so it is also what a slow
    # compiler's honest step must fit in: 1 s truncated at step 1 on a loaded
    # machine (issue 26); 5 s leaves the fake compiler room and still ends
    # the hung step (the compiler sleeps 60 s) well before the bound below.
    env = CompilerEnv(fake(5, "hang"), step_timeout=5.0, features=[("x", "int64_t", [1]), ("y", "float", [2])],
                      advice=[("decision", "int64_t", [1])])
    try:
        t0 = time.monotonic()
        steps, _, term, trunc, info = play(env, lambda o: 0)
        assert trunc and not term and steps == 2, (steps, info.get("error"))
        assert "within 5.0 s" in info["error"]
        assert time.monotonic() - t0 < 40.0    # bounded, not a hang (generous for a loaded machine)
    finally:
        env.close()


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_reset_mid_episode_kills_the_compiler(fmt):
    env = CompilerEnv(fake(50, fmt=fmt), reward_fn=answers)
    try:
        env.reset()
        env.step(1)
        obs, _ = env.reset()          # the first compiler is killed, a new one starts
        assert obs["x"][0] == 0
        env.abort_episode()
    finally:
        env.close()
    # no_process_left_behind (conftest) checks that both compilers are gone.


def test_probe_failure_is_a_clear_error():
    with pytest.raises(RuntimeError, match="feature specs"):
        CompilerEnv([sys.executable, "-c", "import sys; sys.exit(7)"], step_timeout=5.0)


def _fake_env():
    return CompilerEnv(fake(3), reward_fn=answers)


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_vector_envs_run_several_compilers(vector):
    n = 3
    cls = gymnasium.vector.SyncVectorEnv if vector == "sync" else gymnasium.vector.AsyncVectorEnv
    venv = cls([_fake_env] * n)
    try:
        obs, _ = venv.reset(seed=0)
        assert obs["x"].shape == (n, 1)
        done = np.zeros(n, bool)
        finals = np.zeros(n)
        for _ in range(4):
            obs, r, term, trunc, info = venv.step(np.ones(n, np.int64))
            finals += r
            done |= term
            assert not trunc.any()
        assert done.all() and (finals == 3.0).all()
    finally:
        venv.close()


# ---- stock opt-19 -------------------------------------------------------------------
def _need_llvm():
    for name in ("clang", "opt", "llc", "llvm-size"):
        if not llvm.have_tool(name):
            if os.environ.get("CI"):
                pytest.fail(f"LLVM 19 tool {name} is required under CI")
            pytest.skip(f"LLVM 19 tool {name} not available")


def test_llvm_inliner_env_check_env_and_size_reward():
    _need_llvm()
    env = llvm_inliner_env(CORPUS[:2])
    try:
        assert len(env.features) >= 38 and env.features[0].name == "sroa_savings"
        assert env.advice[0].name == "inlining_decision" and env.action_space == spaces.Discrete(2)
        check_env(env, skip_render_check=True)
        steps, total, term, _, info = play(env, lambda o: 1, options={"file": 1})
        assert term and steps == info["decisions"] > 0
        assert info["file"] == Path(CORPUS[1]).stem
        assert info["text_size"] > 0 and info["baseline_size"] > 0
        assert total == pytest.approx((info["baseline_size"] - info["text_size"]) / info["baseline_size"])
        # Never inlining leaves a bigger .text than always inlining on this corpus file.
        _, _, _, _, never = play(env, lambda o: 0, options={"file": 1})
        assert never["text_size"] != info["text_size"]
    finally:
        env.close()


def test_gymnasium_make_and_async_vector_llvm():
    _need_llvm()
    env = gymnasium.make("mlbridge/LLVMInliner-v0", sources=CORPUS[:1])
    try:
        obs, _ = env.reset(seed=0)
        assert "callee_basic_block_count" in obs
    finally:
        env.close()
    venv = gymnasium.vector.AsyncVectorEnv([lambda: llvm_inliner_env(CORPUS[:2])] * 2)
    try:
        venv.reset(seed=[0, 1])
        ended = np.zeros(2, bool)
        sizes = [None, None]
        for _ in range(500):
            _, _, term, trunc, info = venv.step(np.ones(2, np.int64))
            assert not trunc.any(), info
            for i in np.flatnonzero(term):
                ended[i] = True
                sizes[i] = info["text_size"][i]
            if ended.all():
                break
        assert ended.all() and all(s > 0 for s in sizes)
    finally:
        venv.close()


# ---- gRPC: the compiler serves EnvironmentService -----------------------------------------
def test_grpc_env_over_a_python_compiler_worker():
    from mlbridge.rpc.environment_server import EnvironmentServer
    from mlbridge.train import outcome_reward
    inner = CompilerEnv(fake(3), reward_fn=answers)
    with EnvironmentServer(inner, token="t0k") as server:
        env = CompilerEnv(target=server.target, token="t0k", fetch_outcome=True, reward_fn=outcome_reward,
                          step_timeout=10.0)
        try:
            assert set(env.observation_space.spaces) == {"x", "y"}
            steps, total, term, trunc, info = play(env, lambda o: 1)
            assert (steps, total, term, trunc) == (3, 3.0, True, False)
            assert info["reward"] == 3.0
            check_env(env, skip_render_check=True)
            # reset mid-episode: EndEpisode over gRPC, the worker kills its compiler.
            env.reset()
            env.step(0)
            steps, total, term, _, _ = play(env, lambda o: 0)
            assert term and total == 0.0
        finally:
            env.close()
        with pytest.raises(mlbridge.MLBridgeError):
            CompilerEnv(target=server.target, token="wrong", step_timeout=5.0)
    inner.close()


def test_grpc_worker_failure_truncates_on_the_trainer_side():
    from mlbridge.rpc.environment_server import EnvironmentServer
    from mlbridge.train import outcome_reward
    inner = CompilerEnv(fake(5, "die"), features=[("x", "int64_t", [1]), ("y", "float", [2])],
                        advice=[("decision", "int64_t", [1])])
    with EnvironmentServer(inner) as server:
        env = CompilerEnv(target=server.target, fetch_outcome=True, reward_fn=outcome_reward, step_timeout=10.0)
        try:
            steps, _, term, trunc, info = play(env, lambda o: 1)
            assert steps == 2 and trunc and not term and "did not end cleanly" in info["error"]
        finally:
            env.close()
    inner.close()


def test_grpc_worker_security(tmp_path):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from grpc_support import make_certs
    from mlbridge import ClientTLS, ServerTLS
    from mlbridge.rpc.environment_server import EnvironmentServer
    inner = CompilerEnv(fake(2), features=[("x", "int64_t", [1]), ("y", "float", [2])],
                        advice=[("decision", "int64_t", [1])])
    try:
        with pytest.raises(ValueError, match="non-loopback"):
            EnvironmentServer(inner, "0.0.0.0:0")          # remote needs TLS and/or a token
        certs = make_certs(str(tmp_path))
        tls = ServerTLS(certs["server_cert"], certs["server_key"])
        with EnvironmentServer(inner, "127.0.0.1:0", tls=tls, token="tok") as server:
            with pytest.raises(mlbridge.MLBridgeError):    # plaintext refused
                CompilerEnv(target=server.target, token="tok", step_timeout=5.0,
                            retry=mlbridge.RetryPolicy(max_attempts=2, total_seconds=2.0))
            env = CompilerEnv(target=f"localhost:{server.port}", token="tok", step_timeout=10.0,
                              tls=ClientTLS(root_ca=certs["ca"]))
            try:
                steps, _, term, _, _ = play(env, lambda o: 0)
                assert term and steps == 2
            finally:
                env.close()
    finally:
        inner.close()


def test_grpc_env_over_the_cpp_training_server():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from grpc_support import Proc, find_testenv
    with Proc([find_testenv(), "--threads", "1", "--steps", "5"]) as p:
        env = CompilerEnv(target=p.target, discrete=None, step_timeout=10.0)
        try:
            assert isinstance(env.action_space, spaces.Box)
            obs, _ = env.reset()
            n = 0
            while True:                                   # the C++ env expects action -x
                obs, r, term, trunc, info = env.step(-obs["x"])
                n += 1
                if term or trunc:
                    break
            assert term and n == 5
        finally:
            env.close()
        assert p.wait(30) == 0                            # every action was right


def test_grpc_env_reads_the_cpp_compilers_outcome():
    # testenv reports {"reward": right/steps, "action_sum", "steps"} after finish(): the
    # trainer sees the end first and GetOutcome waits for the report.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from grpc_support import Proc, find_testenv
    from mlbridge import EnvironmentClient
    from mlbridge.train import outcome_reward
    with Proc([find_testenv(), "--threads", "1", "--steps", "3", "--wait-shutdown"]) as p:
        env = CompilerEnv(target=p.target, discrete=None, step_timeout=10.0, fetch_outcome=True,
                          reward_fn=outcome_reward)
        try:
            obs, _ = env.reset()
            xs = []
            while True:
                xs.append(int(obs["x"][0]))
                obs, r, term, trunc, info = env.step(-obs["x"])
                if term or trunc:
                    break
            assert term and not trunc, info
            assert r == 1.0 and info["steps"] == 3.0 and info["action_sum"] == -sum(xs)
        finally:
            env.close()
        with EnvironmentClient(p.target) as client:
            client.shutdown()
        assert p.wait(30) == 0


def test_grpc_env_without_an_outcome_truncates():
    # A compiler that never reports: fetch_outcome waits step_timeout, then truncates (no silent reward).
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from grpc_support import Proc, find_testenv
    from mlbridge import EnvironmentClient
    from mlbridge.train import outcome_reward
    with Proc([find_testenv(), "--threads", "1", "--steps", "2", "--wait-shutdown", "--no-outcome"]) as p:
        # 5 s, not 1: each honest step must fit in the step timeout too (issue 26).
        env = CompilerEnv(target=p.target, discrete=None, step_timeout=5.0, fetch_outcome=True,
                          reward_fn=outcome_reward)
        try:
            steps, _, term, trunc, info = play(env, lambda o: -o["x"])
            assert steps == 2 and trunc and not term
            assert "reported no outcome" in info["error"], info["error"]
        finally:
            env.close()
        with EnvironmentClient(p.target) as client:
            client.shutdown()
        assert p.wait(30) == 0
