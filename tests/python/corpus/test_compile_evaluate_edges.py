"""Issue 26, mutation testing of corpus/compile.py and corpus/evaluate.py
(docs/testing.md, "Mutation testing"): in-process checks of what the
subprocess tests of ``corpus evaluate`` see only from outside, so mutmut maps
the mutants to them; a fake clang (a shell script) stands in where the
behaviour is the command's or a failure's, a small real corpus where sizes
are measured."""
from __future__ import annotations

import os
import sys

import pytest

from conftest import HELPERS, ROOT

sys.path.insert(0, HELPERS)
import mini_corpus  # noqa: E402

from mlbridge.corpus import compile as cc  # noqa: E402
from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import (CompileOptions, CompileSetupError, CompiledModule, Policy,  # noqa: E402
                                     Toolchain, command_for, compile_module, find_plugin)
from mlbridge.corpus.layout import Module, write_cmd  # noqa: E402

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

OZ = Policy("oz", "oz")


def _script(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _fake_clang(tmp_path, then: str = "exit 0\n", name: str = "fake-clang") -> str:
    """A clang that answers --version, then runs THEN for a compile."""
    return _script(tmp_path / name, 'if [ "$1" = --version ]; then echo "fake clang version 7"; '
                   'echo "Target: nowhere"; exit 0; fi\n' + then)


def _module(tmp_path, name: str = "m.o") -> Module:
    (tmp_path / f"{name}.bc").write_bytes(b"BC\xc0\xde")
    write_cmd(str(tmp_path / f"{name}.cmd"), ["-cc1", "-triple", "x86_64-pc-linux-gnu", "-Oz"])
    return Module(str(tmp_path), name)


# -- the toolchain --------------------------------------------------------------------

def test_toolchain_uses_the_given_tools_and_reads_their_versions(tmp_path):
    """clang's version is its first line; llc's is its "LLVM version" line (the
    one that names the release), else its first line."""
    clang = _fake_clang(tmp_path)
    llc = _script(tmp_path / "fake-llc", 'echo "Homebrew LLVM project"; echo "  LLVM version 19.1.7"; '
                  'echo "  Optimized build."\n')
    tc = Toolchain.find(clang, llc=llc)
    assert tc.clang == clang and tc.version == "fake clang version 7"
    assert tc.llc == llc and tc.llc_version == "LLVM version 19.1.7"
    plain = _script(tmp_path / "plain-llc", 'echo "llc of some kind"; echo "second"\n')
    assert tc.with_llc(plain).llc_version == "llc of some kind"


def test_toolchain_plugin_given_wins_over_the_environment(tmp_path, monkeypatch):
    mine, env = tmp_path / "mine.so", tmp_path / "env.so"
    mine.write_bytes(b"")
    env.write_bytes(b"")
    monkeypatch.setenv("MLBRIDGE_LLVM_PLUGIN", str(env))
    tc = Toolchain.find(_fake_clang(tmp_path), str(mine), need_plugin=True)
    assert tc.plugin == str(mine)
    assert Toolchain.find(_fake_clang(tmp_path), need_plugin=True).plugin == str(env)


def test_find_plugin_looks_in_the_install_then_the_source_build(tmp_path, monkeypatch):
    """Without an argument or $MLBRIDGE_LLVM_PLUGIN: the package's own install, the
    environment's prefix, then a source checkout's build/ (mlbridge.native), as an
    absolute path; a working folder's ./build is not searched (an installed package
    must not pick up whatever folder it runs in). Not found: one line saying how."""
    from mlbridge import native
    monkeypatch.delenv("MLBRIDGE_LLVM_PLUGIN", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "libMLBridgeLLVM.so").write_bytes(b"")
    monkeypatch.setattr(native, "prefixes", lambda: [str(tmp_path / "pkg"), str(tmp_path / "venv")])
    monkeypatch.setattr(native, "source_build", lambda: None)
    with pytest.raises(CompileSetupError, match="was not found: install with `pip install .`"):
        find_plugin()
    (tmp_path / "venv" / "lib" / "mlbridge").mkdir(parents=True)
    (tmp_path / "venv" / "lib" / "mlbridge" / "libMLBridgeLLVM.so").write_bytes(b"")
    assert find_plugin() == str(tmp_path / "venv" / "lib" / "mlbridge" / "libMLBridgeLLVM.so")
    monkeypatch.setattr(native, "prefixes", lambda: [str(tmp_path / "pkg")])
    monkeypatch.setattr(native, "source_build", lambda: str(tmp_path / "tree-build"))
    (tmp_path / "tree-build").mkdir()
    (tmp_path / "tree-build" / "libMLBridgeLLVM.so").write_bytes(b"")
    assert find_plugin() == str(tmp_path / "tree-build" / "libMLBridgeLLVM.so")


# -- policies and the command ---------------------------------------------------------

def test_callees_policy_and_the_command_that_puts_it_in_charge(tmp_path, monkeypatch):
    """callees:FILE: the plugin loaded (-load and -fpass-plugin, both needed) and
    the callee file given to it by absolute path; a missing file is refused."""
    (tmp_path / "callees.txt").write_text("f\t1\n")
    monkeypatch.chdir(tmp_path)
    pol = Policy.parse("callees:callees.txt")
    assert pol.kind == "callees" and pol.uses_plugin and pol.model == str(tmp_path / "callees.txt")
    with pytest.raises(CompileSetupError, match="no such callee file"):
        Policy.parse(f"callees:{tmp_path / 'nope.txt'}")
    m = _module(tmp_path)
    tc = Toolchain("/usr/bin/clang-x", "/opt/plugin.so", "clang 19")
    cmd = command_for(m, pol, "out.o", tc)
    i = cmd.index("-load")
    assert cmd[i:i + 3] == ["-load", "/opt/plugin.so", "-fpass-plugin=/opt/plugin.so"]
    assert f"-mlbridge-inline-callees={tmp_path / 'callees.txt'}" in cmd
    assert cmd[-2:] == ["-o", "out.o"]
    assert command_for(m, OZ, "out.o", tc) == ["/usr/bin/clang-x", "-cc1", "-triple", "x86_64-pc-linux-gnu", "-Oz",
                                               "-emit-obj", "-x", "ir", m.bc, "-o", "out.o"]


def test_python_policy_import_error_names_the_policy_form():
    with pytest.raises(CompileSetupError) as e:
        Policy.parse("python:no_such_module_q:f")
    assert str(e.value).startswith("policy python: no_such_module_q:f: cannot import no_such_module_q")


# -- failures of one compile ----------------------------------------------------------

def test_a_compile_that_does_not_finish_is_a_timeout(tmp_path):
    """Killed after options.timeout, reported as a timeout (not an exit status),
    ok False in the report, with its command and time."""
    tc = Toolchain(_fake_clang(tmp_path, "exec sleep 20\n"), None, "fake")
    r = compile_module(_module(tmp_path), OZ, str(tmp_path), tc, CompileOptions(timeout=0.3))
    assert r.timed_out and r.ok is False and r.text_bytes is None
    assert r.error == "clang did not finish within 0.3 s and was killed"
    d = r.as_dict()
    assert d["ok"] is False and d["timed_out"] is True and d["command"].startswith(tc.clang)
    assert set(d) == {"module", "ok", "text_bytes", "seconds", "command", "error", "decisions", "timed_out"}
    assert 0.3 <= d["seconds"] < 20


def test_a_python_policy_compile_that_does_not_finish_is_a_timeout(tmp_path):
    """The same with a Python policy answering over the pipes: the timeout reaches
    the supervisor of the compile."""
    tc = Toolchain(_fake_clang(tmp_path, "exec sleep 20\n"), "/opt/plugin.so", "fake")
    pol = Policy("python", "python:t:f", fn=lambda obs: 0)
    r = compile_module(_module(tmp_path), pol, str(tmp_path), tc, CompileOptions(timeout=0.3))
    assert r.timed_out and not r.ok and "did not finish within 0.3 s" in r.error, r.error


def test_a_failed_compile_reports_its_exit_and_last_lines(tmp_path):
    tc = Toolchain(_fake_clang(tmp_path, 'for i in 1 2 3 4; do echo "line $i" >&2; done; exit 3\n'), None, "fake")
    r = compile_module(_module(tmp_path), OZ, str(tmp_path), tc)
    assert not r.ok and not r.timed_out
    assert r.error.startswith("clang failed with exit status 3") and r.error.endswith("line 2 | line 3 | line 4")
    assert "line 1" not in r.error


# -- evaluate.py: reports built from results ------------------------------------------

from mlbridge.corpus.evaluate import BaselineCache, Evaluation, ModuleScore, check_ir_problem, evaluate  # noqa: E402
from mlbridge.corpus.programs import Program, write_programs  # noqa: E402
from mlbridge.corpus.settings import Setting  # noqa: E402
from mlbridge.problems import ProblemError, resolve  # noqa: E402

EVICTION = resolve("regalloc-eviction")


def _ok(name: str, size: int, decisions=None) -> CompiledModule:
    return CompiledModule(name, ok=True, text_bytes=size, seconds=0.25, decisions=decisions)


def test_module_report_and_totals_in_bytes_and_percent():
    """A module's delta and delta_pct against -Oz, and the totals over the modules
    that compiled (a failed one counts as failed, not as 0 bytes)."""
    smaller = ModuleScore("a.o", _ok("a.o", 200), _ok("a.o", 150, decisions=4))
    larger = ModuleScore("b.o", _ok("b.o", 100), _ok("b.o", 110, decisions=1))
    broken = ModuleScore("c.o", _ok("c.o", 50), CompiledModule("c.o", ok=False, error="boom", command="clang x"))
    d = smaller.as_dict()
    assert d["delta"] == -50 and d["delta_pct"] == -25.0 and d["decisions"] == 4
    assert d["oz_seconds"] == 0.25 and d["policy_seconds"] == 0.25 and "errors" not in d
    assert broken.as_dict()["errors"] == [{"run": "policy", "error": "boom", "command": "clang x",
                                           "timed_out": False}]
    e = Evaluation("corpus", "p", "clang 19", 2, scores=[smaller, larger, broken])
    t = e.totals()
    assert t == {"modules": 3, "ok": 2, "failed": 1, "oz_text": 300, "policy_text": 260, "delta": -40,
                 "delta_pct": -13.333, "smaller": 1, "larger": 1, "decisions": 5, "capped": 0, "capped_modules": 0}
    assert e.as_dict()["total"] == t and e.failed == [broken]
    empty = ModuleScore("z.o", _ok("z.o", 0), _ok("z.o", 0))
    assert empty.as_dict()["delta_pct"] is None   # no percentage of nothing


def test_a_check_of_an_ir_problem_names_the_argument_at_fault():
    with pytest.raises(ProblemError) as e:
        check_ir_problem(EVICTION, OZ, thinlto=True)
    assert str(e.value).startswith("problem regalloc-eviction: a ThinLTO corpus")
    with pytest.raises(ProblemError, match="^where: "):
        check_ir_problem(EVICTION, OZ, where=True)
    with pytest.raises(ProblemError, match="^log: "):
        check_ir_problem(EVICTION, OZ, log_dir="logs")


def test_jobs_default_to_the_cores(tmp_path):
    """jobs=None: one compile per core (what the report's "jobs" says)."""
    c = tmp_path / "c"
    c.mkdir()
    _module(c, "a.o")
    layout.write_description(str(c), ["a.o"])
    tc = Toolchain(_fake_clang(tmp_path, "exit 1\n"), None, "fake")
    e = evaluate(layout.load(str(c)), OZ, tc, jobs=None)
    assert e.jobs == (os.cpu_count() or 1) and e.as_dict()["jobs"] == e.jobs
    assert evaluate(layout.load(str(c)), OZ, tc, jobs=0).jobs == e.jobs
    assert [s.ok for s in e.scores] == [False]


def test_an_ir_problem_failures_are_reported_per_module(tmp_path):
    """regalloc-eviction with a clang that fails (its last lines in the error) and
    with one that succeeds but llc fails: each a failed module, not an exception."""
    c = tmp_path / "c"
    c.mkdir()
    _module(c, "a.o")
    layout.write_description(str(c), ["a.o"])
    corpus = layout.load(str(c))
    llc = _script(tmp_path / "fake-llc", 'echo "llc: error: no such thing" >&2; exit 1\n')
    bad = Toolchain(_fake_clang(tmp_path, 'echo "error: bad IR" >&2; exit 1\n'), None, "fake", llc=llc,
                    llc_version="LLVM version 0")
    (s,) = evaluate(corpus, OZ, bad, jobs=1, problem=EVICTION).scores
    assert not s.ok and s.baseline.run == "clang"
    assert s.baseline.error == "clang failed with exit status 1 (optimizing the module to IR): error: bad IR"
    good = Toolchain(_fake_clang(tmp_path, "exit 0\n", "ok-clang"), None, "fake", llc=llc, llc_version="x")
    (s,) = evaluate(corpus, OZ, good, jobs=1, problem=EVICTION).scores
    assert not s.ok and s.baseline.ok is False and s.baseline.run == "baseline"
    assert s.as_dict()["errors"][0]["run"] == "baseline" and "llc" in s.baseline.command


# -- evaluate.py on a real two-module corpus -------------------------------------------

LIB_C = r"""
static int helper(int x) { return x * 3 + 1; }
int api_twice(int x) { return helper(x) + helper(x + 1); }
int spill(int *p, int n) { int a = 0, b = 1, c = 2, d = 3;
  for (int i = 0; i < n; i++) { a += p[i] * b; b ^= p[i + 1] + c; c += a - d; d = d * 3 + b; }
  return a + b + c + d; }
"""
MAIN_C = r"""
int api_twice(int x);
int main(int argc, char **argv) { (void)argv; return api_twice(argc); }
"""


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    assert mini_corpus.have_tools(), "clang-19 and llvm-objcopy-19 are needed"
    d = tmp_path_factory.mktemp("real")
    (d / "a.c").write_text(LIB_C)
    (d / "main.c").write_text(MAIN_C)
    root = mini_corpus.make_corpus(str(d / "corpus"), [str(d / "a.c"), str(d / "main.c")])
    write_programs(root, [Program("tool", "executable", ("*",))])
    return layout.load(root)


@pytest.fixture(scope="module")
def real_tc() -> Toolchain:
    return Toolchain.find(mini_corpus.llvm_tool("clang"))


def test_where_compares_the_objects_function_by_function(real, real_tc):
    """where=True: each score has its per-function breakdown (empty: -Oz against
    itself), the objects it needed are gone afterwards."""
    e = evaluate(real, OZ, real_tc, jobs=1, where=True)
    assert [s.functions for s in e.scores] == [[], []]
    assert all(s.baseline.object_path and not os.path.exists(s.baseline.object_path) for s in e.scores)


def test_a_linked_setting_scores_programs_and_caches_their_baseline(real, real_tc, tmp_path):
    cache = BaselineCache(str(tmp_path / "cache"))
    first = evaluate(real, OZ, real_tc, jobs=2, setting=Setting("linked"), cache=cache)
    again = evaluate(real, OZ, real_tc, jobs=2, setting=Setting("linked"), cache=cache)
    assert [s.module for s in first.scores] == ["tool"] and first.setting == "linked"
    assert not first.failed and first.scores[0].baseline.text_bytes > 0
    assert [s.baseline_cached for s in first.scores + again.scores] == [False, True]
    assert again.scores[0].baseline.text_bytes == first.scores[0].baseline.text_bytes
    where = evaluate(real, OZ, real_tc, jobs=1, setting=Setting("linked"), where=True)
    assert [s.functions for s in where.scores] == [[]]


def test_an_ir_problem_is_scored_and_its_baseline_cached(real, real_tc, tmp_path):
    """regalloc-eviction in-process: the default advisor against itself, each
    module measured, the report in the problem's unit, a second run from the cache."""
    if not mini_corpus.llvm_tool("llc"):
        pytest.fail("llc-19 is needed")
    cache = BaselineCache(str(tmp_path / "cache"))
    first = evaluate(real, OZ, real_tc, jobs=2, problem=EVICTION, cache=cache)
    assert not first.failed, [s.as_dict() for s in first.scores]
    again = evaluate(real, OZ, real_tc, jobs=2, problem=EVICTION, cache=cache)
    assert [s.baseline_cached for s in first.scores] == [False, False]
    assert [s.baseline_cached for s in again.scores] == [True, True]
    assert [s.baseline.module for s in again.scores] == [m.name for m in real.modules]
    assert [s.baseline.value for s in again.scores] == [s.baseline.value for s in first.scores]
    d = first.as_dict()
    assert d["problem"] == "regalloc-eviction" and d["total"]["delta"] == 0 and d["total"]["delta_pct"] == 0
    assert {"baseline_spills", "policy_spills", "policy_reloads", "policy_spill_reload_cost"} <= set(d["total"])
    for m in d["modules"]:
        assert isinstance(m["policy_seconds"], float) and m["delta"] == 0
        assert m["policy_spill_reload_cost"] == m["baseline_spill_reload_cost"]


def test_a_linked_setting_logs_the_stock_heuristic_per_program(real, real_tc, tmp_path):
    """log_dir in a whole-program setting: the plugin logs -Oz's decisions of each
    member into LOG_DIR/PROGRAM/, each log's reward set from the measured sizes."""
    plugin = os.path.join(os.environ.get("MLBRIDGE_BUILD_DIR") or os.path.join(ROOT, "build"), "libMLBridgeLLVM.so")
    assert os.path.isfile(plugin), "the mlbridge LLVM plugin (build/libMLBridgeLLVM.so) is needed"
    tc = Toolchain(real_tc.clang, plugin, real_tc.version)
    e = evaluate(real, OZ, tc, jobs=2, setting=Setting("linked"), log_dir=str(tmp_path / "logs"))
    assert not e.failed, [s.as_dict() for s in e.scores]
    assert e.logged == 2
    assert sorted(f for f in os.listdir(tmp_path / "logs" / "tool") if f.endswith(".log")) == ["a.o.log", "main.o.log"]
