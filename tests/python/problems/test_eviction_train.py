"""Training an eviction policy (issue 23): the linear policy family
(problems/eviction/policy.py) gives the same answers as its ONNX export on
observations recorded from a real llc-19 session, always answers a legal
candidate (also on NaN/inf features LLVM sends for unspillable ranges), the ES
run (problems/eviction/trainer.py) resumes from its checkpoint exactly as an
uninterrupted run, and a damaged checkpoint is one line. About 15 s."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import ROOT, child_env

from mlbridge.llvm.interactive import CompilerFailed
from mlbridge.problems.base import Measured
from mlbridge.problems.eviction import trainer as et
from mlbridge.problems.eviction.policy import (CANDIDATES, INPUTS, PHI, RAW, EvictionPolicy, OnnxEvictionPolicy,
                                            PolicyFileError, export_onnx, load_policy, phi, warm_start)

LLC = shutil.which("llc-19")
CLANG = shutil.which("clang-19")
needs_llvm = pytest.mark.skipif(not (LLC and CLANG), reason="clang-19 / llc-19 not installed")
INT = {"mask", "is_free", "is_hint", "is_local", "max_stage", "min_stage"}


def _copy(obs):
    return {k: np.array(v, copy=True) for k, v in obs.features.items()}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Observations of a real llc-19 session (ChaCha20 at -O2: register pressure)."""
    if not (LLC and CLANG):
        pytest.skip("clang-19 / llc-19 not installed")
    from mlbridge.llvm.interactive import make_optimized_ir, regalloc_evict
    tmp = tmp_path_factory.mktemp("evict")
    ir = make_optimized_ir(os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs", "chacha20.c"), str(tmp / "c.ll"))
    seen = []
    warm = warm_start()

    def policy(obs):
        seen.append(_copy(obs))
        return warm(obs)

    result, answers = regalloc_evict(ir, policy, timeout=120)
    assert result.ok and len(seen) > 20
    return seen


def _weights(seed):
    rng = np.random.default_rng(seed)
    return warm_start().weights + rng.normal(0, 1, len(PHI)).astype(np.float32) * \
        np.where(np.abs(warm_start().weights) > 0, 50, 1).astype(np.float32)


def _random_obs(rng, *, nan=False):
    obs = {}
    mask = (rng.random(CANDIDATES) < 0.3).astype(np.int64)
    if not mask.any():
        mask[rng.integers(CANDIDATES)] = 1
    obs["mask"] = mask.reshape(1, CANDIDATES)
    for name in RAW:
        if name in INT:
            obs[name] = rng.integers(0, 3, (1, CANDIDATES)).astype(np.int64)
        else:
            v = rng.random((1, CANDIDATES)).astype(np.float32)
            if nan:
                v[0, rng.integers(CANDIDATES)] = np.nan
                v[0, rng.integers(CANDIDATES)] = np.inf
                v[0, -1] = np.nan if name == "use_def_density" else v[0, -1]
            obs[name] = v
    obs["progress"] = np.array([rng.random()], np.float32)
    return obs


@needs_llvm
def test_the_onnx_export_answers_as_the_python_policy_on_recorded_observations(recorded, tmp_path):
    for k, w in enumerate([warm_start().weights, _weights(1), _weights(2), np.ones(len(PHI), np.float32)]):
        pol = EvictionPolicy(w)
        path = export_onnx(pol, str(tmp_path / f"p{k}.onnx"))
        onnx_pol = OnnxEvictionPolicy(path)
        got = [onnx_pol(o) for o in recorded]
        want = [pol(o) for o in recorded]
        assert got == want, f"weights {k}: {sum(a != b for a, b in zip(got, want))} answers differ"
    # and the warm start does not answer one fixed index: the comparison means something
    assert len({warm_start()(o) for o in recorded}) > 1


@needs_llvm
def test_the_shipped_onnx_answers_as_its_json(recorded):
    folder = os.path.join(ROOT, "policies", "regalloc_eviction")
    if not os.path.exists(os.path.join(folder, "policy.onnx")):
        pytest.skip("no shipped eviction policy")
    pol = EvictionPolicy.load(os.path.join(folder, "policy.json"))
    onnx_pol = OnnxEvictionPolicy(os.path.join(folder, "policy.onnx"))
    assert [onnx_pol(o) for o in recorded] == [pol(o) for o in recorded]


def test_the_onnx_export_answers_as_the_python_policy_on_nan_and_inf(tmp_path):
    rng = np.random.default_rng(0)
    pol = EvictionPolicy(_weights(3))
    onnx_pol = OnnxEvictionPolicy(export_onnx(pol, str(tmp_path / "p.onnx")))
    for _ in range(200):
        o = _random_obs(rng, nan=True)
        assert onnx_pol(o) == pol(o)


def test_the_answer_is_always_a_legal_candidate(tmp_path):
    rng = np.random.default_rng(1)
    pols = [warm_start(), EvictionPolicy(_weights(4)), EvictionPolicy(-warm_start().weights),
            EvictionPolicy(np.full(len(PHI), 1e30, np.float32))]
    onnx_pols = [OnnxEvictionPolicy(export_onnx(p, str(tmp_path / f"{k}.onnx"))) for k, p in enumerate(pols)]
    for i in range(300):
        o = _random_obs(rng, nan=i % 2 == 1)
        for p in pols + onnx_pols:
            a = p(o)
            assert type(a) is int and o["mask"].reshape(-1)[a] == 1


@needs_llvm
def test_a_real_compile_takes_only_legal_answers(tmp_path):
    """Through the problem's checker (IllegalAnswer on any illegal index), a perturbed policy."""
    from mlbridge import problems
    from mlbridge.llvm.interactive import make_optimized_ir
    ir = make_optimized_ir(os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs", "sha256.c"), str(tmp_path / "s.ll"))
    m = problems.get("regalloc-eviction").measure_ir(ir, ["-cc1", "-O2"], EvictionPolicy(_weights(5)),
                                                     tools={"llc": LLC}, timeout=120)
    assert m.decisions > 0 and m.value > 0


def test_the_policy_file_round_trips_and_a_bad_one_is_one_line(tmp_path):
    p = EvictionPolicy(_weights(6))
    p.save(str(tmp_path / "p.json"))
    assert np.array_equal(EvictionPolicy.load(str(tmp_path / "p.json")).weights, p.weights)
    (tmp_path / "bad.json").write_text('{"format": "x"}')
    with pytest.raises(PolicyFileError) as e:
        EvictionPolicy.load(str(tmp_path / "bad.json"))
    assert len(str(e.value).splitlines()) == 1
    with pytest.raises(ValueError, match=f"{len(PHI)} weights"):
        EvictionPolicy([1.0, 2.0])
    assert set(INPUTS) == {"mask", "progress", *RAW}


def test_a_malformed_policy_file_is_one_line(tmp_path):
    """Wrong weight count or non-finite weights in a well-formed JSON, a truncated
    .onnx, and an .onnx that is not an eviction model: each one PolicyFileError line."""
    doc = EvictionPolicy(_weights(6)).as_dict()
    for name, weights in (("short.json", [1.0, 2.0]), ("nan.json", [float("nan")] * len(PHI))):
        (tmp_path / name).write_text(json.dumps(dict(doc, weights=weights)))
        with pytest.raises(PolicyFileError) as e:
            load_policy(str(tmp_path / name))
        assert len(str(e.value).splitlines()) == 1 and name in str(e.value)
    good = export_onnx(EvictionPolicy(_weights(6)), str(tmp_path / "p.onnx"))
    assert not os.path.exists(good + ".tmp")
    (tmp_path / "cut.onnx").write_bytes(open(good, "rb").read()[:100])
    with pytest.raises(PolicyFileError) as e:
        load_policy(str(tmp_path / "cut.onnx"))
    assert len(str(e.value).splitlines()) == 1 and "cut.onnx" in str(e.value)
    import onnx   # required (scripts/setup.sh): a missing install fails here, not skips
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), str(tmp_path / "other.onnx"))
    with pytest.raises(PolicyFileError, match="not an eviction model: no input 'mask'"):
        load_policy(str(tmp_path / "other.onnx"))


# -- the ES run: checkpoints ---------------------------------------------------------------

class _FakeProblem:
    """measure_ir without llc: a deterministic score of the policy's weights per module."""
    name = "regalloc-eviction"

    def measure_ir(self, ir, recorded, policy, *, tools, timeout):
        k = int(os.path.basename(ir).split(".")[0])
        w = policy.weights.astype(np.float64)
        target = warm_start().weights.astype(np.float64) * (1 + 0.1 * k)
        return Measured(1000.0 + float(np.sum(((w - target) / 100.0) ** 2)), 1, 0.0, {})


def test_modules_whose_clang_dies_or_hangs_are_skipped_not_fatal(tmp_path):
    """prepare_modules: a clang that exits non-zero, is killed by a signal or
    outlives the timeout skips its module with a note; the one that works is kept."""
    clang = tmp_path / "clang"
    clang.write_text("#!/bin/sh\ncase \"$*\" in\n*-Ddies*) kill -9 $$;;\n*-Dfails*) exit 1;;\n"
                     "*-Dhangs*) exec sleep 30;;\nesac\nfor a; do o=$a; done\n: > \"$o\"\n")
    clang.chmod(0o755)

    class Problem:
        def codegen_args(self, recorded):
            return []

        def measure_ir(self, ir, recorded, policy, *, tools, timeout):
            return Measured(1000.0, 1, 0.0, {})

    def module(name):
        bc = tmp_path / f"{name}.bc"
        bc.write_bytes(b"")
        return SimpleNamespace(name=name, bc=str(bc), command_file=str(tmp_path / f"{name}.cmd"),
                               command=lambda n=name: ["-cc1", "-D" + n])

    corpus = SimpleNamespace(root=str(tmp_path / "c"), modules=[module(n) for n in ("works", "fails", "dies", "hangs")])
    notes = []
    cfg = et.EvictionTrainConfig(modules=4, jobs=4, timeout=1.0)
    run = tmp_path / "run"
    run.mkdir()
    kept = et.prepare_modules(str(run), [corpus], cfg, toolchain=SimpleNamespace(clang=str(clang), llc="llc-19",
                                                                                  plugin=None),
                              problem=Problem(), note=notes.append)
    assert [m["module"] for m in kept] == ["works"]
    assert sorted(notes) == [f"skipped {n}: clang failed making its IR" for n in ("dies", "fails", "hangs")]


def _fake_run(tmp_path, name):
    run = tmp_path / name
    (run / "ir").mkdir(parents=True)
    kept = []
    for k in range(2):
        ir = run / "ir" / f"{k}.opt.bc"
        ir.write_bytes(b"")
        kept.append({"module": f"m{k}", "corpus": "c", "ir": str(ir), "recorded": ["-cc1"], "codegen": [],
                     "baseline": 1000.0, "warm": 1000.0, "decisions": 1, "seconds": 0.1})
    (run / "modules.json").write_text(json.dumps({"all": kept, "kept": kept}))
    return str(run)


def _train(run, steps):
    cfg = et.EvictionTrainConfig(modules=2, pairs=2, steps=steps, jobs=1)
    return et.train_eviction(run, [], cfg, toolchain=SimpleNamespace(llc="llc-19"), problem=_FakeProblem())


def test_a_run_resumes_from_its_checkpoint_as_if_never_stopped(tmp_path):
    whole = _fake_run(tmp_path, "whole")
    _train(whole, 4)
    parts = _fake_run(tmp_path, "parts")
    s2 = _train(parts, 2)
    assert s2["steps"] == 2 and json.load(open(os.path.join(parts, "state.json")))["es"]["generation"] == 2
    s4 = _train(parts, 4)
    assert s4["steps"] == 4
    a = json.load(open(os.path.join(whole, "state.json")))
    b = json.load(open(os.path.join(parts, "state.json")))
    assert a["es"]["mean"] == b["es"]["mean"] and a["es"]["best"] == b["es"]["best"]
    assert [h["mean_fitness"] for h in a["history"]] == [h["mean_fitness"] for h in b["history"]]
    # the shipped files are the best weights, the ONNX giving the JSON's answers
    pol = EvictionPolicy.load(os.path.join(parts, "policy.json"))
    o = _random_obs(np.random.default_rng(7))
    assert OnnxEvictionPolicy(os.path.join(parts, "policy.onnx"))(o) == pol(o)


class _FailingProblem(_FakeProblem):
    """llc dies on module 1 under every candidate whose weights sum above the warm start's
    (in each antithetic pair, one side), or under every candidate at all."""

    def __init__(self, always=False):
        self.always = always

    def measure_ir(self, ir, recorded, policy, *, tools, timeout):
        k = int(os.path.basename(ir).split(".")[0])
        if k == 1 and (self.always or policy.weights.sum() > warm_start().weights.sum() + 1e-6):
            raise CompilerFailed("llc-19 was killed by signal 11 (SIGSEGV) on 1.opt.bc", returncode=-11)
        return super().measure_ir(ir, recorded, policy, tools=tools, timeout=timeout)


def test_an_llc_that_dies_under_one_candidate_penalises_that_candidate_only(tmp_path):
    run = _fake_run(tmp_path, "run")
    notes = []
    cfg = et.EvictionTrainConfig(modules=2, pairs=2, steps=2, jobs=2)
    et.train_eviction(run, [], cfg, toolchain=SimpleNamespace(llc="llc-19"), problem=_FailingProblem(),
                      note=notes.append)
    st = json.load(open(os.path.join(run, "state.json")))
    assert [h["generation"] for h in st["history"]] == [0, 1]          # the run went on
    assert all(h["failed_candidates"] == 2 for h in st["history"])     # one of each of the 2 pairs
    failed = [n for n in notes if "counted as twice the default's score" in n]
    assert len(failed) == 4 and all("m1: llc-19 was killed by signal 11" in n for n in failed)
    # the failed module counts as reward -1: such a candidate is never the best
    w = EvictionPolicy.load(os.path.join(run, "policy.json")).weights
    assert w.sum() <= warm_start().weights.sum() + 1e-6
    res = et.fitness([warm_start().weights * 1.5, warm_start().weights], json.load(
        open(os.path.join(run, "modules.json")))["kept"], problem=_FailingProblem(), llc="llc-19", jobs=1, timeout=1.0)
    assert res[0]["failed"] and not res[1]["failed"]
    m0 = _FakeProblem().measure_ir(os.path.join(run, "ir", "0.opt.bc"), [], EvictionPolicy(warm_start().weights * 1.5),
                                   tools={}, timeout=1.0).value
    assert res[0]["total"] == pytest.approx(m0 + 2000.0)               # module 1 as twice its default (1000)
    assert res[0]["fitness"] == pytest.approx(((1000.0 - m0) / 1000.0 - 1.0) / 2)


def test_an_llc_that_fails_for_every_candidate_ends_the_run_in_one_line(tmp_path):
    run = _fake_run(tmp_path, "run")
    cfg = et.EvictionTrainConfig(modules=2, pairs=2, steps=2, jobs=1)
    with pytest.raises(et.EvictionTrainError, match=r"^llc failed for every candidate; the first: m1: llc-19 was "
                                                     r"killed by signal 11 \(SIGSEGV\) on 1.opt.bc$"):
        et.train_eviction(run, [], cfg, toolchain=SimpleNamespace(llc="llc-19"), problem=_FailingProblem(always=True))


@pytest.mark.parametrize("text", ["{not json", '{"format": "mlbridge-eviction-es/1"}', "[]",
                                  '{"format": "mlbridge-eviction-es/1", "es": {"mean": [1, 2]}, "history": []}'])
def test_a_damaged_checkpoint_is_one_line(tmp_path, text):
    run = _fake_run(tmp_path, "run")
    with open(os.path.join(run, "state.json"), "w") as f:
        f.write(text)
    with pytest.raises(et.EvictionTrainError) as e:
        _train(run, 2)
    msg = str(e.value)
    assert len(msg.splitlines()) == 1 and "damaged checkpoint" in msg and "state.json" in msg


def _cli(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "mlbridge", *argv], capture_output=True, text=True, timeout=120,
                          env=child_env(), stdin=subprocess.DEVNULL, cwd=cwd)


def test_the_cli_says_a_damaged_checkpoint_in_one_line(tmp_path):
    corpus = tmp_path / "tiny"
    corpus.mkdir()
    (corpus / "corpus_description.json").write_text(json.dumps({"has_thinlto": False, "modules": []}))
    run = tmp_path / "run"
    run.mkdir()
    (run / "state.json").write_text("{broken")
    r = _cli("train", "run", str(corpus), "-o", str(run), "--problem", "regalloc-eviction", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "damaged checkpoint" in line


@pytest.mark.parametrize("extra,want", [(["--algo", "ppo"], "ES only"), (["--hidden", "32"], "linear"),
                                        (["--setting", "lto"], "objects")])
def test_options_that_do_not_apply_are_refused_in_one_line(tmp_path, extra, want):
    r = _cli("train", "run", "C", "-o", "R", "--problem", "regalloc-eviction", *extra, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert want in line
    assert os.listdir(tmp_path) == []


def test_an_evaluation_split_corpus_is_refused(tmp_path):
    corpus = tmp_path / "lz4"
    corpus.mkdir()
    (corpus / "corpus_description.json").write_text(json.dumps({"has_thinlto": False, "modules": []}))
    r = _cli("train", "run", str(corpus), "-o", str(tmp_path / "run"), "--problem", "regalloc-eviction",
             cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "evaluation-split project" in r.stderr.strip().splitlines()[-1]
