"""mlbridge train's compiles as Ray tasks (train/compiles.py, `train run --ray`):
the same seeded ES steps on Ray and in local threads score every candidate
alike (compiles are deterministic), and a checkpoint resumes either way."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ray_support import ROOT, require_llvm

sys.path.insert(0, str(ROOT / "tests" / "python" / "helpers"))
import mini_corpus  # noqa: E402

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Toolchain  # noqa: E402
from mlbridge.corpus.evaluate import oz_sizes  # noqa: E402
from mlbridge.llvm.inliner_features import FEATURES  # noqa: E402
from mlbridge.train.compiles import LocalCompiles, RayCompiles  # noqa: E402
from mlbridge.train.policy import MLPPolicy  # noqa: E402
from mlbridge.problems.inlining.size_trainer import SizeTrainer, TrainConfig  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    require_llvm()
    return mini_corpus.make_corpus(str(tmp_path_factory.mktemp("c") / "corpus"))


def history(out: str):
    with open(os.path.join(out, "history.jsonl")) as f:
        return [json.loads(line) for line in f]


def test_es_steps_on_ray_score_like_local_threads(corpus, tmp_path):
    import ray
    tc = Toolchain.find(need_plugin=True)
    c = layout.load(corpus)
    base = oz_sizes(c, tc, jobs=2, cache=None)
    cfg = TrainConfig(algo="es", hidden=(4,), modules_per_step=3, pairs=2, sigma=0.5, lr=0.3, steps=2,
                      eval_every=2, jobs=2, seed=3)
    runs = {}
    try:
        for name, compiles in (("local", LocalCompiles(2)), ("ray", RayCompiles("local", num_cpus=2))):
            out = str(tmp_path / name)
            start = MLPPolicy(list(FEATURES), hidden=(4,), seed=0)
            SizeTrainer(out, c.modules, base, tc, cfg, start, compiles=compiles).run()
            runs[name] = history(out)
    finally:
        ray.shutdown()
    assert len(runs["ray"]) == 2 and runs["ray"][-1]["failures"] == 0
    for key in ("reward", "best_step_reward", "compiles", "train_total_reward"):
        assert [h.get(key) for h in runs["ray"]] == [h.get(key) for h in runs["local"]], key
    assert runs["ray"][-1]["compiles"] == 3 * (1 + 2 * 2)   # mean + 2 pairs, on 3 modules each


def test_ray_with_ppo_is_a_usage_error(corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    p = subprocess.run([sys.executable, "-m", "mlbridge", "train", "run", corpus, "-o", str(tmp_path / "r"),
                        "--algo", "ppo", "--ray", "local"], capture_output=True, text=True, env=env, timeout=120,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and "PPO" in p.stderr and "Traceback" not in p.stderr



def test_lto_training_on_ray_scores_like_local_threads(tmp_path):
    """A whole-program setting on Ray: a task builds a program (its pre-link
    compiles and the LTO link with the policy in the linker); the same seeded
    ES steps score every candidate as local threads do."""
    import ray
    from mlbridge.corpus.evaluate import OZ, evaluate
    from mlbridge.corpus.programs import Program, write_programs
    from mlbridge.corpus.settings import Setting, program_units
    require_llvm()
    sources = [str(ROOT / "tests" / "corpus" / f) for f in ("bits.c", "geom.c", "strhash.c")]
    root = mini_corpus.make_corpus(str(tmp_path / "corpus"), sources)
    write_programs(root, [Program("libdemo.so", "shared", ("*",), ("bits_demo", "geom_demo", "strhash_demo"),
                                  ("m",))])
    tc = Toolchain.find(need_plugin=True)
    c = layout.load(root)
    setting = Setting("lto")
    units = program_units(c, setting)
    ev = evaluate(c, OZ, tc, jobs=2, setting=setting)
    base = {units[0].name: int(ev.scores[0].baseline.text_bytes)}
    cfg = TrainConfig(algo="es", hidden=(4,), modules_per_step=1, pairs=1, sigma=0.5, lr=0.3, steps=1,
                      eval_every=1, jobs=2, seed=3, setting="lto")
    runs = {}
    try:
        for name, compiles in (("local", LocalCompiles(2)), ("ray", RayCompiles("local", num_cpus=2))):
            out = str(tmp_path / name)
            start = MLPPolicy(list(FEATURES), hidden=(4,), seed=0)
            SizeTrainer(out, units, base, tc, cfg, start, compiles=compiles).run()
            runs[name] = history(out)
    finally:
        ray.shutdown()
    assert runs["ray"][-1]["failures"] == 0 and runs["ray"][-1]["compiles"] == 1 * (1 + 2 * 1)
    for key in ("reward", "best_step_reward", "compiles", "train_total_reward"):
        assert [h.get(key) for h in runs["ray"]] == [h.get(key) for h in runs["local"]], key
