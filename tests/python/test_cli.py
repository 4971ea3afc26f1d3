"""python -m mlbridge serve / dump."""
from __future__ import annotations

import json
import subprocess
import sys

import mlbridge
from mlbridge import TensorSpec as T
from conftest import child_env, wait_ready


def test_serve_and_dump(procs, tmp_path):
    (tmp_path / "mypolicy.py").write_text("def double(obs):\n    return obs['x'] * 2\n")
    rec = tmp_path / "rec"
    p = procs.start([sys.executable, "-m", "mlbridge", "serve", "--policy", "mypolicy:double",
                     "--sessions", "1", "--record", str(rec)], cwd=str(tmp_path),
                    stdout=subprocess.PIPE, env=child_env())
    base = wait_ready(p)["base"]
    with mlbridge.PipeClient(base, [T("x", "int64_t", [1])], [T("d", "int64_t", [1])], format="json",
                             timeout=10) as c:
        assert c.evaluate({"x": 21}).tolist() == [42]
    assert p.wait(20) == 0
    events = [json.loads(line) for line in p.stdout.read().decode().splitlines()]
    assert events[-1]["event"] == "session" and events[-1]["clean"] and events[-1]["observations"] == 1
    out = subprocess.run([sys.executable, "-m", "mlbridge", "dump", str(rec / "session-0000.out"),
                          "--replies", str(rec / "session-0000.in")], env=child_env(),
                         capture_output=True, check=True, timeout=30).stdout.decode()
    (line,) = out.splitlines()
    assert json.loads(line) == {"session": 0, "context": "", "id": 0, "features": {"x": [21]}, "advice": [[42]]}


def test_version():
    out = subprocess.run([sys.executable, "-m", "mlbridge", "version"], env=child_env(), capture_output=True,
                         check=True, timeout=30).stdout.decode()
    assert out.strip() == f"mlbridge {mlbridge.__version__}, protocol version {mlbridge.PROTOCOL_VERSION}"
