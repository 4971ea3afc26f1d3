"""Whole-program settings with the real linker: programs linked by ld.lld with
--gc-sections, with full LTO and with ThinLTO, the plugin loaded into lld's LTO
backends (one per module and thread in ThinLTO), and
every way the linker can leave the policy out (a model it cannot load, a plugin
it never ran, a link that fails, an export list naming nothing) a failed
program, never an -Oz size."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import PLUGIN, ROOT, demo_lib, model

sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import mini_corpus  # noqa: E402

from mlbridge.corpus import layout, settings  # noqa: E402
from mlbridge.corpus.compile import CompileOptions, Policy  # noqa: E402
from mlbridge.corpus.evaluate import evaluate  # noqa: E402
from mlbridge.corpus.programs import Program  # noqa: E402
from mlbridge.corpus.settings import Setting, build_program  # noqa: E402

LIB = demo_lib()


@pytest.fixture(scope="module")
def corpus(lib_corpus) -> str:
    return lib_corpus


def cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "mlbridge.cli.corpus_evaluate", *args, "--plugin", PLUGIN,
                           "--no-cache", "-q", "--json"], capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("setting", ["linked", "lto", "thinlto"])
def test_never_inlining_is_measured_on_the_linked_program(corpus, setting):
    p = cli(corpus, "--policy", model("never.onnx"), "--setting", setting)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["setting"] == setting
    (prog,) = data["modules"]
    assert prog["module"] == "libdemo.so" and prog["ok"]
    assert prog["policy_text"] != prog["oz_text"] and prog["decisions"] > 0


def test_settings_measure_what_ships(corpus, toolchain, tmp_path):
    """The linked file exports the API only (the version script held), and its
    .text is the linked file's, not the sum of the objects."""
    c = layout.load(corpus)
    oz = Policy.parse("oz")
    objects = evaluate(c, oz, toolchain, jobs=2).totals()["oz_text"]
    linked = build_program(c, LIB, oz, Setting("linked"), str(tmp_path), toolchain, CompileOptions(), keep=True)
    assert linked.ok, linked.error
    from mlbridge.corpus.elf import defined_dynamic_symbols
    exported = defined_dynamic_symbols(linked.object_path)
    assert set(LIB.exports) <= exported and "bits_leaf" not in exported   # the version script held
    assert linked.text_bytes > 0 and linked.text_bytes != objects


def test_policy_decides_inside_the_linker(corpus, toolchain, tmp_path):
    """In lto, the plugin loaded by lld reports its own decisions: the merged
    program is inlined by the policy too, not only the pre-link modules."""
    c = layout.load(corpus)
    r = build_program(c, LIB, Policy.parse(model("never.onnx")), Setting("lto"), str(tmp_path), toolchain,
                      CompileOptions())
    assert r.ok, r.error
    assert "MLBRIDGE_INLINE_RUNNER=onnx" in r.command and "--load-pass-plugin=" in r.command
    assert any(ln.startswith("mlbridge: inliner: ") for ln in r.stderr.splitlines()), r.stderr


def test_python_policy_answers_the_linker_over_pipes(corpus, toolchain, tmp_path):
    asked = []

    def never(obs):
        asked.append(1)
        return np.int64(0)

    c = layout.load(corpus)
    pol = Policy("python", "python:test:never", fn=never)
    r = build_program(c, LIB, pol, Setting("lto"), str(tmp_path), toolchain, CompileOptions())
    assert r.ok, r.error
    assert r.decisions == len(asked) > 0
    assert any(ln.startswith("mlbridge: inliner: ") for ln in r.stderr.splitlines())


def _reports(stderr: str):
    return [ln for ln in stderr.splitlines() if ln.startswith("mlbridge: inliner: ")]


def test_thinlto_every_backend_decides(corpus, toolchain, tmp_path):
    """ThinLTO: lld runs one backend per module on several threads, each with
    the plugin's own advisor; each reports on a line of its own (written at
    once, never interleaved with another thread's), and the program's
    decisions are their sum with the pre-link compiles'."""
    c = layout.load(corpus)
    r = build_program(c, LIB, Policy.parse(model("never.onnx")), Setting("thinlto"), str(tmp_path), toolchain,
                      CompileOptions())
    assert r.ok, r.error
    assert "-flto=thin" in r.command and "--thinlto-jobs" not in r.command      # backends in parallel
    reports = _reports(r.stderr)
    assert len(reports) == len(c.modules), r.stderr                              # one backend per module
    for ln in reports:
        assert ln.split()[3:5] == ["model", "decisions,"] and ln.endswith("stock decisions after an error"), ln
    linker = sum(int(ln.split()[2]) for ln in reports)
    assert 0 < linker < r.decisions                                              # the pre-link compiles decided too


def test_thinlto_python_policy_answers_one_backend_at_a_time(corpus, toolchain, tmp_path):
    """One pair of pipes serves one conversation: a Python policy links with
    one backend thread, and answers every backend's questions."""
    asked = []

    def never(obs):
        asked.append(1)
        return np.int64(0)

    c = layout.load(corpus)
    r = build_program(c, LIB, Policy("python", "python:test:never", fn=never), Setting("thinlto"), str(tmp_path),
                      toolchain, CompileOptions())
    assert r.ok, r.error
    assert "-Wl,--thinlto-jobs=1" in r.command
    assert r.decisions == len(asked) > 0 and len(_reports(r.stderr)) == len(c.modules)


def test_thinlto_training_logs_and_trace_per_backend(corpus, toolchain, tmp_path):
    """{module} in the training log's path gives each backend its own log
    (LLVM's format, readable), and the trace's lines from parallel backends
    stay whole: one line per question, as many as the backends asked."""
    from mlbridge.problems.inlining.logged_compile import read_decisions
    c = layout.load(corpus)
    callees = tmp_path / "callees.txt"
    callees.write_text("*\t0\n")
    trace = tmp_path / "trace.txt"
    logs = tmp_path / "logs"
    logs.mkdir()
    r = build_program(c, LIB, Policy.callees(str(callees)), Setting("thinlto"), str(tmp_path / "w"), toolchain,
                      CompileOptions(), link_env={"MLBRIDGE_INLINE_TRAINING_LOG": str(logs / "link.{module}.log"),
                                                  "MLBRIDGE_INLINE_TRACE": str(trace)})
    assert r.ok, r.error
    made = sorted(os.listdir(logs))
    assert len(made) == len(c.modules) and all(n.startswith("link.") and n.endswith(".log") for n in made), made
    logged = [read_decisions(str(logs / n)) for n in made]
    reported = [int(ln.split()[2]) for ln in _reports(r.stderr) if ln.endswith("decisions logged")]
    assert sorted(len(t.decision) if t else 0 for t in logged) == sorted(reported) and sum(reported) > 0
    lines = trace.read_text().splitlines()
    asked = sum(int(ln.split()[5]) for ln in r.stderr.splitlines() if ln.startswith("mlbridge: inliner callees: "))
    assert len(lines) == asked == sum(reported)
    assert all(len(ln.split("\t")) == 3 and ln.endswith("\t0") for ln in lines), lines[:5]


@pytest.mark.parametrize("setting,policy", [("lto", "oz"), ("thinlto", "callee_bb_le_3.onnx"),
                                            ("linked", "callee_bb_le_3.onnx")])
def test_log_in_a_whole_program_setting(corpus, tmp_path, setting, policy):
    """--log DIR: the logs of a program in DIR/PROGRAM/, one per member's
    compile and, under LTO, one per backend in the linker; each carries the
    program's reward (its linked .text after - before), so its logs are one
    episode. With oz the stock heuristic is logged, in the linker too."""
    from mlbridge.llvm.training_log import read_training_log
    logs = tmp_path / "logs"
    p = cli(corpus, "--policy", model(policy) if policy.endswith(".onnx") else policy, "--setting", setting,
            "--log", str(logs))
    assert p.returncode == 0, p.stderr
    (prog,) = json.loads(p.stdout)["modules"]
    folder = logs / "libdemo.so"
    members = sorted(n for n in os.listdir(folder) if n.endswith(".log") and not n.startswith("link."))
    linker = sorted(n for n in os.listdir(folder) if n.startswith("link.") and n.endswith(".log"))
    assert len(members) == 3                                          # bits, geom, strhash
    assert len(linker) == {"linked": 0, "lto": 1, "thinlto": 3}[setting], linker
    for n in members + linker:
        log = read_training_log(str(folder / n))
        assert log.module_score() == prog["policy_text"] - prog["oz_text"], n
        if policy == "oz" and log.observations:
            decided = np.concatenate([t.features["inlining_decision"].ravel() for t in log.trajectories])
            default = np.concatenate([t.features["inlining_default"].ravel() for t in log.trajectories])
            assert np.array_equal(decided, default)
    assert sum(read_training_log(str(folder / n)).observations for n in linker) > 0 or setting == "linked"


@pytest.mark.parametrize("setting", ["lto", "thinlto"])
def test_the_compiles_and_the_linker_each_have_their_policy(corpus, toolchain, tmp_path, setting):
    """Policy.with_linker: one policy in the compiles, another in the linker's
    LTO backends. -Oz in the compiles and never in the linker: the plugin is
    loaded by the linker only, and every decision is the linker's; the other way
    round the linker runs without the plugin."""
    c = layout.load(corpus)
    never = Policy.parse(model("never.onnx"))
    r = build_program(c, LIB, Policy.parse("oz").with_linker(never), Setting(setting), str(tmp_path / "a"),
                      toolchain, CompileOptions())
    assert r.ok, r.error
    linker = sum(int(ln.split()[2]) for ln in _reports(r.stderr))
    assert "--load-pass-plugin=" in r.command and r.decisions == linker > 0
    r2 = build_program(c, LIB, never.with_linker(Policy.parse("oz")), Setting(setting), str(tmp_path / "b"),
                       toolchain, CompileOptions())
    assert r2.ok, r2.error
    assert "--load-pass-plugin=" not in r2.command and not _reports(r2.stderr) and r2.decisions > 0
    both = build_program(c, LIB, never, Setting(setting), str(tmp_path / "c"), toolchain, CompileOptions())
    # the compiles asked the same questions; the linker's depend on what the compiles inlined
    assert both.ok and both.decisions == r2.decisions + sum(int(ln.split()[2]) for ln in _reports(both.stderr))


def test_linker_policy_on_the_command_line(corpus, tmp_path):
    never = tmp_path / "never.txt"
    never.write_text("*\t0\n")
    p = cli(corpus, "--policy", f"callees:{never}", "--linker-policy", "oz", "--setting", "lto")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["policy"] == f"callees:{never} (linker: oz)" and data["modules"][0]["ok"]
    p = cli(corpus, "--policy", "oz", "--linker-policy", "oz", "--setting", "linked")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "no LTO backend" in p.stderr, p.stderr
    p = cli(corpus, "--policy", "callees:/no/such/file", "--setting", "lto")
    assert p.returncode == 2 and "no such callee file" in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("setting, policy", [
    ("linked", ["--policy", model("wrong_dtype.onnx")]),
    ("lto", ["--policy", model("wrong_dtype.onnx")]),
    ("thinlto", ["--policy", model("wrong_dtype.onnx")]),
    ("lto", ["--policy", "oz", "--linker-policy", model("wrong_dtype.onnx")]),       # the linker's build only
    ("thinlto", ["--policy", "oz", "--linker-policy", model("wrong_dtype.onnx")]),
])
def test_corpus_evaluate_reports_a_policy_build_that_fails_never_its_oz_size(corpus, setting, policy):
    """`corpus evaluate` in a whole-program setting with a policy the plugin refuses
    (a float output): the program is a failure (exit 1, no policy size, the reason
    shown), never scored as its -Oz build, which would read exit 0 and delta 0."""
    p = cli(corpus, *policy, "--setting", setting)
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert data["total"]["ok"] == 0 and data["total"]["failed"] == 1
    (prog,) = data["modules"]
    assert prog["module"] == "libdemo.so" and not prog["ok"]
    assert prog["policy_text"] is None and prog["delta"] is None and prog["oz_text"] > 0
    assert any("the policy was not used" in e["error"] and e["run"] == "policy" for e in prog["errors"]), prog
    assert "program libdemo.so failed (policy)" in p.stderr and "Traceback" not in p.stderr


def test_a_model_the_linker_cannot_load_fails_the_program(corpus, toolchain, tmp_path, monkeypatch):
    """Pre-link with a good model; the linker gets a broken one: its fallback
    to the stock inliner is reported, not scored."""
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    real = settings.link_command

    def broken_model(program, inputs, out, tc, setting, policy, opt, script, **kw):
        cmd, env = real(program, inputs, out, tc, setting, policy, opt, script, **kw)
        return cmd, dict(env, MLBRIDGE_INLINE_MODEL=str(bad))

    monkeypatch.setattr(settings, "link_command", broken_model)
    r = build_program(layout.load(corpus), LIB, Policy.parse(model("never.onnx")), Setting("lto"), str(tmp_path),
                      toolchain, CompileOptions())
    assert not r.ok and r.error.startswith("in the linker: the policy was not used"), r.error
    assert str(bad) in r.error


def test_a_linker_without_the_plugin_fails_the_program(corpus, toolchain, tmp_path, monkeypatch):
    real = settings.link_command

    def no_plugin(*a, **kw):
        cmd, env = real(*a, **kw)
        return [x for x in cmd if "load-pass-plugin" not in x], env

    monkeypatch.setattr(settings, "link_command", no_plugin)
    r = build_program(layout.load(corpus), LIB, Policy.parse(model("never.onnx")), Setting("lto"), str(tmp_path),
                      toolchain, CompileOptions())
    assert not r.ok and "in the linker: the plugin did not report" in r.error, r.error


def test_stale_export_and_failed_link_are_failures(corpus, toolchain, tmp_path):
    c = layout.load(corpus)
    oz = Policy.parse("oz")
    stale = Program("libstale.so", "shared", ("*",), ("bits_demo", "no_such_api_*"))
    r = build_program(c, stale, oz, Setting("linked"), str(tmp_path), toolchain, CompileOptions())
    assert not r.ok and "no_such_api_*" in r.error and "matches no symbol" in r.error
    nomain = Program("tool", "executable", ("*",))
    r = build_program(c, nomain, oz, Setting("lto"), str(tmp_path), toolchain, CompileOptions())
    assert not r.ok and r.error.startswith("the link failed with exit status 1: "), r.error
    assert not os.path.exists(os.path.join(str(tmp_path), "tool.oz", "tool"))


def test_cli_errors_in_one_line(corpus, tmp_path):
    """No programs.json, and a clang with no lld beside it: usage errors (exit 2)."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in os.listdir(corpus):
        if f != "programs.json":
            os.symlink(os.path.join(corpus, f), bare / f)
    p = cli(str(bare), "--policy", "oz", "--setting", "lto")
    assert p.returncode == 2 and "no programs.json" in p.stderr and "Traceback" not in p.stderr
    fake = tmp_path / "clang"   # a clang whose driver finds no ld.lld
    fake.write_text('#!/bin/sh\ncase "$1" in --version) echo "clang version 19";; *) echo ld.lld;; esac\n')
    fake.chmod(0o755)
    p = cli(corpus, "--policy", "oz", "--setting", "linked", "--clang", str(fake))
    assert p.returncode == 2 and "ld.lld not found" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_setting_cost_bench_runs(corpus):
    """bench/setting_cost.py: one JSON line per setting, the policy scored."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "setting_cost.py"), corpus, "--runs", "1",
                        "--settings", "linked", "lto", "--plugin", PLUGIN, "--policy", model("never.onnx")],
                       capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    assert [r["setting"] for r in rows] == ["linked", "lto"]
    assert all(r["ok"] and r["units"] == 1 and r["cpu_s"] > 0 for r in rows)


def test_a_library_that_takes_its_own_exports_address_links(toolchain, tmp_path):
    """Corpus modules were compiled for an executable (-pic-is-pie): their
    bitcode calls exported functions directly. Linked into a shared library
    those calls must bind inside it (-Bsymbolic), not fail on R_X86_64_PC32."""
    src = tmp_path / "api.c"
    src.write_text("int api_g(int x) { return x * 3 + 1; }\n"
                   "void *api_f(void) { return (void *)api_g; }\n")   # the address of an export: PC32
    root = mini_corpus.make_corpus(str(tmp_path / "corpus"), [str(src)])
    prog = Program("libapi.so", "shared", ("*",), ("api_*",))
    for s in ("linked", "lto"):
        r = build_program(layout.load(root), prog, Policy.parse("oz"), Setting(s), str(tmp_path), toolchain,
                          CompileOptions())
        assert r.ok, (s, r.error)


def test_es_training_in_lto_beats_its_start_and_resumes(corpus, toolchain, tmp_path):
    """ES with rewards from the linked LTO program (the policy deciding in the
    pre-link compiles and in lld): from never-inlining, a few generations
    must make the program smaller; a trainer that makes no progress fails.
    (Never inlining is about -Oz's size here under LTO, so the start is
    inlining everything.)"""
    from mlbridge.corpus.settings import program_units
    from mlbridge.llvm.inliner_features import FEATURES
    from mlbridge.train.policy import MLPPolicy
    from mlbridge.problems.inlining.size_trainer import SizeTrainer, TrainConfig
    c = layout.load(corpus)
    units = program_units(c, Setting("lto"))
    ev = evaluate(c, Policy.parse("oz"), toolchain, jobs=2, setting=Setting("lto"))
    base = {units[0].name: ev.scores[0].baseline.text_bytes}
    start = MLPPolicy(list(FEATURES), hidden=(4,), seed=0)
    start.params[-1] = 0.05                                      # output bias: always inline
    cfg = TrainConfig(algo="es", hidden=(4,), modules_per_step=1, pairs=3, sigma=0.5, lr=0.3, steps=3,
                      eval_every=100, jobs=2, seed=1, setting="lto")
    out = str(tmp_path / "run")
    tr = SizeTrainer(out, units, base, toolchain, cfg, start)
    before = tr.evaluate(start)
    assert before["failures"] == 0 and before["total_reward"] < -0.02
    tr.run()
    cfg.steps = 4
    again = SizeTrainer(out, units, base, toolchain, cfg)
    assert again.step == 3
    again.run()
    after = again.evaluate(MLPPolicy.load(os.path.join(out, "policy.json")))
    again.close()
    assert after["failures"] == 0
    assert after["total_reward"] > before["total_reward"] + 0.01, (before, after)
