"""core/files.py: a result file is written whole or not at all."""
from __future__ import annotations

import json
import os

import pytest

from mlbridge.core.files import write_json_atomic


def test_writes_and_replaces(tmp_path):
    p = str(tmp_path / "a.json")
    write_json_atomic(p, {"a": 1}, indent=2, newline=True)
    assert open(p).read() == '{\n  "a": 1\n}\n'
    write_json_atomic(p, [2])
    assert json.load(open(p)) == [2] and os.listdir(tmp_path) == ["a.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = str(tmp_path / "a.json")
    write_json_atomic(p, {"ok": True})
    with pytest.raises(TypeError):
        write_json_atomic(p, {"bad": object()})   # not JSON: fails mid-write
    assert json.load(open(p)) == {"ok": True} and os.listdir(tmp_path) == ["a.json"]
