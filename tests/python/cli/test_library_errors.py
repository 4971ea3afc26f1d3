"""Libraries do not know the command line: a wrong argument is a typed error
that names the library's parameter (``ArgumentError.argument``) and never a
flag; the ``mlbridge`` command words it with its own flag, in one line, with
no traceback (docs/python.md, "Which stage may import which")."""
from __future__ import annotations

import os
import sys

import pytest

from mlbridge.cli import main as cli_main
from mlbridge.core.errors import ArgumentError
from mlbridge.corpus import layout
from mlbridge.corpus.compile import CompileSetupError, Policy, PolicyError, SetupArgumentError, find_plugin
from mlbridge.corpus.python_callable import load_callable
from mlbridge.corpus.recipes import recipes
from mlbridge.corpus.recipes.build import BuildError, BuildToolMissing, build
from mlbridge.corpus.settings import Setting
from mlbridge.train.run_folder import RunArgumentError, RunSetupError, check_run_folder, load_policy_file
from mlbridge.problems.inlining.recipe import check_checkpoint
from mlbridge.problems.inlining.size_trainer import TrainConfig


def no_flag(exc: BaseException) -> None:
    assert " --" not in f" {exc}" and not str(exc).startswith("-"), str(exc)


def one_line(capsys, argv, rc) -> str:
    assert cli_main(list(argv)) == rc
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("mlbridge: error: ")
    return line[len("mlbridge: error: "):]


# ---- the libraries: typed errors, no flags -------------------------------------------------
@pytest.mark.parametrize("spec,problem", [("O3", "expected oz, MODEL.onnx"), ("callees:/nope/c", "no such callee file"),
                                          ("/nope/m.onnx", "no such model file"),
                                          ("python:no_such_mod_q:f", "cannot import no_such_mod_q"),
                                          ("python:os", "must look like module:function"),
                                          ("python:os:sep", "not callable")])
def test_a_bad_policy_is_a_policy_error_naming_its_argument(spec, problem):
    with pytest.raises(PolicyError) as info:
        Policy.parse(spec, "linker_policy")
    assert isinstance(info.value, CompileSetupError) and info.value.argument == "linker_policy"
    assert problem in str(info.value) and str(info.value).startswith("linker_policy ")
    no_flag(info.value)


def test_load_callable_names_the_argument():
    with pytest.raises(ArgumentError) as info:
        load_callable("os:no_such_thing", "policy")
    assert str(info.value) == "policy os:no_such_thing: os has no no_such_thing"
    assert info.value.worded("--policy") == "--policy os:no_such_thing: os has no no_such_thing"
    assert load_callable("os.path:join") is os.path.join


def test_setup_errors_name_their_argument(monkeypatch):
    with pytest.raises(SetupArgumentError) as info:
        find_plugin("/nope/lib.so")
    assert info.value.argument == "plugin" and str(info.value) == "plugin: plugin /nope/lib.so does not exist"
    with pytest.raises(SetupArgumentError) as info:
        Setting.parse("nope")
    assert info.value.argument == "setting" and "expected one of" in str(info.value)
    no_flag(info.value)
    monkeypatch.setenv("MLBRIDGE_LLVM_PLUGIN", "/nope/env.so")
    with pytest.raises(CompileSetupError, match="MLBRIDGE_LLVM_PLUGIN: plugin /nope/env.so") as info:
        find_plugin()
    assert not isinstance(info.value, ArgumentError)   # an environment variable is no argument


def test_a_missing_compiler_for_a_recipe_names_cc_or_cxx(tmp_path):
    recipe = recipes()["tests"]
    with pytest.raises(BuildToolMissing) as info:
        build(recipe, cache=str(tmp_path), cc=sys.executable, cxx="/nope/clang++")
    assert isinstance(info.value, BuildError) and info.value.argument == "cxx"
    assert info.value.worded("--cxx") == "/nope/clang++ not found (install clang-19, or give --cxx)"
    no_flag(info.value)


def test_run_folder_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunArgumentError) as info:
        check_run_folder(str(tmp_path / "file"))
    assert info.value.argument == "out" and info.value.worded("-o").endswith("(-o names the run folder)")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RunArgumentError) as info:
        load_policy_file(str(tmp_path / "bad.json"), "init")
    assert info.value.argument == "init" and "not a policy file (not JSON" in str(info.value)
    no_flag(info.value)
    (tmp_path / "run" / "state.json").mkdir(parents=True)
    with pytest.raises(RunSetupError, match="damaged checkpoint \\(not a regular file\\)"):
        check_checkpoint(str(tmp_path / "run"), TrainConfig())
    assert check_checkpoint(str(tmp_path), TrainConfig()) is False


# ---- the command: the same errors in its words, one line, exit 2 ------------------------------
@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "corpus"
    root.mkdir()
    layout.write_description(str(root), ["a.o"])
    (root / "a.o.bc").write_bytes(b"x")
    (root / "a.o.cmd").write_bytes(b"-cc1\0")
    return str(root)


def test_the_command_words_policy_errors_with_the_flag_given(corpus, capsys):
    line = one_line(capsys, ["corpus", "evaluate", corpus, "--policy", "O3"], 2)
    assert line == ("--policy 'O3': expected oz, MODEL.onnx, python:MODULE:FN, callees:FILE, tuning:FILE, "
                    "orders:FILE or pipeline:TEXT")
    line = one_line(capsys, ["corpus", "evaluate", corpus, "--policy", "oz", "--setting", "lto",
                             "--linker-policy", "python:no_such_mod_q:f"], 2)
    assert line.startswith("--linker-policy python: no_such_mod_q:f: cannot import no_such_mod_q")


def test_the_command_words_run_errors_with_its_flags(corpus, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    line = one_line(capsys, ["train", "run", corpus, "-o", str(tmp_path / "file"), "--quiet"], 2)
    assert line == f"{tmp_path / 'file'}: exists and is not a folder (-o names the run folder)"
    (tmp_path / "p.json").write_text("[]")
    line = one_line(capsys, ["train", "run", corpus, "-o", str(tmp_path / "run"), "--init", str(tmp_path / "p.json"),
                             "--quiet"], 2)
    assert line.startswith(f"--init {tmp_path / 'p.json'}: not a policy file (")


def test_serve_words_a_bad_policy_with_its_flag(capsys):
    line = one_line(capsys, ["serve", "--policy", "no_such_mod_q:f"], 2)
    assert line.startswith("--policy no_such_mod_q:f: cannot import no_such_mod_q")


def test_the_train_recipes_refuse_with_typed_errors(corpus, tmp_path):
    from mlbridge.problems.inlining.learn_from_search import learn_from_search
    from mlbridge.problems.inlining.room_recipe import measure_room
    from mlbridge.train.run_report import report_run
    from mlbridge.problems.inlining.search import SearchConfig
    with pytest.raises(RunSetupError, match="no policy.onnx"):
        report_run(str(tmp_path))
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunArgumentError) as info:
        measure_room([corpus], str(tmp_path / "file"))
    assert info.value.argument == "out"
    (tmp_path / "p.json").write_text("{}")
    with pytest.raises(RunArgumentError) as info:
        learn_from_search(str(tmp_path / "run"), [], SearchConfig(propose=str(tmp_path / "p.json")))
    assert info.value.argument == "propose" and "not a policy file" in str(info.value)
    no_flag(info.value)


def test_the_train_commands_word_them_in_one_line(corpus, tmp_path, capsys):
    assert one_line(capsys, ["train", "report", str(tmp_path), "--quiet"], 2) == \
        f"{tmp_path}: no policy.onnx (has the run evaluated a policy yet?)"
    (tmp_path / "p.json").write_text("{}")
    line = one_line(capsys, ["train", "search", corpus, "-o", str(tmp_path / "run"), "--around", str(tmp_path / "p.json"),
                             "--quiet"], 2)
    assert line.startswith(f"--around {tmp_path / 'p.json'}: not a policy file (")
    line = one_line(capsys, ["train", "room", corpus, "-o", str(tmp_path / "room"), "--programs", "none",
                             "--clang", "/nonexistent/clang-19", "--quiet"], 2)
    assert "clang" in line and "Traceback" not in line


def test_corpus_build_words_a_missing_compiler_with_its_flag(tmp_path, capsys):
    line = one_line(capsys, ["corpus", "build", "tests", "--cache", str(tmp_path), "--cxx", "/nope/clang++",
                             "--quiet"], 1)
    assert line == "/nope/clang++ not found (install clang-19, or give --cxx)"
