"""Issue 26, mutation testing of corpus/settings.py, layout.py and the small
corpus files (combine, info, where, python_callable, evaluation_files,
training_logs): docs/testing.md, "Mutation testing". The whole-program links
run in-process here (clang-19 and ld.lld-19 on a two-file corpus), so mutmut
sees the tests that reach build_program, link_program, _check_exports and
opt_level; the other tests pin what each small helper promises its callers."""
from __future__ import annotations

import csv
import json
import os
import shutil
import stat
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import mini_corpus  # noqa: E402

from mlbridge.core.errors import ArgumentError  # noqa: E402
from mlbridge.corpus import layout, settings  # noqa: E402
from mlbridge.corpus.compile import CompileOptions, CompileSetupError, Policy, Toolchain  # noqa: E402
from mlbridge.corpus.elf import defined_dynamic_symbols, text_size  # noqa: E402
from mlbridge.corpus.layout import Corpus, CorpusError, Module  # noqa: E402
from mlbridge.corpus.programs import Program, write_programs  # noqa: E402
from mlbridge.corpus.settings import Setting  # noqa: E402

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

LIB_C = r"""
static int helper(int x) { return x * 3 + 1; }
int api_twice(int x) { return helper(x) + helper(x + 1); }
int api_other(int x) { return x ^ 5; }
int internal_only(int x) { return x - 7; }
"""
MAIN_C = r"""
int api_twice(int x);
int main(int argc, char **argv) { (void)argv; return api_twice(argc); }
"""
OZ = Policy("oz", "oz")
LIB = Program("liba.so", "shared", ("a.o",), ("api_*",))
TOOL = Program("tool", "executable", ("*",))


@pytest.fixture(scope="module")
def mini(tmp_path_factory) -> Corpus:
    """A two-module corpus (a.o: a small library, main.o: a program using it)."""
    assert mini_corpus.have_tools(), "clang-19 and llvm-objcopy-19 are needed"
    d = tmp_path_factory.mktemp("mini")
    (d / "a.c").write_text(LIB_C)
    (d / "main.c").write_text(MAIN_C)
    root = mini_corpus.make_corpus(str(d / "corpus"), [str(d / "a.c"), str(d / "main.c")])
    write_programs(root, [LIB, TOOL])
    return layout.load(root)


@pytest.fixture(scope="module")
def tc() -> Toolchain:
    clang = mini_corpus.llvm_tool("clang")
    assert clang
    return Toolchain(clang, None, "clang 19")


@pytest.fixture
def stdin_data():
    """The test process's fd 0 is a pipe holding b"junk": a child that inherits
    it reads that, a child given /dev/null reads nothing."""
    saved = os.dup(0)
    r, w = os.pipe()
    os.write(w, b"junk")
    os.close(w)
    os.dup2(r, 0)
    os.close(r)
    yield
    os.dup2(saved, 0)
    os.close(saved)


def leftovers(folder) -> list:
    return sorted(f for f in os.listdir(folder) if f.endswith((".o", ".bc")))


# ---- settings.py -------------------------------------------------------------------

@pytest.mark.parametrize("name, whole, lto, flag", [
    ("objects", False, False, "-flto=full"), ("linked", True, False, "-flto=full"),
    ("lto", True, True, "-flto=full"), ("thinlto", True, True, "-flto=thin")])
def test_setting_properties(name, whole, lto, flag):
    s = Setting.parse(name)
    assert (s.name, s.whole_program, s.lto, s.lto_flag) == (name, whole, lto, flag)


def test_unknown_setting_lists_the_known_ones():
    with pytest.raises(CompileSetupError) as e:
        Setting.parse("Linked")
    assert "'Linked': expected one of objects, linked, lto, thinlto" in str(e.value)


def test_compile_options_per_setting():
    base = CompileOptions(timeout=7.0)
    exe = Program("t", "executable")
    thin = Setting("thinlto").compile_options(exe, base)
    assert thin.setting_args == ("-ffunction-sections", "-fdata-sections", "-flto=thin", "-flto-unit")
    assert thin.bitcode and thin.keep_objects and thin.setting_drop == () and thin.timeout == 7.0
    linked = Setting("linked").compile_options(LIB, base)
    assert linked.setting_args == ("-ffunction-sections", "-fdata-sections")
    assert not linked.bitcode and linked.keep_objects and linked.setting_drop == ("-pic-is-pie",)
    assert not base.keep_objects and base.setting_args == ()   # the base is not changed


def test_find_lld_is_the_one_clang_runs(tc):
    lld = settings.find_lld(tc.clang)
    assert os.path.isabs(lld) and os.access(lld, os.X_OK) and "lld" in os.path.basename(lld)


def _fake_clang(tmp_path, body: str) -> str:
    p = tmp_path / "clang"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


@pytest.mark.parametrize("body", [
    "echo ld.lld; exit 0",                      # a bare name: not found
    "echo /bin/true; exit 1",                   # clang failed: its output is not believed
    "echo /nonexistent/ld.lld; exit 0",         # not there
    "echo {tmp}/notexec; exit 0",               # not executable
])
def test_find_lld_refuses_what_is_not_an_executable(tmp_path, body):
    (tmp_path / "notexec").write_text("")
    clang = _fake_clang(tmp_path, body.format(tmp=tmp_path))
    with pytest.raises(CompileSetupError) as e:
        settings.find_lld(clang)
    assert str(e.value) == f"ld.lld not found by {clang} (install lld-19): the linked and lto settings link with it"


def test_find_lld_gives_clang_no_input(tmp_path, stdin_data):
    assert settings.find_lld(_fake_clang(tmp_path, "cat; echo /bin/true")) == "/bin/true"


def test_find_lld_takes_an_absolute_executable(tmp_path):
    clang = _fake_clang(tmp_path, "echo '  /bin/true  '")
    assert settings.find_lld(clang) == "/bin/true"
    with pytest.raises(CompileSetupError):
        settings.find_lld(str(tmp_path / "no-such-clang"))
    with pytest.raises(CompileSetupError):
        settings.find_lld(_fake_clang(tmp_path, f"exec {sys.executable} -c 'import time; time.sleep(5); "
                                                f"print(\"/bin/true\")'"), timeout=0.2)


def test_opt_level_is_the_last_recorded_one(tmp_path):
    def mod(args):
        layout.write_cmd(str(tmp_path / "m.cmd"), args)
        return Module(str(tmp_path), "m")
    assert settings.opt_level(mod(["-cc1", "-O2", "-Os", "-Oz", "-x"])) == "-Oz"
    assert settings.opt_level(mod(["-cc1", "-O3", "-Ofast"])) == "-O3"   # -Ofast is not a level here
    assert settings.opt_level(mod(["-cc1", "-Ofast", "-xO1"])) == "-O2"   # none: the default
    assert settings.opt_level(Module(str(tmp_path), "m", override=["-cc1", "-O1"])) == "-O1"
    assert settings.opt_level(Module(str(tmp_path), "gone")) == "-O2"     # unreadable: the default
    (tmp_path / "bad.cmd").write_bytes(b"\xff\0")
    assert settings.opt_level(Module(str(tmp_path), "bad")) == "-O2"      # not UTF-8: the default


def test_version_script_text(tmp_path):
    path = settings.version_script(Program("a.so", exports=("f_*", "g")), str(tmp_path / "v.map"))
    assert path == str(tmp_path / "v.map")
    assert open(path).read() == "{\n  global:\n    f_*;\n    g;\n  local: *;\n};\n"


TC = Toolchain("/c/clang", "/p/plugin.so", "clang 19")


def test_link_command_of_each_setting():
    exe = Program("tool", "executable", libs=("m", "z"))
    cmd, env = settings.link_command(exe, ["a.o", "b.o"], "out", TC, Setting("linked"), OZ, "-Os", None)
    assert cmd == ["/c/clang", "-fuse-ld=lld", "-Wl,--gc-sections", "a.o", "b.o", "-lm", "-lz", "-o", "out"]
    assert env == {}
    cmd, env = settings.link_command(LIB, ["a.bc"], "out.so", TC, Setting("thinlto"), OZ, "-Os", "v.map")
    assert cmd == ["/c/clang", "-fuse-ld=lld", "-Wl,--gc-sections", "-flto=thin", "-Os", "-ffunction-sections",
                   "-fdata-sections", "-shared", "-Wl,-Bsymbolic", "-Wl,--version-script=v.map", "a.bc",
                   "-o", "out.so"]
    assert env == {}


def test_link_command_loads_the_plugin_for_a_logged_baseline():
    cmd, env = settings.link_command(LIB, ["a.bc"], "o", TC, Setting("lto"), OZ, "-Oz", "v", logged=True)
    assert cmd.count("-Wl,--load-pass-plugin=/p/plugin.so") == 1 and env == {}
    cmd, env = settings.link_command(LIB, ["a.o"], "o", TC, Setting("linked"), OZ, "-Oz", "v", logged=True)
    assert not any("pass-plugin" in a for a in cmd)   # no LTO: no policy in the linker
    with pytest.raises(CompileSetupError, match="^a training log in the linker needs the mlbridge LLVM plugin$"):
        settings.link_command(LIB, ["a.bc"], "o", Toolchain("/c", None, ""), Setting("lto"), OZ, "-Oz", "v",
                              logged=True)


def test_link_command_environment_per_policy_kind():
    callees = Policy("callees", "callees:/x", model="/x")
    cmd, env = settings.link_command(LIB, ["a.bc"], "o", TC, Setting("lto"), callees, "-Oz", "v", logged=True)
    assert env == {"MLBRIDGE_INLINE_STATS": "1", "MLBRIDGE_INLINE_CALLEES": "/x"}
    assert cmd.count("-Wl,--load-pass-plugin=/p/plugin.so") == 1   # once, logged or not
    py = Policy("python", "python:m:f", fn=lambda o: 0)
    from mlbridge.problems.inlining.problem import PIPE_DECISION_TIMEOUT_MS
    cmd, env = settings.link_command(LIB, ["a.bc"], "o", TC, Setting("thinlto"), py, "-Oz", "v")
    assert env == {"MLBRIDGE_INLINE_STATS": "1", "MLBRIDGE_INLINE_RUNNER": "pipe",
                   "MLBRIDGE_INLINE_CHANNEL": "{base}", "MLBRIDGE_INLINE_TIMEOUT_MS": str(PIPE_DECISION_TIMEOUT_MS)}
    assert "-Wl,--thinlto-jobs=1" in cmd
    cmd, env = settings.link_command(LIB, ["a.bc"], "o", TC, Setting("lto"), py, "-Oz", "v")
    assert "-Wl,--thinlto-jobs=1" not in cmd and env["MLBRIDGE_INLINE_RUNNER"] == "pipe"
    with pytest.raises(CompileSetupError, match=r"^policy python:m:f needs the mlbridge LLVM plugin$"):
        settings.link_command(LIB, ["a.bc"], "o", Toolchain("/c", None, ""), Setting("lto"), py, "-Oz", "v")


def test_link_command_uses_the_linker_part_of_the_policy():
    onnx = Policy("onnx", "m.onnx", model="/m.onnx")
    both = OZ.with_linker(onnx)
    cmd, env = settings.link_command(LIB, ["a.bc"], "o", TC, Setting("lto"), both, "-Oz", "v")
    assert env["MLBRIDGE_INLINE_MODEL"] == "/m.onnx" and "-Wl,--load-pass-plugin=/p/plugin.so" in cmd
    cmd, env = settings.link_command(LIB, ["a.bc"], "o", TC, Setting("lto"), onnx.with_linker(OZ), "-Oz", "v")
    assert env == {} and not any("pass-plugin" in a for a in cmd)


def test_run_reports_exit_status_stderr_and_timeout(tmp_path):
    rc, err, timed_out = settings._run(["sh", "-c", "echo out; echo bad >&2; exit 3"], dict(os.environ), OZ,
                                       30.0, str(tmp_path), answers=False)
    assert (rc, err, timed_out) == (3, "bad\n", False)
    rc, err, timed_out = settings._run(["sh", "-c", "pwd >&2; echo \"$X\" >&2"], {"PATH": os.environ["PATH"],
                                       "X": "from-env"}, OZ, 30.0, str(tmp_path), answers=False)
    assert (rc, timed_out) == (0, False) and err.split() == [os.path.realpath(tmp_path), "from-env"]
    rc, err, timed_out = settings._run(["sh", "-c", "printf 'early\\377\\n' >&2; exec sleep 30"], dict(os.environ),
                                       OZ, 0.5, str(tmp_path), answers=False)
    assert rc is None and timed_out and err == "early\ufffd\n"   # what it wrote before it was killed
    rc, err, _ = settings._run(["sh", "-c", "printf 'a\\377b' >&2"], dict(os.environ), OZ, 30.0, str(tmp_path),
                               answers=False)
    assert err == "a\ufffdb"   # a linker's bytes that are not UTF-8 do not fail the run


def test_run_gives_the_linker_no_input(tmp_path, stdin_data):
    rc, err, _ = settings._run(["sh", "-c", "cat >&2"], dict(os.environ), OZ, 30.0, str(tmp_path), answers=False)
    assert rc == 0 and err == ""


def test_run_answers_a_python_policy_only_when_asked(tmp_path):
    """answers=True with a Python policy: the link runs under run_compiler (the
    plugin's pipes); any other policy, or answers=False: a plain subprocess."""
    py = Policy("python", "python:m:f", fn=lambda o: 0)
    env = dict(os.environ, MLBRIDGE_INLINE_CHANNEL="{base}")
    rc, err, timed_out = settings._run(["sh", "-c", "echo \"$MLBRIDGE_INLINE_CHANNEL\" >&2"], env, py, 30.0,
                                       str(tmp_path), answers=True)
    assert rc == 0 and not timed_out and err.strip() not in ("", "{base}")   # run_compiler filled in {base}
    rc, err, _ = settings._run(["sh", "-c", "echo \"$MLBRIDGE_INLINE_CHANNEL\" >&2"], env, py, 30.0,
                               str(tmp_path), answers=False)
    assert err.strip() == "{base}"
    rc, err, _ = settings._run(["sh", "-c", "printf 'a\\377b' >&2"], env, py, 30.0, str(tmp_path), answers=True)
    assert rc == 0 and err == "a\ufffdb"
    rc, err, _ = settings._run(["sh", "-c", "pwd >&2"], env, py, 30.0, str(tmp_path), answers=True)
    assert err.strip() == os.path.realpath(tmp_path)   # in the link's folder
    rc, err, timed_out = settings._run(["sh", "-c", "exec sleep 30"], env, py, 0.5, str(tmp_path), answers=True)
    assert timed_out and rc != 0


def test_build_program_links_an_executable(mini, tc, tmp_path):
    r = settings.build_program(mini, TOOL, OZ, Setting("linked"), str(tmp_path), tc, CompileOptions(), keep=True)
    assert r.ok and r.error is None, r.error
    assert r.module == "tool" and r.object_path == str(tmp_path / "tool.oz" / "tool")
    assert r.text_bytes == text_size(r.object_path) > 0 and 0 < r.seconds < 600
    assert r.decisions is None and r.capped == 0
    assert "-Wl,--gc-sections" in r.command and r.command.startswith(tc.clang)
    assert leftovers(tmp_path / "tool.oz") == []   # the members' objects are removed


def test_build_program_without_keep_leaves_nothing(mini, tc, tmp_path):
    r = settings.build_program(mini, TOOL, OZ, Setting("linked"), str(tmp_path), tc, CompileOptions(), tag="base")
    assert r.ok and r.object_path is None and r.text_bytes > 0
    assert os.listdir(tmp_path / "tool.base") == []
    again = settings.build_program(mini, TOOL, OZ, Setting("linked"), str(tmp_path), tc, CompileOptions(),
                                   tag="base")   # the same folder again (a second run): fine
    assert again.ok and again.text_bytes == r.text_bytes


@pytest.mark.parametrize("setting", ["linked", "lto"])
def test_build_program_links_a_shared_library_exporting_its_api(mini, tc, tmp_path, setting):
    r = settings.build_program(mini, LIB, OZ, Setting(setting), str(tmp_path), tc, CompileOptions(), keep=True)
    assert r.ok, r.error
    names = defined_dynamic_symbols(r.object_path)
    assert {"api_twice", "api_other"} <= names and "internal_only" not in names
    assert "-shared" in r.command and "-Wl,-Bsymbolic" in r.command
    assert ("-flto=full" in r.command) == (setting == "lto")
    assert r.text_bytes == text_size(r.object_path)
    assert settings._check_exports(LIB, r.object_path) is None
    stale = Program("liba.so", "shared", ("a.o",), ("api_*", "gone_*"))
    assert settings._check_exports(stale, r.object_path) == \
        "export 'gone_*' of program liba.so matches no symbol the link defines"


def test_build_program_fails_on_an_export_nothing_defines(mini, tc, tmp_path):
    stale = Program("liba.so", "shared", ("a.o",), ("api_twice", "gone_*"))
    r = settings.build_program(mini, stale, OZ, Setting("linked"), str(tmp_path), tc, CompileOptions(), keep=True)
    assert not r.ok and r.text_bytes is None and r.object_path is None
    assert r.error == "export 'gone_*' of program liba.so matches no symbol the link defines"
    assert os.listdir(tmp_path / "liba.so.oz") == ["exports.map"]   # the linked file is not kept


def test_build_program_names_the_member_that_failed(mini, tc, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for m in mini.modules:
        for p in (m.bc, m.cmd_path):
            shutil.copy(p, broken / os.path.basename(p))
    (broken / "main.o.bc").write_bytes(b"BC\xc0\xde not bitcode")   # the second member
    c = Corpus(str(broken), [Module(str(broken), m.name) for m in mini.modules])
    work = tmp_path / "work"
    r = settings.build_program(c, TOOL, OZ, Setting("linked"), str(work), tc, CompileOptions(), tag="pol")
    assert r.ok is False and r.error.startswith("module main.o: ") and 0 < r.seconds < 600
    assert ".pol.o" in r.command   # the tag names the objects
    assert leftovers(work / "tool.pol") == []   # the first member's object is removed too


def test_build_program_reports_a_stale_module_pattern(mini, tc, tmp_path):
    r = settings.build_program(mini, Program("x", "executable", ("nothing/*",)), OZ, Setting("linked"),
                               str(tmp_path), tc, CompileOptions())
    assert r.ok is False and "module pattern 'nothing/*' matches no module" in r.error and r.module == "x"


def test_build_program_passes_the_recorded_opt_level_and_sums_decisions(mini, tc, tmp_path, monkeypatch):
    """The link gets the first member's level; with a plugin policy the members'
    decisions and caps are added to the linker's."""
    seen = {}
    from mlbridge.corpus.compile import CompiledModule

    def fake_compile(m, policy, folder, toolchain, opts, tag="", problem=None):
        path = os.path.join(folder, m.name + ".bc")
        open(path, "wb").close()
        return CompiledModule(m.name, ok=True, decisions=2, capped=1, object_path=path)

    def fake_link(program, made, policy, setting, folder, toolchain, options, opt, keep=False, extra_env=None,
                  problem=None):
        seen.update(opt=opt, made=[os.path.basename(p) for p in made], env=extra_env, keep=keep, problem=problem)
        return CompiledModule(program.name, ok=True, text_bytes=10, decisions=5, capped=3)

    monkeypatch.setattr(settings, "compile_module", fake_compile)
    monkeypatch.setattr(settings, "link_program", fake_link)
    onnx = Policy("onnx", "m.onnx", model="/m.onnx")
    r = settings.build_program(mini, TOOL, onnx, Setting("lto"), str(tmp_path), tc, CompileOptions(),
                               keep=True, link_env={"K": "v"})
    assert seen == {"opt": "-Oz", "made": ["a.o.bc", "main.o.bc"], "env": {"K": "v"}, "keep": True,
                    "problem": "inlining-size"}   # the linker's verdict is the problem's
    assert (r.decisions, r.capped) == (2 + 2 + 5, 1 + 1 + 3)
    assert leftovers(tmp_path / "tool.onnx") == []
    r = settings.build_program(mini, TOOL, OZ.with_linker(onnx), Setting("lto"), str(tmp_path), tc,
                               CompileOptions())
    assert r.decisions == 9   # the linker's policy uses the plugin
    calls = {"compile": None, "link": None}
    monkeypatch.setattr(settings, "compile_module", lambda m, *a, **k: CompiledModule(m.name, ok=True,
                                                                                      decisions=calls["compile"]))
    monkeypatch.setattr(settings, "link_program",
                        lambda *a, **k: CompiledModule("tool", ok=True, text_bytes=1, decisions=calls["link"]))
    # an -Oz compile reports no decisions: the linker's alone
    calls.update(compile=None, link=5)
    assert settings.build_program(mini, TOOL, OZ.with_linker(onnx), Setting("lto"), str(tmp_path), tc,
                                  CompileOptions()).decisions == 5
    # a linker that decided nothing (the policy only in the compiles): the members' alone
    calls.update(compile=3, link=None)
    assert settings.build_program(mini, TOOL, onnx.with_linker(OZ), Setting("lto"), str(tmp_path), tc,
                                  CompileOptions()).decisions == 6


def test_build_program_oz_keeps_no_decisions(mini, tc, tmp_path, monkeypatch):
    from mlbridge.corpus.compile import CompiledModule
    monkeypatch.setattr(settings, "compile_module", lambda m, *a, **k: CompiledModule(m.name, ok=True))
    monkeypatch.setattr(settings, "link_program", lambda *a, **k: CompiledModule("tool", ok=True, text_bytes=1))
    r = settings.build_program(mini, TOOL, OZ, Setting("linked"), str(tmp_path), tc, CompileOptions())
    assert r.ok and r.decisions is None


def test_link_program_failure_names_the_status_and_the_last_lines(tmp_path, monkeypatch):
    stderr = "a\n\nb\nc\nld.lld: error: undefined symbol\n"
    monkeypatch.setattr(settings, "_run", lambda *a, **k: (1, stderr, False))
    r = settings.link_program(TOOL, ["a.o"], OZ, Setting("linked"), str(tmp_path), TC, CompileOptions(), "-Oz")
    assert r.ok is False and r.error == "the link failed with exit status 1: b | c | ld.lld: error: undefined symbol"
    assert r.stderr == stderr and 0 < r.seconds < 600
    monkeypatch.setattr(settings, "_run", lambda *a, **k: (-9, "", False))
    r = settings.link_program(TOOL, ["a.o"], OZ, Setting("linked"), str(tmp_path), TC, CompileOptions(), "-Oz")
    assert r.error == "the link was killed by signal 9: (no output)"


def test_link_program_measures_and_removes_the_linked_file(mini, tc, tmp_path, monkeypatch):
    built = settings.build_program(mini, TOOL, OZ, Setting("linked"), str(tmp_path / "b"), tc, CompileOptions(),
                                   keep=True)

    def link(cmd, env, policy, timeout, cwd, answers):
        shutil.copy(built.object_path, cmd[-1])
        return 0, "", False
    monkeypatch.setattr(settings, "_run", link)
    r = settings.link_program(TOOL, ["a.o"], OZ, Setting("linked"), str(tmp_path), tc, CompileOptions(), "-Oz")
    assert r.ok and r.text_bytes == built.text_bytes and r.object_path is None   # not kept by default
    assert not (tmp_path / "tool").exists()

    def junk(cmd, env, policy, timeout, cwd, answers):
        with open(cmd[-1], "wb") as f:
            f.write(b"not an ELF file at all, but long enough to be read as a header" * 2)
        return 0, "", False
    monkeypatch.setattr(settings, "_run", junk)
    r = settings.link_program(TOOL, ["a.o"], OZ, Setting("linked"), str(tmp_path), tc, CompileOptions(), "-Oz")
    assert r.ok is False and r.error and str(tmp_path / "tool") in r.error and not (tmp_path / "tool").exists()


def test_link_program_in_lto_reads_the_plugin_report(tmp_path, monkeypatch):
    out = tmp_path / "liba.so"
    calls = []

    def run(cmd, env, policy, timeout, cwd, answers):
        calls.append((env, policy, timeout, cwd, answers))
        return 0, "mlbridge: warning: cannot load the model\n", False

    monkeypatch.setattr(settings, "_run", run)
    onnx = Policy("onnx", "m.onnx", model="/m.onnx")
    r = settings.link_program(LIB, ["a.bc"], OZ.with_linker(onnx), Setting("lto"), str(tmp_path), TC,
                              CompileOptions(timeout=5000.0, environ={"BASE": "1"}), "-Oz",
                              extra_env={"TRACE": "t"})
    assert not r.ok and r.error == "in the linker: the policy was not used: cannot load the model"
    env, policy, timeout, cwd, answers = calls[0]
    assert env == {"BASE": "1", "MLBRIDGE_INLINE_STATS": "1", "MLBRIDGE_INLINE_RUNNER": "onnx",
                   "MLBRIDGE_INLINE_MODEL": "/m.onnx", "TRACE": "t"}
    assert policy == onnx and timeout == 5000.0 and cwd == str(tmp_path) and answers
    assert r.command.startswith("MLBRIDGE_INLINE_STATS=1 MLBRIDGE_INLINE_RUNNER=onnx "
                                "MLBRIDGE_INLINE_MODEL=/m.onnx /c/clang -fuse-ld=lld ")
    assert not out.exists() and (tmp_path / "exports.map").exists()


def test_link_program_logged_linker_loads_the_plugin(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(settings, "_run", lambda cmd, env, *a, **k: calls.append((cmd, k)) or (1, "x", False))
    settings.link_program(TOOL, ["a.bc"], OZ, Setting("lto"), str(tmp_path), TC, CompileOptions(), "-Oz",
                          extra_env={"MLBRIDGE_INLINE_TRAINING_LOG": "/l"})
    assert "-Wl,--load-pass-plugin=/p/plugin.so" in calls[0][0] and calls[0][1] == {"answers": False}
    r = settings.link_program(TOOL, ["a.o"], OZ, Setting("lto"), str(tmp_path), TC, CompileOptions(), "-Oz")
    assert "pass-plugin" not in r.command and r.command.startswith("/c/clang ")
    # the variable is the inliner's (Problem.linker_log_variable): another problem's link is not logged by it
    r = settings.link_program(TOOL, ["a.bc"], OZ, Setting("lto"), str(tmp_path), TC, CompileOptions(), "-Oz",
                              extra_env={"MLBRIDGE_INLINE_TRAINING_LOG": "/l"}, problem="regalloc-eviction")
    assert "pass-plugin" not in r.command


def test_program_unit_names_and_builds(mini, tc, tmp_path, monkeypatch):
    units = settings.program_units(mini, Setting("linked"))
    assert [u.program for u in units] == [LIB, TOOL]
    assert units[1].name == "corpus/tool"
    assert settings.ProgramUnit(Corpus(mini.root + "/", []), TOOL, Setting("lto")).name == "corpus/tool"
    r = units[1].build(OZ, str(tmp_path), tc, CompileOptions(), tag="t")
    assert r.ok and r.module == "corpus/tool" and os.path.isdir(tmp_path / "tool.t")
    r = units[1].build(OZ, str(tmp_path), tc, CompileOptions())
    assert r.ok and sorted(os.listdir(tmp_path)) == ["tool.oz", "tool.t"]   # untagged: the policy's kind


def test_program_key_changes_with_what_the_size_depends_on():
    k = settings.program_key(["a", "b"], LIB, Setting("linked"))
    assert len(k) == 64 and k == settings.program_key(["a", "b"], LIB, Setting("linked"))
    others = {settings.program_key(["a", "b"], LIB, Setting("lto")),
              settings.program_key(["a", "c"], LIB, Setting("linked")),
              settings.program_key(["ab"], LIB, Setting("linked")),
              settings.program_key(["a", "b"], Program("liba.so", "shared", ("a.o",), ("api_*",), ("m",)),
                                   Setting("linked"))}
    assert k not in others and len(others) == 4
    import hashlib
    h = hashlib.sha256(f"program\0{settings.LINK_FORMAT}\0linked\0{LIB.as_dict()!r}\0a\0b\0".encode())
    assert k == h.hexdigest()


# ---- layout.py ---------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", "a\0b", 5, None, ["a"]])
def test_check_name_refuses_what_is_not_a_name(name):
    with pytest.raises(CorpusError) as e:
        layout.check_name(name, "/c/corpus_description.json")
    assert str(e.value) == f"/c/corpus_description.json: module name {name!r} is not a non-empty string"


@pytest.mark.parametrize("name", ["/etc/passwd", "..", "../x.o", "a/../../x.o", "./.."])
def test_check_name_refuses_names_outside_the_corpus(name):
    with pytest.raises(CorpusError) as e:
        layout.check_name(name, "D")
    assert str(e.value) == f"D: module name {name!r} leaves the corpus folder"


@pytest.mark.parametrize("name", ["a.o", "sub/a.o", "a/../b.o", "..x.o", "x..", "sub/..a"])
def test_check_name_keeps_names_inside(name):
    assert layout.check_name(name, "D") == name


def test_read_cmd_size_limit_and_terminators(tmp_path):
    p = tmp_path / "m.cmd"
    p.write_bytes(b"-cc1\0" + b"x" * (layout.MAX_CMD_BYTES - 6) + b"\0")
    assert len(layout.read_cmd(str(p))) == 2   # exactly the limit: read
    p.write_bytes(b"x" * (layout.MAX_CMD_BYTES + 1))
    with pytest.raises(CorpusError, match=rf"^{p}: command file larger than {layout.MAX_CMD_BYTES} bytes$"):
        layout.read_cmd(str(p))
    for data, args in [(b"-cc1\0", ["-cc1"]), (b"-cc1\0-Oz", ["-cc1", "-Oz"]), (b"a\0\0", ["a", ""]),
                       (b"", []), (b"\0", [""]), (b"-cc1", ["-cc1"])]:
        p.write_bytes(data)
        assert layout.read_cmd(str(p)) == args, data
    p.write_bytes(b"-cc1\0\xff\0")
    with pytest.raises(CorpusError, match=rf"^{p}: command file is not UTF-8 \("):
        layout.read_cmd(str(p))


def test_write_cmd_round_trips_utf8(tmp_path):
    p = str(tmp_path / "m.cmd")
    args = ["-cc1", "-main-file-name", "caf\u00e9.c", "-D", "X=\u00b5"]
    layout.write_cmd(p, args)
    assert open(p, "rb").read() == b"".join(a.encode("utf-8") + b"\0" for a in args)
    assert layout.read_cmd(p) == args


def test_read_json_limit_and_errors(tmp_path):
    p = tmp_path / "d.json"
    p.write_text("[1, 2]")
    assert layout.read_json(str(p), 6) == [1, 2]   # exactly the limit
    with pytest.raises(CorpusError, match=rf"^{p}: larger than 5 bytes$"):
        layout.read_json(str(p), 5)
    p.write_bytes('"\u00e9\u00e9"'.encode())   # 6 bytes, 4 characters: the limit counts bytes
    with pytest.raises(CorpusError, match=rf"^{p}: larger than 5 bytes$"):
        layout.read_json(str(p), 5)
    p.write_text("{x")
    with pytest.raises(CorpusError, match=rf"^{p}: not JSON \("):
        layout.read_json(str(p), 100)
    with pytest.raises(CorpusError, match=rf"^{tmp_path}/gone.json: cannot read \(No such file or directory\)$"):
        layout.read_json(str(tmp_path / "gone.json"), 100)


def _desc(root, desc) -> str:
    path = os.path.join(str(root), layout.DESCRIPTION)
    with open(path, "w") as f:
        json.dump(desc, f)
    return path


def test_load_reads_every_key(tmp_path):
    _desc(tmp_path, {"global_command_override": ["-cc1", "-Oz"], "has_thinlto": True, "modules": ["a", "s/b"],
                     "x-tool": {"v": 1}})
    for n in ("a", "s/b"):
        os.makedirs(os.path.dirname(str(tmp_path / n)) or ".", exist_ok=True)
        (tmp_path / (n + ".bc")).write_bytes(b"BC")
    c = layout.load(str(tmp_path))   # no .cmd needed: the override replaces them
    assert c.root == str(tmp_path) and c.has_thinlto is True and c.global_command_override == ["-cc1", "-Oz"]
    assert c.extra == {"x-tool": {"v": 1}} and len(c) == 2
    m = c.modules[1]
    assert (m.name, m.bc, m.cmd_path, m.thinlto_index) == ("s/b", str(tmp_path / "s/b.bc"), str(tmp_path / "s/b.cmd"),
                                                           str(tmp_path / "s/b.thinlto.bc"))
    assert m.command() == ["-cc1", "-Oz"] and m.command_file == str(tmp_path / layout.DESCRIPTION)


def test_load_defaults(tmp_path):
    _desc(tmp_path, {"modules": []})
    c = layout.load(str(tmp_path))
    assert c.has_thinlto is False and c.global_command_override is None and c.extra == {} and c.modules == []
    m = Module(str(tmp_path), "a")
    assert m.command_file == str(tmp_path / "a.cmd")


@pytest.mark.parametrize("desc, message", [
    ({"modules": "a"}, 'expected an object with a "modules" list'),
    ([], 'expected an object with a "modules" list'),
    ({"modules": [], "global_command_override": "-cc1"}, "global_command_override must be a list of strings"),
    ({"modules": [], "global_command_override": ["-cc1", 3]}, "global_command_override must be a list of strings"),
    ({"modules": [], "has_thinlto": "yes"}, "has_thinlto must be true or false"),
    ({"modules": [], "has_thinlto": 1}, "has_thinlto must be true or false"),
    ({"modules": ["a", "a"]}, "a module is listed twice"),
    ({"modules": ["../a"]}, "module name '../a' leaves the corpus folder"),
])
def test_load_refuses_malformed_descriptions(tmp_path, desc, message):
    path = _desc(tmp_path, desc)
    with pytest.raises(CorpusError) as e:
        layout.load(str(tmp_path))
    assert str(e.value) == f"{path}: {message}"


def test_load_names_missing_and_odd_module_files(tmp_path):
    path = _desc(tmp_path, {"modules": ["a"]})
    with pytest.raises(CorpusError) as e:
        layout.load(str(tmp_path))
    assert str(e.value) == f"{tmp_path}/a.bc: missing (module a of {path})"
    (tmp_path / "a.bc").mkdir()
    with pytest.raises(CorpusError) as e:
        layout.load(str(tmp_path))
    assert str(e.value) == f"{tmp_path}/a.bc: not a regular file (module a of {path})"
    os.rmdir(tmp_path / "a.bc")
    (tmp_path / "a.bc").write_bytes(b"")
    with pytest.raises(CorpusError, match=r"a.cmd: missing \(module a of "):
        layout.load(str(tmp_path))
    assert layout.load(str(tmp_path), check_files=False).modules[0].name == "a"


def test_load_refuses_what_is_not_a_corpus(tmp_path):
    with pytest.raises(CorpusError, match=rf"^{tmp_path}/x: not a folder$"):
        layout.load(str(tmp_path / "x"))
    with pytest.raises(CorpusError, match=rf"^{tmp_path}: not a corpus \(no corpus_description.json\)$"):
        layout.load(str(tmp_path))


def test_write_description_is_extract_irs_layout(tmp_path):
    path = layout.write_description(str(tmp_path), ["a", "b"], has_thinlto=True,
                                    global_command_override=("-cc1", "-Oz"), extra={"k": 1})
    assert path == str(tmp_path / layout.DESCRIPTION)
    assert open(path).read() == json.dumps({"global_command_override": ["-cc1", "-Oz"], "has_thinlto": True,
                                            "modules": ["a", "b"], "k": 1}, indent=2)
    layout.write_description(str(tmp_path), ["a"])
    assert open(path).read() == '{\n  "has_thinlto": false,\n  "modules": [\n    "a"\n  ]\n}'


# ---- combine.py --------------------------------------------------------------------

def _sub(root, name, modules, **kw) -> None:
    os.makedirs(os.path.join(str(root), name))
    layout.write_description(os.path.join(str(root), name), modules, **kw)


def test_combine_lists_every_module_under_its_corpus(tmp_path):
    _sub(tmp_path, "b", ["x.o"], global_command_override=["-cc1"], extra={"tool": "t"})
    _sub(tmp_path, "a", ["x.o", "d/y.o"], global_command_override=["-cc1"], extra={"tool": "t"})
    (tmp_path / "notes").mkdir()   # a sub-folder without a corpus is not one
    (tmp_path / "file").write_text("")
    from mlbridge.corpus.combine import combine
    out = combine(str(tmp_path))   # the modules' files need not exist (check_files=False)
    want = {"global_command_override": ["-cc1"], "has_thinlto": False, "tool": "t",
            "modules": ["a/x.o", "a/d/y.o", "b/x.o"]}
    assert out == want
    assert open(tmp_path / layout.DESCRIPTION).read() == json.dumps(want, indent=2)
    c = layout.load(str(tmp_path), check_files=False)
    assert c.extra == {"tool": "t"} and [m.name for m in c.modules] == want["modules"]


def test_combine_names_the_keys_that_differ(tmp_path):
    from mlbridge.corpus.combine import combine
    _sub(tmp_path, "a", ["x.o"], extra={"k": 1, "same": 2})
    _sub(tmp_path, "b", ["y.o"], has_thinlto=True, extra={"same": 2})
    _sub(tmp_path, "c", ["z.o"], extra={"k": 1, "same": 2})
    with pytest.raises(CorpusError) as e:
        combine(str(tmp_path))
    assert str(e.value) == f"{tmp_path}: corpora a and b differ in more than their modules (has_thinlto, k)"
    assert not (tmp_path / layout.DESCRIPTION).exists()


def test_combine_refusals(tmp_path):
    from mlbridge.corpus.combine import combine
    with pytest.raises(CorpusError, match=rf"^{tmp_path}/x: not a folder$"):
        combine(str(tmp_path / "x"))
    with pytest.raises(CorpusError, match=rf"^{tmp_path}: no sub-folder holds a corpus \(corpus_description.json\)$"):
        combine(str(tmp_path))
    _sub(tmp_path, "a", ["x.o"])
    (tmp_path / layout.DESCRIPTION).mkdir()
    with pytest.raises(CorpusError, match="a folder is in the way of the description to write; nothing written"):
        combine(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == sorted(["a", layout.DESCRIPTION])   # no temporary file left


# ---- info.py -----------------------------------------------------------------------

def test_describe_summarizes_modules_and_commands(tmp_path):
    from mlbridge.corpus.info import describe
    cmds = {
        "a": ["-cc1", "-triple", "x86_64-pc-linux-gnu", "-O2", "-Oz", "-main-file-name", "a.c",
              "-fdebug-compilation-dir=/w/a", "-Werror"],
        "b": ["-cc1", "-triple", "x86_64-pc-linux-gnu", "-Oz", "-main-file-name", "b.c",
              "-fdebug-compilation-dir=/w/b", "-Werror"],
        "c": ["-cc1", "-triple", "aarch64-linux-gnu", "-Ofast", "-Werror", "-triple"],
    }
    for n, args in cmds.items():
        layout.write_cmd(str(tmp_path / f"{n}.cmd"), args)
        (tmp_path / f"{n}.bc").write_bytes(b"B" * (10 * len(n) + ord(n)))
    c = Corpus(str(tmp_path), [Module(str(tmp_path), n) for n in cmds], global_command_override=None)
    d = describe(c)
    assert d["module_list"] == [{"name": "a", "bc_bytes": 107, "opt": "-Oz", "args": 9},
                                {"name": "b", "bc_bytes": 108, "opt": "-Oz", "args": 8},
                                {"name": "c", "bc_bytes": 109, "opt": "-O0", "args": 6}]
    assert d["root"] == str(tmp_path) and d["modules"] == 3 and d["bc_bytes"] == 324
    assert d["has_thinlto"] is False and d["global_command_override"] is None
    assert d["opt_levels"] == {"-Oz": 2, "-O0": 1}
    assert list(d["targets"]) == ["x86_64-pc-linux-gnu", "aarch64-linux-gnu"]
    assert d["targets"] == {"x86_64-pc-linux-gnu": 2, "aarch64-linux-gnu": 1}
    assert d["distinct_commands"] == 3   # a's -O2 makes it differ from b; their own files do not
    assert d["common_args"] == ["-cc1", "-triple", "-Werror"]   # in every module, in the first one's order


def test_describe_per_file_arguments_do_not_make_commands_distinct(tmp_path):
    from mlbridge.corpus.info import describe
    for n in ("a", "b"):
        layout.write_cmd(str(tmp_path / f"{n}.cmd"), ["-cc1", "-O2", "-main-file-name", f"{n}.c", "-dumpdir",
                                                       f"/o/{n}", "-fcoverage-compilation-dir=/w/" + n,
                                                       "-fmodule-file=/m/" + n, "-x", "c"])
        (tmp_path / f"{n}.bc").write_bytes(b"")
    d = describe(Corpus(str(tmp_path), [Module(str(tmp_path), n) for n in ("a", "b")], has_thinlto=True))
    assert d["distinct_commands"] == 1 and d["common_args"] == ["-cc1", "-O2", "-x", "c"]
    assert d["targets"] == {"?": 2} and d["opt_levels"] == {"-O2": 2} and d["has_thinlto"] is True


def test_describe_with_an_override_and_unreadable_files(tmp_path):
    from mlbridge.corpus.info import describe
    (tmp_path / "a.bc").write_bytes(b"xx")
    over = ["-cc1", "-triple", "t", "-O1"]
    d = describe(Corpus(str(tmp_path), [Module(str(tmp_path), "a", over)], global_command_override=over))
    assert d["global_command_override"] == over and d["targets"] == {"t": 1} and d["opt_levels"] == {"-O1": 1}
    assert d["common_args"] == over and d["distinct_commands"] == 1
    d = describe(Corpus(str(tmp_path), []))
    assert (d["modules"], d["bc_bytes"], d["common_args"], d["distinct_commands"], d["module_list"]) == \
        (0, 0, [], 0, [])
    with pytest.raises(CorpusError, match=rf"^{tmp_path}/b.bc: cannot read \(No such file or directory\)$"):
        describe(Corpus(str(tmp_path), [Module(str(tmp_path), "b")]))
    with pytest.raises(CorpusError, match=rf"^{tmp_path}/a.cmd: cannot read \(No such file or directory\)$"):
        describe(Corpus(str(tmp_path), [Module(str(tmp_path), "a")]))


# ---- where.py ----------------------------------------------------------------------

def _object(tmp_path, name: str, source: str) -> str:
    import subprocess
    src, obj = tmp_path / f"{name}.c", tmp_path / f"{name}.o"
    src.write_text(source)
    subprocess.run([mini_corpus.llvm_tool("clang"), "-O1", "-c", str(src), "-o", str(obj)], check=True,
                   stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    return str(obj)


def _zero_size(name: str) -> str:
    """C source defining NAME as a function symbol of no bytes, in its own .text section."""
    return (f'__asm__(".pushsection .text.{name},\\"ax\\",@progbits\\n.globl {name}\\n'
            f'.type {name},@function\\n{name}:\\n.popsection");\n')


def test_compare_functions_kinds(tmp_path):
    """A function only -Oz's object has (even one of a single byte, `ret`) was
    removed, one only the policy's has was added; equal sizes are no change."""
    from mlbridge.corpus.elf import function_sizes
    from mlbridge.corpus.where import FunctionChange, compare_functions
    # z0 and z1: function symbols of no bytes (assembly without .size): no change either way
    oz = _object(tmp_path, "oz", "void tiny(void) {}\nint same(int x) { return x + 1; }\n"
                                 "int grows(int x) { return x * 3; }\n" + _zero_size("z0"))
    pol = _object(tmp_path, "pol", "int same(int x) { return x + 1; }\nint extra(int x) { return x * 7 + 9; }\n"
                                   "int grows(int x) { return (x * 3) ^ (x >> 2) ^ 12345; }\nvoid tiny2(void) {}\n"
                                   + _zero_size("z1"))
    a, b = function_sizes(oz), function_sizes(pol)
    assert a["tiny"] == 1 and b["tiny2"] == 1 and a["same"] == b["same"] and b["grows"] > a["grows"]
    assert a["z0"] == 0 and b["z1"] == 0
    changes = compare_functions("m.o", oz, pol)
    assert changes == [FunctionChange("m.o", "extra", 0, b["extra"]),
                       FunctionChange("m.o", "grows", a["grows"], b["grows"]), FunctionChange("m.o", "tiny", 1, 0),
                       FunctionChange("m.o", "tiny2", 0, 1)]
    assert [c.kind for c in changes] == ["added", "grown", "removed", "added"]
    assert [c.delta for c in changes] == [b["extra"], b["grows"] - a["grows"], -1, 1]


def test_summarize_totals_and_extremes():
    from mlbridge.corpus.where import FunctionChange, summarize
    ch = [FunctionChange("m", "gone", 40, 0), FunctionChange("m", "new", 0, 8), FunctionChange("m", "small", 30, 20),
          FunctionChange("n", "big", 10, 25), FunctionChange("n", "flat", 5, 5)]
    s = summarize(ch, top=2)
    assert s["kinds"] == {"removed": {"functions": 1, "bytes": -40}, "added": {"functions": 1, "bytes": 8},
                          "shrunk": {"functions": 1, "bytes": -10}, "grown": {"functions": 2, "bytes": 15}}
    assert s["changed_functions"] == 5 and s["delta"] == -40 + 8 - 10 + 15
    assert s["saved_most"] == [{"module": "m", "function": "gone", "oz": 40, "policy": 0, "delta": -40,
                                "kind": "removed"},
                               {"module": "m", "function": "small", "oz": 30, "policy": 20, "delta": -10,
                                "kind": "shrunk"}]
    assert [r["function"] for r in s["grew_most"]] == ["big", "new"]
    s = summarize(ch + [FunctionChange("n", "byte", 4, 5)], top=6)   # an unchanged size is neither saved nor grown
    assert [r["function"] for r in s["saved_most"]] == ["gone", "small"]
    assert [r["function"] for r in s["grew_most"]] == ["big", "new", "byte"]
    many = [FunctionChange("m", f"f{i}", 100, 100 + d) for i, d in enumerate(range(-12, 13)) if d]
    s = summarize(many)   # ten each way by default
    assert [r["delta"] for r in s["saved_most"]] == list(range(-12, -2))
    assert [r["delta"] for r in s["grew_most"]] == list(range(12, 2, -1))


def test_where_summary_counts_modules_and_demangles():
    from types import SimpleNamespace
    from mlbridge.corpus.where import FunctionChange, demangle, where_summary
    scores = [SimpleNamespace(functions=[FunctionChange("a", "_Z3fooi", 10, 4)]),
              SimpleNamespace(functions=None),
              SimpleNamespace(functions=[FunctionChange("b", "_Z3barv", 2, 9), FunctionChange("b", "plain", 3, 3)]),
              SimpleNamespace(functions=[])]
    s = where_summary(scores)
    assert s["modules_compared"] == 3 and s["changed_functions"] == 3 and s["delta"] == -6 + 7
    names = demangle(["_Z3fooi", "_Z3barv"])
    assert [r["function"] for r in s["saved_most"]] == names[:1]
    assert [r["function"] for r in s["grew_most"]] == names[1:]
    if mini_corpus.llvm_tool("llvm-cxxfilt") or __import__("shutil").which("c++filt"):
        assert names == ["foo(int)", "bar()"]
    many = [SimpleNamespace(functions=[FunctionChange("m", f"f{i}", 100, 100 + d)]) for i, d in
            enumerate(range(-12, 13)) if d]
    s = where_summary(many)
    assert (len(s["saved_most"]), len(s["grew_most"]), s["modules_compared"]) == (10, 10, 24)
    s = where_summary(many, top=3)
    assert [r["delta"] for r in s["saved_most"]] == [-12, -11, -10] and len(s["grew_most"]) == 3


def _tool(tmp_path, body: str) -> str:
    p = tmp_path / "filt"
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return str(p)


def test_demangle_with_a_given_tool(tmp_path):
    from mlbridge.corpus.where import demangle
    assert demangle(["a", "b"], _tool(tmp_path, "tr a-z A-Z")) == ["A", "B"]   # no final newline: still all
    assert demangle(["a", "b"], _tool(tmp_path, "tr a-z A-Z; echo")) == ["A", "B"]
    assert demangle(["a", "b"], _tool(tmp_path, "printf only-one")) == ["a", "b"]   # too few lines: unchanged
    assert demangle(["a", "b"], _tool(tmp_path, "tr a-z A-Z; exit 1")) == ["a", "b"]   # failed: unchanged
    assert demangle(["a"], _tool(tmp_path, "exec sleep 30"), timeout=0.3) == ["a"]
    assert demangle(["a"], str(tmp_path / "none")) == ["a"]
    assert demangle([], _tool(tmp_path, "echo x")) == []
    assert demangle(["a", "b"], _tool(tmp_path, "printf 'f(int, char)\\ng()\\n'")) == ["f(int, char)", "g()"]
    assert demangle(["a"], _tool(tmp_path, "printf 'x\\377y\\n'")) == ["x\ufffdy"]   # not UTF-8: replaced


def test_demangle_finds_an_installed_tool(monkeypatch, tmp_path):
    from mlbridge.corpus import where
    _tool(tmp_path, "exec /usr/bin/tr a-z A-Z")
    os.rename(tmp_path / "filt", tmp_path / "c++filt")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert where.demangle(["ab"]) == ["AB"]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert where.demangle(["ab"]) == ["ab"]
    # the first of llvm-cxxfilt-19, llvm-cxxfilt, c++filt that is installed
    for name in ("llvm-cxxfilt-19", "llvm-cxxfilt"):
        _tool(tmp_path, f"printf {name}")
        os.rename(tmp_path / "filt", tmp_path / name)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert where.demangle(["ab"]) == ["llvm-cxxfilt-19"]
    os.unlink(tmp_path / "llvm-cxxfilt-19")
    assert where.demangle(["ab"]) == ["llvm-cxxfilt"]


# ---- python_callable.py ------------------------------------------------------------

def test_load_callable_splits_at_the_first_colon():
    from mlbridge.corpus.python_callable import load_callable
    assert load_callable("os.path:join") is os.path.join
    assert load_callable("os:path.join") is os.path.join
    with pytest.raises(ArgumentError) as e:
        load_callable("os:path:join", "model")
    assert "os:path:join: os has no path:join" in str(e.value) and e.value.argument == "model"
    with pytest.raises(ArgumentError) as e:
        load_callable("nocolon")
    assert e.value.argument == "policy" and str(e.value) == "policy must look like module:function, got 'nocolon'"


# ---- evaluation_files.py -----------------------------------------------------------

def _evaluation(n: int, total_pct=-2.5):
    mods = [{"module": f"dir/m\u00e9{i}.o", "ok": True, "oz_text": 100, "policy_text": 100 + (i % 3 - 1) * 5,
             "delta": (i % 3 - 1) * 5, "delta_pct": (i % 3 - 1) * (5 + i) / 10, "oz_seconds": 0.5,
             "policy_seconds": 0.25, "decisions": i, "oz_cached": False, "errors": [], "extra": "ignored"}
            for i in range(n)]
    mods.append({"module": "empty.o", "ok": True, "oz_text": 0, "policy_text": 0, "delta": 0, "delta_pct": None,
                 "errors": []})
    mods.append({"module": "bad.o", "ok": False, "oz_text": None, "policy_text": None, "delta": None,
                 "delta_pct": None, "errors": [{"run": "policy", "error": "boom", "command": "clang x"},
                                               {"run": "oz", "error": "bang", "command": "clang y"}]})
    return {"policy": "/models/p.onnx", "modules": mods,
            "total": {"oz_text": 1234567, "policy_text": 1200000, "delta_pct": total_pct}}


def test_write_csv_one_row_per_module(tmp_path):
    from mlbridge.corpus.evaluation_files import CSV_FIELDS, write_csv
    path = str(tmp_path / "e.csv")
    write_csv(path, _evaluation(2))
    rows_expected = ["dir/m\u00e90.o", "dir/m\u00e91.o", "empty.o", "bad.o"]
    raw = open(path, "rb").read()
    assert raw.startswith(",".join(CSV_FIELDS).encode() + b"\r\n") and "m\u00e9".encode() in raw
    rows = list(csv.DictReader(open(path, newline="", encoding="utf-8")))
    assert [r["module"] for r in rows] == rows_expected
    assert rows[0]["error"] == "" and rows[0]["command"] == "" and rows[0]["delta"] == "-5"
    assert rows[3]["error"] == "policy: boom; oz: bang" and rows[3]["command"] == "clang x ;; clang y"
    assert rows[3]["ok"] == "False" and rows[3]["oz_seconds"] == ""


def _plot(tmp_path, monkeypatch, data):
    import matplotlib.pyplot as plt
    from mlbridge.corpus.evaluation_files import plot_deltas
    figs = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (figs.append(fig), real_close(fig)))
    path = str(tmp_path / "p.png")
    plot_deltas(path, data)
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    size = (int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big"))
    (fig,) = figs
    return fig, size


def test_plot_deltas_draws_the_sorted_changes(tmp_path, monkeypatch):
    import matplotlib.colors as mc
    fig, size = _plot(tmp_path, monkeypatch, _evaluation(3))
    assert size == (600, 450)   # 6 x 4.5 inches at 100 dpi
    (ax,) = fig.axes
    heights = [p.get_height() for p in ax.patches]
    assert heights == [-0.5, 0.0, 0.7]   # sorted; the failed module and the one without a change left out
    assert all(p.get_width() == 0.9 for p in ax.patches)
    assert [mc.to_hex(p.get_facecolor()) for p in ax.patches] == \
        [mc.to_hex(c) for c in ("tab:green", "tab:gray", "tab:red")]
    zero, total = ax.lines
    assert zero.get_ydata()[0] == 0 and zero.get_linewidth() == 0.8 and mc.to_hex(zero.get_color()) == "#000000"
    assert total.get_ydata()[0] == -2.5 and total.get_linewidth() == 1 and total.get_linestyle() == "--"
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["total -2.50%"]
    assert ax.get_title() == "p.onnx vs -Oz: 1,234,567 -> 1,200,000 bytes"
    assert ax.get_xlabel() == "module (sorted; 3 of 5)" and ax.get_ylabel() == ".text change vs -Oz (%)"
    labels = ax.get_xticklabels()
    assert [t.get_text() for t in labels] == ["m\u00e90.o", "m\u00e91.o", "m\u00e92.o"]   # base names
    assert all(t.get_rotation() == 60 and t.get_fontsize() == 7 and t.get_horizontalalignment() == "right"
               for t in labels)


def test_plot_deltas_width_and_many_modules(tmp_path, monkeypatch):
    fig, size = _plot(tmp_path, monkeypatch, _evaluation(20, total_pct=None))
    assert size == (900, 450)   # 0.25 inch a bar and 4 more
    (ax,) = fig.axes
    assert ax.get_legend() is None and len(ax.lines) == 1
    fig, size = _plot(tmp_path, monkeypatch, _evaluation(60))
    assert size == (1600, 450)   # at most 16 inches
    assert list(fig.axes[0].get_xticks()) == []   # too many modules to name
    fig, size = _plot(tmp_path, monkeypatch, _evaluation(40))
    assert len(fig.axes[0].get_xticklabels()) == 40   # forty are named
    fig, size = _plot(tmp_path, monkeypatch, _evaluation(41))
    assert list(fig.axes[0].get_xticks()) == []


# ---- training_logs.py --------------------------------------------------------------

def test_training_log_paths(tmp_path):
    from mlbridge.corpus import training_logs as tl
    folder = tl.program_log_dir(str(tmp_path), Program("liba.so"))
    assert folder == str(tmp_path / "liba.so")
    assert tl.member_log(folder, Module("/c", "sub/a.o")) == str(tmp_path / "liba.so" / "sub" / "a.o.log")
    assert tl.linker_log(folder) == str(tmp_path / "liba.so" / "link.{module}.log") and os.path.isdir(folder)
    assert tl.linker_log(folder) == str(tmp_path / "liba.so" / "link.{module}.log")   # the folder exists: fine
    for p in ("sub/a.o.log", "link.b.o.log", "deep/er/c.o.log", "x.log.reward.json", "notes.txt"):
        os.makedirs(os.path.dirname(os.path.join(folder, p)), exist_ok=True)
        open(os.path.join(folder, p), "w").close()
    os.makedirs(os.path.join(folder, "dir.log"))
    assert tl.program_logs(folder) == [os.path.join(folder, p) for p in
                                       ("deep/er/c.o.log", "link.b.o.log", "sub/a.o.log")]


def test_logging_options_add_the_log_to_every_compile(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from mlbridge.corpus import training_logs as tl
    from mlbridge.corpus.compile import plugin_args
    tcp = Toolchain("/c", "/p/plugin.so", "v")
    base = CompileOptions(timeout=3.0)
    opts = tl.logging_options(base, OZ, tcp, lambda m: str(tmp_path / "logs" / (m.name + ".log")))
    assert opts.timeout == 3.0 and base.extra_args is None
    m = Module("/c", "sub/a.o")
    assert opts.extra_args(m) == plugin_args("/p/plugin.so") + [
        "-mllvm", f"-mlbridge-inline-training-log={tmp_path / 'logs/sub/a.o.log'}"]   # the inliner's, by default
    assert os.path.isdir(tmp_path / "logs" / "sub")   # made for the compiler to write into
    onnx = Policy("onnx", "m.onnx", model="/m.onnx")   # loads the plugin itself: not twice
    opts = tl.logging_options(base, onnx, tcp, lambda m: "rel.log")
    os.chdir(tmp_path / "logs")
    assert opts.extra_args(m) == ["-mllvm", "-mlbridge-inline-training-log=rel.log"]
    assert os.listdir(".") == ["sub"]   # a log in the current folder: no folder made


def test_set_rewards_writes_each_existing_log(tmp_path, monkeypatch):
    from types import SimpleNamespace
    from mlbridge.corpus import training_logs as tl
    from mlbridge.llvm import training_log
    calls = []
    monkeypatch.setattr(training_log, "set_log_reward", lambda *a: calls.append(a))
    for n in ("a.log", "b.log"):
        (tmp_path / n).write_text("")
    score = SimpleNamespace(policy=SimpleNamespace(text_bytes=90.0), baseline=SimpleNamespace(text_bytes=100))
    paths = [str(tmp_path / n) for n in ("a.log", "gone.log", "b.log")]
    assert tl.set_rewards(paths, score) == 2
    assert calls == [(paths[0], 90, 100), (paths[2], 90, 100)] and all(type(c[1]) is int for c in calls)
    assert tl.set_rewards([], score) == 0
