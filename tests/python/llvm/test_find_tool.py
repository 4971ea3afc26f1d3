"""llvm.find_tool: the one lookup of LLVM tools every command uses."""
import os

import pytest

from mlbridge.llvm import LLVMNotFound, find_tool, tool


def _exe(path):
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_a_given_name_is_found_on_path_as_an_absolute_path(tmp_path, monkeypatch):
    _exe(tmp_path / "my-llc")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir("/")
    assert find_tool("llc", "my-llc") == str(tmp_path / "my-llc")
    with pytest.raises(LLVMNotFound, match="^no-such-llc is not on PATH$"):
        find_tool("llc", "no-such-llc")


def test_the_tools_folder_comes_before_the_suffix(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    llc = _exe(tmp_path / "bin" / "llc")
    monkeypatch.setenv("MLBRIDGE_LLVM_TOOLS_DIR", str(tmp_path / "bin"))
    monkeypatch.setenv("MLBRIDGE_LLVM_SUFFIX", "-no-such-version")
    assert find_tool("llc") == llc
    assert tool("llc") == llc and tool("llc", "/given/as/is") == "/given/as/is"
    # a tool the folder lacks falls back to the suffix, and says both ways out
    with pytest.raises(LLVMNotFound, match=r"^opt-no-such-version is not on PATH \(set MLBRIDGE_LLVM_TOOLS_DIR or "
                                           r"MLBRIDGE_LLVM_SUFFIX, or give the tool's path\)$"):
        find_tool("opt")
