"""Failures: opt must exit 0 with a clear warning and a valid module that
holds exactly the steps applied before the failure."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import mlbridge
from mlbridge.problems.phase_ordering import poset
from conftest import HERE, WARNING, body, po_cmd, reference, run, traced_actions, verifies

PEER = os.path.join(HERE, "peer.py")


def offset_policy(path: str, offset: int) -> str:
    """action = step + offset: leaves the table at a chosen step."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    g = helper.make_graph(
        [helper.make_node("Add", [poset.STEP, "offset"], [poset.ACTION])], "offset",
        [helper.make_tensor_value_info(poset.FEATURES, TensorProto.INT64, [poset.NUM_FEATURES]),
         helper.make_tensor_value_info(poset.STEP, TensorProto.INT64, [1])],
        [helper.make_tensor_value_info(poset.ACTION, TensorProto.INT64, [1])],
        initializer=[numpy_helper.from_array(np.array([offset], np.int64), "offset")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def unchanged(ir: str, out: str, tmp_path) -> bool:
    return body(out) == reference(ir, str(tmp_path / "same.ll"), [])


@pytest.fixture
def ir(ir_dir) -> str:
    return os.path.join(ir_dir, "sort.ll")


@pytest.mark.parametrize("args, message", [
    ([], "NOT_FOUND: onnx runner: no model file given"),
    (["-mlbridge-po-model=/nonexistent/policy.onnx"], "NOT_FOUND"),
    (["-mlbridge-po-runner=tflite"], "INVALID_ARGUMENT: unknown runner 'tflite' (available: onnx, aot, tfaot, pipe"),
    (["-mlbridge-po-runner=aot", "-mlbridge-po-model=/nonexistent/libpolicy.so"],
     "NOT_FOUND: aot runner: cannot load '/nonexistent/libpolicy.so'"),
    (["-mlbridge-po-pipe=/nonexistent/channel", "-mlbridge-po-format=yaml"],
     "INVALID_ARGUMENT: pipe runner: unknown format 'yaml'"),
    (["-mlbridge-po-pipe=/nonexistent/channel", "-mlbridge-po-timeout-ms=200"], "UNAVAILABLE"),
])
def test_no_model_leaves_the_module_unchanged(ir, tmp_path, args, message):
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, 3, *args))
    assert r.returncode == 0, r.stderr
    assert WARNING + "no model (" + message in r.stderr, r.stderr
    assert "module left unchanged" in r.stderr
    assert unchanged(ir, out, tmp_path)


def test_model_with_the_wrong_contract_is_refused(ir, tmp_path):
    # A policy whose input is named differently: the engine names what is missing.
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph([helper.make_node("ArgMax", ["x"], [poset.ACTION], axis=0, keepdims=1)], "wrong",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [poset.NUM_ACTIONS])],
                          [helper.make_tensor_value_info(poset.ACTION, TensorProto.INT64, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = str(tmp_path / "wrong.onnx")
    onnx.save(m, path)
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, 3, f"-mlbridge-po-model={path}"))
    assert r.returncode == 0 and WARNING + "no model (NOT_FOUND" in r.stderr and "'x'" in r.stderr, r.stderr
    assert unchanged(ir, out, tmp_path)


@pytest.mark.parametrize("offset, applied", [(13, [13, 14]), (-1, [])])
def test_out_of_range_action_stops(ir, tmp_path, offset, applied):
    model = offset_policy(str(tmp_path / "offset.onnx"), offset)
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, 5, f"-mlbridge-po-model={model}"))
    assert r.returncode == 0, r.stderr
    bad = len(applied) + offset
    assert (WARNING + f"step {len(applied)}: action {bad} out of range [0, 15); stopped after {len(applied)} steps"
            in r.stderr), r.stderr
    assert traced_actions(r.stderr) == applied
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), applied)
    assert verifies(out)


def test_out_of_range_action_over_pipe(ir, tmp_path):
    out = str(tmp_path / "out.ll")
    r = mlbridge.run_compiler(po_cmd(ir, out, 3, "-mlbridge-po-pipe={base}"), lambda o: np.int64(99), timeout=60)
    assert r.returncode == 0
    assert WARNING + "step 0: action 99 out of range" in r.stderr.decode()
    assert unchanged(ir, out, tmp_path)


def _start_peer(fmt: str, mode: str, at: int) -> "tuple[subprocess.Popen, str]":
    peer = subprocess.Popen([sys.executable, PEER, "--format", fmt, "--mode", mode, "--at", str(at)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    base = peer.stdout.readline().strip()
    assert base, "peer did not start"
    return peer, base


@pytest.mark.parametrize("fmt", ["bitstream", "json"])
def test_peer_killed_mid_episode(ir, tmp_path, fmt):
    peer, base = _start_peer(fmt, "kill", 2)
    try:
        out = str(tmp_path / "out.ll")
        r = run(po_cmd(ir, out, 5, f"-mlbridge-po-pipe={base}", f"-mlbridge-po-format={fmt}",
                       "-mlbridge-po-timeout-ms=20000"))
        assert peer.wait(timeout=30) == -9               # it really died at step 2
        assert peer.stdout.read().split() == ["step", "0", "step", "1", "step", "2"]
    finally:
        peer.kill()
        peer.wait()
    assert r.returncode == 0, r.stderr
    assert WARNING + "step 2: model error (UNAVAILABLE" in r.stderr, r.stderr
    assert "stopped after 2 steps" in r.stderr
    assert traced_actions(r.stderr) == [0, 0]
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), [0, 0])
    assert verifies(out)


def test_peer_that_stops_answering_times_out(ir, tmp_path):
    peer, base = _start_peer("bitstream", "hang", 1)
    try:
        out = str(tmp_path / "out.ll")
        r = run(po_cmd(ir, out, 5, f"-mlbridge-po-pipe={base}", "-mlbridge-po-timeout-ms=500"))
    finally:
        peer.kill()
        peer.wait()
    assert r.returncode == 0, r.stderr
    assert WARNING + "step 1: model error (DEADLINE_EXCEEDED" in r.stderr, r.stderr
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), [0])
