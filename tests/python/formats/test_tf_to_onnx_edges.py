"""mlbridge.formats.tf_to_onnx without TensorFlow: mutation testing's gaps (docs/testing.md).

test_convert.py's end-to-end cases need the TF environment (ctest tf.convert),
so everything after the TensorFlow side (names restored, unread inputs
dropped, the check against the source's outputs, the engine's operators,
mlbridge-aot, the file written) had no test where TF is missing. Here a fake
"TF Python" plays the TensorFlow side: it copies what the real worker would
leave in the work folder (model.onnx, samples.npz, result.json), all made
by the test with onnx.helper and numpy, and records the job it was given."""
from __future__ import annotations

import json
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from mlbridge.formats import tf_to_onnx as cv

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

FAKE_WORKER = """#!{python}
import json, os, shutil, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "plan.json")) as f:
    plan = json.load(f)
job = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
with open(os.path.join(here, "seen.json"), "w") as f:
    json.dump({{"argv": sys.argv[1:3], "job": job,
               "env": {{k: os.environ.get(k) for k in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL", "KERAS_HOME")}}}}, f)
sys.stderr.write(plan.get("stderr", ""))
for name in ("model.onnx", "samples.npz"):
    if name in plan:
        shutil.copy(plan[name], os.path.join(job["work"], name))
if "result" in plan:
    with open(os.path.join(job["work"], "result.json"), "w") as f:
        json.dump(plan["result"], f)
sys.exit(plan.get("rc", 0))
"""


class FakeTF:
    """The fake TF Python of one test: `plan(...)` says what the worker leaves behind."""

    def __init__(self, folder):
        self.folder = folder
        folder.mkdir()
        self.python = str(folder / "python")
        with open(self.python, "w") as f:
            f.write(FAKE_WORKER.format(python=sys.executable))
        os.chmod(self.python, 0o755)

    def plan(self, model=None, samples=None, inputs=(), outputs=(), rc=0, stderr="", result=True):
        plan = {"rc": rc, "stderr": stderr}
        if model is not None:
            plan["model.onnx"] = str(self.folder / "model.onnx")
            onnx.save(model, plan["model.onnx"])
        if samples is not None:
            plan["samples.npz"] = str(self.folder / "samples.npz")
            np.savez(plan["samples.npz"], **samples)
        if result:
            plan["result"] = {"inputs": [dict(t) for t in inputs], "outputs": [dict(t) for t in outputs]}
        (self.folder / "plan.json").write_text(json.dumps(plan))

    def seen(self):
        return json.loads((self.folder / "seen.json").read_text())


@pytest.fixture
def fake(tmp_path, monkeypatch):
    # No mlbridge-aot unless a test sets one: the engine check is then "not run".
    for var in ("MLBRIDGE_AOT", "MLBRIDGE_BUILD_DIR", cv.TF_ENV_VAR):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    return FakeTF(tmp_path / "tf")


def info(name, dtype, shape, source_name=""):
    return {"name": name, "dtype": dtype, "shape": shape, "source_name": source_name}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# A TFLite-like graph: tf2onnx's names for the signature's tensors, an input no
# node reads (TF-Agents' step_type), and internal tensors that already carry the
# names the outputs get back ("probs", and "probs__0" an initializer).
X, PROBS, ACTION = "serving_default_x:0", "StatefulPartitionedCall:0", "StatefulPartitionedCall:1"


def policy_model(extra_nodes=(), opset=17):
    nodes = [
        helper.make_node("Add", [X, "probs__0"], ["probs"], name="shift"),
        helper.make_node("Softmax", ["probs"], [PROBS], axis=-1, name="softmax"),
        helper.make_node("ArgMax", [PROBS], [ACTION], axis=-1, keepdims=0, name="argmax"),
        *extra_nodes,
    ]
    g = helper.make_graph(
        nodes, "policy",
        [helper.make_tensor_value_info(X, TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("step_type", TensorProto.INT32, [1])],
        [helper.make_tensor_value_info(PROBS, TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info(ACTION, TensorProto.INT64, [1])],
        initializer=[helper.make_tensor("probs__0", TensorProto.FLOAT, [3], [0.0, 1.0, -1.0])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


POLICY_IN = [info("x", "float32", [1, 3], X), info("step_type", "int32", [1], "step_type")]
POLICY_OUT = [info("action", "int64", [1], ACTION), info("probs", "float32", [1, 3], PROBS)]


def policy_samples(n, probs_error=0.0, action_error=0):
    rng = np.random.default_rng(1)
    s = {}
    for k in range(n):
        x = rng.normal(size=(1, 3)).astype(np.float32)
        p = softmax(x + np.array([0.0, 1.0, -1.0], np.float32))
        s[f"in{k}/x"] = x
        s[f"in{k}/step_type"] = np.zeros(1, np.int32)
        s[f"out{k}/probs"] = (p + probs_error).astype(np.float32)
        s[f"out{k}/action"] = p.argmax(axis=-1).astype(np.int64) + action_error
    return s


def test_a_tflite_policy_gets_its_names_back_and_loses_unread_inputs(fake, tmp_path):
    fake.plan(policy_model(), policy_samples(4), POLICY_IN, POLICY_OUT)
    src = tmp_path / "policy.tflite"
    src.write_bytes(b"tflite")
    out = tmp_path / "sub" / "policy.onnx"   # the folder is made
    rep = cv.convert(str(src), str(out), tf_python=fake.python, samples=4, seed=7, opset=13,
                     signature="action", tag_set="train")
    # What the TensorFlow side was asked: abs paths, the options, TF's environment without mlbridge's.
    seen = fake.seen()
    assert seen["argv"] == [os.path.abspath(cv.__file__), "--tf-worker"]
    job = seen["job"]
    assert (job["kind"], job["src"], job["folder"]) == ("tflite", str(src), str(src))
    assert (job["signature"], job["tag_set"], job["opset"], job["samples"], job["seed"]) == ("action", "train", 13, 4, 7)
    assert not os.path.exists(job["work"])   # the work folder is removed
    assert seen["env"]["PYTHONPATH"] is None and seen["env"]["TF_CPP_MIN_LOG_LEVEL"] == "3"
    assert seen["env"]["KERAS_HOME"] == os.path.join(job["work"], "keras")

    g = onnx.load(str(out)).graph
    assert [i.name for i in g.input] == ["x"]
    assert [o.name for o in g.output] == ["probs", "action"]
    assert rep.renamed == {X: "x", PROBS: "probs", ACTION: "action"}
    assert rep.dropped_inputs == ["step_type"]
    # The internal tensors named "probs" and "probs__0" were moved aside, not merged.
    names = {x for n in g.node for x in list(n.input) + list(n.output)}
    assert {"probs__0", "probs__1"} <= names
    assert [(n.name, list(n.input), list(n.output)) for n in g.node] == [
        ("shift", ["x", "probs__0"], ["probs__1"]), ("softmax", ["probs__1"], ["probs"]),
        ("argmax", ["probs"], ["action"])]
    assert [t.name for t in g.initializer] == ["probs__0"]
    assert os.listdir(out.parent) == ["policy.onnx"]   # no temporary file left
    assert (rep.source, rep.output, rep.kind, rep.opset, rep.samples) == (str(src), str(out), "tflite", 13, 4)
    assert [t.name for t in rep.inputs] == ["x", "step_type"] and rep.outputs[0] == cv.TensorInfo(**POLICY_OUT[0])
    assert rep.op_counts == {"Add": 1, "Softmax": 1, "ArgMax": 1} and rep.unsupported_ops == {}
    assert rep.max_abs_diff["action"] == 0 and rep.max_abs_diff["probs"] < 1e-6
    assert rep.engine_check.startswith("not run (mlbridge-aot not found") and rep.engine_ok
    text = rep.summary()
    assert text.splitlines()[0] == f"{src} (tflite) -> {out} (opset 13)"
    assert "  inputs:  x float32[1, 3], step_type int32[1]" in text
    assert "  outputs: action int64[1], probs float32[1, 3]" in text
    assert f"  names restored: {X} -> x, {ACTION} -> action, {PROBS} -> probs" in text
    assert "  dropped inputs no node reads: step_type" in text
    assert "  operators: Add x1, ArgMax x1, Softmax x1" in text
    assert "checked on 4 random inputs against the source model (|diff| <= 1e-05 + 0.0001*|expected|;" in text
    assert "NOT supported" not in text
    assert text.endswith("  built-in engine / mlbridge-aot: " + rep.engine_check)


def plain_src(tmp_path):
    src = tmp_path / "m.tflite"
    src.write_bytes(b"tflite")
    return str(src)


def test_a_worker_failure_is_its_own_last_line(fake, tmp_path):
    src, out = plain_src(tmp_path), tmp_path / "o.onnx"
    fake.plan(rc=1, stderr="Traceback...\nconvert-worker: first\nnoise\nconvert-worker: m.tflite: no signature 'x'\n"
              "more noise\n", result=False)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python)
    assert str(e.value) == "m.tflite: no signature 'x'"
    # without the worker's line: the last three non-blank lines of its stderr
    fake.plan(rc=1, stderr="one\n\ntwo\n  \nthree\nfour\n", result=False)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python)
    assert str(e.value) == "TensorFlow side failed: two | three | four"
    # exit status 0 but no result.json: a failure too
    fake.plan(rc=0, stderr="convert-worker: said so\n", result=False)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python)
    assert str(e.value) == "said so"
    assert not out.exists()


def test_a_tf_python_that_cannot_run_or_hangs(fake, tmp_path):
    src, out = plain_src(tmp_path), str(tmp_path / "o.onnx")
    (tmp_path / "notexec").write_text("x")
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, out, tf_python=str(tmp_path / "notexec"))
    assert str(e.value).startswith(f"cannot run {tmp_path / 'notexec'}: ") and "Permission denied" in str(e.value)
    hang = tmp_path / "hang"
    hang.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")   # killed at the timeout
    hang.chmod(0o755)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, out, tf_python=str(hang), timeout=0.5)
    assert str(e.value) == "TensorFlow side did not finish within 0.5 s"


def test_samples_must_be_at_least_one(fake, tmp_path):
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(plain_src(tmp_path), str(tmp_path / "o.onnx"), tf_python=fake.python, samples=0)
    assert str(e.value) == "samples must be at least 1"
    fake.plan(policy_model(), policy_samples(1), POLICY_IN, POLICY_OUT)
    rep = cv.convert(plain_src(tmp_path), str(tmp_path / "o.onnx"), tf_python=fake.python, samples=1)
    assert rep.samples == 1 and fake.seen()["job"]["samples"] == 1
    job = fake.seen()["job"]   # the defaults
    assert (job["signature"], job["tag_set"], job["opset"], job["seed"]) == ("serving_default", "serve", 17, 0)
    assert (rep.opset, rep.rtol, rep.atol) == (17, 1e-4, 1e-5)


def test_the_source_kinds(tmp_path):
    llvm = tmp_path / "llvm"
    llvm.mkdir()
    (llvm / "model.tflite").write_bytes(b"x")
    (llvm / "output_spec.json").write_text("[]")
    assert cv._source_kind(str(llvm)) == ("tflite", str(llvm / "model.tflite"))
    (llvm / "saved_model.pb").write_bytes(b"x")   # a SavedModel wins
    assert cv._source_kind(str(llvm)) == ("saved_model", str(llvm))
    (tmp_path / "m.tflite").write_bytes(b"x")
    assert cv._source_kind(str(tmp_path / "m.tflite")) == ("tflite", str(tmp_path / "m.tflite"))
    with pytest.raises(cv.ConvertError) as e:
        cv._source_kind(str(tmp_path / "nothing"))
    assert str(e.value) == f"{tmp_path / 'nothing'}: no such file or folder"
    (tmp_path / "m.pb").write_bytes(b"x")
    with pytest.raises(cv.ConvertError) as e:
        cv._source_kind(str(tmp_path / "m.pb"))
    assert str(e.value) == f"{tmp_path / 'm.pb'}: not a SavedModel folder or a .tflite file"
    (tmp_path / "empty").mkdir()
    with pytest.raises(cv.ConvertError) as e:
        cv._source_kind(str(tmp_path / "empty"))
    assert str(e.value) == (f"{tmp_path / 'empty'}: neither a SavedModel (no saved_model.pb) "
                            "nor an LLVM model folder (no model.tflite)")


def test_finding_the_tf_python(tmp_path, monkeypatch):
    py = tmp_path / "py"
    py.write_text("")
    monkeypatch.setenv(cv.TF_ENV_VAR, str(py))
    assert cv.find_tf_python() == str(py)
    assert cv.find_tf_python(str(py)) == str(py)
    monkeypatch.setenv(cv.TF_ENV_VAR, str(tmp_path / "gone"))
    with pytest.raises(cv.ConvertError) as e:
        cv.find_tf_python()
    assert str(e.value) == f"TensorFlow Python '{tmp_path / 'gone'}' does not exist"
    assert cv.find_tf_python(str(py)) == str(py)   # the argument before the variable
    monkeypatch.delenv(cv.TF_ENV_VAR)
    # the nearest .deps/tf-venv above the module, else a one-line error naming the variable
    here = os.path.dirname(os.path.abspath(cv.__file__))
    found = None
    d = here
    while True:
        p = os.path.join(d, ".deps", "tf-venv", "bin", "python")
        if os.path.isfile(p):
            found = p
            break
        if os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    if found:
        assert cv.find_tf_python() == found
    else:
        with pytest.raises(cv.ConvertError) as e:
            cv.find_tf_python()
        assert str(e.value) == ("no TensorFlow environment: run `bash scripts/get-tensorflow.sh` or set "
                                f"${cv.TF_ENV_VAR} to the Python of an environment with tensorflow==2.15 and tf2onnx")


def test_finding_the_tf_venv_above_the_module(tmp_path, monkeypatch):
    """A copy of the module deep in a tree with .deps/tf-venv two levels up."""
    venv = tmp_path / ".deps" / "tf-venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.setattr(cv, "__file__", str(deep / "tf_to_onnx.py"))
    monkeypatch.delenv(cv.TF_ENV_VAR, raising=False)
    assert cv.find_tf_python() == str(venv / "python")


def fake_aot(tmp_path, name, script):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"#!{sys.executable}\n" + script)
    p.chmod(0o755)
    return str(p)


AOT_RECORDS = """import sys, json, os
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "aot-argv.json"), "w") as f:
    json.dump(sys.argv[1:], f)
"""


def test_the_engine_check_runs_mlbridge_aot(fake, tmp_path, monkeypatch):
    fake.plan(policy_model(), policy_samples(2), POLICY_IN, POLICY_OUT)
    src, out = plain_src(tmp_path), str(tmp_path / "o.onnx")
    tool = fake_aot(tmp_path, "aot/ok", AOT_RECORDS)
    monkeypatch.setenv("MLBRIDGE_AOT", tool)
    rep = cv.convert(src, out, tf_python=fake.python, samples=2, rtol=1e-3, atol=1e-4)
    assert rep.engine_check == "ok" and rep.engine_ok and (rep.rtol, rep.atol) == (1e-3, 1e-4)
    argv = json.loads((tmp_path / "aot" / "aot-argv.json").read_text())
    assert argv[1:4] == ["--name", "ConvertCheck", "-o"] and len(argv) == 5
    assert argv[0].endswith("restored.onnx")   # the checked file, before it is written to dst
    # A refusal: its last line of stderr, and the file is still written (ONNX Runtime runs it).
    os.unlink(out)
    monkeypatch.setenv("MLBRIDGE_AOT", fake_aot(tmp_path, "aot/no", "import sys\nsys.stderr.write("
                                                "'reading...\\nerror: the engine lacks CumSum\\n\\n')\nsys.exit(1)\n"))
    rep = cv.convert(src, out, tf_python=fake.python, samples=2)
    assert rep.engine_check == "error: the engine lacks CumSum" and not rep.engine_ok and os.path.exists(out)
    assert rep.summary().endswith("  built-in engine / mlbridge-aot: error: the engine lacks CumSum")
    monkeypatch.setenv("MLBRIDGE_AOT", fake_aot(tmp_path, "aot/mute", "import sys\nsys.exit(3)\n"))
    assert cv.convert(src, out, tf_python=fake.python, samples=2).engine_check == "failed"
    monkeypatch.setenv("MLBRIDGE_AOT", fake_aot(tmp_path, "aot/slow", "import time\ntime.sleep(60)\n"))
    rep = cv.ConvertReport(source="s", output="o", kind="tflite", opset=17)
    cv._engine_check(out, rep, 0.5)
    assert rep.engine_check == "mlbridge-aot did not finish within 0.5 s" and not rep.engine_ok
    # engine_check=False: not run at all
    rep = cv.convert(src, out, tf_python=fake.python, samples=2, engine_check=False)
    assert rep.engine_check == "not run" and rep.engine_ok


def test_where_mlbridge_aot_is_found(tmp_path, monkeypatch):
    for var in ("MLBRIDGE_AOT", "MLBRIDGE_BUILD_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert cv._find_aot_tool() is None
    on_path = fake_aot(tmp_path, "bin/mlbridge-aot", "")
    assert cv._find_aot_tool() == on_path
    build = tmp_path / "build"
    monkeypatch.setenv("MLBRIDGE_BUILD_DIR", str(build))
    assert cv._find_aot_tool() == on_path   # nothing in the build folder
    flat = fake_aot(tmp_path, "build/mlbridge-aot", "")
    assert cv._find_aot_tool() == flat
    nested = fake_aot(tmp_path, "build/tools/aot/mlbridge-aot", "")
    assert cv._find_aot_tool() == nested
    monkeypatch.setenv("MLBRIDGE_AOT", str(tmp_path / "missing"))
    assert cv._find_aot_tool() == nested   # a variable naming no file is passed over
    mine = fake_aot(tmp_path, "mine", "")
    monkeypatch.setenv("MLBRIDGE_AOT", mine)
    assert cv._find_aot_tool() == mine


def test_a_converted_model_that_does_not_match_is_not_written(fake, tmp_path):
    src, out = plain_src(tmp_path), tmp_path / "o.onnx"
    out.write_bytes(b"an earlier conversion")
    # the source's probabilities differ from ONNX Runtime's in sample 2 of 3
    s = policy_samples(3)
    s["out2/probs"] = s["out2/probs"] + np.float32(0.01)
    fake.plan(policy_model(), s, POLICY_IN, POLICY_OUT)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python, samples=3)
    assert str(e.value).startswith(f"{src}: output 'probs' differs from the source model by up to 0.01")
    # an integer output off by one everywhere
    fake.plan(policy_model(), policy_samples(3, action_error=1), POLICY_IN, POLICY_OUT)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python, samples=3)
    assert str(e.value) == f"{src}: output 'action': 1 of 1 values differ from the source model"
    # an output the graph does not have
    fake.plan(policy_model(), policy_samples(3), POLICY_IN,
              POLICY_OUT + [info("value", "float32", [1], "v:0"), info("aux", "float32", [1])])
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python, samples=3)
    assert str(e.value) == (f"{src}: the converted graph has no output value, aux (has: action, probs)")
    # an input the source does not have (its samples lack it)
    fake.plan(policy_model(), policy_samples(3), [info("x", "float32", [1, 3], X)], POLICY_OUT)
    s = policy_samples(3)
    del s["in0/step_type"]
    fake.plan(policy_model(extra_nodes=[helper.make_node("Identity", ["step_type"], ["unused"])]), s,
              [info("x", "float32", [1, 3], X)], POLICY_OUT)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python, samples=3)
    assert str(e.value) == (f"{src}: the converted graph has inputs the source does not: step_type "
                            "(source inputs: x)")
    # a model ONNX cannot use: one line, nothing written
    fake.plan(policy_model(extra_nodes=[helper.make_node("NoSuchOp", [X], ["z"])]), policy_samples(3),
              POLICY_IN, POLICY_OUT)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(src, str(out), tf_python=fake.python, samples=3)
    msg = str(e.value)
    assert msg.startswith(f"{src}: the converted model cannot be used (") and msg.endswith("); nothing written")
    assert "\n" not in msg
    assert out.read_bytes() == b"an earlier conversion"
    assert sorted(os.listdir(tmp_path)) == ["m.tflite", "o.onnx", "tf"]


def test_every_sample_is_checked(fake, tmp_path):
    """The worst difference over all samples is reported, and a bad last sample fails."""
    src = plain_src(tmp_path)
    s = policy_samples(5)
    s["out3/probs"] = s["out3/probs"] + np.float32(2e-5)
    fake.plan(policy_model(), s, POLICY_IN, POLICY_OUT)
    rep = cv.convert(src, str(tmp_path / "o.onnx"), tf_python=fake.python, samples=5)
    assert 1.5e-5 < rep.max_abs_diff["probs"] < 2.5e-5
    s["out4/action"] = s["out4/action"] + 1
    fake.plan(policy_model(), s, POLICY_IN, POLICY_OUT)
    with pytest.raises(cv.ConvertError, match="output 'action': 1 of 1 values differ"):
        cv.convert(src, str(tmp_path / "o.onnx"), tf_python=fake.python, samples=5)


def test_a_failed_write_leaves_no_partial_file(fake, tmp_path, monkeypatch):
    fake.plan(policy_model(), policy_samples(1), POLICY_IN, POLICY_OUT)
    out = tmp_path / "out" / "o.onnx"

    def full_disk(a, b):
        with open(b, "wb") as f:
            f.write(b"half")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cv.shutil, "copyfile", full_disk)
    with pytest.raises(cv.ConvertError) as e:
        cv.convert(plain_src(tmp_path), str(out), tf_python=fake.python, samples=1)
    assert "(OSError: [Errno 28] No space left on device)" in str(e.value)
    assert os.listdir(out.parent) == []


def test_the_operators_are_counted_in_subgraphs_too():
    then = helper.make_graph([helper.make_node("CumSum", ["a", "ax"], ["t"]),
                              helper.make_node("Relu", ["t"], ["t2"])], "then", [],
                             [helper.make_tensor_value_info("t2", TensorProto.FLOAT, [2])])
    other = helper.make_graph([helper.make_node("Relu", ["a"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="branch"),
             helper.make_node("Relu", ["y"], ["z"], name="r1"),
             helper.make_node("Relu", ["z"], ["w"]),
             helper.make_node("FusedMatMul", ["w", "w"], ["v"], domain="com.microsoft")]
    nodes += [helper.make_node("Hardmax", ["v"], [f"h{i}"], name=f"hm{i}") for i in range(4)]
    g = helper.make_graph(nodes, "g", [], [])
    rep = cv.ConvertReport(source="s", output="o", kind="saved_model", opset=17)
    cv._engine_ops(helper.make_model(g), rep)
    assert rep.op_counts == {"If": 1, "Relu": 4, "CumSum": 1, "com.microsoft.FusedMatMul": 1, "Hardmax": 4}
    assert rep.unsupported_ops == {"If": ["branch"], "CumSum": ["#0"], "com.microsoft.FusedMatMul": ["#3"],
                                   "Hardmax": ["hm0", "hm1", "hm2", "hm3"]}
    assert not rep.engine_ok
    text = rep.summary()
    assert "  operators: CumSum x1, Hardmax x4, If x1, Relu x4, com.microsoft.FusedMatMul x1" in text
    assert ("  NOT supported by the built-in engine: CumSum (#0), Hardmax (hm0, hm1, hm2, ...), If (branch), "
            "com.microsoft.FusedMatMul (#3)") in text
    assert "names restored" not in text and "dropped inputs" not in text


def test_a_restored_name_moves_every_holder_aside():
    """Internal tensors already named "y", "y__0" and "y__1": the one named "y" becomes "y__2"."""
    nodes = [helper.make_node("Relu", ["in:0"], ["y"]), helper.make_node("Add", ["y", "y__0"], ["y__1"]),
             helper.make_node("Add", ["y__1", "y__1"], ["out:0"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("in:0", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("out:0", TensorProto.FLOAT, [2])],
                          initializer=[helper.make_tensor("y__0", TensorProto.FLOAT, [2], [1, 2])])
    model = helper.make_model(g)
    rep = cv.ConvertReport(source="s", output="o", kind="saved_model", opset=17)
    cv._restore_names(model, {"in:0": "x", "out:0": "y", "gone:0": "z", "same": "same"}, rep)
    assert [(list(n.input), list(n.output)) for n in model.graph.node] == [
        (["x"], ["y__2"]), (["y__2", "y__0"], ["y__1"]), (["y__1", "y__1"], ["y"])]
    assert rep.renamed == {"in:0": "x", "out:0": "y"}


def test_random_inputs_of_each_kind():
    rng = np.random.default_rng(0)
    b = cv._random_input(rng, "bool", [2, -1, 0, None])
    assert b.dtype == np.bool_ and b.shape == (2, 1, 1, 1)
    i = cv._random_input(rng, "int32", [1000])
    assert i.dtype == np.int32 and i.min() == 0 and i.max() == 7
    f = cv._random_input(rng, "float32", [1000])
    assert f.dtype == np.float32 and f.min() < -1 and f.max() > 1 and abs(float(f.mean())) < 0.2
    assert cv._random_input(rng, "float64", []).shape == ()
