"""LLVM training logs: the plugin's golden log, strict reading (ml-compiler-opt's
rules), the per-module reward written after compilation, LLVM's own reader."""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.llvm import logs
from mlbridge.llvm.training_log import read_training_log, relative_reward, set_log_reward
from conftest import VECTORS

GOLDEN = os.path.join(VECTORS, "llvm_inliner_training.json")


def manifest():
    with open(GOLDEN) as f:
        return json.load(f)


def spec(name, typ="int64_t", shape=(1,)):
    return {"name": name, "port": 0, "shape": list(shape), "type": typ}


def write_log(path, features, contexts, score=True, advice=True):
    """A log laid out as LLVM's TrainingLogger writes it (for cases the plugin cannot produce)."""
    hdr = {"features": features}
    if score:
        hdr["score"] = spec("delta_size")
    if advice:
        hdr["advice"] = spec("inlining_decision")
    out = bytearray(json.dumps(hdr, separators=(",", ":")).encode() + b"\n")
    for ctx, rows in contexts:
        out += b'{"context":%s}\n' % json.dumps(ctx).encode()
        for i, row in enumerate(rows):
            out += b'{"observation":%d}\n' % i + row + b"\n"
            if score:
                out += b'{"outcome":%d}\n' % i + np.int64(0).tobytes() + b"\n"
    with open(path, "wb") as f:
        f.write(bytes(out))
    return path


SMALL = [spec("a"), spec("b", "float", (2,)), spec("inlining_default"), spec("inlining_decision")]


def small_row(i):
    return (np.int64(10 * i).tobytes() + np.array([i, 0.5], np.float32).tobytes()
            + np.int64(1).tobytes() + np.int64(i % 2).tobytes())


# ---- the golden log, written by the plugin ---------------------------------

def test_golden_log_reads_as_the_manifest_says():
    m = manifest()
    log = read_training_log(os.path.join(VECTORS, m["log"]))
    assert [s.name for s in log.features] == m["features"]
    assert all(s.dtype == "int64_t" and s.shape == (1,) for s in log.features)
    assert log.features[-2].name == "inlining_default" and log.features[-1].name == "inlining_decision"
    assert len(log.features) == 40      # LLVM 19's 38 FeatureMap features + default + decision
    assert (log.score.name, log.score.dtype, log.score.shape) == ("delta_size", "int64_t", (1,))
    assert log.advice.name == "inlining_decision"
    (traj,) = log.trajectories
    assert traj.context == m["context"]
    got = np.stack([traj.features[n].reshape(-1) for n in m["features"]], axis=1)
    assert got.tolist() == m["observations"]
    assert traj.score.reshape(-1).tolist() == [0] * len(m["observations"])


def test_golden_log_agrees_with_the_generic_reader():
    """read_log (the decoder every format shares) sees the same values."""
    m = manifest()
    recs = list(logs.read_log(os.path.join(VECTORS, m["log"])))
    assert [r.id for r in recs] == list(range(len(m["observations"])))
    for r, want in zip(recs, m["observations"]):
        assert [int(r.features[n][0]) for n in m["features"]] == want
        assert r.outcome.tolist() == [0]


def test_set_log_reward_rewrites_the_last_slot_in_place(tmp_path):
    m = manifest()
    log_path = str(tmp_path / "module.log")
    shutil.copy(os.path.join(VECTORS, m["log"]), log_path)
    r = m["reward"]
    assert set_log_reward(log_path, r["policy_size"], r["baseline_size"]) == r["delta_size"]
    with open(log_path, "rb") as f, open(os.path.join(VECTORS, m["rewarded"]), "rb") as g:
        assert f.read() == g.read()     # byte for byte the checked-in rewarded log
    log = read_training_log(log_path)
    assert log.trajectories[0].score.reshape(-1).tolist()[-1] == r["delta_size"]
    assert log.module_score() == r["delta_size"]
    assert log.sizes["policy_size"] == r["policy_size"] and log.sizes["baseline_size"] == r["baseline_size"]
    # Idempotent: a second measurement overwrites the first.
    set_log_reward(log_path, 50, 50)
    assert read_training_log(log_path).module_score() == 0


def test_reward_sign_convention():
    # smaller than -Oz: delta_size < 0 (LLVM: after - before), reward > 0 (ml-compiler-opt)
    assert relative_reward(900, 1000) == pytest.approx(1 - 900.01 / 1000.01)
    assert relative_reward(900, 1000) > 0 > relative_reward(1100, 1000)
    assert relative_reward(0, 0) == 0.0
    with pytest.raises(ValueError):
        relative_reward(-1, 10)


def test_set_log_reward_without_observations_keeps_the_sizes(tmp_path):
    p = write_log(str(tmp_path / "empty.log"), SMALL, [("", [])])
    before = open(p, "rb").read()
    assert set_log_reward(p, 10, 12) == -2
    assert open(p, "rb").read() == before
    assert json.load(open(p + ".reward.json"))["in_log"] is False


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_set_log_reward_refuses_bad_sizes(tmp_path, bad):
    p = write_log(str(tmp_path / "x.log"), SMALL, [("", [small_row(0)])])
    with pytest.raises(ValueError):
        set_log_reward(p, bad, 10)


def test_set_log_reward_needs_a_score(tmp_path):
    p = write_log(str(tmp_path / "x.log"), SMALL, [("", [small_row(0)])], score=False)
    with pytest.raises(ProtocolError, match="no score"):
        set_log_reward(p, 1, 2)


# ---- strict reading: ml-compiler-opt's rules --------------------------------

def test_header_and_context_only_is_a_valid_empty_log(tmp_path):
    log = read_training_log(write_log(str(tmp_path / "e.log"), SMALL, [("", [])]))
    assert log.observations == 0 and [t.context for t in log.trajectories] == [""]
    assert log.trajectories[0].features["b"].shape == (0, 2)


def test_vectors_and_several_contexts(tmp_path):
    p = write_log(str(tmp_path / "c.log"), SMALL, [("f", [small_row(0), small_row(1)]), ("g", [small_row(2)])])
    log = read_training_log(p)
    assert [(t.context, t.steps) for t in log.trajectories] == [("f", 2), ("g", 1)]
    assert log.trajectories[0].features["b"].tolist() == [[0.0, 0.5], [1.0, 0.5]]
    assert log.trajectories[1].features["a"].tolist() == [[20]]


def test_feature_bytes_that_look_like_newlines(tmp_path):
    row = np.int64(0x0A0A0A0A0A0A0A0A).tobytes() + np.array([10.0, 0.0], np.float32).tobytes() + bytes(16)
    log = read_training_log(write_log(str(tmp_path / "n.log"), SMALL, [("", [row])]))
    assert log.trajectories[0].features["a"].tolist() == [[0x0A0A0A0A0A0A0A0A]]


def corrupt(tmp_path, fn):
    p = write_log(str(tmp_path / "x.log"), SMALL, [("", [small_row(0), small_row(1)])])
    data = bytearray(open(p, "rb").read())
    data = fn(data)
    open(p, "wb").write(bytes(data))
    return p


@pytest.mark.parametrize("name,fn,match", [
    ("empty", lambda d: b"", "empty"),
    ("truncated", lambda d: d[:-3], "truncated"),
    ("no newline after the features", lambda d: d.replace(b"\n{\"outcome\":0}", b"X{\"outcome\":0}", 1),
     "no newline"),
    ("outcome id", lambda d: d.replace(b'{"outcome":1}', b'{"outcome":7}'), "outcome 7 after observation 1"),
    ("observation id", lambda d: d.replace(b'{"observation":1}', b'{"observation":5}'), "observation 5"),
    ("not JSON", lambda d: d.replace(b'{"context":""}', b'{"context":""'), "JSON|end of line"),
    ("not a header", lambda d: b'{"context":""}\n', "header"),
    ("observation before context", lambda d: d.replace(b'{"context":""}\n', b""), "before any context"),
])
def test_malformed_logs_are_refused_with_the_place(tmp_path, name, fn, match):
    p = corrupt(tmp_path, fn)
    with pytest.raises(ProtocolError, match=match):
        read_training_log(p)


def read_like_ml_compiler_opt(path):
    """An independent reader that walks the file the way ml-compiler-opt's
    log_reader does (readline per JSON record, exact tensor reads), with its
    strict expectations: a newline after every tensor record, outcome N after
    observation N. Returns [(context, [feature values], score)]."""
    import ctypes
    import math
    types = {"int64_t": ctypes.c_int64, "float": ctypes.c_float, "double": ctypes.c_double,
             "int32_t": ctypes.c_int32}
    out = []
    with open(path, "rb") as f:
        header = json.loads(f.readline())
        specs = [(s["name"], types[s["type"]], math.prod(s["shape"])) for s in header["features"]]
        score = header.get("score")
        context = None
        while line := f.readline():
            event = json.loads(line)
            if "context" in event:
                context = event["context"]
                continue
            oid = int(event["observation"])
            values = []
            for _, ct, n in specs:
                raw = f.read(n * ctypes.sizeof(ct))
                assert len(raw) == n * ctypes.sizeof(ct)
                values.append(list((ct * n).from_buffer_copy(raw)))
            assert f.readline() == b"\n"
            sc = None
            if score is not None:
                assert int(json.loads(f.readline())["outcome"]) == oid
                sc = list((ctypes.c_int64 * 1).from_buffer_copy(f.read(8)))
                assert f.readline() == b"\n"
            out.append((context, values, sc))
    return out


@pytest.mark.parametrize("key", ["log", "rewarded"])
def test_golden_logs_read_the_ml_compiler_opt_way(key):
    m = manifest()
    recs = read_like_ml_compiler_opt(os.path.join(VECTORS, m[key]))
    assert [ctx for ctx, _, _ in recs] == [m["context"]] * len(m["observations"])
    assert [[v[0] for v in values] for _, values, _ in recs] == m["observations"]
    scores = [sc[0] for _, _, sc in recs]
    assert scores == [0] * (len(scores) - 1) + ([m["reward"]["delta_size"]] if key == "rewarded" else [0])


def llvm_log_reader():
    """LLVM's own llvm/lib/Analysis/models/log_reader.py, if something installed it
    (not on PyPI; Debian's llvm-19, llvm-19-dev and llvm-19-tools do not ship it:
    docs/training-logs.md). MLBRIDGE_LLVM_LOG_READER may name a copy."""
    import glob
    env = os.environ.get("MLBRIDGE_LLVM_LOG_READER")
    if env:
        return env
    found = sorted(p for pattern in ("/usr/lib/llvm-*/lib/Analysis/models/log_reader.py",
                                     "/usr/lib/llvm-*/share/*/log_reader.py", "/usr/share/llvm-*/*/log_reader.py")
                   for p in glob.glob(pattern))
    return found[0] if found else None


def test_golden_log_with_llvms_own_log_reader():
    import subprocess
    import sys
    reader = llvm_log_reader()
    if reader is None:
        pytest.skip("LLVM's log_reader.py is not installed (not shipped by Debian's llvm-19 packages); "
                    "set MLBRIDGE_LLVM_LOG_READER to a copy")
    m = manifest()
    out = subprocess.run([sys.executable, reader, os.path.join(VECTORS, m["rewarded"])], capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()
    assert out[0] == f"context: {m['context']}"
    values = [line for line in out if ":" in line and not line.startswith(("context", "observation"))]
    per_obs = len(m["features"]) + 1
    assert len(values) == per_obs * len(m["observations"])
    for i, want in enumerate(m["observations"]):
        got = values[i * per_obs:(i + 1) * per_obs]
        assert [int(v.split(": ")[1]) for v in got[:-1]] == want
    assert values[-1] == f"delta_size: {m['reward']['delta_size']}"
