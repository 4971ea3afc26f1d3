"""The pass driven in-process: a fixed ONNX policy through the built-in
engine (and an AOT build of it), checked against stock opt running the same
pipelines."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from mlbridge.problems.phase_ordering import poset
from conftest import (PIPELINES, body, po_cmd, reference, run, traced_actions, verifies)

SEQUENCE = [0, 10, 3, 1]   # sroa, ipsccp/globals, inline+simplify, instcombine


def test_table_parses_with_stock_opt(ir_dir, tmp_path):
    # Every action is a valid LLVM 19 pipeline on its own.
    ir = os.path.join(ir_dir, "bits.ll")
    for a, pipeline in PIPELINES.items():
        r = run([poset.tool("opt"), f"-passes={pipeline}", ir, "-disable-output"])
        assert r.returncode == 0, (a, pipeline, r.stderr)


@pytest.mark.parametrize("name", ["sort", "interp"])
def test_sequence_policy_equals_the_pipelines(ir_dir, tmp_path, name):
    ir = os.path.join(ir_dir, name + ".ll")
    model = poset.sequence_policy(SEQUENCE, str(tmp_path / "seq.onnx"))
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, len(SEQUENCE), "-mlbridge-po-runner=onnx", f"-mlbridge-po-model={model}"))
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    assert traced_actions(r.stderr) == SEQUENCE
    assert f"done: {len(SEQUENCE)} steps" in r.stderr
    # Same IR as stock opt with the four pipelines in a row; and it changed.
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), SEQUENCE)
    assert body(out) != body(ir)
    assert verifies(out)


def test_step_budget_and_last_action_repeats(ir_dir, tmp_path):
    # The sequence model repeats its last action past its end; the budget stops the episode.
    ir = os.path.join(ir_dir, "strhash.ll")
    model = poset.sequence_policy([0, 1], str(tmp_path / "seq.onnx"))
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, 4, f"-mlbridge-po-model={model}"))   # runner defaults to onnx
    assert r.returncode == 0, r.stderr
    assert traced_actions(r.stderr) == [0, 1, 1, 1]
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), [0, 1, 1, 1])


def test_zero_steps_leave_the_module_alone(ir_dir, tmp_path):
    ir = os.path.join(ir_dir, "bits.ll")
    model = poset.sequence_policy([1], str(tmp_path / "seq.onnx"))
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, 0, f"-mlbridge-po-model={model}"))
    assert r.returncode == 0 and traced_actions(r.stderr) == []
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), [])


def test_feature_driven_policy(ir_dir, tmp_path):
    # sroa (0) while the module has allocas, then ipsccp/globals (10): the
    # features are recomputed after every step.
    wf = np.zeros((poset.NUM_FEATURES, poset.NUM_ACTIONS))
    wf[poset.F_ALLOCAS, 0] = 100.0
    ws = np.zeros((1, poset.NUM_ACTIONS))
    ws[0, 10] = 1.0
    model = poset.export_linear_policy(wf, ws, str(tmp_path / "feat.onnx"))
    ir = os.path.join(ir_dir, "sort.ll")
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, 3, f"-mlbridge-po-model={model}"))
    assert r.returncode == 0, r.stderr
    after_sroa = reference(ir, str(tmp_path / "ref.ll"), [0])
    assert " alloca " in body(ir)
    expected_second = 0 if " alloca " in after_sroa else 10
    actions = traced_actions(r.stderr)
    assert actions[:2] == [0, expected_second]
    assert body(out) == reference(ir, str(tmp_path / "ref2.ll"), actions)


def test_environment_variables_configure_the_pass(ir_dir, tmp_path):
    ir = os.path.join(ir_dir, "bits.ll")
    model = poset.sequence_policy([1, 0], str(tmp_path / "seq.onnx"))
    out = str(tmp_path / "out.ll")
    env = dict(os.environ, MLBRIDGE_PO_MODEL=model, MLBRIDGE_PO_STEPS="2", MLBRIDGE_PO_TRACE="1")
    cmd = [poset.tool("opt"), f"-load-pass-plugin={os.environ['MLBRIDGE_LLVM_PLUGIN']}",
           f"-passes={poset.PASS}", ir, "-S", "-o", out]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert traced_actions(r.stderr) == [1, 0]
    # The command line wins over the environment.
    r = subprocess.run(cmd[:3] + ["-mlbridge-po-steps=1"] + cmd[3:], env=env, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and traced_actions(r.stderr) == [1], r.stderr


AOT = os.environ.get("MLBRIDGE_AOT", "")


@pytest.mark.skipif(not (AOT and os.path.exists(AOT)), reason="mlbridge-aot not built (MLBRIDGE_AOT)")
def test_aot_runner_from_a_shared_library(ir_dir, tmp_path):
    # The same policy compiled ahead of time into a shared library the pass dlopen()s.
    model = poset.sequence_policy(SEQUENCE, str(tmp_path / "seq.onnx"))
    gen = run([AOT, model, "--name", "PoTest", "-o", str(tmp_path)])
    assert gen.returncode == 0, gen.stderr
    lib = str(tmp_path / "libpotest.so")
    cc = run(["c++", "-std=c++17", "-O1", "-shared", "-fPIC", str(tmp_path / "PoTest.cc"), "-o", lib], timeout=120)
    assert cc.returncode == 0, cc.stderr
    ir = os.path.join(ir_dir, "sort.ll")
    out = str(tmp_path / "out.ll")
    r = run(po_cmd(ir, out, len(SEQUENCE), "-mlbridge-po-runner=aot", f"-mlbridge-po-model={lib}",
                   "-mlbridge-po-aot-symbol=PoTest_model"))
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr, r.stderr
    assert traced_actions(r.stderr) == SEQUENCE
    assert body(out) == reference(ir, str(tmp_path / "ref.ll"), SEQUENCE)
    # A wrong symbol is a clear refusal, module unchanged.
    r = run(po_cmd(ir, out, 2, "-mlbridge-po-runner=aot", f"-mlbridge-po-model={lib}",
                   "-mlbridge-po-aot-symbol=Nope_model"))
    assert r.returncode == 0 and "has no symbol 'Nope_model'" in r.stderr, r.stderr
    assert body(out) == body(ir)
