"""The plugin's ML inliner with a TensorFlow SavedModel compiled by XLA
(-mlbridge-inline-runner=tfaot -mlbridge-inline-model=LIB.so), against the
same SavedModel converted to ONNX (mlbridge convert) in the built-in engine
and against the hand-built callee_bb_le_3.onnx (the same decision rule):
identical IR from opt-19 and from clang-19. Models: tests/tfaot (ctest tf.llvm)."""
from __future__ import annotations

import filecmp
import os

import pytest

import plugin_driver
from conftest import CORPUS, PLUGIN, calls, model, opt_cmd, run

TF_LIB = os.environ.get("MLBRIDGE_TFAOT_INLINER_LIB", "")
TF_MODELS = os.environ.get("MLBRIDGE_TF_MODELS_DIR", "")

if not (TF_LIB and os.path.exists(TF_LIB)):
    pytest.skip("MLBRIDGE_TFAOT_INLINER_LIB not set (run through ctest: tf.llvm)", allow_module_level=True)


def opt_with(ir: str, out: str, *options: str) -> str:
    r = run(opt_cmd(ir, out, *options, "-mlbridge-inline-stats", plugin=PLUGIN))
    assert r.returncode == 0, r.stderr
    assert "mlbridge: warning" not in r.stderr, r.stderr
    assert " model decisions" in r.stderr, r.stderr
    return out


def test_tfaot_library_matches_converted_onnx_and_reference(ir_dir, tmp_path):
    for name in ("interp.ll", "geom.ll"):
        ir = os.path.join(ir_dir, name)
        tf = opt_with(ir, str(tmp_path / f"tfaot-{name}"), "-mlbridge-inline-runner=tfaot",
                      f"-mlbridge-inline-model={TF_LIB}")
        conv = opt_with(ir, str(tmp_path / f"conv-{name}"), "-mlbridge-inline-runner=onnx",
                        f"-mlbridge-inline-model={os.path.join(TF_MODELS, 'inliner.onnx')}")
        ref = opt_with(ir, str(tmp_path / f"ref-{name}"), "-mlbridge-inline-runner=onnx",
                       f"-mlbridge-inline-model={model('callee_bb_le_3.onnx')}")
        assert filecmp.cmp(tf, conv, shallow=False)
        assert filecmp.cmp(tf, ref, shallow=False)
    never = opt_with(os.path.join(ir_dir, "interp.ll"), str(tmp_path / "never.ll"), "-mlbridge-inline-runner=onnx",
                     f"-mlbridge-inline-model={model('never.onnx')}")
    assert calls(never) > calls(str(tmp_path / "tfaot-interp.ll"))   # the policy really inlined


def test_clang_with_the_tfaot_library(tmp_path):
    src = os.path.join(CORPUS, "interp.c")
    tf_dir, ref_dir = tmp_path / "tf", tmp_path / "ref"
    tf_dir.mkdir()
    ref_dir.mkdir()
    by_tf = plugin_driver.compile_sizes([src], str(tf_dir), "-O2",
                                        plugin_driver.plugin_args(PLUGIN, "tfaot", model=TF_LIB))
    by_ref = plugin_driver.compile_sizes([src], str(ref_dir), "-O2",
                                         plugin_driver.plugin_args(PLUGIN, "onnx", model=model("callee_bb_le_3.onnx")))
    assert by_tf == by_ref
    assert filecmp.cmp(str(tf_dir / "interp.c.o"), str(ref_dir / "interp.c.o"), shallow=False)


def test_tfaot_errors_fall_back_to_the_stock_inliner_naming_the_fix(interp_ir, tmp_path):
    def warning(*options: str) -> str:
        r = run(opt_cmd(interp_ir, str(tmp_path / "x.ll"), *options, plugin=PLUGIN))
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("mlbridge: warning") == 1 and "using the stock inliner" in r.stderr, r.stderr
        return r.stderr

    assert "-mlbridge-inline-model=LIB.so" in warning("-mlbridge-inline-runner=tfaot")
    assert "no symbol 'Nope_tfaot_model'" in warning("-mlbridge-inline-runner=tfaot", f"-mlbridge-inline-model={TF_LIB}",
                                                     "-mlbridge-inline-aot-symbol=Nope_tfaot_model")
    assert "tfaot runner: cannot load" in warning("-mlbridge-inline-runner=tfaot",
                                                  f"-mlbridge-inline-model={model('never.onnx')}")
    # A TF AOT library handed to the aot runner: it has no mlbridge-aot descriptor.
    assert "no symbol 'MLBridgeInlinerPolicy_model'" in warning("-mlbridge-inline-runner=aot",
                                                                f"-mlbridge-inline-model={TF_LIB}")
