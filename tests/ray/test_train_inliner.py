"""The inliner training example with a tiny budget, and its ONNX export:
the exported policy must decide exactly like the numpy policy, in ONNX
Runtime and in mlbridge's built-in engine (NativeModelRunner via the C API)."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np

from ray_support import CORPUS, missing

from mlbridge import train as training
from mlbridge.train.gym import llvm_inliner_env


def test_training_smoke_reports_sizes_and_never_gets_worse(tmp_path, need_llvm):
    import train
    report = train.main(["--budget", "1", "--generations", "2", "--pairs", "2", "--out", str(tmp_path),
                         *CORPUS[:3]])
    assert report["generations"] >= 1
    assert report["baseline_text"] > 0 and report["start_text"] > 0
    # The best candidate is kept, and the start point is one of the candidates.
    assert report["trained_text"] <= report["start_text"]
    assert set(report["per_file"]) == {os.path.splitext(os.path.basename(c))[0] for c in CORPUS[:3]}
    saved = json.loads((tmp_path / "policy.json").read_text())
    assert len(saved["params"]) == len(saved["names"]) + 1
    assert (tmp_path / "policy.onnx").stat().st_size > 0


def _observations(n_files: int = 3):
    """Real inliner observations (as dicts of int64 [1]) from opt-19."""
    env = llvm_inliner_env(CORPUS[:n_files])
    names = [s.name for s in env.features]
    rows = []
    try:
        for i in range(n_files):
            obs, _ = env.reset(options={"file": i})
            while True:
                rows.append({k: v.copy() for k, v in obs.items()})
                obs, _, term, trunc, _ = env.step(int(len(rows) % 3 == 0))
                if term or trunc:
                    break
    finally:
        env.close()
    return names, rows


def _policy(names):
    # Inline small callees (slog(blocks) < 1.5), plus noise on every weight:
    # the real observations then get both decisions.
    rng = np.random.default_rng(7)
    params = rng.standard_normal(len(names) + 1) * 0.05
    params[names.index("callee_basic_block_count")] = -1.0
    params[-1] = 1.5
    return training.LinearPolicy(names, params)


def test_onnx_export_contract_and_onnxruntime_agreement(tmp_path, need_llvm):
    import onnx   # required (python/requirements-dev.txt): missing fails, never skips
    import onnxruntime as ort
    names, rows = _observations()
    pol = _policy(names)
    path = pol.export_onnx(str(tmp_path / "p.onnx"))
    m = onnx.load(path)
    assert [i.name for i in m.graph.input] == names          # LLVM's header order
    for i in m.graph.input:
        t = i.type.tensor_type
        assert t.elem_type == onnx.TensorProto.INT64 and [d.dim_value for d in t.shape.dim] == [1]
    (out,) = m.graph.output
    assert out.name == "inlining_decision" and out.type.tensor_type.elem_type == onnx.TensorProto.INT64
    assert [d.dim_value for d in out.type.tensor_type.shape.dim] == [1]
    allowed = {"Concat", "Cast", "Abs", "Sign", "Add", "Log", "Mul", "Reshape", "Gemm", "Greater"}
    assert {n.op_type for n in m.graph.node} <= allowed
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = [pol(r) for r in rows]
    got = [int(sess.run(None, r)[0][0]) for r in rows]
    assert got == want
    assert 0 < sum(want) < len(want), "the test policy should give both decisions"


def _checker() -> str:
    path = os.environ.get("MLBRIDGE_ONNX_POLICY_CHECK")
    if not path and os.environ.get("MLBRIDGE_BUILD_DIR"):
        path = os.path.join(os.environ["MLBRIDGE_BUILD_DIR"], "tests", "mlbridge-onnx-policy-check")
    if not path or not os.access(path, os.X_OK):
        missing("mlbridge-onnx-policy-check (tests/ray/onnx_policy_check.c, built by CMake)")
    return path


def test_exported_policy_runs_in_the_builtin_engine(tmp_path, need_llvm):
    import onnx  # noqa: F401  required: missing fails, never skips
    checker = _checker()
    names, rows = _observations()
    pol = _policy(names)
    path = pol.export_onnx(str(tmp_path / "p.onnx"))
    table = tmp_path / "rows.txt"
    table.write_text(" ".join(names) + "\n" + "".join(" ".join(str(int(r[n][0])) for n in names) + "\n"
                                                      for r in rows))
    out = subprocess.run([checker, path, str(table)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = [int(v) for v in out.stdout.split()]
    assert got == [pol(r) for r in rows]
    assert 0 < sum(got) < len(got)
