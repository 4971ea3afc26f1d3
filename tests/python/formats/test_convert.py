"""mlbridge.formats.tf_to_onnx (the command: mlbridge convert): TensorFlow SavedModel / .tflite -> ONNX for the engine.

The TensorFlow cases need the TF environment and the models of tests/tfaot;
they run as ctest `tf.convert` (MLBRIDGE_TF_MODELS_DIR set). The rest runs
everywhere."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from mlbridge.cli import main as cli_main
from mlbridge.formats import tf_to_onnx as cv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODELS = os.environ.get("MLBRIDGE_TF_MODELS_DIR", "")
needs_tf = pytest.mark.skipif(not (MODELS and os.path.isdir(MODELS)),
                              reason="TF models not built (run through ctest: tf.convert)")


def test_engine_op_list_is_the_engines():
    with open(os.path.join(ROOT, "src", "engine", "graph.h")) as f:
        text = f.read()
    block = text[text.index("#define MLBRIDGE_ENGINE_OPS"):]
    block = block[:block.index("\n\n")]
    assert set(re.findall(r'X\(\w+, "(\w+)"\)', block)) == cv.ENGINE_OPS


def test_source_errors_are_one_line(tmp_path):
    with pytest.raises(cv.ConvertError, match="no such file"):
        cv.convert(str(tmp_path / "missing"), str(tmp_path / "o.onnx"), tf_python=sys.executable)
    (tmp_path / "model.pb").write_bytes(b"x")
    with pytest.raises(cv.ConvertError, match="not a SavedModel folder or a .tflite"):
        cv.convert(str(tmp_path / "model.pb"), str(tmp_path / "o.onnx"), tf_python=sys.executable)
    with pytest.raises(cv.ConvertError, match="neither a SavedModel"):
        cv.convert(str(tmp_path), str(tmp_path / "o.onnx"), tf_python=sys.executable)
    with pytest.raises(cv.ConvertError, match="does not exist"):
        cv.find_tf_python(str(tmp_path / "nope" / "python"))


def test_an_output_folder_is_an_argument_error_the_command_words_with_its_flag(tmp_path, capsys):
    """The library names its argument (dst), never a flag; the command says -o, in one line."""
    (tmp_path / "m.tflite").write_bytes(b"x")
    with pytest.raises(cv.ConvertArgumentError) as info:
        cv.convert(str(tmp_path / "m.tflite"), str(tmp_path), tf_python=sys.executable)
    assert info.value.argument == "dst" and str(info.value).endswith("; dst names the .onnx file to write")
    assert cli_main(["convert", str(tmp_path / "m.tflite"), "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == f"mlbridge convert: error: {tmp_path}: is a folder; -o names the .onnx file to write\n"


def test_a_broken_tf_environment_is_a_one_line_error(tmp_path):
    # A "TF Python" that cannot import TensorFlow: the worker's failure comes back as one line.
    saved = tmp_path / "sm"
    saved.mkdir()
    (saved / "saved_model.pb").write_bytes(b"")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named tensorflow' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(cv.ConvertError, match="TensorFlow side failed: .*tensorflow"):
        cv.convert(str(saved), str(tmp_path / "o.onnx"), tf_python=str(fake))
    assert not (tmp_path / "o.onnx").exists()


def test_compare_tolerance_and_exact_integers():
    rep = cv.ConvertReport(source="s", output="o", kind="saved_model", opset=17)
    want = {"p": np.array([[0.5, 1e-3]], np.float32), "a": np.array([2], np.int64)}
    cv._compare(want, {"p": want["p"] + np.float32(5e-6), "a": want["a"].copy()}, rep)
    assert 0 < rep.max_abs_diff["p"] < 1e-5 and rep.max_abs_diff["a"] == 0
    with pytest.raises(cv.ConvertError, match="output 'p' differs .* by up to"):
        cv._compare(want, {"p": want["p"] + np.float32(1e-3), "a": want["a"]}, rep)
    with pytest.raises(cv.ConvertError, match="output 'a': 1 of 1 values differ"):
        cv._compare(want, {"p": want["p"], "a": want["a"] + 1}, rep)
    with pytest.raises(cv.ConvertError, match="shape"):
        cv._compare(want, {"p": want["p"].reshape(2), "a": want["a"]}, rep)


def run_onnx(path, feeds):
    import onnxruntime as ort

    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


@needs_tf
def test_saved_model_keeps_its_names_and_passes_the_engine(tmp_path):
    out = str(tmp_path / "mlp.onnx")
    rep = cv.convert(os.path.join(MODELS, "mlp"), out, samples=8)
    import onnx

    g = onnx.load(out).graph
    assert [i.name for i in g.input] == ["x"]
    assert sorted(o.name for o in g.output) == ["action", "probs"]
    assert rep.samples == 8 and rep.max_abs_diff["action"] == 0 and rep.max_abs_diff["probs"] < 1e-5
    assert rep.unsupported_ops == {} and rep.engine_ok
    if os.environ.get("MLBRIDGE_BUILD_DIR"):
        assert rep.engine_check == "ok", rep.engine_check   # mlbridge-aot accepted it


@needs_tf
def test_tflite_names_are_restored(tmp_path):
    out = str(tmp_path / "mlp_tflite.onnx")
    rep = cv.convert(os.path.join(MODELS, "mlp.tflite"), out, samples=4)
    assert rep.kind == "tflite"
    assert rep.renamed.get("serving_default_x:0") == "x"
    assert set(rep.renamed.values()) == {"x", "action", "probs"}
    # TensorFlow's own outputs (tests/tfaot/make_models.py) on its cases.
    import json

    with open(os.path.join(MODELS, "mlp", "cases.json")) as f:
        cases = json.load(f)
    for c in cases[:16]:
        got = run_onnx(out, {"x": np.array(c["inputs"]["x"], np.float32)})
        assert got["action"].tolist() == c["outputs"]["action"]
        np.testing.assert_allclose(got["probs"], np.array(c["outputs"]["probs"], np.float32), rtol=1e-4, atol=1e-5)


@needs_tf
def test_llvm_model_folder_drops_training_only_inputs(tmp_path):
    out = str(tmp_path / "inliner.onnx")
    rep = cv.convert(os.path.join(MODELS, "inliner_llvm"), out, samples=8)
    import onnx

    g = onnx.load(out).graph
    assert set(rep.dropped_inputs) == {"step_type", "reward", "discount", "inlining_default"}
    assert len(g.input) == 38 and "callee_basic_block_count" in {i.name for i in g.input}
    assert [o.name for o in g.output] == ["inlining_decision"]
    feeds = {i.name: np.array([5], np.int64) for i in g.input}
    assert run_onnx(out, feeds)["inlining_decision"].tolist() == [0]   # 5 blocks > 3
    feeds["callee_basic_block_count"] = np.array([2], np.int64)
    assert run_onnx(out, feeds)["inlining_decision"].tolist() == [1]


@needs_tf
def test_ops_the_engine_lacks_are_named_and_the_cli_says_so(tmp_path):
    # A SavedModel with a cumulative sum (ONNX CumSum: not in the engine).
    saved = str(tmp_path / "cumsum")
    script = ("import sys, tensorflow as tf\n"
              "class M(tf.Module):\n"
              "  @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name='x')])\n"
              "  def f(self, x):\n"
              "    return {'y': tf.math.cumsum(x, axis=1)}\n"
              "m = M()\n"
              "tf.saved_model.save(m, sys.argv[1], signatures={'serving_default': m.f})\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("PYTHONPATH", None)
    r = subprocess.run([cv.find_tf_python(), "-c", script, saved], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    out = str(tmp_path / "cumsum.onnx")
    proc = subprocess.run([sys.executable, "-m", "mlbridge", "convert", saved, "-o", out, "--samples", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert "lacks CumSum" in proc.stderr and "Traceback" not in proc.stderr
    assert "NOT supported by the built-in engine: CumSum" in proc.stdout
    assert os.path.exists(out)   # ONNX Runtime can still run it
    if os.environ.get("MLBRIDGE_BUILD_DIR"):
        assert "CumSum" in proc.stdout.split("mlbridge-aot:")[-1]   # the engine's own refusal, named


@needs_tf
def test_cli_user_error_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mlbridge", "convert", os.path.join(MODELS, "mlp"), "-o",
                           str(tmp_path / "o.onnx"), "--signature", "nope"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "no signature 'nope'" in proc.stderr, proc.stderr
