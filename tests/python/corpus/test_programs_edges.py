"""Issue 26, mutation testing of corpus/programs.py (docs/testing.md, "Mutation
testing"): the limits of programs.json's lists, entries of the wrong type,
messages naming the key at fault, and the docs the missing-file message cites."""
from __future__ import annotations

import json
import os
import re

import pytest

from mlbridge.corpus.layout import Corpus, CorpusError, Module
from mlbridge.corpus.programs import (MAX_PATTERNS, MAX_PROGRAMS, PROGRAMS, Program, load_programs, program_from_dict,
                                      write_programs)

from conftest import ROOT

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation


def test_module_glob_length_limit():
    """A glob of 4096 characters is allowed; one more is refused."""
    p = program_from_dict({"name": "a.so", "exports": ["f"], "modules": ["m" * 4095 + "*"]})
    assert p.modules == ("m" * 4095 + "*",)
    with pytest.raises(CorpusError, match=r"^programs.json: program a.so: module glob 'm+\*' is not a string$"):
        program_from_dict({"name": "a.so", "exports": ["f"], "modules": ["m" * 4096 + "*"]})


@pytest.mark.parametrize("key", ["exports", "libs"])
@pytest.mark.parametrize("value", [[1], ["ok", None], "f", {"f": 1}, ["x"] * (MAX_PATTERNS + 1)])
def test_export_and_lib_lists_must_be_short_lists_of_strings(key, value):
    d = {"name": "a.so", "exports": ["f"], key: value}
    with pytest.raises(CorpusError, match=rf"^programs.json: program a.so: {key} must be a list of at most "
                                          rf"{MAX_PATTERNS} strings$"):
        program_from_dict(d)


def test_entries_that_are_not_allowed_name_their_key():
    with pytest.raises(CorpusError, match=r"^programs.json: program a.so: libs entry 'm;x' is not allowed$"):
        program_from_dict({"name": "a.so", "exports": ["f"], "libs": ["m;x"]})
    with pytest.raises(CorpusError, match=r"^programs.json: program a.so: exports entry 'f g' is not allowed$"):
        program_from_dict({"name": "a.so", "exports": ["f g"]})
    assert program_from_dict({"name": "a.so", "exports": ["f"], "libs": ["m"] * MAX_PATTERNS}).libs == \
        ("m",) * MAX_PATTERNS


def test_a_missing_file_cites_a_section_the_docs_have(tmp_path):
    with pytest.raises(CorpusError) as e:
        load_programs(Corpus(str(tmp_path), []))
    assert str(e.value).endswith('(docs/corpus.md, "Programs")'), str(e.value)
    docs = os.path.join(ROOT, "docs", "corpus.md")
    if not os.path.exists(docs):   # a scratch tree without the docs (scripts/mutation.sh)
        return
    with open(docs, encoding="utf-8") as f:
        assert "**Programs**" in f.read()


@pytest.mark.parametrize("glob", ["", "a\0b", 5, None])
def test_module_globs_must_be_non_empty_strings_without_nul(glob):
    with pytest.raises(CorpusError, match=r"^programs.json: program a.so: module glob .* is not a string$"):
        program_from_dict({"name": "a.so", "exports": ["f"], "modules": ["ok/*", glob]})


def test_module_glob_count_limit():
    assert len(program_from_dict({"name": "a", "kind": "executable", "modules": ["*"] * MAX_PATTERNS}).modules) == \
        MAX_PATTERNS
    with pytest.raises(CorpusError, match=r"^programs.json: program a: modules must be a non-empty list of globs$"):
        program_from_dict({"name": "a", "kind": "executable", "modules": ["*"] * (MAX_PATTERNS + 1)})


def _corpus(tmp_path):
    return Corpus(str(tmp_path), [Module(str(tmp_path), "m.c.o")])


def test_program_count_limit(tmp_path):
    progs = [{"name": f"p{i}", "kind": "executable"} for i in range(MAX_PROGRAMS)]
    (tmp_path / PROGRAMS).write_text(json.dumps({"programs": progs}))
    assert len(load_programs(_corpus(tmp_path))) == MAX_PROGRAMS
    progs.append({"name": "one_more", "kind": "executable"})
    (tmp_path / PROGRAMS).write_text(json.dumps({"programs": progs}))
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(tmp_path / PROGRAMS))}: more than {MAX_PROGRAMS} "
                                          rf"programs$"):
        load_programs(_corpus(tmp_path))


@pytest.mark.parametrize("entry,message", [
    (5, "each program must be an object"),
    ({"name": "a.so", "exports": ["f"], "zz": 1, "extra": 2}, "program a.so: unknown key(s) extra, zz"),
    ({"name": "a", "kind": "archive"}, "program a: kind must be one of shared, executable, not 'archive'"),
])
def test_entry_messages(entry, message):
    with pytest.raises(CorpusError, match=rf"^programs.json: {re.escape(message)}$"):
        program_from_dict(entry)


def test_the_file_is_written_for_people_to_read(tmp_path):
    """programs.json is also written by hand (docs/corpus.md): two-space
    indents, one item a line, a final newline."""
    progs = [Program("liba.so", "shared", ("lib/*",), ("a_*",), ("m",))]
    path = write_programs(str(tmp_path), progs)
    text = open(path).read()
    assert text == json.dumps({"programs": [p.as_dict() for p in progs]}, indent=2) + "\n"
