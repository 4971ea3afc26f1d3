"""python -m mlbridge serve / dump."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

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
    lines = out.splitlines()
    assert lines[0] == f"mlbridge {mlbridge.__version__}, protocol version {mlbridge.PROTOCOL_VERSION}"
    from mlbridge import native
    names = [n for n, _, _ in native.COMPONENTS]
    # one line per native part: where it was found, or "not found"
    assert [ln.split()[0] for ln in lines[1:]] == names
    for ln, (name, path) in zip(lines[1:], native.components().items()):
        assert ln.split(None, 1)[1] == (path or "not found")
    r = subprocess.run([sys.executable, "-m", "mlbridge", "version", "--json"], env=child_env(), capture_output=True,
                       check=True, timeout=30)
    assert json.loads(r.stdout)["components"] == native.components()


def test_native_parts_are_found_in_the_package_first_then_the_prefix(tmp_path, monkeypatch):
    from mlbridge import native
    own = tmp_path / "pkg" / "_native" / "lib" / "mlbridge"
    env = tmp_path / "venv" / "lib64" / "mlbridge"
    for d in (own, env):
        d.mkdir(parents=True)
    monkeypatch.setattr(native, "prefixes", lambda: [str(tmp_path / "pkg" / "_native"), str(tmp_path / "venv")])
    monkeypatch.setattr(native, "source_build", lambda: None)
    assert native.find("llvm-plugin") is None and native.find("gcc-plugin") is None
    (env / "libMLBridgeLLVM.so").write_bytes(b"")
    assert native.find("llvm-plugin") == str(env / "libMLBridgeLLVM.so")
    (own / "libMLBridgeLLVM.so").write_bytes(b"")
    assert native.find("llvm-plugin") == str(own / "libMLBridgeLLVM.so")
    with pytest.raises(KeyError):
        native.find("no-such-part")
