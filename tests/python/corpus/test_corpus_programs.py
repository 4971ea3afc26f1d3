"""programs.json (corpus/programs.py) and the settings' pure parts (corpus/settings.py):
every malformed description is a CorpusError naming what is wrong; nothing here
needs clang. The links themselves: tests/integrations/llvm/test_settings.py."""
from __future__ import annotations

import json
import os

import pytest

from mlbridge.corpus.compile import CompileOptions, CompileSetupError, cc1_args
from mlbridge.corpus.layout import Corpus, CorpusError, Module
from mlbridge.corpus.programs import PROGRAMS, Program, load_programs, program_from_dict, write_programs
from mlbridge.corpus.settings import Setting, link_command, version_script


def corpus(tmp_path, names=("lib/a.c.o", "lib/b.c.o", "cli/main.c.o")) -> Corpus:
    return Corpus(str(tmp_path), [Module(str(tmp_path), n) for n in names])


def write(tmp_path, desc) -> None:
    (tmp_path / PROGRAMS).write_text(desc if isinstance(desc, str) else json.dumps(desc))


def test_round_trip_and_members(tmp_path):
    c = corpus(tmp_path)
    progs = [Program("liba.so", "shared", ("lib/*",), ("a_*",), ("m",)),
             Program("tool", "executable", ("cli/*", "lib/a.c.o"))]
    write_programs(str(tmp_path), progs)
    assert load_programs(c) == progs
    assert [m.name for m in progs[0].members(c)] == ["lib/a.c.o", "lib/b.c.o"]
    assert [m.name for m in progs[1].members(c)] == ["lib/a.c.o", "cli/main.c.o"]   # corpus order
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


@pytest.mark.parametrize("desc, words", [
    ("{", "not JSON"),
    ({"programs": []}, "non-empty"),
    ({"programs": "x"}, "non-empty"),
    ({"programs": [{"name": "../x.so", "exports": ["f"]}]}, "plain file name"),
    ({"programs": [{"name": "-shared", "exports": ["f"]}]}, "plain file name"),
    ({"programs": [{"name": "a.so"}]}, "export list"),
    ({"programs": [{"name": "a", "kind": "executable", "exports": ["f"]}]}, "exports nothing"),
    ({"programs": [{"name": "a", "kind": "archive"}]}, "kind must be"),
    ({"programs": [{"name": "a.so", "exports": ["f"], "extra": 1}]}, "unknown key"),
    ({"programs": [{"name": "a.so", "exports": ["f; local: *"]}]}, "not allowed"),
    ({"programs": [{"name": "a.so", "exports": ["f"], "libs": ["-lfoo"]}]}, "not allowed"),
    ({"programs": [{"name": "a.so", "exports": ["f"], "modules": []}]}, "non-empty list of globs"),
    ({"programs": [{"name": "a.so", "exports": ["f"], "modules": ["nothing/*"]}]}, "matches no module"),
    ({"programs": [{"name": "a.so", "exports": ["f"]}, {"name": "a.so", "exports": ["g"]}]}, "used twice"),
])
def test_malformed_descriptions_are_named(tmp_path, desc, words):
    write(tmp_path, desc)
    with pytest.raises(CorpusError) as err:
        load_programs(corpus(tmp_path))
    assert words in str(err.value)
    # the file with its path: which corpus's programs.json (issue 25)
    assert str(err.value).startswith(str(tmp_path / PROGRAMS) + ": "), str(err.value)


def test_missing_file_says_what_is_needed(tmp_path):
    with pytest.raises(CorpusError, match="no programs.json"):
        load_programs(corpus(tmp_path))


def test_defaults():
    p = program_from_dict({"name": "a.so", "exports": ["PyInit_*"]})
    assert (p.kind, p.modules, p.libs) == ("shared", ("*",), ())


def test_version_script_exports_only_the_patterns(tmp_path):
    path = version_script(Program("a.so", exports=("LZ4_*", "XXH32")), str(tmp_path / "v.map"))
    text = open(path).read()
    assert "LZ4_*;" in text and "XXH32;" in text and "local: *;" in text


def test_setting_compile_options():
    base = CompileOptions()
    shared = Setting.parse("lto").compile_options(Program("a.so", exports=("f",)), base)
    assert shared.bitcode and "-flto=full" in shared.setting_args and shared.setting_drop == ("-pic-is-pie",)
    exe = Setting.parse("linked").compile_options(Program("a", "executable"), base)
    assert not exe.bitcode and exe.setting_drop == () and "-ffunction-sections" in exe.setting_args
    assert cc1_args(["-cc1", "-pic-is-pie", "-Oz", "-emit-obj"], drop=("-pic-is-pie",), emit=("-emit-llvm-bc",)) \
        == ["-cc1", "-Oz", "-emit-llvm-bc"]
    with pytest.raises(CompileSetupError, match="expected one of"):
        Setting.parse("thin")


def test_link_command_puts_the_policy_in_the_linker_environment():
    from mlbridge.corpus.compile import Policy, Toolchain
    tc = Toolchain("/usr/bin/clang-19", "/p/libMLBridgeLLVM.so", "clang 19")
    pol = Policy("onnx", "m.onnx", model="/m.onnx")
    prog = Program("a.so", exports=("f",), libs=("m",))
    cmd, env = link_command(prog, ["x.bc"], "out.so", tc, Setting("lto"), pol, "-Oz", "v.map")
    assert "-Wl,--load-pass-plugin=/p/libMLBridgeLLVM.so" in cmd and "-flto=full" in cmd
    assert env == {"MLBRIDGE_INLINE_STATS": "1", "MLBRIDGE_INLINE_RUNNER": "onnx", "MLBRIDGE_INLINE_MODEL": "/m.onnx"}
    assert cmd[-4:] == ["x.bc", "-lm", "-o", "out.so"]
    cmd, env = link_command(prog, ["x.o"], "out.so", tc, Setting("linked"), pol, "-Oz", "v.map")
    assert env == {} and not any("pass-plugin" in a for a in cmd) and "-Wl,--version-script=v.map" in cmd


def test_flags_that_write_files_are_not_replayed():
    """A recorded command that would make clang write elsewhere (remarks,
    statistics, time traces, dependency and header lists, coverage notes, stack
    usage, module caches, crash reports): dropped, with their values."""
    recorded = ["-cc1", "-Oz", "-opt-record-file", "/abs/r.yaml", "-opt-record-format", "yaml",
                "-stats-file=/abs/s.json", "-ftime-trace=/abs/t.json", "-ftime-trace", "-dependency-file", "/abs/d",
                "-MT", "x.o", "-sys-header-deps", "-header-include-file", "/abs/h", "-coverage-notes-file", "/abs/n",
                "-coverage-data-file", "/abs/g", "-stack-usage-file", "/abs/su", "-fmodules-cache-path=/abs/mc",
                "-fcrash-diagnostics-dir=/abs/crash", "-split-dwarf-output", "/abs/x.dwo", "-triple", "x86_64"]
    out = cc1_args(recorded)
    assert out == ["-cc1", "-Oz", "-triple", "x86_64", "-emit-obj"]
    assert not any("/abs" in a for a in out)


@pytest.mark.parametrize("setting, answers", [("linked", False), ("lto", True)])
def test_link_timeout_is_a_failure_and_python_answers_only_the_lto_linker(tmp_path, monkeypatch, setting, answers):
    """A link past its bound fails the program (no size); the pipes for a Python
    policy are opened only for a linker that loads the plugin (lto)."""
    from mlbridge.corpus import settings
    from mlbridge.corpus.compile import Policy, Toolchain
    seen = []

    def slow(cmd, env, policy, timeout, cwd, answers):
        seen.append(answers)
        return None, "", True

    monkeypatch.setattr(settings, "_run", slow)
    tc = Toolchain("/usr/bin/clang-19", "/p/libMLBridgeLLVM.so", "clang 19")
    pol = Policy("python", "python:m:f", fn=lambda obs: 0)
    r = settings.link_program(Program("tool", "executable"), ["a.o"], pol, Setting(setting), str(tmp_path), tc,
                              CompileOptions(), "-Oz")
    assert not r.ok and r.timed_out and r.error == f"the link did not finish within {settings.LINK_TIMEOUT:g} s and was killed" and r.text_bytes is None
    assert seen == [answers]
