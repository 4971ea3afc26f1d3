"""Convert a TensorFlow model (SavedModel folder, ``.tflite`` file, or LLVM's
development-mode model folder: ``model.tflite`` + ``output_spec.json``) to an
``.onnx`` file that mlbridge's built-in engine and ``mlbridge-aot`` accept.

    from mlbridge.formats.tf_to_onnx import convert
    report = convert("saved_policy/", "policy.onnx")
    print(report.summary())

How (docs/tfaot.md, "Converting"):

* TensorFlow and tf2onnx run in their own environment (TF 2.15 needs
  protobuf<5, mlbridge needs a recent one): the Python of
  ``scripts/get-tensorflow.sh``'s ``.deps/tf-venv``, or ``tf_python=`` /
  ``$MLBRIDGE_TF_PYTHON``. This module never imports TensorFlow; it runs
  itself as a script in that environment (``--tf-worker``), so it imports
  nothing from mlbridge at module level.
* The converted graph gets the source's tensor names back: the signature's
  keys (``x``, ``inlining_decision``) instead of tf2onnx's / TFLite's
  (``serving_default_x:0``, ``StatefulPartitionedCall:0``). Inputs no node
  reads (TF-Agents' ``step_type``, ``reward``, ``discount``) are dropped.
* The result is checked: ``samples`` seeded random inputs through the source
  model (TensorFlow / TFLite) and through the ``.onnx`` (ONNX Runtime);
  integer and bool outputs must be equal, float outputs within
  ``atol + rtol * |expected|`` (defaults 1e-5 and 1e-4). A mismatch raises
  :class:`ConvertError` and writes nothing.
* Operators the built-in engine lacks are reported by name
  (``report.unsupported_ops``); the file is still written (ONNX Runtime runs
  it) but the engine refuses it at load time, never mis-executing it. When
  ``mlbridge-aot`` is found (``$MLBRIDGE_AOT``, ``$MLBRIDGE_BUILD_DIR``, PATH) it
  is run on the result as the authoritative engine check.
* LLVM's model folder: ``model.tflite`` is converted; its signature names the
  inputs and outputs (``output_spec.json`` is the LiteRT runner's business).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

try:  # as part of the package; when run as the TF worker script there is none
    from ..core.errors import ArgumentError as _ArgumentBase
    from ..core.errors import MLBridgeError as _Base
except ImportError:  # pragma: no cover - TF environment
    _Base = _ArgumentBase = Exception  # type: ignore[misc,assignment]

__all__ = ["convert", "ConvertError", "ConvertArgumentError", "ConvertReport", "TensorInfo", "ENGINE_OPS",
           "DEFAULT_OPSET", "TF_ENV_VAR", "find_tf_python"]

# The built-in engine's operators (src/engine/graph.h, MLBRIDGE_ENGINE_OPS;
# tests/python/formats/test_convert.py checks the two lists are equal).
ENGINE_OPS = frozenset("""
Abs Add And ArgMax ArgMin BatchNormalization Cast Ceil Clip Concat Constant ConstantOfShape Cos Div Dropout
Elu Equal Erf Exp Expand Flatten Floor GRU Gather Gelu Gemm Greater GreaterOrEqual HardSigmoid HardSwish
Identity LSTM LayerNormalization LeakyRelu Less LessOrEqual Log LogSoftmax MatMul Max Mean Min Mish Mod Mul
Neg Not Or PRelu Pow Range Reciprocal ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum ReduceSumSquare
Relu Reshape Round Selu Shape Sigmoid Sign Sin Size Slice Softmax Softplus Softsign Split Sqrt Squeeze Sub
Sum Tanh Tile Transpose Unsqueeze Where Xor
""".split())

TF_ENV_VAR = "MLBRIDGE_TF_PYTHON"
DEFAULT_OPSET = 17


class ConvertError(_Base):
    """A conversion failed: bad source, TF environment missing, tf2onnx error,
    or outputs that differ from the source model. One line, for the user."""


class ConvertArgumentError(ConvertError, _ArgumentBase):  # type: ignore[misc,valid-type]
    """An argument of :func:`convert` is unusable (``dst`` a folder)."""


@dataclass
class TensorInfo:
    name: str            # the source's name (signature key)
    dtype: str           # numpy dtype name
    shape: List[int]     # -1: unknown
    source_name: str = ""  # the tensor name tf2onnx used, when different


@dataclass
class ConvertReport:
    source: str
    output: str
    kind: str                       # "saved_model" or "tflite"
    opset: int
    inputs: List[TensorInfo] = field(default_factory=list)
    outputs: List[TensorInfo] = field(default_factory=list)
    renamed: Dict[str, str] = field(default_factory=dict)       # tf2onnx name -> restored name
    dropped_inputs: List[str] = field(default_factory=list)     # inputs no node reads
    op_counts: Dict[str, int] = field(default_factory=dict)
    unsupported_ops: Dict[str, List[str]] = field(default_factory=dict)  # op -> node names
    samples: int = 0
    rtol: float = 1e-4
    atol: float = 1e-5
    max_abs_diff: Dict[str, float] = field(default_factory=dict)
    engine_check: str = "not run"   # "ok", "not run (...)", or mlbridge-aot's message

    @property
    def engine_ok(self) -> bool:
        """No operator the engine lacks, and mlbridge-aot (when run) accepted the file."""
        return not self.unsupported_ops and (self.engine_check == "ok" or self.engine_check.startswith("not run"))

    def summary(self) -> str:
        lines = [f"{self.source} ({self.kind}) -> {self.output} (opset {self.opset})"]
        lines.append("  inputs:  " + ", ".join(f"{t.name} {t.dtype}{t.shape}" for t in self.inputs))
        lines.append("  outputs: " + ", ".join(f"{t.name} {t.dtype}{t.shape}" for t in self.outputs))
        if self.renamed:
            lines.append("  names restored: " + ", ".join(f"{a} -> {b}" for a, b in self.renamed.items()))
        if self.dropped_inputs:
            lines.append("  dropped inputs no node reads: " + ", ".join(self.dropped_inputs))
        lines.append("  operators: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.op_counts.items())))
        diffs = ", ".join(f"{k} {v:.3g}" for k, v in self.max_abs_diff.items())
        lines.append(f"  checked on {self.samples} random inputs against the source model "
                     f"(|diff| <= {self.atol:g} + {self.rtol:g}*|expected|; max |diff|: {diffs})")
        if self.unsupported_ops:
            lines.append("  NOT supported by the built-in engine: " + ", ".join(
                f"{op} ({', '.join(nodes[:3])}{', ...' if len(nodes) > 3 else ''})"
                for op, nodes in sorted(self.unsupported_ops.items())))
        lines.append(f"  built-in engine / mlbridge-aot: {self.engine_check}")
        return "\n".join(lines)


# ---- finding the TensorFlow environment ------------------------------------

def find_tf_python(tf_python: Optional[str] = None) -> str:
    """The TF environment's Python: the argument, $MLBRIDGE_TF_PYTHON, or the
    nearest ``.deps/tf-venv/bin/python`` above this file."""
    cand = tf_python or os.environ.get(TF_ENV_VAR)
    if cand:
        if not os.path.isfile(cand):
            raise ConvertError(f"TensorFlow Python '{cand}' does not exist")
        return cand
    d = os.path.dirname(os.path.abspath(__file__))
    while True:
        p = os.path.join(d, ".deps", "tf-venv", "bin", "python")
        if os.path.isfile(p):
            return p
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    raise ConvertError("no TensorFlow environment: run `bash scripts/get-tensorflow.sh` or set "
                       f"${TF_ENV_VAR} to the Python of an environment with tensorflow==2.15 and tf2onnx")


def _source_kind(src: str) -> Tuple[str, str]:
    """("saved_model" | "tflite", path of the model itself)."""
    if os.path.isdir(src):
        if os.path.isfile(os.path.join(src, "saved_model.pb")):
            return "saved_model", src
        if os.path.isfile(os.path.join(src, "model.tflite")):
            return "tflite", os.path.join(src, "model.tflite")
        raise ConvertError(f"{src}: neither a SavedModel (no saved_model.pb) nor an LLVM model folder (no model.tflite)")
    if os.path.isfile(src):
        if src.endswith(".tflite"):
            return "tflite", src
        raise ConvertError(f"{src}: not a SavedModel folder or a .tflite file")
    raise ConvertError(f"{src}: no such file or folder")


# ---- the mlbridge side -------------------------------------------------------

def _find_aot_tool() -> Optional[str]:
    env = os.environ.get("MLBRIDGE_AOT")
    if env and os.path.isfile(env):
        return env
    build = os.environ.get("MLBRIDGE_BUILD_DIR")
    if build:
        for p in (os.path.join(build, "tools", "aot", "mlbridge-aot"), os.path.join(build, "mlbridge-aot")):
            if os.path.isfile(p):
                return p
    return shutil.which("mlbridge-aot")


def _rename(graph: Any, old: str, new: str) -> None:
    for n in graph.node:
        for i, x in enumerate(n.input):
            if x == old:
                n.input[i] = new
        for i, x in enumerate(n.output):
            if x == old:
                n.output[i] = new
    for coll in (graph.input, graph.output, graph.value_info):
        for v in coll:
            if v.name == old:
                v.name = new
    for t in graph.initializer:
        if t.name == old:
            t.name = new


def _restore_names(model: Any, wanted: Dict[str, str], report: ConvertReport) -> None:
    """Renames tensors tf2onnx named after TF internals to the source's names."""
    g = model.graph
    used = {x for n in g.node for x in list(n.input) + list(n.output)}
    used |= {v.name for v in list(g.input) + list(g.output)} | {t.name for t in g.initializer}
    for old, new in wanted.items():
        if old == new or old not in used:
            continue
        if new in used:  # an internal tensor already has the name: move it aside
            k = 0
            while f"{new}__{k}" in used:
                k += 1
            _rename(g, new, f"{new}__{k}")
            used.add(f"{new}__{k}")
        _rename(g, old, new)
        used.add(new)
        report.renamed[old] = new


def _drop_unread_inputs(model: Any, report: ConvertReport) -> None:
    g = model.graph
    read = {x for n in g.node for x in n.input} | {o.name for o in g.output}
    keep = [v for v in g.input if v.name in read]
    report.dropped_inputs = [v.name for v in g.input if v.name not in read]
    if report.dropped_inputs:
        del g.input[:]
        g.input.extend(keep)


def _engine_ops(model: Any, report: ConvertReport) -> None:
    counts: Dict[str, int] = {}
    missing: Dict[str, List[str]] = {}

    def visit(graph: Any) -> None:
        for i, n in enumerate(graph.node):
            op = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
            counts[op] = counts.get(op, 0) + 1
            if op not in ENGINE_OPS:
                missing.setdefault(op, []).append(n.name or f"#{i}")
            for a in n.attribute:
                if a.g is not None and a.g.node:
                    visit(a.g)

    visit(model.graph)
    report.op_counts = counts
    report.unsupported_ops = missing


def _engine_check(path: str, report: ConvertReport, timeout: float) -> None:
    tool = _find_aot_tool()
    if not tool:
        report.engine_check = "not run (mlbridge-aot not found: set MLBRIDGE_AOT or MLBRIDGE_BUILD_DIR)"
        return
    with tempfile.TemporaryDirectory() as d:
        try:
            r = subprocess.run([tool, path, "--name", "ConvertCheck", "-o", d], capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            report.engine_check = f"mlbridge-aot did not finish within {timeout:g} s"
            return
    report.engine_check = "ok" if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[-1]


def _compare(expected: Dict[str, Any], got: Dict[str, Any], report: ConvertReport) -> None:
    import numpy as np

    for name, want in expected.items():
        have = got[name]
        if have.shape != want.shape:
            raise ConvertError(f"output '{name}': the .onnx gives shape {list(have.shape)}, the source {list(want.shape)}")
        if np.issubdtype(want.dtype, np.floating):
            diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
            bound = report.atol + report.rtol * np.abs(want.astype(np.float64))
            worst = float(diff.max(initial=0.0))
            report.max_abs_diff[name] = max(worst, report.max_abs_diff.get(name, 0.0))
            if not np.all(diff <= bound) or np.isnan(have).any() != np.isnan(want).any():
                raise ConvertError(f"output '{name}' differs from the source model by up to {worst:.3g} "
                                   f"(allowed {report.atol:g} + {report.rtol:g}*|expected|)")
        else:
            mismatches = int(np.count_nonzero(have != want))
            report.max_abs_diff[name] = 0.0 if mismatches == 0 else float("inf")
            if mismatches:
                raise ConvertError(f"output '{name}': {mismatches} of {want.size} values differ from the source model")


def convert(src: str, dst: str, *, tf_python: Optional[str] = None, opset: int = DEFAULT_OPSET,
            signature: str = "serving_default", tag_set: str = "serve", samples: int = 16, seed: int = 0,
            rtol: float = 1e-4, atol: float = 1e-5, engine_check: bool = True,
            timeout: float = 900) -> ConvertReport:
    """Converts `src` (SavedModel folder, .tflite, or LLVM model folder) to
    ONNX at `dst`; returns what was done and checked. Raises ConvertError."""
    kind, model_path = _source_kind(src)
    if samples < 1:
        raise ConvertError("samples must be at least 1")
    if os.path.isdir(dst):   # checked first: the result would land inside it under another name
        raise ConvertArgumentError("dst", f"{dst}: is a folder; {{arg}} names the .onnx file to write")
    py = find_tf_python(tf_python)
    report = ConvertReport(source=src, output=dst, kind=kind, opset=opset, samples=samples, rtol=rtol, atol=atol)
    with tempfile.TemporaryDirectory(prefix="mlbridge-convert-") as work:
        job = {"kind": kind, "src": os.path.abspath(model_path), "folder": os.path.abspath(src),
               "signature": signature, "tag_set": tag_set, "opset": opset, "samples": samples, "seed": seed,
               "work": work}
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        env.pop("PYTHONPATH", None)  # mlbridge's own packages (protobuf 7) must not leak into TF's environment
        env["KERAS_HOME"] = os.path.join(work, "keras")   # importing TF writes ~/.keras otherwise
        try:
            r = subprocess.run([py, os.path.abspath(__file__), "--tf-worker", json.dumps(job)], capture_output=True,
                               text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env)
        except subprocess.TimeoutExpired:
            raise ConvertError(f"TensorFlow side did not finish within {timeout:g} s") from None
        except OSError as e:
            raise ConvertError(f"cannot run {py}: {e}") from None
        result_path = os.path.join(work, "result.json")
        if r.returncode != 0 or not os.path.isfile(result_path):
            lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
            msg = next((ln for ln in reversed(lines) if ln.startswith("convert-worker: ")), None)
            raise ConvertError(msg[len("convert-worker: "):] if msg else
                               "TensorFlow side failed: " + " | ".join(lines[-3:]))
        try:
            _finish(src, dst, work, result_path, report, samples, engine_check, timeout)
        except ConvertError as e:   # say which model
            raise ConvertError(str(e) if src in str(e) else f"{src}: {e}") from None
        except Exception as e:  # noqa: BLE001 - onnx, protobuf and ONNX Runtime raise many kinds
            msg = " ".join(str(e).split())[:300]
            raise ConvertError(f"{src}: the converted model cannot be used ({type(e).__name__}: {msg}); "
                               "nothing written") from None
    return report


def _finish(src: str, dst: str, work: str, result_path: str, report: ConvertReport, samples: int,
            engine_check: bool, timeout: float) -> None:
    """After the TensorFlow side: names restored, the result checked against the
    source's outputs, then written to ``dst`` under a temporary name and renamed."""
    import numpy as np
    import onnx

    with open(result_path) as f:
        result = json.load(f)
    report.inputs = [TensorInfo(**t) for t in result["inputs"]]
    report.outputs = [TensorInfo(**t) for t in result["outputs"]]

    model = onnx.load(os.path.join(work, "model.onnx"))
    wanted = {t.source_name: t.name for t in report.inputs + report.outputs if t.source_name}
    _restore_names(model, wanted, report)
    _drop_unread_inputs(model, report)
    graph_outputs = {o.name for o in model.graph.output}
    missing = [t.name for t in report.outputs if t.name not in graph_outputs]
    if missing:
        raise ConvertError(f"the converted graph has no output {', '.join(missing)} "
                           f"(has: {', '.join(sorted(graph_outputs))})")
    _engine_ops(model, report)
    onnx.checker.check_model(model)
    tmp_out = os.path.join(work, "restored.onnx")
    onnx.save(model, tmp_out)

    # The check: the source's outputs (computed by TF) against ONNX Runtime's.
    import onnxruntime as ort

    data = np.load(os.path.join(work, "samples.npz"))
    sess = ort.InferenceSession(tmp_out, providers=["CPUExecutionProvider"])
    feed_names = [i.name for i in sess.get_inputs()]
    unknown = [n for n in feed_names if f"in0/{n}" not in data]
    if unknown:
        raise ConvertError(f"the converted graph has inputs the source does not: {', '.join(unknown)} "
                           f"(source inputs: {', '.join(t.name for t in report.inputs)})")
    for k in range(samples):
        feeds = {n: data[f"in{k}/{n}"] for n in feed_names}
        got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        expected = {t.name: data[f"out{k}/{t.name}"] for t in report.outputs}
        _compare(expected, got, report)
    if engine_check:
        _engine_check(tmp_out, report, timeout)
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    partial = os.path.join(folder, f".tmp-{os.getpid()}-{os.path.basename(dst)}")
    try:   # complete, then renamed: a failure (a full disk) leaves no partial .onnx
        shutil.copyfile(tmp_out, partial)
        os.replace(partial, dst)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise


# ---- the TensorFlow side (runs in the TF environment) ------------------------

def _worker_fail(msg: str) -> None:
    print(f"convert-worker: {msg}", file=sys.stderr)
    sys.exit(1)


def _random_input(rng: Any, dtype: Any, shape: Sequence[int]) -> Any:
    import numpy as np

    shape = [d if d and d > 0 else 1 for d in shape]
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(dt)
    if np.issubdtype(dt, np.integer):
        return rng.integers(0, 8, size=shape).astype(dt)
    return rng.normal(0, 1, size=shape).astype(dt)


def _tf_worker(job: Dict[str, Any]) -> None:  # pragma: no cover - runs in the TF environment
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(job["seed"])
    work, kind, src = job["work"], job["kind"], job["src"]
    samples: Dict[str, Any] = {}
    if kind == "saved_model":
        try:
            loaded = tf.saved_model.load(src, tags=[job["tag_set"]])
        except Exception as e:  # noqa: BLE001 - TF raises many kinds
            _worker_fail(f"{src}: cannot load the SavedModel: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
        if job["signature"] not in loaded.signatures:
            _worker_fail(f"{src}: no signature '{job['signature']}' (has: {', '.join(loaded.signatures) or 'none'})")
        fn = loaded.signatures[job["signature"]]
        args, kwargs = fn.structured_input_signature
        specs = dict(kwargs)
        inputs = [{"name": k, "dtype": s.dtype.as_numpy_dtype.__name__, "shape": [-1 if d is None else d for d in s.shape],
                   "source_name": ""} for k, s in sorted(specs.items())]
        outs = fn.structured_outputs
        outputs = [{"name": k, "dtype": t.dtype.as_numpy_dtype.__name__,
                    "shape": [-1 if d is None else d for d in t.shape], "source_name": ""} for k, t in sorted(outs.items())]
        for k in range(job["samples"]):
            feed = {i["name"]: _random_input(rng, i["dtype"], i["shape"]) for i in inputs}
            got = fn(**{n: tf.constant(v) for n, v in feed.items()})
            for n, v in feed.items():
                samples[f"in{k}/{n}"] = v
            for n, v in got.items():
                samples[f"out{k}/{n}"] = v.numpy()
        cmd = ["--saved-model", src, "--signature_def", job["signature"], "--tag", job["tag_set"]]
    else:
        try:
            interp = tf.lite.Interpreter(model_path=src)
        except Exception as e:  # noqa: BLE001
            _worker_fail(f"{src}: cannot load the .tflite model: {e}")
        details = {d["index"]: d for d in interp.get_tensor_details()}
        sigs = interp.get_signature_list()
        if sigs:
            key = job["signature"] if job["signature"] in sigs else (next(iter(sigs)) if len(sigs) == 1 else None)
            if key is None:
                _worker_fail(f"{src}: no signature '{job['signature']}' (has: {', '.join(sigs)})")
            runner = interp.get_signature_runner(key)
            in_det, out_det = runner.get_input_details(), runner.get_output_details()
            inputs = [{"name": k, "dtype": d["dtype"].__name__, "shape": [int(x) for x in d["shape"]],
                       "source_name": details[d["index"]]["name"]} for k, d in sorted(in_det.items())]
            outputs = [{"name": k, "dtype": d["dtype"].__name__, "shape": [int(x) for x in d["shape"]],
                        "source_name": details[d["index"]]["name"]} for k, d in sorted(out_det.items())]
            for k in range(job["samples"]):
                feed = {i["name"]: _random_input(rng, i["dtype"], i["shape"]) for i in inputs}
                got = runner(**feed)
                for n, v in feed.items():
                    samples[f"in{k}/{n}"] = v
                for n, v in got.items():
                    samples[f"out{k}/{n}"] = np.asarray(v)
        else:
            _worker_fail(f"{src}: the .tflite model has no signature (convert it from a SavedModel with one)")
        interp = None
        cmd = ["--tflite", src]
    np.savez(os.path.join(work, "samples.npz"), **samples)
    r = subprocess.run([sys.executable, "-m", "tf2onnx.convert", *cmd, "--opset", str(job["opset"]),
                        "--output", os.path.join(work, "model.onnx")], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=900)
    if r.returncode != 0 or not os.path.isfile(os.path.join(work, "model.onnx")):
        err = [ln for ln in r.stderr.splitlines() if "ERROR" in ln or "Error" in ln] or r.stderr.splitlines()[-3:]
        _worker_fail("tf2onnx failed: " + " | ".join(err[-3:]))
    with open(os.path.join(work, "result.json"), "w") as f:
        json.dump({"inputs": inputs, "outputs": outputs}, f)


if __name__ == "__main__":   # run by convert() in the TensorFlow environment; the command is cli/convert.py
    if len(sys.argv) == 3 and sys.argv[1] == "--tf-worker":
        _tf_worker(json.loads(sys.argv[2]))
    else:
        sys.exit("usage: mlbridge convert MODEL -o MODEL.onnx (this file runs as the TensorFlow side only)")
