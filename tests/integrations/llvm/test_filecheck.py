"""FileCheck on the IR the plugin's ML inliner produces (inline_small.ll)."""
from __future__ import annotations

import os
import subprocess

import pytest

import plugin_driver
from conftest import HERE, PLUGIN, model, opt_cmd, run


@pytest.mark.parametrize("prefix,policy", [("NEVER", "never.onnx"), ("BB3", "callee_bb_le_3.onnx"),
                                           ("ALWAYS", "always.onnx")])
def test_filecheck(tmp_path, prefix, policy):
    src = os.path.join(HERE, "inline_small.ll")
    out = str(tmp_path / "out.ll")
    # inliner-wrapper alone: no later pass changes what the inliner did.
    r = run(opt_cmd(src, out, "-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={model(policy)}",
                    "-mlbridge-inline-stats", plugin=PLUGIN, passes="inliner-wrapper"))
    assert r.returncode == 0 and "mlbridge: warning" not in r.stderr, r.stderr
    with open(out) as f:
        fc = subprocess.run([plugin_driver.tool("FileCheck"), src, f"--check-prefix={prefix}"], stdin=f,
                            capture_output=True, text=True, timeout=60)
    assert fc.returncode == 0, fc.stderr
