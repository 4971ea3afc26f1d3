"""Edges of the log readers (llvm/training_log.py, llvm/logs.py) that
mutation testing (docs/testing.md) found untested: each test names the
mutants it kills.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.core.errors import ProtocolError
from mlbridge.formats import get_format
from mlbridge.llvm.training_log import read_training_log, reward_sidecar
from test_training_log import SMALL, small_row, spec, write_log

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation


def test_records_in_another_json_layout_read_like_llvms(tmp_path):
    """training_log._parse mutants 142 and 159: a record that is not byte
    for byte LLVM's ('{"observation": 0}' with a space) goes through the JSON
    parser, and its tensors and score are read the same."""
    canonical = write_log(str(tmp_path / "a.log"), SMALL, [("f", [small_row(0), small_row(1)])])
    data = open(canonical, "rb").read()
    spaced = data.replace(b'{"observation":', b'{"observation": ').replace(b'{"outcome":', b'{"outcome": ')
    assert spaced != data
    (tmp_path / "b.log").write_bytes(spaced)
    a, b = read_training_log(canonical), read_training_log(str(tmp_path / "b.log"))
    (ta,), (tb,) = a.trajectories, b.trajectories
    assert ta.steps == tb.steps == 2
    for name in ta.features:
        np.testing.assert_array_equal(ta.features[name], tb.features[name])
    np.testing.assert_array_equal(ta.score, tb.score)


def test_bad_records_and_sidecars_are_refused_with_the_file(tmp_path):
    """_record_id mutant 2 (a bool id), _outcome mutant 16 (the file named
    in an outcome line's error), _header_specs mutant 30 (a string score),
    _parse mutant 225 (reward sizes out of range)."""
    p = write_log(str(tmp_path / "x.log"), SMALL, [("f", [small_row(0)])])
    data = open(p, "rb").read()
    # false == 0: only the type check refuses it
    (tmp_path / "bool.log").write_bytes(data.replace(b'{"observation":0}', b'{"observation":false}'))
    with pytest.raises(ProtocolError, match="observation id must be an integer, got False"):
        read_training_log(str(tmp_path / "bool.log"))
    (tmp_path / "out.log").write_bytes(data.replace(b'{"outcome":0}', b'{"outcome":0'))
    with pytest.raises(ProtocolError, match=rf"^{tmp_path / 'out.log'}: "):
        read_training_log(str(tmp_path / "out.log"))
    hdr = {"features": SMALL, "score": spec("s", "string")}
    (tmp_path / "s.log").write_bytes(json.dumps(hdr).encode() + b"\n")
    with pytest.raises(ProtocolError, match=rf"^{tmp_path / 's.log'}: the score cannot be a string tensor$"):
        read_training_log(str(tmp_path / "s.log"))
    for bad in ({"policy_size": -1, "baseline_size": 5}, {"policy_size": 5}, [1, 2]):
        with open(reward_sidecar(p), "w") as f:
            json.dump(bad, f)
        with pytest.raises(ProtocolError, match="expected"):
            read_training_log(p)


def test_a_session_without_context_lines_has_the_empty_context(tmp_path):
    """logs.read_log mutant 65: records before any context line belong to
    the context "" (LLVM's default), not None."""
    B = get_format("bitstream")
    feats = [T("x", "int64_t", [1])]
    path = tmp_path / "s.out"
    path.write_bytes(B.header(feats, [T("d", "int64_t", [1])]) + B.observation(0, feats, [np.array([4])]))
    (rec,) = mlbridge.read_log(path)
    assert rec.context == "" and rec.id == 0


@pytest.mark.parametrize("fmt_name", ["json", "protobuf"])
def test_the_message_limit_holds_for_replies_too(tmp_path, fmt_name):
    """logs._Replies.start mutant 5: the replies file is read with the
    caller's message limit, not the default one."""
    f = get_format(fmt_name)
    feats, adv = [T("x", "int64_t", [1])], [T("d", "float", [4000])]
    out, rin = tmp_path / "s.out", tmp_path / "s.in"
    out.write_bytes(f.preamble() + f.header(feats, adv) + f.context("main") + f.observation(0, feats, [np.array([1])])
                    + f.end())
    rin.write_bytes(f.ack() + f.reply(0, adv, [np.zeros(4000, np.float32)]))
    assert len(list(mlbridge.read_log(out, replies=rin))) == 1
    with pytest.raises(ProtocolError):
        list(mlbridge.read_log(out, replies=rin, max_message=4096))
