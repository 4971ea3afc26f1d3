"""Failures never stop GCC: a warning, loops left as GCC would have them."""
import subprocess

import onnx
from onnx import TensorProto, helper

from gcc_support import GCC, KERNELS, gcc, plugin_args, read_log, serve, unroll_policy


def compile_s(tmp_path, name, *args):
    out = tmp_path / f"{name}.s"
    r = gcc(KERNELS, out, "-S", *args)
    assert r.returncode == 0, r.stderr
    return r, out.read_text()


def assert_unchanged(tmp_path, asm):
    _, plain = compile_s(tmp_path, "plain")
    assert asm == plain


def test_missing_model_file(tmp_path):
    log = tmp_path / "log.jsonl"
    r, asm = compile_s(tmp_path, "ml", *plugin_args(model=tmp_path / "missing.onnx", log=log))
    assert "warning: mlbridge: no decisions, loops left unchanged: loading the ONNX model" in r.stderr
    assert r.stderr.count("warning: mlbridge") == 1, r.stderr
    assert_unchanged(tmp_path, asm)
    records = read_log(log)
    assert records and all(not x["applied"] and x["error"].startswith("no model") for x in records)


def test_not_an_onnx_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage\xff\xff\xff")
    r, asm = compile_s(tmp_path, "ml", *plugin_args(model=bad))
    assert "warning: mlbridge: no decisions" in r.stderr and "DATA_LOSS" in r.stderr, r.stderr
    assert_unchanged(tmp_path, asm)


def test_model_with_the_wrong_output_dtype(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Cast", ["trip_count"], ["unroll"], to=TensorProto.FLOAT)], "float_policy",
        [helper.make_tensor_value_info("trip_count", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("unroll", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "float.onnx"
    onnx.save(model, str(path))
    r, asm = compile_s(tmp_path, "ml", *plugin_args(model=path))
    assert "warning: mlbridge: no decisions" in r.stderr and "unroll" in r.stderr, r.stderr
    assert_unchanged(tmp_path, asm)


def test_no_model_given(tmp_path):
    r, asm = compile_s(tmp_path, "ml", *plugin_args())
    assert "no model: give -fplugin-arg-mlbridge-model" in r.stderr, r.stderr
    assert_unchanged(tmp_path, asm)


def test_bad_arguments_turn_the_plugin_off(tmp_path, onnx_policy):
    for args, message in [({"colour": "blue"}, "unknown argument 'colour'"),
                          ({"runner": "tflite"}, "runner must be onnx or pipe"),
                          ({"timeout": "-3"}, "timeout must be a positive"),
                          ({"format": "xml"}, "format must be bitstream")]:
        r, asm = compile_s(tmp_path, "ml", *plugin_args(model=onnx_policy, **args))
        assert message in r.stderr and "the plugin is off" in r.stderr, r.stderr
        assert_unchanged(tmp_path, asm)


def test_unwritable_log_still_applies_decisions(tmp_path, onnx_policy):
    r, asm = compile_s(tmp_path, "ml", *plugin_args(model=onnx_policy, log=tmp_path / "no" / "dir" / "log"))
    assert "cannot open the decision log" in r.stderr, r.stderr
    _, plain = compile_s(tmp_path, "plain")
    assert asm != plain


def test_no_model_process_on_the_channel(tmp_path):
    r, asm = compile_s(tmp_path, "ml", *plugin_args(pipe=tmp_path / "nobody", timeout=300))
    assert "warning: mlbridge: no decisions" in r.stderr and "pipe runner" in r.stderr, r.stderr
    assert_unchanged(tmp_path, asm)


def test_model_process_dies_mid_compilation(tmp_path):
    log = tmp_path / "log.jsonl"
    with serve.ModelProcess("dies_second") as model:
        r = gcc(KERNELS, tmp_path / "k.o", "-c", *plugin_args(pipe=model.base, log=log))
        rc = model.close()
    assert rc == 3, "the model process should have died in its policy"
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("warning: mlbridge") == 1, r.stderr
    assert "left unchanged: evaluate: UNAVAILABLE" in r.stderr, r.stderr
    records = read_log(log)
    assert len(records) == 6
    first, second, *rest = records
    assert first["applied"] and first["unroll"] == unroll_policy.policy(first["trip_count"])
    assert not second["applied"] and "UNAVAILABLE" in second["error"]
    assert all(not x["applied"] and "ended after an earlier error" in x["error"] for x in rest)


def test_answer_out_of_range_is_refused_not_clamped(tmp_path):
    log = tmp_path / "log.jsonl"
    with serve.ModelProcess("out_of_range") as model:
        r = gcc(KERNELS, tmp_path / "k.s", "-S", *plugin_args(pipe=model.base, log=log))
    assert r.returncode == 0, r.stderr
    records = read_log(log)
    # The session survives a bad answer: every loop is asked, none is changed.
    assert len(records) == 6 and r.stderr.count("outside [0, 64]") == 6, r.stderr
    assert all(not x["applied"] and x["unroll"] == -1 for x in records)
    assert_unchanged(tmp_path, (tmp_path / "k.s").read_text())


def test_gcc_without_optimization_asks_nothing(tmp_path, onnx_policy):
    log = tmp_path / "log.jsonl"
    r = subprocess.run([GCC, "-O0", "-c", *plugin_args(model=onnx_policy, log=log), str(KERNELS),
                        "-o", str(tmp_path / "k.o")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "mlbridge" not in r.stderr, r.stderr
    assert read_log(log) == []


def test_refused_request_skips_one_loop_only(tmp_path):
    log = tmp_path / "log.jsonl"
    with serve.ModelProcess("refuses_first", fmt="json") as model:
        r = gcc(KERNELS, tmp_path / "k.o", "-c", *plugin_args(pipe=model.base, format="json", log=log))
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("warning: mlbridge") == 1 and "ABORTED" in r.stderr, r.stderr
    first, *rest = read_log(log)
    assert not first["applied"] and "refuses the first loop" in first["error"]
    assert len(rest) == 5
    assert all(x["applied"] and x["unroll"] == unroll_policy.policy(x["trip_count"]) for x in rest)
