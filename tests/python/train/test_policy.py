"""Inlining policies (mlbridge.train.policy): the numpy network, its gradient, and
its ONNX export agree."""
import os

import numpy as np
import pytest

from mlbridge.train.policy import LinearPolicy, MLPPolicy

NAMES = [f"f{i}" for i in range(7)]


def _raw(m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-50, 5000, size=(m, len(NAMES))).astype(np.int64)


def test_backward_matches_finite_differences():
    p = MLPPolicy(NAMES, hidden=(5, 3), seed=1)
    p.params += np.random.default_rng(2).normal(0, 0.3, p.dim).astype(np.float32)
    x = p.inputs(_raw(4))
    coef = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    _, acts = p.forward(x)
    g = p.backward(acts, coef)
    p64 = p.params.astype(np.float64)
    for i in np.random.default_rng(3).choice(p.dim, 12, replace=False):
        e = np.zeros(p.dim)
        e[i] = 1e-3
        f = lambda q: float(coef @ p.forward(x, q.astype(np.float32))[0])  # noqa: E731
        num = (f(p64 + e) - f(p64 - e)) / 2e-3
        assert g[i] == pytest.approx(num, rel=2e-2, abs=2e-3)


def test_linear_policy_is_an_mlp_without_hidden_layers_and_keeps_its_json():
    lin = LinearPolicy(NAMES, np.arange(len(NAMES) + 1, dtype=np.float32) - 3)
    assert lin.dim == len(NAMES) + 1
    old = {"names": NAMES, "params": [float(v) for v in lin.params], "output": "inlining_decision"}
    again = LinearPolicy.from_json(old)
    x = lin.inputs(_raw(20))
    assert np.array_equal(again.scores(x), lin.scores(x))
    w, b = lin.layers()[0]
    assert np.allclose(lin.scores(x), x @ w[:, 0] + b[0])


@pytest.mark.parametrize("hidden", [(), (8,), (6, 4)])
def test_onnx_export_takes_the_same_decisions(tmp_path, hidden):
    import onnxruntime as ort   # required (python/requirements-dev.txt): missing fails, never skips
    p = MLPPolicy(NAMES, hidden=hidden, seed=4, mu=np.full(len(NAMES), 2.0), sigma=np.full(len(NAMES), 3.0))
    p.params += np.random.default_rng(5).normal(0, 0.5, p.dim).astype(np.float32)
    path = p.export_onnx(str(tmp_path / "p.onnx"))
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    raw = _raw(200, seed=6)
    got = np.array([sess.run(None, {n: raw[i, j:j + 1] for j, n in enumerate(NAMES)})[0][0] for i in range(len(raw))])
    want = (p.scores(p.inputs(raw)) > 0).astype(np.int64)
    assert (got == want).mean() >= 0.99   # float rounding may flip a score within 1e-6 of 0
    assert 0 < want.sum() < len(want)
    again = MLPPolicy.load(p.save(str(tmp_path / "p.json")))
    assert np.array_equal(again.scores(again.inputs(raw)), p.scores(p.inputs(raw)))


def test_behavioral_cloning_learns_a_teacher_rule():
    from mlbridge.train.imitation import fit_imitation
    raw = _raw(600, seed=7)
    teacher = (raw[:, 0] + 2 * raw[:, 3] < 4000).astype(np.int64)   # like "inline iff cost small"
    p = MLPPolicy(NAMES, hidden=(8,), seed=8)
    out = fit_imitation(p, raw, teacher, epochs=400, lr=2e-2)
    assert out["accuracy"] > 0.93
    assert np.mean((p.scores(p.inputs(raw)) > 0) == teacher) > 0.93


def test_ppo_raises_the_reward_of_a_bandit():
    from mlbridge.train.ppo import PPO, SampledDecisions, SamplingPolicy
    rng = np.random.default_rng(9)
    p = MLPPolicy(NAMES, hidden=(4,), seed=10)
    rule = lambda raw: raw[:, 1] > 2500  # noqa: E731  the decisions that earn reward
    ppo = PPO(p, lr=3e-2, epochs=4)

    def episode(module, seed, greedy=False):
        raw = np.random.default_rng(seed).integers(0, 5000, size=(6, len(NAMES)))
        t = SampledDecisions(module)
        pol = SamplingPolicy(p, t, rng, greedy=greedy)
        for row in raw:
            pol({n: row[j:j + 1] for j, n in enumerate(NAMES)})
        t.reward = float(np.mean(np.asarray(t.actions) == rule(raw)))
        return t

    before = np.mean([episode(f"m{i}", i, greedy=True).reward for i in range(8)])
    for it in range(40):
        ppo.update([episode(f"m{i}", 1000 * it + i) for i in range(32)])
    after = np.mean([episode(f"m{i}", i, greedy=True).reward for i in range(8)])
    assert after > before + 0.2 and after > 0.7


@pytest.mark.parametrize("name", ["inline_size", "inline_size_lto"])
def test_shipped_policy_files_agree(name):
    """Each shipped policy's .onnx takes the decisions of its policy.json (the
    parameters a run resumes from), on LLVM's 38 features."""
    import onnxruntime as ort
    from mlbridge.llvm.inliner_features import FEATURES
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "..", "policies", name)
    p = MLPPolicy.load(os.path.join(folder, "policy.json"))
    assert p.names == list(FEATURES)
    sess = ort.InferenceSession(os.path.join(folder, "policy.onnx"), providers=["CPUExecutionProvider"])
    raw = np.random.default_rng(11).integers(0, 400, (300, len(FEATURES))).astype(np.int64)
    got = np.array([sess.run(None, {n: raw[i, j:j + 1] for j, n in enumerate(FEATURES)})[0][0]
                    for i in range(len(raw))])
    want = (p.scores(p.inputs(raw)) > 0).astype(np.int64)
    assert (got == want).mean() >= 0.99
