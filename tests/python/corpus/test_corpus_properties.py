"""Property tests for the readers of MLGO-workflow files (issue 13): a corpus
(``corpus_description.json`` and ``.cmd`` files, mlbridge.corpus.layout) and a
TFRecord stream (mlbridge.formats.tfrecord). On any input, the only exception
that escapes is the documented one: ``CorpusError`` for a corpus,
``ProtocolError`` for a TFRecord stream."""
from __future__ import annotations

import io
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlbridge.core.errors import ProtocolError
from mlbridge.corpus.layout import DESCRIPTION, CorpusError, load, read_cmd, write_cmd
from mlbridge.formats.tfrecord import read_records, write_record

# hostile input (docs/testing.md, "Markers: what a test guards"): pytest -m hostile
pytestmark = pytest.mark.hostile

# MLBRIDGE_HOSTILE_EXAMPLES=N: N examples per property, as in test_damaged_inputs (longer runs)
SETTINGS = settings(max_examples=int(os.environ.get("MLBRIDGE_HOSTILE_EXAMPLES") or 300), deadline=None,
                    derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# JSON values of every kind, nested a little: what a hostile description holds.
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=12),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)
NAMES = st.sampled_from(["a", "b/c", "../up", "/abs", "", "x\0y", "./a", "a/../../b", "d" * 300, "\udcff"])


def _load(root: str, description: bytes, *, check_files: bool = True) -> None:
    with open(os.path.join(root, DESCRIPTION), "wb") as f:
        f.write(description)
    try:
        corpus = load(root, check_files=check_files)
    except CorpusError as exc:
        # one line naming the file at fault with its path: this corpus, not any (issue 25)
        assert str(exc).startswith(root) and "\n" not in str(exc), str(exc)
        return
    # What loaded is usable: every module stays inside the corpus.
    for m in corpus.modules:
        assert os.path.realpath(m.bc).startswith(os.path.realpath(root) + os.sep)


@SETTINGS
@given(data=st.binary(max_size=256))
def test_description_any_bytes(tmp_path, data):
    _load(str(tmp_path), data)


@SETTINGS
@given(desc=st.fixed_dictionaries({}, optional={"modules": st.lists(NAMES | JSON, max_size=4),
                                                 "has_thinlto": JSON, "global_command_override": JSON})
       | JSON, check=st.booleans())
def test_description_any_json(tmp_path, desc, check):
    (tmp_path / "a.bc").write_bytes(b"BC")
    _load(str(tmp_path), json.dumps(desc).encode(), check_files=check)


@pytest.mark.parametrize("modules, message", [
    (["../x"], "{d}: module name '../x' leaves the corpus folder"),
    (["/etc/passwd"], "{d}: module name '/etc/passwd' leaves the corpus folder"),
    (["a/../../x"], "{d}: module name 'a/../../x' leaves the corpus folder"),
    ([""], "{d}: module name '' is not a non-empty string"),
    ([7], "{d}: module name 7 is not a non-empty string"),
    (["a", "a"], "{d}: a module is listed twice"),
    (["m"], "{root}/m.bc: missing (module m of {d})"),
    (["f"], "{root}/f.cmd: not a regular file (module f of {d})"),
])
def test_errors_name_the_corpus_file_with_its_path(tmp_path, modules, message):
    """Which corpus: the description (or module file) with its folder, as the
    user gave it, not just "corpus_description.json" (issue 25)."""
    root = str(tmp_path / "some" / "corpus")
    os.makedirs(root)
    (tmp_path / "some" / "corpus" / "a.bc").write_bytes(b"BC")
    (tmp_path / "some" / "corpus" / "a.cmd").write_bytes(b"-cc1\0")
    (tmp_path / "some" / "corpus" / "f.bc").write_bytes(b"BC")
    (tmp_path / "some" / "corpus" / "f.cmd").mkdir()
    with pytest.raises(CorpusError) as err:
        _load_strict(root, json.dumps({"modules": modules}).encode())
    assert str(err.value) == message.format(d=os.path.join(root, DESCRIPTION), root=root)


@pytest.mark.parametrize("text", ["[" * 100000, '{"modules":' * 50000, '{"modules": ["a"], "x": ' + "[" * 100000])
def test_description_deeply_nested(tmp_path, text):
    # The standard library's parser recurses: nesting must not escape as RecursionError.
    with pytest.raises(CorpusError):
        _load_strict(str(tmp_path), text.encode())


def _load_strict(root: str, description: bytes) -> None:
    with open(os.path.join(root, DESCRIPTION), "wb") as f:
        f.write(description)
    load(root)


@SETTINGS
@given(data=st.binary(max_size=256))
def test_cmd_any_bytes(tmp_path, data):
    path = tmp_path / "m.cmd"
    path.write_bytes(data)
    try:
        args = read_cmd(str(path))
    except CorpusError:
        return
    assert all(isinstance(a, str) for a in args)


@SETTINGS
@given(args=st.lists(st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))),
                     max_size=6))
def test_cmd_round_trip(tmp_path, args):
    path = str(tmp_path / "m.cmd")
    write_cmd(path, args)
    assert read_cmd(path) == args


def _records(data: bytes) -> list:
    try:
        return list(read_records(io.BytesIO(data)))
    except ProtocolError as exc:
        assert str(exc)
        return []


@SETTINGS
@given(data=st.binary(max_size=256))
def test_tfrecord_any_bytes(data):
    _records(data)


@SETTINGS
@given(records=st.lists(st.binary(max_size=64), min_size=1, max_size=4),
       flips=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(1, 255)), max_size=3),
       cut=st.integers(0, 10 ** 6))
def test_tfrecord_mutated(records, flips, cut):
    buf = io.BytesIO()
    for r in records:
        write_record(buf, r)
    data = bytearray(buf.getvalue())
    assert _records(bytes(data)) == records
    for at, x in flips:
        data[at % len(data)] ^= x
    data = data[:len(data) - cut % (len(data) + 1)]
    got = _records(bytes(data))
    # A checksum guards every byte: what is read back is a prefix of what was written.
    assert got == records[:len(got)]


def test_compile_commands_deeply_nested(tmp_path):
    # What extract reads from the user's build: nesting is a one-line error, not RecursionError.
    from mlbridge.corpus.extract import ExtractError, sources_from_compile_commands
    path = tmp_path / "compile_commands.json"
    path.write_bytes(b"[" * 100000)
    with pytest.raises(ExtractError, match="not JSON"):
        sources_from_compile_commands(str(path))
