"""The problem interface (python/mlbridge/problems, docs/problems.md): the
registry, each problem's tensors, the inliner's compile commands and verdicts
pinned as they were before the problems existed, the stock eviction advisor
answering through a corpus compile, and every command refusing, in one line,
a problem it cannot serve."""
from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest

from conftest import HELPERS, child_env

sys.path.insert(0, HELPERS)
import mini_corpus  # noqa: E402

from mlbridge import problems  # noqa: E402
from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Policy, Toolchain, cc1_args, command_for, compile_module  # noqa: E402
from mlbridge.corpus.evaluate import OZ, evaluate  # noqa: E402
from mlbridge.corpus.settings import Setting  # noqa: E402
from mlbridge.llvm.inliner_features import FEATURES  # noqa: E402
from mlbridge.problems import COMMANDS, PROBLEMS, Problem, ProblemError  # noqa: E402
from mlbridge.problems.inlining.problem import InliningForSize  # noqa: E402
from mlbridge.problems.inlining.recipe import train_size_policy  # noqa: E402
from mlbridge.train.run_folder import RunArgumentError  # noqa: E402
from mlbridge.problems.inlining.size_trainer import TrainConfig  # noqa: E402

PLUGIN = "/opt/p/libMLBridgeLLVM.so"
INLINING, EVICTION, PHASES = (problems.get(n) for n in ("inlining-size", "regalloc-eviction", "phase-ordering"))


@pytest.fixture(scope="module")
def corpus():
    if not mini_corpus.have_tools():
        pytest.skip("clang-19 / llvm-objcopy-19 not installed")
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        yield layout.load(mini_corpus.make_corpus(os.path.join(d, "corpus")))


# -- the registry ---------------------------------------------------------------------

def test_the_registry_names_each_problem_once():
    assert list(PROBLEMS) == ["inlining-size", "regalloc-eviction", "phase-ordering"]
    assert problems.DEFAULT == "inlining-size"
    for name, p in PROBLEMS.items():
        assert p.name == name and problems.get(name) is p and problems.resolve(name) is p
        assert problems.resolve(p) is p
        assert p.commands <= set(COMMANDS) and p.summary and p.baseline and p.measured


def test_an_unknown_problem_lists_the_known_ones():
    with pytest.raises(ProblemError) as e:
        problems.get("inlining")
    assert e.value.argument == "problem"
    assert e.value.worded("--problem") == ("--problem 'inlining': no such problem (known: inlining-size, "
                                           "regalloc-eviction, phase-ordering)")


# -- each problem's tensors -------------------------------------------------------------

def test_inlining_size_is_llvm_19s_inliner_contract():
    assert INLINING.feature_names == list(FEATURES) and len(FEATURES) == 38
    assert {(f.dtype, f.shape) for f in INLINING.features} == {("int64_t", (1,))}
    assert (INLINING.answer.name, INLINING.answer.dtype, INLINING.answer.shape) == ("inlining_decision", "int64_t", (1,))
    assert INLINING.settings == ("objects", "linked", "lto", "thinlto") and INLINING.commands == set(COMMANDS)


def test_regalloc_eviction_is_llvm_19s_eviction_contract():
    # as stock llc-19's interactive channel announces them (observed on Debian's 19.1.7)
    f = {s.name: (s.dtype, s.shape) for s in EVICTION.features}
    assert len(f) == 21 and EVICTION.feature_names[:2] == ["mask", "is_free"]
    assert EVICTION.feature_names[-3:] == ["max_stage", "min_stage", "progress"]
    assert f["mask"] == f["is_hint"] == f["min_stage"] == ("int64_t", (1, 33))
    assert f["nr_urgent"] == f["use_def_density"] == ("float", (1, 33))
    assert f["progress"] == ("float", (1,))
    assert (EVICTION.answer.name, EVICTION.answer.dtype, EVICTION.answer.shape) == ("index_to_evict", "int64_t", (1,))
    assert EVICTION.settings == ("objects",) and not EVICTION.in_plugin


def test_phase_ordering_is_the_plugins_pass_contract():
    assert [(s.name, s.dtype, s.shape) for s in PHASES.features] == [
        ("module_features", "int64_t", (32,)), ("step", "int64_t", (1,))]
    assert (PHASES.answer.name, PHASES.answer.shape) == ("action", (1,))
    assert PHASES.commands == frozenset({"corpus evaluate", "train room", "log show", "log export"})
    assert PHASES.settings == ("objects", "linked")
    assert PHASES.in_plugin and PHASES.unit == "stored bytes"
    # in clang: a pipeline for every module, or a tuning file per source file (pipeline_override.cc)
    assert PHASES.policy_options(Policy.pipeline("function(sroa)")) == [
        "-mlbridge-po-pipeline=function(sroa)", "-mlbridge-tuning-trace"]
    assert PHASES.policy_options(Policy("tuning", "tuning:t.json", model="/m/t.json")) == [
        "-mlbridge-tuning=/m/t.json", "-mlbridge-tuning-trace"]
    with pytest.raises(ProblemError) as e:
        PHASES.policy_options(Policy("onnx", "p.onnx", model="/m/p.onnx"))
    assert e.value.argument == "policy" and "tuning:FILE" in str(e.value)
    with pytest.raises(ProblemError, match="--problem phase-ordering"):
        INLINING.policy_options(Policy.pipeline("function(sroa)"))


def test_phase_ordering_verdicts_read_the_plugins_trace():
    applied = "mlbridge-tuning: source /b/lib/x.c: applied the pipeline given\n"
    default = "mlbridge-tuning: source /b/lib/y.c: not in the file, default pipeline\n"
    pipeline, tuning = Policy.pipeline("function(sroa)"), Policy("tuning", "tuning:t", model="/t")
    assert PHASES.verdict(applied, pipeline) == (None, 1)
    assert PHASES.verdict("", pipeline)[0].startswith("the plugin did not replace the pipeline")
    assert PHASES.verdict(default, tuning) == (None, 0)
    assert PHASES.verdict("", tuning)[0].startswith("the plugin did not read the tuning file")
    assert PHASES.verdict("", OZ) == (None, None)


# -- inlining-size: the commands and verdicts of before ----------------------------------

@pytest.mark.parametrize("policy,options", [
    (Policy("onnx", "p.onnx", model="/m/p.onnx"),
     ["-mlbridge-inline-runner=onnx", "-mlbridge-inline-model=/m/p.onnx", "-mlbridge-inline-stats"]),
    (Policy("python", "python:m:f", fn=len),
     ["-mlbridge-inline-runner=pipe", "-mlbridge-inline-channel={base}", "-mlbridge-inline-timeout-ms=10000",
      "-mlbridge-inline-stats"]),
    (Policy.callees("/etc/hostname"), ["-mlbridge-inline-callees=/etc/hostname", "-mlbridge-inline-stats"]),
    (OZ, None),
])
@pytest.mark.parametrize("problem", ["inlining-size", INLINING])
def test_inlining_commands_are_pinned(corpus, policy, options, problem):
    m = corpus.modules[0]
    tc = Toolchain("/usr/bin/clang-19", PLUGIN, "clang version 19")
    cmd = command_for(m, policy, "/o/x.o", tc, problem=problem)
    head = ["/usr/bin/clang-19"] + cc1_args(m.command()) + ["-x", "ir", os.path.abspath(m.bc)]
    assert cmd[:len(head)] == head and cmd[-2:] == ["-o", "/o/x.o"]
    plugin = [] if options is None else ["-load", PLUGIN, f"-fpass-plugin={PLUGIN}"]
    assert cmd[len(head):-2] == plugin + [w for o in options or [] for w in ("-mllvm", o)]


@pytest.mark.parametrize("stderr,policy,verdict", [
    ("", OZ, (None, None)),
    ("mlbridge: inliner: 7 model decisions, 3 inlined\nmlbridge: inliner: 5 model decisions, 0 inlined\n",
     Policy("onnx", "p", model="p"), (None, 12)),
    ("mlbridge: inliner callees: 2 of 9 answers set by callee\n", Policy.callees("/etc/hostname"), (None, 9)),
    ("", Policy("onnx", "p", model="p"),
     ("the plugin did not report its inliner (was the module's pipeline without an inliner?)", None)),
    ("mlbridge: warning: model failed; using the default advisor\n", OZ,
     ("the policy was not used: model failed; using the default advisor", None)),
])
def test_inlining_verdicts_are_pinned(stderr, policy, verdict):
    assert INLINING.verdict(stderr, policy) == verdict


def test_inlining_measures_text_bytes_and_rewards_the_relative_saving():
    r = types.SimpleNamespace(text_bytes=900, object_path=None)
    assert INLINING.measure(r) == 900.0
    assert INLINING.reward(1000, INLINING.measure(r)) == pytest.approx(0.1)
    assert INLINING.reward(1000, 1100) == pytest.approx(-0.1) and INLINING.reward(0, 5) == 0.0


def test_the_inlining_results_stand_through_the_problem(corpus):
    """-Oz scored by name and by object: the same sizes, module by module."""
    tc = Toolchain.find()
    by_name = evaluate(corpus, OZ, tc, jobs=2, problem="inlining-size")
    by_object = evaluate(corpus, OZ, tc, jobs=2, problem=InliningForSize())
    sizes = [s.baseline.text_bytes for s in by_name.scores]
    assert all(sizes) and sizes == [s.baseline.text_bytes for s in by_object.scores]
    assert by_name.totals()["delta"] == 0 and by_name.totals()["failed"] == 0


# -- regalloc-eviction: stock LLVM's channel through a corpus compile ----------------------

def test_eviction_policies_answer_over_stock_llvms_channel(corpus):
    """The problem's options put a Python policy in charge of every eviction of
    clang-19's greedy allocator (no plugin): it is asked, and what it answers
    changes the code."""
    tc = Toolchain.find()
    asked = []

    def last_candidate(obs):
        asked.append(obs["mask"].shape)
        return int(np.flatnonzero(obs["mask"].reshape(-1))[-1])

    policy = Policy("python", "python:last", fn=last_candidate)
    m = next(m for m in corpus.modules if m.name.startswith("strhash"))
    with_policy = compile_module(m, policy, os.path.dirname(m.bc), tc, problem="regalloc-eviction")
    default = compile_module(m, OZ, os.path.dirname(m.bc), tc, problem="regalloc-eviction")
    assert with_policy.ok and default.ok, (with_policy.error, default.error)
    assert "-regalloc-evict-interactive-channel-base={base}" in with_policy.command and PLUGIN not in with_policy.command
    assert asked and set(asked) == {(1, 33)}
    assert with_policy.text_bytes != default.text_bytes


def test_only_a_problem_that_decides_in_the_linker_gives_its_environment():
    """The linker's options are the problem's (corpus/settings.py asks it); the base refuses."""
    onnx = Policy("onnx", "p.onnx", model="/m/p.onnx")
    assert INLINING.linker_environment(onnx) == {"MLBRIDGE_INLINE_STATS": "1", "MLBRIDGE_INLINE_RUNNER": "onnx",
                                                 "MLBRIDGE_INLINE_MODEL": "/m/p.onnx"}
    with pytest.raises(ProblemError, match="--problem phase-ordering"):
        INLINING.linker_environment(Policy.pipeline("function(sroa)"))
    for other in (EVICTION, PHASES):
        with pytest.raises(ProblemError, match="does not decide in the linker") as e:
            other.linker_environment(Policy("python", "python:m:f", fn=len))
        assert e.value.argument == "problem"


def test_training_logs_are_the_problems():
    """The plugin's log flag and the linker's log variable are the inliner's (corpus/ asks the problem)."""
    assert INLINING.training_log_options("/l/x.log") == ["-mllvm", "-mlbridge-inline-training-log=/l/x.log"]
    assert INLINING.linker_log_variable == "MLBRIDGE_INLINE_TRAINING_LOG"
    for other in (EVICTION, PHASES):
        assert other.linker_log_variable == ""
        with pytest.raises(ProblemError, match="writes no training logs") as e:
            other.training_log_options("/l/x.log")
        assert e.value.argument == "log"


def test_an_unusable_answer_is_the_problems_failure_not_evictions():
    from mlbridge.core.errors import MLBridgeError
    from mlbridge.problems.eviction import problem as eviction
    assert problems.IllegalAnswer.__module__ == "mlbridge.problems.base"
    assert eviction.IllegalAnswer is problems.IllegalAnswer and issubclass(problems.IllegalAnswer, MLBridgeError)


def test_eviction_takes_only_python_policies():
    with pytest.raises(ProblemError) as e:
        EVICTION.policy_options(Policy("onnx", "p.onnx", model="/m/p.onnx"))
    assert e.value.argument == "policy" and "python:MODULE:FN" in str(e.value)
    assert EVICTION.policy_options(Policy("python", "python:m:f", fn=len)) == [
        "-regalloc-enable-advisor=release", "-regalloc-evict-interactive-channel-base={base}"]


def test_eviction_score_comes_from_regalloc_score(monkeypatch):
    calls = []
    fake = types.ModuleType("mlbridge.llvm.regalloc_score")
    fake.score_module = lambda ir, policy=None, **kw: calls.append((ir, policy, kw)) or types.SimpleNamespace(total=41.5)
    monkeypatch.setitem(sys.modules, "mlbridge.llvm.regalloc_score", fake)
    assert EVICTION.score("m.ll", policy=len, llc="llc-19") == 41.5
    assert calls == [("m.ll", len, {"llc": "llc-19"})]
    assert EVICTION.reward(100.0, 97.0) == pytest.approx(0.03)


def test_eviction_score_not_available_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlbridge.llvm.regalloc_score", None)   # the import fails
    with pytest.raises(ProblemError, match=r"regalloc-eviction: its register-allocation score .* is not available"):
        EVICTION.score("m.ll")
    with pytest.raises(ProblemError, match="not from an object"):
        EVICTION.measure(types.SimpleNamespace(text_bytes=10, object_path="x.o"))


# -- what cannot be served ------------------------------------------------------------------

class _ObjectsOnly(InliningForSize):
    name = "objects-only"
    settings = ("objects",)
    commands = frozenset({"corpus evaluate", "train run"})
    refusal = "a test double"


def test_check_refuses_commands_then_settings():
    p = _ObjectsOnly()
    p.check("train run", "objects")
    with pytest.raises(ProblemError) as e:
        p.check("train search")
    assert e.value.argument == "problem" and "`mlbridge train search` cannot serve it (a test double)" in str(e.value)
    with pytest.raises(ProblemError) as e:
        p.check("corpus evaluate", "lto")
    assert e.value.argument == "setting" and e.value.worded("--setting") == \
        "--setting lto: the objects-only problem is scored in objects only"


def test_library_functions_refuse_before_any_compile(tmp_path):
    with pytest.raises(ProblemError, match="phase-ordering") as e:
        evaluate(None, OZ, None, setting=Setting("lto"), problem="phase-ordering")   # type: ignore[arg-type]
    assert e.value.argument == "setting"
    with pytest.raises(RunArgumentError) as e:
        train_size_policy(str(tmp_path / "run"), [], TrainConfig(), problem="regalloc-eviction")
    assert e.value.argument == "problem"
    with pytest.raises(RunArgumentError) as e:
        train_size_policy(str(tmp_path / "run"), [], TrainConfig(setting="lto"), problem=_ObjectsOnly())
    assert e.value.argument == "setting"
    assert not (tmp_path / "run").exists()


_ARGVS = [
    ["corpus", "evaluate", "C", "--policy", "oz"],
    ["train", "run", "C", "-o", "R"],
    ["train", "search", "C", "-o", "R"],
    ["train", "report", "R"],
    ["train", "room", "C", "-o", "R"],
    ["log", "show", "x.log"],
    ["log", "export", "x.log", "-o", "O"],
]


def test_every_command_that_takes_problem_is_tried():
    assert sorted(" ".join(a[:2]) for a in _ARGVS) == sorted(COMMANDS)


# Every (command, problem) pair the registry says is not served; what is served
# is tested where it is served (test_eviction_evaluate.py, test_eviction_train.py).
@pytest.mark.parametrize("argv,problem", [
    (argv, problem) for problem in ("regalloc-eviction", "phase-ordering", "no-such") for argv in _ARGVS
    if problem not in PROBLEMS or " ".join(argv[:2]) not in PROBLEMS[problem].commands])
def test_commands_refuse_what_they_cannot_serve_in_one_line(tmp_path, argv, problem):
    r = subprocess.run([sys.executable, "-m", "mlbridge", *argv, "--problem", problem], capture_output=True,
                       text=True, timeout=120, env=child_env(), stdin=subprocess.DEVNULL, cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    command = " ".join(argv[:2])
    want = "no such problem" if problem == "no-such" else f"`mlbridge {command}` cannot serve it"
    assert line.startswith("mlbridge: error: --problem ") and want in line
    assert os.listdir(tmp_path) == []   # refused before anything was written


def test_the_inliner_size_cap_is_counted_from_the_plugins_stats():
    """`mlbridge: inliner cap: N ...` lines (one per inliner run; the linker's too) are
    the calls LLVM's ML inliner refused without asking; they are not decisions."""
    from mlbridge.problems import get
    p = get("inlining-size")
    stderr = ("mlbridge: inliner: 40 model decisions, 0 stock decisions after an error\n"
              "mlbridge: inliner cap: 20 call sites left out of line without asking: the module outgrew LLVM's ML "
              "inliner size cap (-ml-advisor-size-increase-threshold)\n"
              "mlbridge: inliner cap: 3 call sites left out of line without asking: ...\n"
              "mlbridge: inliner cap: garbage\n")
    assert p.capped(stderr) == 23
    assert p.verdict(stderr, types.SimpleNamespace(kind="onnx")) == (None, 40)   # the cap lines are not decisions
    assert p.capped("mlbridge: inliner: 40 model decisions, 0 stock decisions after an error\n") == 0
    assert get("regalloc-eviction").capped(stderr) == 0


def test_corpus_evaluate_says_when_the_cap_refused_calls(capsys):
    from mlbridge.cli.corpus_evaluate import report_capped
    report_capped({"total": {"capped": 0, "capped_modules": 0}, "modules": [{"module": "a.o"}]})
    assert capsys.readouterr().err == ""
    report_capped({"total": {"capped": 20, "capped_modules": 1}, "modules": [{"module": "a.o"}]})
    err = capsys.readouterr().err
    assert err.startswith("mlbridge: note: in 1 module(s) LLVM's ML inliner refused 20 call site(s) without asking")
    assert err.count("\n") == 1
