"""The corpus folder's guard (corpus/extract.py, layout.check_name): a module
name from a build file or from the stamp never makes extract write or remove
a file outside the corpus folder.

The escaping object really exists and holds bitcode, so that without the
guard the extraction would succeed (it wrote ``escape.o.bc`` and
``escape.o.cmd`` beside the corpus): the test fails for that reason only,
not because the object is missing (issue 26).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

from conftest import ROOT
from mlbridge.corpus.extract import STAMP, STAMP_VERSION, Options, extract, sources_from_compile_commands

# clang-19 is a required tool (scripts/setup.sh): missing, the test fails.
CLANG = shutil.which("clang-19")


def _object_with_bitcode(path: str) -> None:
    assert CLANG, "clang-19 not found: scripts/setup.sh installs it"
    subprocess.run([CLANG, "-c", "-Oz", "-Xclang", "-fembed-bitcode=all",
                    os.path.join(ROOT, "tests", "corpus", "bits.c"), "-o", path],
                   check=True, capture_output=True, timeout=120)


def _files(root) -> list:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def test_an_object_outside_the_corpus_folder_is_a_failure_and_writes_nothing(tmp_path):
    build = tmp_path / "b"
    build.mkdir()
    _object_with_bitcode(str(build / "in.o"))
    _object_with_bitcode(str(tmp_path / "escape.o"))       # what "-o ../escape.o" names
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([
        {"directory": str(build), "arguments": ["clang-19", "-c", "bits.c", "-o", "in.o"], "file": "bits.c"},
        {"directory": str(build), "arguments": ["clang-19", "-c", "bits.c", "-o", "../escape.o"], "file": "bits.c"},
        {"directory": str(build), "arguments": ["clang-19", "-c", "bits.c", "-o", "sub/../../escape.o"],
         "file": "bits.c"},
    ]))
    sources, pre = sources_from_compile_commands(str(db))
    out = tmp_path / "corpus"
    report = extract(sources, str(out), pre_outcomes=pre, jobs=1)
    # The guard is what refused them: the objects exist and hold bitcode.
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["in.o"].status == "extracted"
    for name in ("../escape.o", "sub/../../escape.o"):
        assert by_name[name].status == "failed"
        assert "leaves the corpus folder" in by_name[name].reason
    assert report.modules == ["in.o"]
    # Nothing beside the corpus folder: only what the test made.
    assert _files(tmp_path) == sorted(["b/in.o", "compile_commands.json", "escape.o",
                                       "corpus/in.o.bc", "corpus/in.o.cmd",
                                       "corpus/corpus_description.json", f"corpus/{STAMP}"])


def test_a_stamp_naming_a_module_outside_the_corpus_removes_nothing(tmp_path):
    """A module gone from the build has its files removed: a damaged stamp
    naming ``../victim`` must not remove the user's ``victim.bc``."""
    out = tmp_path / "corpus"
    out.mkdir()
    for f in ("victim.bc", "victim.cmd"):
        (tmp_path / f).write_bytes(b"keep")
    (out / "gone.bc").write_bytes(b"x")
    (out / STAMP).write_text(json.dumps({"version": STAMP_VERSION, "options": Options().key(),
                                         "modules": {"../victim": None, "gone": None}}))
    extract([], str(out), jobs=1)
    assert (tmp_path / "victim.bc").read_bytes() == b"keep"
    assert (tmp_path / "victim.cmd").read_bytes() == b"keep"
    assert not (out / "gone.bc").exists()   # the stamp was read: a module gone is removed
