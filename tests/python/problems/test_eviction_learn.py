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
                                  questions=len(t))
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
    model, info, _ = lfs.fit_flip_model(ex, hidden=(), epochs=300)
    flips = model.net.scores(model.net.inputs(x)) > 0
    assert info["flipped"] == flips.sum() > 0
    assert delta[flips].sum() < 0 and info["examples_change_pct"] == pytest.approx(delta[flips].sum())
    # with every flip a loss, the calibrated model flips nothing
    bad = lfs.Examples(x, np.zeros(200, bool), np.full(200, 0.5), np.ones(200, bool), np.zeros(200),
                       np.zeros(200, np.int64), ["m"])
    none, info, _ = lfs.fit_flip_model(bad, hidden=(4,), epochs=50)
    assert info["flipped"] == 0 and not (none.net.scores(none.net.inputs(x)) > 0).any()


def test_calibration_out_of_fold_keeps_only_what_carries_across_projects():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, len(QUESTION))).astype(np.float32)
    proj = np.repeat(np.arange(3), 100)
    mods = [f"p{k}/m.c" for k in range(3)]
    # the same rule in every project: flipping where feature 0 is high lowers the score
    good = x[:, 0] > 1.0
    ex = lfs.Examples(x, good, np.where(good, -1.0, 0.5), np.ones(300, bool), np.zeros(300), proj, mods)
    model, info, _ = lfs.fit_flip_model(ex, hidden=(), epochs=300)
    assert info["oof_flipped"] > 0 and info["oof_change_pct"] < 0 and info["flipped"] > 0
    # a rule that turns around in each project: what one project learns hurts the others
    flip_sign = np.where(proj == 1, -1.0, 1.0)
    good = x[:, 0] * flip_sign > 1.0
    ex = lfs.Examples(x, good, np.where(good, -1.0, 0.5), np.ones(300, bool), np.zeros(300), proj, mods)
    none, info, _ = lfs.fit_flip_model(ex, hidden=(), epochs=300)
    assert info["oof_flipped"] == 0 and info["flipped"] == 0


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


def test_around_a_model_its_own_flips_are_tried_first():
    pol = es.FlipPolicy((), lambda obs, choice, alt, margin: alt == 9)   # flips questions 3 and 5 (runner-up 9)
    for q in QUESTIONS:
        pol(q)
    t = pol.trajectory()
    assert np.flatnonzero(t.flipped).tolist() == [3, 5]
    assert es.candidates(t, 3) == [3, 5] + [int(i) for i in np.argsort(t.margin, kind="stable")
                                            if i not in (3, 5) and t.runner_up[i] != es.NO_ALTERNATIVE][:1]


# -- ES on the flip model's output layer ------------------------------------------------------

class FakeProblem:
    """measure_ir's score: a module's stock score times (1 + |head - target|^2 / 100),
    so ES can move toward TARGET; a module named 'bad' fails when the head's
    first weight is above 5."""

    def __init__(self, target):
        self.target = np.asarray(target, np.float64)
        self.calls = 0

    def measure_ir(self, ir, recorded, policy, *, tools, timeout):
        from mlbridge.llvm.interactive import CompilerFailed
        from mlbridge.problems.eviction import flip_es
        self.calls += 1
        theta = policy.model.net.params[flip_es.head(policy.model)].astype(np.float64)
        if ir == "bad" and theta[0] > 5:
            raise CompilerFailed("llc died")
        stock = {"a": 100.0, "b": 10.0, "bad": 50.0}[ir]
        return type("M", (), {"value": stock * (1 + float(((theta - self.target) ** 2).sum()) / 100)})()


def es_run(tmp_path):
    """A search folder with three searched modules of two projects."""
    out = tmp_path / "search"
    rows = [{"module": f"{p}/{m}.c", "ir": m, "recorded": []} for p, m in (("p1", "a"), ("p1", "bad"), ("p2", "b"))]
    os.makedirs(out)
    (out / "modules.json").write_text(json.dumps({"rows": rows}))
    pol = es.FlipPolicy()
    for q in QUESTIONS:
        pol(q)
    for r in rows:
        stock = {"a": 100.0, "b": 10.0, "bad": 50.0}[r["ir"]]
        res = es.EvictionModuleSearch(r["module"], ok=True, stock=stock, start=stock, best=stock, questions=6)
        es.save_labels(es.labels_path(str(out / "round-0"), r["module"]), res, pol.trajectory())
    return str(out)


def test_es_fitness_is_the_mean_project_change_and_a_failure_counts_twice(tmp_path):
    from mlbridge.problems.eviction import flip_es
    search = es_run(tmp_path)
    mods = flip_es.es_modules(search)
    assert [m["project"] for m in mods] == ["p1", "p1", "p2"]
    assert [m["project"] for m in flip_es.es_modules(search, ["p2"])] == ["p2"]
    with pytest.raises(flip_es.FlipESError, match="no searched module of p3"):
        flip_es.es_modules(search, ["p2", "p3"])
    start = trained(seed=2)
    theta = start.net.params[flip_es.head(start)]
    assert theta.size == 5   # 4 hidden units and the bias
    prob = FakeProblem(theta)   # the start is optimal: every score is stock's
    got = flip_es.fitness([start], mods, problem=prob, llc="llc-19", jobs=1, timeout=1)[0]
    assert got["fitness"] == 0.0 and got["failed"] == 0
    far = flip_es.with_head(start, theta + np.array([10.0, 0, 0, 0, 0]))   # 'bad' fails; the rest +100 %
    got = flip_es.fitness([far], mods, problem=prob, llc="llc-19", jobs=1, timeout=1)[0]
    assert got["failed"] == 1
    # p1: (200 + 100) against 150 -> +100 %; p2: +100 %
    assert got["change_pct"] == pytest.approx({"p1": 100.0, "p2": 100.0})
    assert got["fitness"] == pytest.approx(-100.0)
    # only the head moved
    assert np.array_equal(far.net.params[:flip_es.head(far).start], start.net.params[:flip_es.head(start).start])


def test_es_stops_in_one_line_when_llc_fails_for_every_candidate(tmp_path):
    from mlbridge.llvm.interactive import CompilerFailed
    from mlbridge.problems.eviction import flip_es

    class Broken(FakeProblem):
        def measure_ir(self, ir, recorded, policy, *, tools, timeout):
            raise CompilerFailed("llc-19 was killed by signal 11 (SIGSEGV)", returncode=-11)

    search = es_run(tmp_path)
    with pytest.raises(flip_es.FlipESError) as info:
        flip_es.train_flip_es(str(tmp_path / "es"), search, trained(seed=2), flip_es.FlipESConfig(jobs=1),
                              problem=Broken(np.zeros(5)), llc="llc-19")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("llc failed for every candidate; the first: p1/a.c: llc-19 was killed")
    assert json.load(open(tmp_path / "es" / "state.json"))["history"] == []   # no generation was ranked


def test_es_resumes_as_an_uninterrupted_run_and_a_damaged_state_is_one_line(tmp_path):
    from mlbridge.problems.eviction import flip_es
    search = es_run(tmp_path)
    start = trained(seed=2)
    prob = FakeProblem(start.net.params[flip_es.head(start)] + 1.0)
    cfg = flip_es.FlipESConfig(pairs=2, steps=4, jobs=1, sigma=0.5, lr=0.5)
    whole = flip_es.train_flip_es(str(tmp_path / "whole"), search, start, cfg, problem=prob, llc="llc-19")
    assert whole["steps"] == 4 and whole["best_fitness"] >= whole["start_fitness"]
    import dataclasses
    flip_es.train_flip_es(str(tmp_path / "part"), search, start, dataclasses.replace(cfg, steps=2), problem=prob,
                          llc="llc-19")
    again = flip_es.train_flip_es(str(tmp_path / "part"), search, trained(seed=9), cfg, problem=prob, llc="llc-19")
    assert again["best_fitness"] == whole["best_fitness"]
    for name in ("flip_model.json",):
        assert json.load(open(tmp_path / "part" / name)) == json.load(open(tmp_path / "whole" / name))
    assert os.path.exists(tmp_path / "whole" / "flip_model.onnx")
    (tmp_path / "part" / "state.json").write_text("{broken")
    with pytest.raises(flip_es.FlipESError) as info:
        flip_es.train_flip_es(str(tmp_path / "part"), search, start, cfg, problem=prob, llc="llc-19")
    assert str(info.value).startswith(str(tmp_path / "part" / "state.json") + ": damaged checkpoint")


def test_the_shipped_flip_policy_loads_and_its_onnx_answers_as_its_json():
    pytest.importorskip("onnxruntime")
    here = os.path.join(ROOT, "policies", "regalloc_eviction")
    sys.path.insert(0, here)
    try:
        import regalloc_eviction_policy as shipped
    finally:
        sys.path.remove(here)
    default = DefaultAdvisor()
    for o in questions(300, seed=5):
        assert shipped.flip_policy(o) == shipped.flip_onnx_policy(o)
        assert shipped.default(o) == default(o)


@needs_llvm
def test_train_search_then_es_on_a_small_corpus_end_to_end(tmp_path):
    """The CLI's whole path on two kernels (-O2, where they ask eviction
    questions): two rounds, a model that loads, a rerun that searches nothing
    again, and ES on its output layer that never ends below its start."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
    from mini_corpus import make_corpus
    progs = os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs")
    corpus = make_corpus(str(tmp_path / "kernels"), [os.path.join(progs, f) for f in ("chacha20.c", "sha256.c")],
                         flags=("-O2",))
    out = tmp_path / "ev"
    r = run_cli(corpus, "-o", str(out), "--problem", "regalloc-eviction", "--rounds", "2", "--tries", "3",
                "-j", "2", "--json", "--quiet")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["complete"] and [x["round"] for x in summary["rounds"]] == [0, 1]
    assert summary["rounds"][0]["start_total"] >= summary["rounds"][0]["best_total"]
    assert len(os.listdir(out / "round-1" / "search")) == 2
    FlipModel.load(str(out / "flip_model.json"))
    stamp = {f: os.path.getmtime(out / "round-0" / "search" / f) for f in os.listdir(out / "round-0" / "search")}
    again = run_cli(corpus, "-o", str(out), "--problem", "regalloc-eviction", "--rounds", "2", "--tries", "3",
                    "--json", "--quiet")
    assert again.returncode == 0 and json.loads(again.stdout)["rounds"] == summary["rounds"]
    assert stamp == {f: os.path.getmtime(out / "round-0" / "search" / f) for f in stamp}   # nothing searched again
    es_out = tmp_path / "es"
    r = subprocess.run([sys.executable, "-m", "mlbridge", "train", "run", corpus, "-o", str(es_out), "--problem",
                        "regalloc-eviction", "--init", str(out / "round-0" / "flip_model_in_sample.json"),
                        "--steps", "1", "--pairs", "1", "--json", "--quiet"],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["steps"] == 1 and got["best_fitness"] >= got["start_fitness"]
    load_flip_policy(str(es_out / "flip_model.onnx"))


def _goal_bench():
    import importlib.util
    spec = importlib.util.spec_from_file_location("eviction_goal", os.path.join(ROOT, "bench", "eviction_goal.py"))
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    return g


def test_a_hung_or_failing_evaluation_is_a_failed_row_never_a_figure(monkeypatch):
    g = _goal_bench()

    def hung(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])
    monkeypatch.setattr(g.subprocess, "run", hung)
    row = g.corpus_row("lz4", "python:m:f", 1)
    assert not row["ok"] and "ran past" in row["error"] and "delta_pct" not in row
    assert [(r["name"], r["ok"]) for r in g.program_rows("python:m:f", ["lz4", "dgemm"])] == \
        [("lz4", False), ("dgemm", False)]
    died = lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, "not json", "error: llc-19 died\n")  # noqa: E731
    monkeypatch.setattr(g.subprocess, "run", died)
    assert g.corpus_row("lz4", "python:m:f", 1) == {"kind": "corpus", "name": "lz4", "ok": False,
                                                     "error": "error: llc-19 died"}
    assert all(r["error"] == "error: llc-19 died" for r in g.program_rows("python:m:f", ["sha256"]))


def test_the_goal_counts_held_out_programs_and_a_failure_misses_it():
    g = _goal_bench()
    rows = [{"kind": "corpus", "name": "a", "ok": True, "default": 100.0, "policy": 97.0, "delta_pct": -3.0},
            {"kind": "corpus", "name": "b", "ok": True, "default": 10.0, "policy": 10.0, "delta_pct": 0.0},
            {"kind": "program", "name": "p", "ok": True, "split": "", "default": 100, "policy": 99, "delta_pct": -1.0},
            {"kind": "program", "name": "t", "ok": True, "split": "train", "default": 100, "policy": 150,
             "delta_pct": 50.0}]
    got = g.goal(rows)
    assert got["met"] and got["score_total_pct"] == pytest.approx(-300 / 110)
    assert got["score_mean_pct"] == pytest.approx(-1.5) and got["worst_program_pct"] == -1.0   # t is training code
    assert not g.goal(rows + [{"kind": "program", "name": "q", "ok": True, "split": "", "default": 100,
                               "policy": 100.3, "delta_pct": 0.3}])["met"]          # one program above +0.2 %
    assert not g.goal(rows + [{"kind": "corpus", "name": "c", "ok": False, "error": "llc died"}])["met"]


@needs_llvm
def test_a_corpus_of_an_evaluation_split_recipe_is_never_searched_or_tuned(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
    from mini_corpus import make_corpus
    progs = os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs")
    corpus = make_corpus(str(tmp_path / "lz4"), [os.path.join(progs, "chacha20.c")], flags=("-O2",))
    r = run_cli(corpus, "-o", str(tmp_path / "ev"), "--problem", "regalloc-eviction")
    assert r.returncode == 2 and "lz4 is an evaluation-split project" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(tmp_path / "ev" / "ir")
    model = tmp_path / "m.json"
    trained().save(str(model))
    r = subprocess.run([sys.executable, "-m", "mlbridge", "train", "run", corpus, "-o", str(tmp_path / "es"),
                        "--problem", "regalloc-eviction", "--init", str(model)], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert r.returncode == 2 and "lz4 is an evaluation-split project" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(tmp_path / "es")


def test_a_modules_list_is_reused_only_whole_and_made_with_the_same_settings(tmp_path):
    from mlbridge.problems.eviction.trainer import made_modules
    ir = tmp_path / "a.bc"
    ir.write_bytes(b"BC")
    path = str(tmp_path / "modules.json")
    same = lambda d: d.get("per_project") == 8   # noqa: E731
    assert made_modules(path, "rows", same) is None                                      # none yet
    (tmp_path / "modules.json").write_text("{damaged")
    assert made_modules(path, "rows", same) is None                                      # damaged: made again
    (tmp_path / "modules.json").write_text(json.dumps({"per_project": 8, "rows": [{"ir": str(ir)}]}))
    assert made_modules(path, "rows", same) == [{"ir": str(ir)}]
    assert made_modules(path, "rows", lambda d: d.get("per_project") == 16) is None     # another sample
    assert made_modules(path, "kept") is None                                            # not that list
    ir.unlink()
    assert made_modules(path, "rows", same) is None                                      # its IR is gone
