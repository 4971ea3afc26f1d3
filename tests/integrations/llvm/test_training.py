"""examples/llvm_plugin/train.py in its quick setting: a policy trained over
pipes through the plugin, exported to ONNX, reproduces its sizes in-process."""
from __future__ import annotations

import json
import os
import subprocess
import sys


from conftest import PLUGIN, ROOT


def test_train_over_pipes_then_deploy_in_process(tmp_path):
    import onnx  # noqa: F401  the export; required (python/requirements-dev.txt): missing fails, never skips
    summary = tmp_path / "summary.json"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "llvm_plugin", "train.py"), "--plugin", PLUGIN,
                        "--quick", "--out", str(tmp_path), "--json", str(summary)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    s = json.loads(summary.read_text())
    assert s["decisions"] > 0 and s["compiles"] > 0
    assert s["onnx_text"] == s["pipe_text"] and s["onnx_total"] == s["trained_total"]
    assert set(s["stock_text"]) == set(s["onnx_text"]) and len(s["stock_text"]) >= 6
    assert os.path.exists(tmp_path / "trained_inliner.onnx")
