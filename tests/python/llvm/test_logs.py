"""read_log: LLVM training logs (score/outcome) and recorded sessions."""
from __future__ import annotations

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.formats import get_format

B = get_format("bitstream")
FEATS = [T("callee_users", "int64_t", [1]), T("weights", "float", [2, 2])]
SCORE = T("reward", "float", [1])
ADV = [T("inlining_decision", "int64_t", [1])]


def test_training_log_with_score_and_outcomes(tmp_path):
    path = tmp_path / "log.bin"
    data = B.header(FEATS, [], score=SCORE)
    assert b'"score":{"name":"reward"' in data and b'"advice"' not in data
    for ctx in ("f", "g"):
        data += B.context(ctx)
        for i in range(3):
            data += B.observation(i, FEATS, [np.array([i]), np.full((2, 2), i + 0.5, np.float32)])
            if i != 1:
                data += B.outcome(i, SCORE, np.array([i * 2.0], np.float32))
    path.write_bytes(data)
    recs = list(mlbridge.read_log(path))
    assert [(r.context, r.id) for r in recs] == [(c, i) for c in "fg" for i in range(3)]
    assert recs[0].features["weights"].tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert [None if r.outcome is None else float(r.outcome[0]) for r in recs[:3]] == [0.0, None, 4.0]
    assert recs[0].header.score == SCORE and recs[0].advice is None


def test_interactive_stream_with_replay_file(tmp_path):
    out, rin = tmp_path / "s.out", tmp_path / "s.in"
    out.write_bytes(B.header(FEATS, ADV) + B.context("")
                    + b"".join(B.observation(i, FEATS, [np.array([i]), np.zeros((2, 2), np.float32)])
                               for i in range(4)))
    rin.write_bytes(np.array([1, 0, 1], np.int64).tobytes())   # the model died before the 4th
    recs = list(mlbridge.read_log(out, replies=rin))
    assert [None if r.advice is None else int(r.advice[0]) for r in recs] == [1, 0, 1, None]


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_framed_recording_with_errors(tmp_path, fmt):
    f = get_format(fmt)
    out, rin = tmp_path / "s.out", tmp_path / "s.in"
    arrays = lambda i: [np.array([i]), np.ones((2, 2), np.float32)]  # noqa: E731
    out.write_bytes(f.preamble() + f.header(FEATS, ADV) + f.context("main")
                    + b"".join(f.observation(i, FEATS, arrays(i)) for i in range(3)) + f.end())
    rin.write_bytes(f.ack() + f.reply(0, ADV, [np.array([7])]) + f.error(1, "ValueError: x")
                    + f.reply(2, ADV, [np.array([9])]))
    recs = list(mlbridge.read_log(out, replies=rin))
    assert [(r.context, r.id) for r in recs] == [("main", 0), ("main", 1), ("main", 2)]
    assert int(recs[0].advice[0]) == 7 and recs[1].advice is None and recs[1].error == "ValueError: x"
    assert int(recs[2].advice[0]) == 9


def test_truncated_log_raises(tmp_path):
    path = tmp_path / "t.bin"
    path.write_bytes(B.header(FEATS, ADV) + b'{"observation":0}\n\x01')
    with pytest.raises(mlbridge.ProtocolError, match="truncated"):
        list(mlbridge.read_log(path))


def test_empty_log(tmp_path):
    path = tmp_path / "e.bin"
    path.write_bytes(b"")
    assert list(mlbridge.read_log(path)) == []
