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
from mlbridge.problems.inlining.size_trainer import SizeTrainer, TrainConfig  # noqa: E402


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
    from mlbridge.problems.inlining.oz_teacher import collect_oz_decisions
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


# ---- learning from search: the plugin's -mlbridge-inline-flip and problems/inlining/search.py ----

def _module_with_queries(c, tc, work, least: int = 4):
    from mlbridge.problems.inlining.search import compile_with_flips
    for m in c.modules:
        r, t = compile_with_flips(m, [], tc, work)
        if r.ok and t is not None and len(t.decision) >= least:
            return m, r, t
    pytest.skip("no corpus module with enough inliner queries")


def test_flip_inverts_the_stock_answer_at_the_listed_queries_only(corpus, tmp_path):
    from mlbridge.problems.inlining.search import compile_with_flips
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    base = oz_sizes(c, tc, jobs=2, cache=None)
    m, r0, t0 = _module_with_queries(c, tc, str(tmp_path))
    assert r0.text_bytes == base[m.name]                      # no flip: exactly -Oz
    assert np.array_equal(t0.decision, t0.default)
    i = len(t0.decision) // 2
    r1, t1 = compile_with_flips(m, [i], tc, str(tmp_path))
    assert r1.ok and t1 is not None
    assert np.array_equal(t1.x[:i + 1], t0.x[:i + 1])        # same call sites up to the flip
    assert np.array_equal(t1.decision[:i], t0.decision[:i])
    assert t1.default[i] == t0.default[i] and t1.decision[i] == 1 - t1.default[i]
    after = slice(i + 1, None)
    assert np.array_equal(t1.decision[after], t1.default[after])   # the stock heuristic again after it
    # The same flips compile to the same object size (the search relies on it).
    r2, _ = compile_with_flips(m, [i], tc, str(tmp_path), want_log=False)
    assert r2.text_bytes == r1.text_bytes


@pytest.mark.parametrize("spec", ["1,,2", "x", "3,", str(1 << 41)])
def test_a_malformed_flip_list_is_a_warning_and_the_stock_inliner(corpus, tmp_path, spec):
    from mlbridge.corpus.compile import CompileOptions, Policy, compile_module, plugin_args
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    opts = CompileOptions(extra_args=lambda m: plugin_args(PLUGIN) + ["-mllvm", f"-mlbridge-inline-flip={spec}"])
    r = compile_module(c.modules[0], Policy("oz", "oz"), str(tmp_path), tc, opts)
    assert not r.ok and "mlbridge-inline-flip" in (r.error or ""), r.error   # never a silent -Oz size
    assert r.stderr.count("mlbridge: warning:") == 1


def test_flips_invert_a_models_answers_too(corpus, tmp_path):
    from mlbridge.problems.inlining.search import compile_with_flips
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    model = str(tmp_path / "p.onnx")
    MLPPolicy(list(FEATURES), hidden=(4,), seed=0).export_onnx(model)   # score 0: never inline
    m, _, _ = _module_with_queries(c, tc, str(tmp_path))
    r0, t0 = compile_with_flips(m, [], tc, str(tmp_path), model=model)
    assert r0.ok and t0 is not None and not t0.decision.any()       # the model decided
    r1, t1 = compile_with_flips(m, [0], tc, str(tmp_path), model=model)
    assert r1.ok and t1 is not None and t1.decision[0] == 1 and not t1.decision[1:].any()


def test_flip_search_finds_no_larger_modules_reproduces_and_resumes(corpus, tmp_path):
    from mlbridge.train.imitation import fit_imitation
    from mlbridge.problems.inlining.search import SearchConfig, compile_with_flips, run_search, search_dataset
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    base = oz_sizes(c, tc, jobs=2, cache=None)
    root = str(tmp_path / "search")
    seen = []
    results = run_search(root, c.modules, tc, SearchConfig(tries=6, jobs=2, seed=3), on_done=seen.append)
    assert len(results) == len(c.modules) == len(seen) and all(r.ok for r in results)
    for r in results:
        assert r.oz == base[r.module] and r.best <= r.oz
        assert r.tried <= 6 and (r.best < r.oz) == bool(r.flips)
        if r.flips:   # what the search kept reproduces its size
            m = next(mm for mm in c.modules if mm.name == r.module)
            again, _ = compile_with_flips(m, r.flips, tc, str(tmp_path), want_log=False)
            assert again.text_bytes == r.best
    # Resumed: nothing is compiled again, the same results come back.
    more = []
    assert run_search(root, c.modules, tc, SearchConfig(tries=6, jobs=2, seed=3), on_done=more.append) == results
    assert more == []
    x, y, w, stock = search_dataset([root], c.modules, flip_weight=5.0, tested_weight=2.0)
    assert x.shape == (len(y), len(FEATURES)) and w.shape == y.shape == stock.shape and len(y) > 0
    assert int((y != stock).sum()) == sum(len(r.flips) for r in results)
    assert ((w == 5.0).sum() == sum(len(r.flips) for r in results))
    pol = MLPPolicy(list(FEATURES), hidden=(4,), seed=0)
    fit = fit_imitation(pol, x, y, weights=w, epochs=200)
    assert fit["accuracy"] > 0.8
    # A second round around a policy: scored against -Oz, started from the policy's own size.
    pol.save(str(tmp_path / "p.json"))
    r2 = run_search(str(tmp_path / "r2"), c.modules[:2], tc, SearchConfig(tries=2, jobs=2, around=str(tmp_path / "p.json")))
    for r in r2:
        assert r.ok and r.oz == base[r.module] and r.best <= r.start


def test_train_search_cli_fits_a_policy_and_reports(corpus, tmp_path):
    out = str(tmp_path / "srch")
    p = cli("train", "search", corpus, "-o", out, "--tries", "3", "--hidden", "4", "--epochs", "100",
            "--plugin", PLUGIN, "-j", "2", "--json")
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout.strip().splitlines()[-1])
    assert summary["searched"] == summary["modules"] > 0 and summary["failed"] == 0
    assert summary["searched_best"] <= summary["searched_oz"] and summary["train_failures"] == 0
    assert os.path.exists(os.path.join(out, "policy.onnx")) and os.path.exists(os.path.join(out, "summary.json"))
    bad = cli("train", "search", corpus, "-o", out, "--tries", "-1", "--plugin", PLUGIN)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_proposed_flips_come_first_and_stay_within_the_tries(corpus, tmp_path):
    from mlbridge.problems.inlining.search import compile_with_flips, search_module
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    m, r0, t0 = _module_with_queries(c, tc, str(tmp_path))
    asked = []

    def propose(t):   # inline everything -Oz did not: a poor policy's proposals
        asked.append(len(t.decision))
        return t.default == 0
    res, t = search_module(m, tc, str(tmp_path), 3, np.random.default_rng(0), propose=propose)
    assert asked and res.ok and res.tried <= 3 and res.best <= res.oz == r0.text_bytes
    assert bool(res.flips) == (res.best < res.oz)
    if (t0.default == 0).sum() >= 10:   # enough proposals for every try: no uniform draw was compiled
        assert all(t.default[i] == 0 for i in res.flips)
    again, _ = compile_with_flips(m, res.flips, tc, str(tmp_path), want_log=False)
    assert again.text_bytes == res.best


def test_a_module_whose_compile_fails_is_a_failed_result_and_the_search_goes_on(corpus, tmp_path):
    from mlbridge.problems.inlining.search import SearchConfig, run_search, search_dataset
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    root = str(tmp_path / "s")
    results = run_search(root, c.modules, tc, SearchConfig(tries=2, jobs=2, timeout=0.001))   # every compile times out
    assert len(results) == len(c.modules)
    assert all(not r.ok and "did not finish within 0.001 s and was killed" in (r.error or "") and r.tried == 0
               for r in results)
    x, y, w, stock = search_dataset([root], c.modules)
    assert len(y) == 0                                          # nothing made up for a failed module
    p = cli("train", "search", corpus, "-o", root, "--plugin", PLUGIN, "--timeout", "0.001")
    assert p.returncode == 2 and "no inlining decision" in p.stderr and "Traceback" not in p.stderr


def test_an_unreadable_saved_result_is_searched_again(corpus, tmp_path):
    import glob
    from mlbridge.problems.inlining.search import SearchConfig, run_search
    tc = Toolchain.find(plugin=PLUGIN, need_plugin=True)
    c = layout.load(corpus)
    root = str(tmp_path / "s")
    mods = c.modules[:2]
    first = run_search(root, mods, tc, SearchConfig(tries=2, jobs=2))
    victim = sorted(glob.glob(os.path.join(root, "search", "*.npz")))[0]
    with open(victim, "r+b") as f:   # a disk that lost the file's end
        f.truncate(20)
    again = []
    with pytest.warns(UserWarning, match="unreadable search result"):
        second = run_search(root, mods, tc, SearchConfig(tries=2, jobs=2), on_done=again.append)
    def found(rs):   # all but the wall time
        return [(r.module, r.ok, r.oz, r.best, r.flips, r.tried) for r in rs]
    assert len(again) == 1 and found(second) == found(first)   # searched once more, the same result


def test_train_search_refuses_a_policy_file_that_is_not_one(corpus, tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text('{"names": ')
    for opt in ("--around", "--propose"):
        p = cli("train", "search", corpus, "-o", str(tmp_path / "o"), opt, str(bad), "--plugin", PLUGIN)
        assert p.returncode == 2 and "not a policy file" in p.stderr and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
