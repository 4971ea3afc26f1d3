"""Issue 26, mutation testing of corpus/programs.py (docs/testing.md, "Mutation
testing"): the limits of programs.json's lists, entries of the wrong type,
messages naming the key at fault, and the docs the missing-file message cites."""
from __future__ import annotations

import os

import pytest

from mlbridge.corpus.layout import Corpus, CorpusError
from mlbridge.corpus.programs import MAX_PATTERNS, load_programs, program_from_dict

from conftest import ROOT


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
