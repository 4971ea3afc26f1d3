"""Python model <-> C++ compiler side, through the C++ test peer.

The peer (path in MLBRIDGE_TESTPEER) connects to BASE as a compiler:

    mlbridge-testpeer --base BASE --format F --timeout-ms MS --script script.json

and prints one JSON line per observation, ``{"id":N,"advice":[TENSOR...]}``, or
``{"error":{"code":...,"message":...}}`` and a non-zero exit on failure.
Skipped when MLBRIDGE_TESTPEER is unset, except under CI (CI set): then they fail.
"""
from __future__ import annotations

import json
import math
import subprocess
import threading
import time

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.core.dtypes import DTYPES

FORMATS = ["bitstream", "json", "protobuf"]


def run_peer(peer, base, fmt, script, tmp_path, timeout_ms=5000, wait=30):
    path = tmp_path / f"script-{fmt}-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(script))
    p = subprocess.Popen([peer, "--base", base, "--format", fmt, "--timeout-ms", str(timeout_ms),
                          "--script", str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"test peer did not finish in {wait}s; stderr: {err.decode(errors='replace')}")
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return p.returncode, lines, err.decode(errors="replace")


def script(features, advice, observations, context="main"):
    steps = [{"context": context}] + [{"observation": o} for o in observations] + [{"end": True}]
    return {"features": [s.to_dict() for s in features], "advice": [s.to_dict() for s in advice], "steps": steps}


def data_of(line, name):
    for t in line["advice"]:
        if t["name"] == name:
            return t
    raise KeyError(name)


@pytest.mark.parametrize("fmt", FORMATS)
def test_decisions_round_trip(testpeer, serve, tmp_path, fmt):
    feats = [T("calls", "int64_t", [1]), T("weights", "float", [3]), T("mask", "uint8_t", [2, 2])]
    adv = [T("decision", "int64_t", [1]), T("score", "float", [2])]

    def policy(obs):
        s = float(obs["weights"].sum())
        return int(obs["calls"][0]) * 2 + int(obs["mask"].sum()), np.array([s, -s], np.float32)

    st = serve(policy)
    obs = [{"calls": [i], "weights": [0.5, 1.25, i], "mask": [1, 0, 1, i % 2]} for i in range(4)]
    rc, lines, err = run_peer(testpeer, st.base, fmt, script(feats, adv, obs), tmp_path)
    assert rc == 0, err
    assert [ln["id"] for ln in lines] == [0, 1, 2, 3]
    for i, ln in enumerate(lines):
        d = data_of(ln, "decision")
        assert d["type"] == "int64_t" and d["shape"] == [1] and d["data"] == [i * 2 + 2 + i % 2]
        sc = data_of(ln, "score")
        assert sc["type"] == "float" and sc["data"] == [1.75 + i, -(1.75 + i)]
    (s,) = st.join()
    assert s.clean and s.observations == 4 and s.format == fmt and s.contexts == 1


def _values(dtype, n):
    row = DTYPES[dtype]
    if row.kind == "f":
        return [0.5 * (k - 1) for k in range(n)]
    if row.kind == "b":
        return [k % 2 == 0 for k in range(n)]
    if row.kind == "O":
        return [f'str "{k}" \\ é' for k in range(n)]
    info = np.iinfo(row.np_dtype)
    vals = [int(info.min), int(info.max)] + list(range(n))
    return vals[:n]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("shape", [[], [3], [2, 3, 1], [0]], ids=["scalar", "vector", "ndim", "empty"])
def test_every_dtype_echo(testpeer, serve, tmp_path, fmt, shape):
    types = [t for t in DTYPES if fmt != "bitstream" or t != "string"]
    feats = [T(f"f_{t}", t, shape) for t in types]

    class Echo(mlbridge.Model):
        def __call__(self, obs):
            return tuple(obs[s.name] for s in feats)

    st = serve(Echo())
    n = T("x", "float", shape).numel
    obs = [{s.name: _values(s.dtype, n) for s in feats}]
    rc, lines, err = run_peer(testpeer, st.base, fmt, script(feats, feats, obs), tmp_path)
    assert rc == 0, err
    (ln,) = lines
    for s in feats:
        t = data_of(ln, s.name)
        assert t["type"] == s.dtype and t["shape"] == list(shape)
        assert t["data"] == obs[0][s.name], s.name
    st.join()


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_policy_error_reaches_peer(testpeer, serve, tmp_path, fmt):
    def bad(obs):
        raise ValueError("boom from python")

    st = serve(bad)
    rc, lines, err = run_peer(testpeer, st.base, fmt, script([T("x", "int64_t", [1])], [T("d", "int64_t", [1])],
                                                             [{"x": [1]}]), tmp_path)
    assert rc != 0
    assert "error" in lines[-1] and "boom from python" in lines[-1]["error"]["message"]
    st.join()


@pytest.mark.parametrize("fmt", FORMATS)
def test_peer_deadline(testpeer, serve, tmp_path, fmt):
    release = threading.Event()

    def slow(obs):
        release.wait(20)
        return 0

    st = serve(slow)
    t0 = time.monotonic()
    rc, lines, err = run_peer(testpeer, st.base, fmt, script([T("x", "int64_t", [1])], [T("d", "int64_t", [1])],
                                                             [{"x": [1]}]), tmp_path, timeout_ms=500)
    assert time.monotonic() - t0 < 10
    release.set()
    assert rc != 0 and lines[-1]["error"]["code"] == "DEADLINE_EXCEEDED"
    st.join()


@pytest.mark.parametrize("fmt", FORMATS)
def test_peer_without_model(testpeer, tmp_path, fmt):
    t0 = time.monotonic()
    rc, lines, err = run_peer(testpeer, str(tmp_path / "nobody"), fmt,
                              script([T("x", "int64_t", [1])], [T("d", "int64_t", [1])], [{"x": [1]}]),
                              tmp_path, timeout_ms=500)
    assert rc != 0 and "error" in lines[-1]
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("fmt", FORMATS)
def test_required_feature_refusal(testpeer, serve, tmp_path, fmt):
    st = serve(lambda obs: 0, required_features=["callee_users"])
    rc, lines, err = run_peer(testpeer, st.base, fmt, script([T("x", "int64_t", [1])], [T("d", "int64_t", [1])],
                                                             [{"x": [1]}]), tmp_path, timeout_ms=3000)
    assert rc != 0 and "error" in lines[-1]
    if fmt != "bitstream":
        assert "callee_users" in lines[-1]["error"]["message"]
    (s,) = st.join()
    assert s.refused and "callee_users" in s.refused


def test_one_model_many_peer_sessions(testpeer, serve, tmp_path):
    order = ["protobuf", "bitstream", "json", "bitstream", "protobuf"]
    st = serve(lambda obs: obs["x"] + 1, sessions=len(order))
    for i, fmt in enumerate(order):
        rc, lines, err = run_peer(testpeer, st.base, fmt,
                                  script([T("x", "int64_t", [1])], [T("d", "int64_t", [1])], [{"x": [i]}]), tmp_path)
        assert rc == 0, err
        assert lines[0]["advice"][0]["data"] == [i + 1]
    sessions = st.join()
    assert [s.format for s in sessions] == order and all(s.clean for s in sessions)


def test_special_float_replies(testpeer, serve, tmp_path):
    """Non-finite and signed-zero advice crosses every format unchanged."""
    vals = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, 3.4028235e38], np.float32)
    for fmt in FORMATS:
        st = serve(lambda obs: vals)
        rc, lines, err = run_peer(testpeer, st.base, fmt,
                                  script([T("x", "int64_t", [1])], [T("v", "float", [6])], [{"x": [0]}]), tmp_path)
        assert rc == 0, err
        data = lines[0]["advice"][0]["data"]
        got = [float(v) if not isinstance(v, str) else {"NaN": math.nan, "Infinity": math.inf,
                                                        "-Infinity": -math.inf}[v] for v in data]
        assert math.isnan(got[0]) and got[1:3] == [math.inf, -math.inf]
        assert math.copysign(1, got[3]) == -1
        assert np.float32(got[4]) == vals[4] and np.float32(got[5]) == vals[5]   # float32 shortest digits
        st.join()
