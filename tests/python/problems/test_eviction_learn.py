"""Learning an eviction policy from search (problems/eviction/flip_model.py and
learn_from_search.py): the flip model is the exact default until trained, its
features agree one by one and in bulk, its ONNX export answers as numpy, its
files round-trip and a damaged one is one line; examples are labelled from the
start policy's answer and the flip's score; the calibration never flips what
loses in total; the module sample is fixed and grows as a superset; a search
round around a fitted model flips that model's answers; the whole run on one
real module (llc-19) and the CLI's refusals. About 10 s."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT

from mlbridge.problems.eviction import learn_from_search as lfs
from mlbridge.problems.eviction import search as es
from mlbridge.problems.eviction.default_advisor import SELF, DefaultAdvisor
from mlbridge.problems.eviction.flip_model import (QUESTION, FlipModel, FlipModelPolicy, OnnxFlipModel,
                                                   load_flip_policy, question_features, question_rows, untrained)
from mlbridge.problems.eviction.policy import PolicyFileError
from mlbridge.problems.eviction.problem import legal_answers
from mlbridge.train.policy import MLPPolicy

from test_eviction_search import QUESTIONS, random_obs

LLC = shutil.which("llc-19")
CLANG = shutil.which("clang-19")
needs_llvm = pytest.mark.skipif(not (LLC and CLANG), reason="clang-19 / llc-19 not installed")


def trained(seed=0, bias=None, max_margin=3.0):
    """A flip model with random weights; its bias BIAS, or centred on random
    questions so that it flips some of them, not all."""
    net = MLPPolicy(QUESTION, (4,), output="runner_up_score", seed=seed)
    rng = np.random.default_rng(seed)
    net.params = rng.normal(0, 1, net.dim).astype(np.float32)
    net.params[-1] = 0.0
    if bias is None:
        rows = [question_features(o, *r) for o in questions(100, seed=seed + 7) for r in [es.rank(o)]
                if r[1] != es.NO_ALTERNATIVE]
        bias = -float(np.median(net.scores(net.inputs(np.stack(rows)))))
    net.params[-1] = np.float32(bias)
    return FlipModel(net, max_margin)


def questions(n=300, seed=1):
    rng = np.random.default_rng(seed)
    return [random_obs(rng) for _ in range(n)]


# -- the model --------------------------------------------------------------------------

def test_an_untrained_flip_model_is_the_default_advisor():
    pol = FlipModelPolicy(FlipModel(untrained(), 3.0))
    default = DefaultAdvisor()
    for o in questions():
        assert pol(o) == default(o)


def test_a_trained_flip_model_answers_the_default_or_its_runner_up_never_an_illegal_index():
    pol = legal_answers(FlipModelPolicy(trained()))   # the problem's own check raises on a masked index
    default = DefaultAdvisor()
    flipped = 0
    for o in questions():
        choice, alt, _ = es.rank(o)
        got = pol(o)
        assert got in (choice, alt)
        flipped += got != default(o)
    assert 0 < flipped < 300


def test_beyond_max_margin_the_default_stands():
    far = FlipModelPolicy(trained(bias=100.0, max_margin=3.0))    # flips wherever it may
    near = FlipModelPolicy(trained(bias=100.0, max_margin=0.05))
    for o in questions(200):
        choice, alt, margin = es.rank(o)
        if alt == es.NO_ALTERNATIVE:
            continue
        assert far(o) == alt
        assert near(o) == (alt if margin <= 0.05 else choice)


def test_question_rows_are_question_features_in_bulk():
    qs = questions(100)
    ranked = [es.rank(o) for o in qs]
    keep = [i for i, r in enumerate(ranked) if r[1] != es.NO_ALTERNATIVE]
    one = np.stack([question_features(qs[i], *ranked[i]) for i in keep])
    names = [n for n in qs[0] if n != "progress"]
    bulk = question_rows({n: np.concatenate([qs[i][n] for i in keep]) for n in names},
                         np.array([ranked[i][0] for i in keep]), np.array([ranked[i][1] for i in keep]),
                         np.array([ranked[i][2] for i in keep]),
                         np.concatenate([qs[i]["progress"] for i in keep]))
    assert bulk.shape == (len(keep), len(QUESTION)) and np.isfinite(bulk).all()
    assert np.array_equal(one, bulk)


def test_the_onnx_export_answers_as_numpy_and_files_round_trip(tmp_path):
    pytest.importorskip("onnxruntime")
    m = trained(seed=3)
    m.save(str(tmp_path / "m.json"))
    m.export_onnx(str(tmp_path / "m.onnx"))
    again, onnx_pol = load_flip_policy(str(tmp_path / "m.json")), load_flip_policy(str(tmp_path / "m.onnx"))
    py = FlipModelPolicy(m)
    assert isinstance(onnx_pol.model, OnnxFlipModel) and onnx_pol.model.max_margin == m.max_margin
    for o in questions(200, seed=4):
        assert py(o) == again(o) == onnx_pol(o)
    assert sorted(os.listdir(tmp_path)) == ["m.json", "m.onnx"]   # no temporary files left


@pytest.mark.parametrize("content", ["{not json", '{"format": "other"}', '{"format": "mlbridge-eviction-flip/1"}'])
def test_a_damaged_flip_model_is_one_line(tmp_path, content):
    path = tmp_path / "m.json"
    path.write_text(content)
    with pytest.raises(PolicyFileError) as info:
        FlipModel.load(str(path))
    assert "\n" not in str(info.value) and str(info.value).startswith(f"{path}: cannot load the eviction flip model")


# -- examples and the fit -----------------------------------------------------------------

def labels_dir(tmp_path, singles, *, base=None, start=100.0, name="m.c"):
    """A round folder with one labels file: QUESTIONS asked with BASE, SINGLES
    ([question, score]) around START."""
    pol = es.FlipPolicy((), base)
    for q in QUESTIONS:
        pol(q)
    t = pol.trajectory()
    res = es.EvictionModuleSearch(name, ok=True, stock=start, start=start, best=start, singles=singles,
                                  tried=[i for i, _ in singles], questions=len(t))
    d = tmp_path / "round"
    es.save_labels(es.labels_path(str(d), name), res, t)
    return str(d)


def test_examples_are_labelled_from_the_start_answer_and_the_flips_score(tmp_path):
    # QUESTIONS: 0 (1 or 2), 1 (4 or 32), 2 (32 or 4), 3 (5 or 9), 4 (no alternative), 5 (8 or 9)
    d = labels_dir(tmp_path, [[0, 90.0], [1, 105.0], [2, 100.0], [3, None], [4, 80.0]])
    ex = lfs.examples([d])
    # a failed flip (3) and a question without a runner-up (4) are no examples
    assert len(ex) == 3 and ex.modules == ["m.c"]
    assert ex.y.tolist() == [True, False, False]            # lower: the runner-up is better
    assert ex.delta.tolist() == pytest.approx([-10.0, 5.0, 0.0])
    assert ex.flipped_to_alt.all()


def test_around_a_model_that_took_the_runner_up_a_lower_flip_back_says_the_default_is_better(tmp_path):
    always = lambda obs, choice, alt, margin: True   # noqa: E731 - the base takes every runner-up
    d = labels_dir(tmp_path, [[0, 90.0], [1, 110.0]], base=always)
    ex = lfs.examples([d])
    assert ex.y.tolist() == [False, True] and not ex.flipped_to_alt.any()


def test_calibration_flips_only_what_wins_in_total():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, len(QUESTION))).astype(np.float32)
    good = x[:, 0] > 1.0
    delta = np.where(good, -1.0, 0.5)
    ex = lfs.Examples(x, good, delta, np.ones(200, bool), np.zeros(200), np.zeros(200, np.int64), ["m"])
    model, info = lfs.fit_flip_model(ex, hidden=(), epochs=300)
    flips = model.net.scores(model.net.inputs(x)) > 0
    assert info["flipped"] == flips.sum() > 0
    assert delta[flips].sum() < 0 and info["examples_change_pct"] == pytest.approx(delta[flips].sum())
    # with every flip a loss, the calibrated model flips nothing
    bad = lfs.Examples(x, np.zeros(200, bool), np.full(200, 0.5), np.ones(200, bool), np.zeros(200),
                       np.zeros(200, np.int64), ["m"])
    none, info = lfs.fit_flip_model(bad, hidden=(4,), epochs=50)
    assert info["flipped"] == 0 and not (none.net.scores(none.net.inputs(x)) > 0).any()


def test_no_examples_is_one_line():
    with pytest.raises(lfs.LearnFromSearchError):
        lfs.fit_flip_model(lfs.examples([]))


def test_the_module_sample_is_fixed_and_a_larger_one_contains_it():
    class C:
        modules = [type("M", (), {"name": f"m{i}.c"})() for i in range(30)]
    a = [m.name for m in lfs.sample_modules(C, 5)]
    assert a == [m.name for m in lfs.sample_modules(C, 5)] and len(a) == 5 and a == sorted(a)
    assert set(a) <= {m.name for m in lfs.sample_modules(C, 12)}
    assert a != [m.name for m in lfs.sample_modules(C, 5, seed=1)]


def test_a_round_without_its_predecessors_model_is_one_line(tmp_path):
    with pytest.raises(lfs.LearnFromSearchError) as info:
        lfs.search_round(str(tmp_path), 1, [], llc="llc-19", cfg=es.EvictionSearchConfig())
    assert "round 0 has no fitted model yet" in str(info.value)


def test_no_module_starts_after_the_deadline(tmp_path, monkeypatch):
    monkeypatch.setattr(es, "search_module", lambda *a, **k: pytest.fail("searched after the deadline"))
    rows = [{"module": "a.c", "ir": "a.bc", "recorded": []}]
    assert es.run_search(str(tmp_path), rows, llc="llc-19", deadline=0.0) == []


# -- real compiles ----------------------------------------------------------------------------

@needs_llvm
def test_a_search_around_a_model_flips_the_models_answers(tmp_path):
    from mlbridge.llvm.interactive import make_optimized_ir
    ir = make_optimized_ir(os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs", "chacha20.c"),
                           str(tmp_path / "c.ll"))
    model = trained(bias=100.0)   # takes every runner-up within its margin
    _, plain = es.compile_with_flips(ir, ["-O2"], (), llc=LLC, timeout=120)
    _, based = es.compile_with_flips(ir, ["-O2"], (), llc=LLC, timeout=120, base=model)
    has = based.runner_up != es.NO_ALTERNATIVE
    assert based.same_question(plain, 0)
    assert np.array_equal(based.answer[has], based.runner_up[has])
    # flipping question 0 around the model gives the default's answer there
    _, back = es.compile_with_flips(ir, ["-O2"], [0], llc=LLC, timeout=120, base=model)
    assert back.answer[0] == plain.default[0] == plain.answer[0]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mlbridge", "train", "search", *args],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))


@pytest.mark.parametrize("flag", [["--around", "p.json"], ["--data", "r1"], ["--no-eval"], ["--rounds", "0"]])
def test_the_cli_refuses_what_does_not_apply_in_one_line(tmp_path, flag):
    r = run_cli(str(tmp_path), "-o", str(tmp_path / "o"), "--problem", "regalloc-eviction", *flag)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
