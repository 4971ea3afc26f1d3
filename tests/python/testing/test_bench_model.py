"""python -m mlbridge.testing.bench_model: what the C++ benchmark drives."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import mlbridge
from mlbridge import TensorSpec as T
from mlbridge.testing.bench_model import FcModel
from conftest import wait_ready


@pytest.mark.parametrize("fmt", ["bitstream", "json", "protobuf"])
def test_fc_model(procs, tmp_path, fmt):
    base = str(tmp_path / "b" / "chan")
    p = procs.start([sys.executable, "-m", "mlbridge.testing.bench_model", "--base", base, "--model", "fc"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert wait_ready(p)["base"] == base
    rng = np.random.default_rng(3)
    for n in (500, 1000):
        x = rng.standard_normal(n).astype(np.float32)
        with mlbridge.PipeClient(base, [T("x", "float", [n])], [T("y", "float", [1])], format=fmt,
                                 timeout=10) as c:
            y = c.evaluate({"x": x})
            assert y.dtype == np.float32
            assert y[0] == np.dot(FcModel(0).weights(n), x)
    p.send_signal(signal.SIGTERM)
    rc = p.wait(10)
    err = p.stderr.read()
    assert rc == 0, err.decode(errors="replace")[-3000:]   # (exited 1 once in a full run: keep what it said)
    assert b'"event": "exit"' in err
    assert not os.path.exists(base + ".in"), "the FIFOs are removed on SIGTERM"


def test_const_and_echo_and_idle_exit(procs, tmp_path):
    base = str(tmp_path / "c" / "chan")
    for model, want in (("const", [[2, 2]]), ("echo", [[7, 8]])):
        p = procs.start([sys.executable, "-m", "mlbridge.testing.bench_model", "--base", base, "--model", model,
                         "--value", "2", "--idle-timeout", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        wait_ready(p)
        with mlbridge.PipeClient(base, [T("x", "int64_t", [3])], [T("d", "int32_t", [1, 2])], timeout=10) as c:
            assert c.evaluate({"x": [7, 8, 9]}).tolist() == want
        assert p.wait(10) == 0   # idle timeout ends it


def test_the_server_message_profile_runs():
    """bench/server_message_profile.py (issue 14's per-message stages) still
    runs: one JSON line per server and format, every stage timed."""
    import json
    from pathlib import Path
    script = Path(__file__).resolve().parents[3] / "bench" / "server_message_profile.py"
    for extra in ([], ["--floats", "25000"]):   # the inliner's message; one big vector (json's general path)
        res = subprocess.run([sys.executable, str(script), "--repeat", "20", *extra], capture_output=True, text=True,
                             timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        assert [(r["server"], r["format"]) for r in rows][:3] == [
            ("PipeServer/ShmServer", "bitstream"), ("PipeServer/ShmServer", "json"), ("PipeServer/ShmServer", "protobuf")]
        assert all(r["message_us"] > 0 for r in rows)
