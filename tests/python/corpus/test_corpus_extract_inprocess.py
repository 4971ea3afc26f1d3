"""corpus/extract.py called in-process, each outcome checked whole (name,
status, reason, input). test_corpus_extract.py drives the same code through
`python -m mlbridge corpus extract` in a child process; these tests kill the
mutants that mutation testing found alive (docs/testing.md), and mutmut can
see them (it maps tests to code in the test process only).
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from mlbridge.corpus import extract as ex
from mlbridge.corpus.extract import STAMP, Extraction, Options, Source, extract
from mlbridge.corpus.layout import CorpusError

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

# Required tools (scripts/setup.sh): missing, the tests fail.
CLANG = shutil.which("clang-19")
OBJCOPY = shutil.which("llvm-objcopy-19")
BITS = os.path.join(ROOT, "tests", "corpus", "bits.c")


def _cc(out: str, *flags: str) -> str:
    assert CLANG, "clang-19 not found: scripts/setup.sh installs it"
    subprocess.run([CLANG, "-c", "-Oz", *flags, BITS, "-o", out], check=True, capture_output=True, timeout=120)
    return out


def _one(report) -> Extraction:
    (o,) = report.outcomes
    return o


def test_outcomes_name_the_module_and_its_input(tmp_path):
    """Mutants of _extract_one that dropped or changed an outcome's name,
    status or input (18, 96, 200, 222, 244)."""
    out = str(tmp_path / "c")
    missing = str(tmp_path / "gone.o")
    o = _one(extract([Source("gone.o", missing)], out, jobs=1))
    assert o == Extraction("gone.o", "failed", "cannot read the input: No such file or directory", missing)

    text = tmp_path / "t.bc"
    text.write_text("not bitcode")
    o = _one(extract([Source("t", str(text), "bitcode")], out, jobs=1))
    assert o == Extraction("t", "failed", "not LLVM bitcode", str(text))

    only_bc = _cc(str(tmp_path / "only_bc.o"), "-Xclang", "-fembed-bitcode=bitcode")
    o = _one(extract([Source("only_bc.o", only_bc)], out, jobs=1))
    assert o == Extraction("only_bc.o", "failed", "no .llvmcmd section (compiled with -fembed-bitcode=bitcode "
                        "instead of =all?)", only_bc)

    assert OBJCOPY, "llvm-objcopy-19 not found: scripts/setup.sh installs it"
    plain = _cc(str(tmp_path / "plain.o"))
    (tmp_path / "junk").write_bytes(b"junk")
    (tmp_path / "cmd").write_bytes(b"-cc1\0-Oz")
    odd = str(tmp_path / "odd.o")
    subprocess.run([OBJCOPY, f"--add-section=.llvmbc={tmp_path / 'junk'}",
                    f"--add-section=.llvmcmd={tmp_path / 'cmd'}", plain, odd], check=True, timeout=60)
    o = _one(extract([Source("odd.o", odd)], out, jobs=1))
    assert o == Extraction("odd.o", "failed", "section .llvmbc is not LLVM bitcode", odd)

    good = _cc(str(tmp_path / "good.o"), "-Xclang", "-fembed-bitcode=all")
    o = _one(extract([Source("good.o", good)], out, options=Options(cmd_filter="^-O3$"), jobs=1))
    assert o == Extraction("good.o", "excluded", "command does not match the command filter", good)


def test_a_second_run_keeps_what_is_fresh_and_redoes_what_is_not(tmp_path):
    """_extract_one mutant 51 (the .cmd file's freshness) and _load_stamp
    mutant 26 (other options: the old modules' files are removed)."""
    good = _cc(str(tmp_path / "good.o"), "-Xclang", "-fembed-bitcode=all")
    out = tmp_path / "c"
    assert _one(extract([Source("good.o", good)], str(out), jobs=1)).status == "extracted"
    assert _one(extract([Source("good.o", good)], str(out), jobs=1)).status == "unchanged"
    (out / "good.o.cmd").unlink()
    assert _one(extract([Source("good.o", good)], str(out), jobs=1)).status == "extracted"
    assert (out / "good.o.cmd").is_file()
    # Other options: every module is redone; one the filter now excludes leaves the corpus.
    o = _one(extract([Source("good.o", good)], str(out), options=Options(cmd_filter="^-O3$"), jobs=1))
    assert o.status == "excluded"
    assert not (out / "good.o.bc").exists() and not (out / "good.o.cmd").exists()
    assert json.loads((out / STAMP).read_text())["modules"] == {}


def test_an_output_that_cannot_be_written_names_the_input(tmp_path):
    """_extract_one mutant 331: an OSError while writing is the module's
    failure, with its input."""
    good = _cc(str(tmp_path / "good.o"), "-Xclang", "-fembed-bitcode=all")
    out = tmp_path / "c"
    (out / "good.o.bc").mkdir(parents=True)   # the output's name is taken by a folder
    o = _one(extract([Source("good.o", good)], str(out), jobs=1))
    assert (o.name, o.status, o.path) == ("good.o", "failed", good) and "Is a directory" in o.reason


def test_atomic_writes_leave_nothing_behind_when_they_fail(tmp_path):
    """_write_atomic mutant 34 and _copy_atomic mutants 1 and 31: a failed
    write raises its own error and removes its temporary file; a copy gives
    the bytes."""
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError):
        ex._write_atomic(str(tmp_path / "taken"), b"x")
    with pytest.raises(FileNotFoundError):
        ex._copy_atomic(str(tmp_path / "nope"), str(tmp_path / "dst"))
    assert sorted(os.listdir(tmp_path)) == ["taken"]
    (tmp_path / "src").write_bytes(b"abc")
    ex._copy_atomic(str(tmp_path / "src"), str(tmp_path / "sub" / "dst"))
    assert (tmp_path / "sub" / "dst").read_bytes() == b"abc"
    assert sorted(os.listdir(tmp_path / "sub")) == ["dst"]


def test_small_helpers(tmp_path):
    """_name_for mutant 10, _thinlto_index mutant 17, _make_output_folder mutant 22."""
    with pytest.raises(CorpusError, match="outside the build folder"):
        ex._name_for("/a", "/a/b")          # exactly the parent: ".."
    assert ex._name_for("/a/b/c.o", "/a/b") == "c.o"
    assert ex._thinlto_index(b"clang\0-fthinlto-index=x=y.thinlto.bc\0-c", "/b") == "/b/x=y.thinlto.bc"
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError) as info:
        ex._make_output_folder(str(tmp_path / "f"))
    assert info.value.errno == errno.ENOTDIR
    assert str(info.value) == f"[Errno 20] the corpus folder to write (-o) exists and is not a folder: '{tmp_path / 'f'}'"


def test_a_file_made_in_place_of_the_folder_meanwhile(tmp_path, monkeypatch):
    """_make_output_folder mutant 22: a file appearing between the check
    and makedirs gets the same one-line error as one there before."""
    def makedirs(path, exist_ok=False):
        raise FileExistsError(errno.EEXIST, "File exists", path)
    monkeypatch.setattr(ex.os, "makedirs", makedirs)
    with pytest.raises(NotADirectoryError) as info:
        ex._make_output_folder(str(tmp_path / "c"))
    assert str(info.value) == f"[Errno 20] the corpus folder to write (-o) exists and is not a folder: '{tmp_path / 'c'}'"


def test_distributed_thinlto_says_which_index_is_missing(tmp_path):
    """_extract_one mutant 266: an object whose command names a ThinLTO
    index that is not there is refused naming that index; one without
    -fthinlto-index= says so."""
    assert OBJCOPY, "llvm-objcopy-19 not found: scripts/setup.sh installs it"
    bc = _cc(str(tmp_path / "m.bc"), "-emit-llvm")
    plain = _cc(str(tmp_path / "plain.o"))
    base = tmp_path / "build"
    base.mkdir()
    for name, cmd in (("with.o", b"-cc1\0-fthinlto-index=sub/m.thinlto.bc\0-O2"), ("without.o", b"-cc1\0-O2")):
        (tmp_path / "cmd").write_bytes(cmd)
        subprocess.run([OBJCOPY, f"--add-section=.llvmbc={bc}", f"--add-section=.llvmcmd={tmp_path / 'cmd'}",
                        plain, str(base / name)], check=True, timeout=60)
    srcs = [Source(n, str(base / n), "object", str(base)) for n in ("with.o", "without.o")]
    report = extract(srcs, str(tmp_path / "c"), options=Options(thinlto="distributed"), jobs=1)
    got = {o.name: o for o in report.outcomes}
    assert got["with.o"] == Extraction("with.o", "failed", f"index {base / 'sub' / 'm.thinlto.bc'} missing",
                                    str(base / "with.o"))
    assert got["without.o"] == Extraction("without.o", "failed", "no -fthinlto-index= in its command",
                                       str(base / "without.o"))


def test_what_an_input_holds_and_the_modules_it_names(tmp_path):
    """The input kinds `corpus extract --input-type auto` detects, and their sources."""
    objs, bcs = tmp_path / "objs", tmp_path / "bcs"
    (objs / "sub").mkdir(parents=True)
    (objs / "sub" / "a.o").write_bytes(b"")
    (objs / "b.bc").write_bytes(b"")   # objects win over bitcode
    bcs.mkdir()
    (bcs / "m.bc").write_bytes(b"")
    (tmp_path / "cc.json").write_text("[]")
    (tmp_path / "link.params").write_text("")
    assert [ex.input_kind(str(p)) for p in (objs, bcs, tmp_path / "cc.json", tmp_path / "link.params")] == \
        ["directory", "bitcode", "json", "params"]
    assert ex.sources_of(str(objs), "directory") == ([Source(os.path.join("sub", "a.o"), str(objs / "sub" / "a.o"),
                                                             "object", str(objs))], [])
    assert ex.sources_of(str(bcs), "bitcode") == ([Source("m", str(bcs / "m.bc"), "bitcode", str(bcs))], [])
    with pytest.raises(ValueError, match="unknown input kind"):
        ex.sources_of(str(bcs), "auto")


def test_missing_bitcode_is_skipped_when_allowed(tmp_path):
    report = ex.Report(str(tmp_path), [Extraction("a.o", "failed", "no .llvmbc section (assembled?)", "a.o"),
                                       Extraction("b.o", "failed", "not LLVM bitcode", "b.o"),
                                       Extraction("c.o", "extracted", "", "c.o")])
    ex.skip_missing_bitcode(report, Options())
    assert [o.status for o in report.outcomes] == ["skipped", "failed", "extracted"]
    assert report.outcomes[0] == Extraction("a.o", "skipped", "no .llvmbc section (assembled?)", "a.o")
