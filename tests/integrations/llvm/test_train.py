"""mlbridge train: a short training where the policy is deployed (clang-19 with
each module's own command and the plugin) makes progress, checkpoints, resumes,
and reports. The start is deliberately poor (never inline) so that a few
generations must improve it; a trainer that makes no progress fails here."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import PLUGIN, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import mini_corpus  # noqa: E402

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Toolchain  # noqa: E402
from mlbridge.corpus.evaluate import oz_sizes  # noqa: E402
from mlbridge.llvm.inliner_features import FEATURES  # noqa: E402
from mlbridge.train.policy import MLPPolicy  # noqa: E402
from mlbridge.train.size_trainer import SizeTrainer, TrainConfig  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    return mini_corpus.make_corpus(str(tmp_path_factory.mktemp("c") / "corpus"))


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "mlbridge", *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, env=env, timeout=600)


def test_es_training_beats_its_start_and_resumes(corpus, tmp_path):
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    base = oz_sizes(c, tc, jobs=2, cache=None)
    assert len(base) == len(c)
    start = MLPPolicy(list(FEATURES), hidden=(4,), seed=0)       # score 0: never inline
    cfg = TrainConfig(algo="es", hidden=(4,), modules_per_step=3, pairs=3, sigma=0.5, lr=0.3, steps=3,
                      eval_every=100, jobs=2, seed=1)
    out = str(tmp_path / "run")
    tr = SizeTrainer(out, c.modules, base, tc, cfg, start)
    before = tr.evaluate(start)
    assert before["failures"] == 0 and before["total_reward"] < -0.02   # never inlining is larger than -Oz
    summary = tr.run()
    assert summary["steps"] == 3 and os.path.exists(os.path.join(out, "policy.onnx"))
    # A second trainer on the same folder resumes at step 3 and goes on to 5.
    cfg.steps = 5
    again = SizeTrainer(out, c.modules, base, tc, cfg)
    assert again.step == 3
    again.run()
    with open(os.path.join(out, "history.jsonl")) as f:
        hist = [json.loads(line) for line in f]
    assert [h["step"] for h in hist] == [0, 1, 2, 3, 4]
    best = MLPPolicy.load(os.path.join(out, "policy.json"))
    after = again.evaluate(best)
    again.close()
    assert after["failures"] == 0
    assert after["total_reward"] > before["total_reward"] + 0.01, (before, after)
    assert os.listdir(os.path.join(out, "tb"))   # TensorBoard scalars


def test_ppo_collects_decisions_over_pipes_and_updates(corpus, tmp_path):
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    base = oz_sizes(c, tc, jobs=2, cache=None)
    start = MLPPolicy(list(FEATURES), hidden=(4,), seed=0)
    cfg = TrainConfig(algo="ppo", hidden=(4,), modules_per_step=4, steps=2, eval_every=2, jobs=2, seed=2)
    tr = SizeTrainer(str(tmp_path / "ppo"), c.modules, base, tc, cfg, start)
    p0 = start.params.copy()
    summary = tr.run()
    assert summary["steps"] == 2
    assert not np.array_equal(tr.policy.params, p0)        # decisions arrived and moved the policy
    assert summary["last_eval"]["failures"] == 0


def test_cli_train_run_and_report(corpus, tmp_path):
    out = str(tmp_path / "cli")
    r = cli("train", "run", corpus, "-o", out, "--init", "zero", "--hidden", "0", "--steps", "1", "--pairs", "1",
            "--modules-per-step", "2", "--eval-every", "1", "--plugin", PLUGIN, "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["steps"] == 1 and os.path.exists(summary["policy"])
    r = cli("train", "report", out, "--train", corpus, "--plugin", PLUGIN, "--quiet")
    assert r.returncode == 0, r.stderr
    text = open(os.path.join(out, "report.md")).read()
    assert "| corpus | train | 6/6 |" in text
    for png in ("learning_curve.png", "per_project.png", "per_module.png"):
        assert os.path.getsize(os.path.join(out, png)) > 1000


def test_cli_user_errors_are_one_line(tmp_path):
    r = cli("train", "run", str(tmp_path), "-o", str(tmp_path / "o"), "--plugin", PLUGIN)
    assert r.returncode == 2 and "not a corpus" in r.stderr and "Traceback" not in r.stderr
    r = cli("train", "report", str(tmp_path))
    assert r.returncode == 2 and "no policy.onnx" in r.stderr


def test_imitation_of_oz_starts_close_to_oz(corpus, tmp_path):
    from mlbridge.train.imitation import fit_imitation
    from mlbridge.train.oz_teacher import collect_oz_decisions
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    raw, labels = collect_oz_decisions(c.modules, tc, jobs=2)
    assert raw.shape == (len(labels), len(FEATURES)) and len(labels) > 20
    assert 0 < labels.sum() < len(labels)                 # -Oz inlines some call sites, not all
    pol = MLPPolicy(list(FEATURES), hidden=(8,), seed=0)
    fit = fit_imitation(pol, raw, labels)
    assert fit["accuracy"] > 0.9
    base = oz_sizes(c, tc, jobs=2, cache=None)
    tr = SizeTrainer(str(tmp_path / "bc"), c.modules, base, tc, TrainConfig(jobs=2), pol)
    ev = tr.evaluate(pol)
    tr.close()
    never = MLPPolicy(list(FEATURES), hidden=(8,), seed=0)
    assert ev["failures"] == 0 and abs(ev["total_reward"]) < 0.05   # within 5 % of -Oz, unlike never inlining
    assert tr.evaluate(never)["total_reward"] < ev["total_reward"]
    tr.close()
