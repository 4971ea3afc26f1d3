#!/usr/bin/env python3
"""Generates the engine's correctness corpus: small ONNX models built with
the `onnx` helpers, random inputs, and reference outputs from ONNX Runtime
(or, where ONNX Runtime cannot run a model, from an equivalent model it can
run, or from onnx.reference). Also writes the fault models.

    python3 tests/engine/make_models.py [--out tests/engine/models]

Needs: numpy, onnx, onnxruntime (pip). Deterministic: fixed seeds, so running
it again rewrites identical files (modulo library versions). The C++ test
tests/cpp/engine_corpus_test.cc reads models/manifest.json:

  {"models": [{"name", "file", "opset", "reference", "rtol", "atol",
               "cases": [{"inputs":  [{"name", "dtype", "shape", "offset", "bytes"}],
                          "outputs": [...same...]}]}]}

Tensors are raw little-endian bytes in <name>.bin at the given offsets;
dtype names are mlbridge's ("float", "int64_t", "bool", ...).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

RNG = np.random.default_rng(20240611)

DTYPE_NAMES = {
    np.dtype(np.float32): "float", np.dtype(np.float64): "double", np.dtype(np.int64): "int64_t",
    np.dtype(np.int32): "int32_t", np.dtype(np.int8): "int8_t", np.dtype(np.uint8): "uint8_t",
    np.dtype(np.bool_): "bool",
}
NP_OF_ONNX = {TP.FLOAT: np.float32, TP.DOUBLE: np.float64, TP.INT64: np.int64, TP.INT32: np.int32,
              TP.BOOL: np.bool_, TP.UINT8: np.uint8, TP.INT8: np.int8}


def w(*shape, scale=None):
    """Random float32 weights, Glorot-ish scale."""
    fan_in = shape[-1] if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return (RNG.standard_normal(shape) * s).astype(np.float32)


def init(name, array):
    return nh.from_array(np.asarray(array), name)


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def make(nodes, inputs, outputs, inits, opset, name):
    graph = h.make_graph(nodes, name, inputs, outputs, inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="mlbridge make_models.py")
    model.ir_version = h.find_min_ir_version_for([h.make_opsetid("", opset)])
    # Outputs declared without a shape get the inferred one (as exporters write).
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for out, inf in zip(model.graph.output, inferred.graph.output):
        if not out.type.tensor_type.HasField("shape"):
            out.CopyFrom(inf)
    if all(o.type.tensor_type.HasField("shape") for o in model.graph.output):
        onnx.checker.check_model(model)  # else Corpus.add checks once outputs are known
    return model


def run_ort(model, feeds):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def run_reference(model, feeds):
    from onnx.reference import ReferenceEvaluator
    ev = ReferenceEvaluator(model)
    names = [o.name for o in model.graph.output]
    return dict(zip(names, ev.run(None, feeds)))


class Corpus:
    def __init__(self, out):
        self.out = out
        self.entries = []

    def add(self, name, model, cases, reference="onnxruntime", run=None, rtol=1e-5, atol=1e-6):
        """cases: list of feed dicts (name -> numpy array)."""
        path = os.path.join(self.out, name + ".onnx")
        blob = bytearray()

        def put(arr_name, arr):
            arr = np.array(arr, copy=True, order="C")  # keeps 0-d (ascontiguousarray would not)
            if arr.dtype not in DTYPE_NAMES:
                raise SystemExit(f"{name}: unsupported dtype {arr.dtype} for {arr_name}")
            off = len(blob)
            data = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
            blob.extend(data)
            while len(blob) % 8:
                blob.append(0)
            return {"name": arr_name, "dtype": DTYPE_NAMES[arr.dtype], "shape": list(arr.shape),
                    "offset": off, "bytes": len(data)}

        entry_cases = []
        for feeds in cases:
            if run is not None:
                results = run(feeds)
            elif reference == "onnxruntime":
                results = run_ort(model, feeds)
            else:
                results = run_reference(model, feeds)
            entry_cases.append({
                "inputs": [put(k, v) for k, v in feeds.items()],
                "outputs": [put(o.name, np.asarray(results[o.name])) for o in model.graph.output],
            })
        # Outputs shape inference could not type get the computed shapes.
        first = entry_cases[0]["outputs"]
        for out, o in zip(model.graph.output, first):
            if not out.type.tensor_type.HasField("shape"):
                out.type.tensor_type.shape.SetInParent()
                for d in o["shape"]:
                    out.type.tensor_type.shape.dim.add().dim_value = d
        onnx.checker.check_model(model)
        onnx.save(model, path)
        with open(os.path.join(self.out, name + ".bin"), "wb") as f:
            f.write(bytes(blob))
        self.entries.append({"name": name, "file": name + ".onnx", "data": name + ".bin",
                             "opset": model.opset_import[0].version, "reference": reference,
                             "rtol": rtol, "atol": atol, "cases": entry_cases})

    def write_manifest(self):
        with open(os.path.join(self.out, "manifest.json"), "w") as f:
            json.dump({"generator": "tests/engine/make_models.py", "onnx": onnx.__version__,
                       "models": self.entries}, f, indent=1)
            f.write("\n")


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---- models -----------------------------------------------------------------------

def mlp_gemm(c, name="mlp_300_64_64_15", opset=17, reference="onnxruntime"):
    """torch.nn.Linear-style MLP (Gemm, transB=1): 300->64 tanh ->64 relu ->15 softmax.
    The benchmark model."""
    nodes = [
        h.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        h.make_node("Tanh", ["h1"], ["a1"], name="tanh1"),
        h.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2", transB=1),
        h.make_node("Relu", ["h2"], ["a2"], name="relu2"),
        h.make_node("Gemm", ["a2", "w3", "b3"], ["h3"], name="fc3", transB=1),
        h.make_node("Softmax", ["h3"], ["probs"], name="softmax", axis=-1),
    ]
    inits = [init("w1", w(64, 300)), init("b1", w(64, scale=0.1)), init("w2", w(64, 64)),
             init("b2", w(64, scale=0.1)), init("w3", w(15, 64)), init("b3", w(15, scale=0.1))]
    model = make(nodes, [vi("x", TP.FLOAT, [1, 300])], [vi("probs", TP.FLOAT, [1, 15])], inits, opset, name)
    c.add(name, model, [{"x": randn(1, 300)} for _ in range(3)], reference=reference)


def mlp_matmul(c):
    """MatMul + Add + activations with a symbolic batch dimension (opset 13)."""
    nodes = [
        h.make_node("MatMul", ["x", "w1"], ["m1"]), h.make_node("Add", ["m1", "b1"], ["h1"]),
        h.make_node("Sigmoid", ["h1"], ["a1"]),
        h.make_node("MatMul", ["a1", "w2"], ["m2"]), h.make_node("Add", ["b2", "m2"], ["h2"]),
        h.make_node("LeakyRelu", ["h2"], ["a2"], alpha=0.1),
        h.make_node("MatMul", ["a2", "w3"], ["m3"]), h.make_node("Add", ["m3", "b3"], ["h3"]),
        h.make_node("LogSoftmax", ["h3"], ["logp"], axis=1),
    ]
    inits = [init("w1", w(20, 32)), init("b1", w(32, scale=0.1)), init("w2", w(32, 16)),
             init("b2", w(16, scale=0.1)), init("w3", w(16, 8)), init("b3", w(1, 8, scale=0.1))]
    model = make(nodes, [vi("x", TP.FLOAT, ["batch", 20])], [vi("logp", TP.FLOAT, ["batch", 8])], inits, 13,
                 "mlp_matmul")
    c.add("mlp_matmul_batch", model, [{"x": randn(1, 20)}, {"x": randn(3, 20)}, {"x": randn(1, 20) * 10}])


def mlp_deep(c, opset=21, name="mlp_deep_opset21"):
    """Six layers, assorted activations, Gemm alpha/beta, Clip with min/max inputs."""
    dims = [24, 48, 40, 32, 24, 16, 10]
    acts = ["HardSigmoid", "Clip", "Elu", "Selu", "Relu", None]
    nodes, inits = [], []
    cur = "x"
    for i, act in enumerate(acts):
        inits += [init(f"w{i}", w(dims[i + 1], dims[i])), init(f"b{i}", w(dims[i + 1], scale=0.2))]
        kw = {"transB": 1}
        if i == 2:
            kw.update(alpha=0.5, beta=2.0)
        nodes.append(h.make_node("Gemm", [cur, f"w{i}", f"b{i}"], [f"g{i}"], name=f"gemm{i}", **kw))
        cur = f"g{i}"
        if act == "Clip":
            inits += [init("lo", np.array(-0.5, np.float32)), init("hi", np.array(0.5, np.float32))]
            nodes.append(h.make_node("Clip", [cur, "lo", "hi"], [f"a{i}"]))
        elif act == "HardSigmoid":
            nodes.append(h.make_node("HardSigmoid", [cur], [f"a{i}"], alpha=0.3, beta=0.4))
        elif act:
            nodes.append(h.make_node(act, [cur], [f"a{i}"]))
        else:
            continue
        cur = f"a{i}"
    nodes.append(h.make_node("Identity", [cur], ["y"]))
    model = make(nodes, [vi("x", TP.FLOAT, [1, 24])], [vi("y", TP.FLOAT, [1, 10])], inits, opset, name)
    c.add(name, model, [{"x": randn(1, 24)}, {"x": randn(1, 24) * 3}])


def lstm_policy(c):
    """A torch-style LSTM policy (batch_first via Transpose), state in and out."""
    H, I, S = 32, 16, 8
    nodes = [
        h.make_node("Transpose", ["obs"], ["obs_t"], perm=[1, 0, 2]),
        h.make_node("LSTM", ["obs_t", "W", "R", "B", "", "h0", "c0"], ["Y", "h1", "c1"], name="lstm", hidden_size=H),
        h.make_node("Squeeze", ["h1", "axis0"], ["feat"]),
        h.make_node("Gemm", ["feat", "wp", "bp"], ["logits"], transB=1),
        h.make_node("Softmax", ["logits"], ["action_probs"], axis=-1),
        h.make_node("ArgMax", ["action_probs"], ["action"], axis=1, keepdims=0),
        h.make_node("Identity", ["h1"], ["h_out"]),
        h.make_node("Identity", ["c1"], ["c_out"]),
    ]
    inits = [init("W", w(1, 4 * H, I)), init("R", w(1, 4 * H, H)), init("B", w(1, 8 * H, scale=0.1)),
             init("axis0", np.array([0], np.int64)), init("wp", w(5, H)), init("bp", w(5, scale=0.1))]
    model = make(nodes, [vi("obs", TP.FLOAT, [1, S, I]), vi("h0", TP.FLOAT, [1, 1, H]), vi("c0", TP.FLOAT, [1, 1, H])],
                 [vi("action_probs", TP.FLOAT, [1, 5]), vi("action", TP.INT64, [1]), vi("h_out", TP.FLOAT, [1, 1, H]),
                  vi("c_out", TP.FLOAT, [1, 1, H])], inits, 18, "lstm_policy")
    c.add("lstm_policy", model, [{"obs": randn(1, S, I), "h0": randn(1, 1, H) * 0.5, "c0": randn(1, 1, H) * 0.5}
                                 for _ in range(2)])


def lstm_variants(c):
    """Bidirectional LSTM with peepholes and clip, batch 2, in layout 0 (ONNX
    Runtime) and layout 1 (reference: the layout-0 model, transposed)."""
    H, I, S, Bt = 6, 5, 4, 2
    Wt, Rt, Bb, P = w(2, 4 * H, I), w(2, 4 * H, H), w(2, 8 * H, scale=0.2), w(2, 3 * H, scale=0.3)
    inits = [init("W", Wt), init("R", Rt), init("B", Bb), init("P", P)]
    for layout in (0, 1):
        xs = [S, Bt, I] if layout == 0 else [Bt, S, I]
        node = h.make_node("LSTM", ["x", "W", "R", "B", "", "", "", "P"], ["y", "yh", "yc"], hidden_size=H,
                           direction="bidirectional", clip=3.0, layout=layout)
        ys = [S, 2, Bt, H] if layout == 0 else [Bt, S, 2, H]
        hs = [2, Bt, H] if layout == 0 else [Bt, 2, H]
        model = make([node], [vi("x", TP.FLOAT, xs)],
                     [vi("y", TP.FLOAT, ys), vi("yh", TP.FLOAT, hs), vi("yc", TP.FLOAT, hs)], inits, 22,
                     f"lstm_bidi_layout{layout}")
        if layout == 0:
            base = model
            c.add("lstm_bidi_peephole_clip", model, [{"x": randn(S, Bt, I) * 2}])
        else:
            def run(feeds, base=base):
                r = run_ort(base, {"x": np.transpose(feeds["x"], (1, 0, 2))})
                return {"y": np.transpose(r["y"], (2, 0, 1, 3)), "yh": np.transpose(r["yh"], (1, 0, 2)),
                        "yc": np.transpose(r["yc"], (1, 0, 2))}
            c.add("lstm_layout1", model, [{"x": randn(Bt, S, I) * 2}], reference="onnxruntime (layout-0 model)",
                  run=run)


def grus(c):
    """GRU as torch exports it (linear_before_reset=1) and the ONNX default,
    reverse, batch 3."""
    H, I, S = 12, 10, 6
    node = h.make_node("GRU", ["x", "W", "R", "B", "", "h0"], ["y", "yh"], name="gru", hidden_size=H,
                       linear_before_reset=1)
    inits = [init("W", w(1, 3 * H, I)), init("R", w(1, 3 * H, H)), init("B", w(1, 6 * H, scale=0.2))]
    model = make([node], [vi("x", TP.FLOAT, [S, 1, I]), vi("h0", TP.FLOAT, [1, 1, H])],
                 [vi("y", TP.FLOAT, [S, 1, 1, H]), vi("yh", TP.FLOAT, [1, 1, H])], inits, 14, "gru_torch")
    c.add("gru_torch", model, [{"x": randn(S, 1, I), "h0": randn(1, 1, H) * 0.3}])
    node = h.make_node("GRU", ["x", "W", "R", "B"], ["", "yh"], name="gru_rev", hidden_size=H, direction="reverse")
    model = make([node], [vi("x", TP.FLOAT, [S, 3, I])], [vi("yh", TP.FLOAT, [1, 3, H])],
                 [init("W", w(1, 3 * H, I)), init("R", w(1, 3 * H, H)), init("B", w(1, 6 * H, scale=0.2))], 13,
                 "gru_reverse")
    c.add("gru_reverse_batch3", model, [{"x": randn(S, 3, I)}])
    node = h.make_node("GRU", ["x", "W", "R"], ["y"], name="gru_bidi", hidden_size=H, direction="bidirectional",
                       clip=2.0)
    model = make([node], [vi("x", TP.FLOAT, [S, 2, I])], [vi("y", TP.FLOAT, [S, 2, 2, H])],
                 [init("W", w(2, 3 * H, I)), init("R", w(2, 3 * H, H))], 22, "gru_bidi")
    c.add("gru_bidi_clip", model, [{"x": randn(S, 2, I) * 2}])


def actor_critic(c):
    """Shared trunk, policy head (softmax + argmax) and value head."""
    nodes = [
        h.make_node("Gemm", ["x", "wt", "bt"], ["t"], transB=1), h.make_node("Relu", ["t"], ["ta"]),
        h.make_node("Gemm", ["ta", "wt2", "bt2"], ["t2"], transB=1), h.make_node("Tanh", ["t2"], ["feat"]),
        h.make_node("Gemm", ["feat", "wp", "bp"], ["logits"], transB=1),
        h.make_node("Softmax", ["logits"], ["policy"], axis=1),
        h.make_node("ArgMax", ["logits"], ["action"], axis=1, keepdims=1),
        h.make_node("Gemm", ["feat", "wv", "bv"], ["value"], transB=1),
    ]
    inits = [init("wt", w(64, 40)), init("bt", w(64, scale=0.1)), init("wt2", w(64, 64)), init("bt2", w(64, scale=0.1)),
             init("wp", w(6, 64)), init("bp", w(6, scale=0.1)), init("wv", w(1, 64)), init("bv", w(1, scale=0.1))]
    model = make(nodes, [vi("x", TP.FLOAT, [1, 40])],
                 [vi("policy", TP.FLOAT, [1, 6]), vi("action", TP.INT64, [1, 1]), vi("value", TP.FLOAT, [1, 1])],
                 inits, 17, "actor_critic")
    c.add("actor_critic", model, [{"x": randn(1, 40)} for _ in range(3)])


def ops_shape(c):
    """Shape arithmetic as torch exports it, and data-movement ops (opset 13)."""
    i64 = lambda *v: np.array(v, np.int64)
    nodes = [
        # torch's x.view(x.size(0), -1)
        h.make_node("Shape", ["x"], ["s"]), h.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
        h.make_node("Unsqueeze", ["d0", "ax0"], ["d0u"]), h.make_node("Concat", ["d0u", "minus1"], ["newshape"], axis=0),
        h.make_node("Reshape", ["x", "newshape"], ["flat"]),
        h.make_node("Flatten", ["x"], ["flat2"], axis=2),
        h.make_node("Transpose", ["x"], ["xt"], perm=[2, 0, 1]),
        h.make_node("Slice", ["x", "st", "en", "axs", "stp"], ["sl"]),
        h.make_node("Slice", ["x", "rst", "ren", "rax", "rstp"], ["rev"]),
        h.make_node("Unsqueeze", ["x", "ax13"], ["unsq"]), h.make_node("Squeeze", ["unsq", "ax13"], ["sq"]),
        h.make_node("Mul", ["x", "two"], ["xt2"]), h.make_node("Concat", ["x", "xt2"], ["cat"], axis=1),
        h.make_node("Split", ["x", "splits"], ["p0", "p1"], axis=2),
        h.make_node("Expand", ["row", "eshape"], ["ex"]),
        h.make_node("Tile", ["x", "reps"], ["tiled"]),
        h.make_node("Gather", ["x", "idx2d"], ["g2"], axis=2),
        h.make_node("Cast", ["x"], ["xi"], to=TP.INT64), h.make_node("Cast", ["xi"], ["xif"], to=TP.FLOAT),
        h.make_node("Add", ["sq", "xif"], ["sum_sq"]),
    ]
    inits = [init("zero", np.array(0, np.int64)), init("ax0", i64(0)), init("minus1", i64(-1)), init("st", i64(0, 1)),
             init("en", i64(2, 100)), init("axs", i64(0, -1)), init("stp", i64(1, 2)),
             init("rst", i64(-1)), init("ren", np.array([-2**63], np.int64)), init("rax", i64(1)),
             init("rstp", i64(-1)), init("ax13", i64(1, 3)), init("two", np.array(2.0, np.float32)),
             init("splits", i64(1, 3)), init("row", w(1, 4)), init("eshape", i64(3, 1)), init("reps", i64(1, 2, 1)),
             init("idx2d", np.array([[0, 3], [-1, 1]], np.int64))]
    outs = [vi(n, TP.FLOAT, None) for n in ["flat", "flat2", "xt", "sl", "rev", "cat", "p0", "p1", "ex", "tiled",
                                             "g2", "sum_sq"]]
    model = make(nodes, [vi("x", TP.FLOAT, [2, 3, 4])], outs, inits, 13, "ops_shape")
    c.add("ops_shape", model, [{"x": randn(2, 3, 4) * 3}])


def ops_math(c):
    """Elementwise math with broadcasting (opset 17)."""
    unary = ["Exp", "Neg", "Abs", "Erf", "Floor", "Ceil", "Round", "Sign", "Softplus", "Softsign", "Elu", "Selu",
             "HardSwish", "Sin", "Cos", "Tanh", "Sigmoid", "Relu", "Reciprocal"]
    nodes, outs = [], []
    for op in unary:
        nodes.append(h.make_node(op, ["x"], [op.lower()]))
        outs.append(op.lower())
    nodes += [
        h.make_node("Abs", ["x"], ["ax"]), h.make_node("Add", ["ax", "one"], ["ax1"]),
        h.make_node("Log", ["ax1"], ["log"]), h.make_node("Sqrt", ["ax1"], ["sqrt"]),
        h.make_node("Pow", ["ax1", "exp15"], ["pow"]), h.make_node("Pow", ["x", "int2"], ["powi"]),
        h.make_node("LeakyRelu", ["x"], ["leaky"], alpha=0.2),
        h.make_node("HardSigmoid", ["x"], ["hsig"]),
        h.make_node("PRelu", ["x", "slope"], ["prelu"]),
        h.make_node("Clip", ["x", "", "cmax"], ["clipmax"]),
        h.make_node("Max", ["x", "col", "row"], ["max3"]), h.make_node("Min", ["x", "row"], ["min2"]),
        h.make_node("Sum", ["x", "col", "row"], ["sum3"]), h.make_node("Mean", ["x", "row", "col"], ["mean3"]),
        h.make_node("Sub", ["x", "row"], ["sub"]), h.make_node("Div", ["x", "col"], ["div"]),
        h.make_node("Mul", ["col", "row"], ["outer"]),
        h.make_node("Greater", ["x", "zero"], ["pos"]), h.make_node("Where", ["pos", "x", "row"], ["where"]),
        h.make_node("Less", ["x", "row"], ["lt"]), h.make_node("Equal", ["floor", "ceil"], ["isint"]),
        h.make_node("Or", ["lt", "isint"], ["lt_or_int"]), h.make_node("Not", ["lt_or_int"], ["nlt"]),
        h.make_node("Cast", ["nlt"], ["nltf"], to=TP.FLOAT),
        h.make_node("Dropout", ["x"], ["drop"]),
    ]
    outs += ["log", "sqrt", "pow", "powi", "leaky", "hsig", "prelu", "clipmax", "max3", "min2", "sum3", "mean3", "sub",
             "div", "outer", "where", "nltf", "drop"]
    inits = [init("one", np.array(1.0, np.float32)), init("exp15", np.array(1.5, np.float32)),
             init("int2", np.array(2, np.int64)), init("slope", w(4)), init("cmax", np.array(0.7, np.float32)),
             init("col", w(3, 1) + 2.0), init("row", w(4)), init("zero", np.array(0.0, np.float32))]
    model = make(nodes, [vi("x", TP.FLOAT, [3, 4])], [vi(o, TP.FLOAT, None) for o in outs], inits, 17, "ops_math")
    c.add("ops_math", model, [{"x": randn(3, 4) * 2}, {"x": randn(3, 4) * 0.01}])


def ops_reduce(c, opset):
    """Reductions (ReduceMean's axes: attribute before 18, input from 18), arg max/min, softmax on inner axes."""
    i64 = lambda *v: np.array(v, np.int64)
    axes_in = opset >= 18

    def red(op, out, axes, keepdims=1):
        if op == "ReduceSum" or axes_in:
            return h.make_node(op, ["x", f"{out}_axes"], [out], keepdims=keepdims), [init(f"{out}_axes", i64(*axes))]
        return h.make_node(op, ["x"], [out], axes=list(axes), keepdims=keepdims), []

    nodes, inits = [], []
    for op, out, axes, kd in [("ReduceSum", "rsum", (1,), 0), ("ReduceMean", "rmean", (0, 2), 1),
                              ("ReduceMax", "rmax", (-1,), 0), ("ReduceMin", "rmin", (1, 2), 1),
                              ("ReduceProd", "rprod", (2,), 1), ("ReduceSumSquare", "rss", (0,), 0)]:
        n, i = red(op, out, axes, kd)
        nodes.append(n)
        inits += i
    nodes += [
        h.make_node("ReduceSum", ["x"], ["rall"], keepdims=0),
        h.make_node("ArgMax", ["x"], ["amax"], axis=1, keepdims=1),
        h.make_node("ArgMin", ["x"], ["amin"], axis=-1, keepdims=0, select_last_index=1),
        h.make_node("Softmax", ["x"], ["sm1"], axis=1),
        h.make_node("LogSoftmax", ["x"], ["lsm0"], axis=0),
        h.make_node("Softmax", ["x"], ["sm2"]),
    ]
    outs = [vi(n, TP.FLOAT, None) for n in ["rsum", "rmean", "rmax", "rmin", "rprod", "rss", "rall", "sm1", "lsm0",
                                             "sm2"]]
    outs += [vi("amax", TP.INT64, None), vi("amin", TP.INT64, None)]
    model = make(nodes, [vi("x", TP.FLOAT, [2, 3, 5])], outs, inits, opset, f"ops_reduce_{opset}")
    x = np.round(randn(2, 3, 5) * 2, 1)  # ties for select_last_index
    c.add(f"ops_reduce_opset{opset}", model, [{"x": x}])


def ops_int(c):
    """Integer paths: embedding Gather with runtime indices, int arithmetic, load-time constants."""
    i64 = lambda *v: np.array(v, np.int64)
    nodes = [
        h.make_node("Gather", ["table", "ids"], ["emb"], axis=0),
        h.make_node("ReduceSum", ["emb", "ax1"], ["pooled"], keepdims=0),
        h.make_node("Mul", ["ids", "three"], ["ids3"]), h.make_node("Add", ["ids3", "k"], ["ids3k"]),
        h.make_node("Div", ["ids3k", "two"], ["half"]), h.make_node("Mod", ["ids3k", "mfour"], ["mod"]),
        h.make_node("Mod", ["ids3k", "mfour"], ["fmod"], fmod=1),
        h.make_node("Less", ["ids", "k"], ["less"]), h.make_node("Cast", ["less"], ["lessi"], to=TP.INT32),
        h.make_node("Cast", ["ids"], ["idsf"], to=TP.FLOAT),
        h.make_node("ConstantOfShape", ["cshape"], ["zeros"], value=nh.from_array(np.array([7], np.int64))),
        h.make_node("Range", ["r0", "r1", "rd"], ["rng"]),
        h.make_node("Add", ["rng", "ids"], ["rng_ids"]),
        h.make_node("Size", ["table"], ["size"]),
        h.make_node("Add", ["zeros", "size"], ["zs"]),
        h.make_node("Constant", [], ["cst"], value_floats=[1.5, -2.0, 3.25]),
        h.make_node("Mul", ["idsf", "cst"], ["scaled"]),
    ]
    inits = [init("table", w(10, 4)), init("ax1", i64(1)), init("three", i64(3)), init("k", i64(-4)),
             init("two", i64(2)), init("mfour", i64(-4)), init("cshape", i64(3)), init("r0", np.array(5, np.int64)),
             init("r1", np.array(-1, np.int64)), init("rd", np.array(-2, np.int64))]
    model = make(nodes, [vi("ids", TP.INT64, [3])],
                 [vi("emb", TP.FLOAT, None), vi("pooled", TP.FLOAT, None), vi("half", TP.INT64, None),
                  vi("mod", TP.INT64, None), vi("fmod", TP.INT64, None), vi("lessi", TP.INT32, None),
                  vi("rng_ids", TP.INT64, None), vi("zs", TP.INT64, None), vi("scaled", TP.FLOAT, None)],
                 inits, 13, "ops_int")
    c.add("ops_int", model, [{"ids": np.array([0, 9, -3], np.int64)}, {"ids": np.array([5, 5, 1], np.int64)}])


def ops_norm(c):
    """LayerNormalization, BatchNormalization, runtime MatMul/Gemm (opset 17)."""
    nodes = [
        h.make_node("LayerNormalization", ["x", "ln_s", "ln_b"], ["ln"], axis=-1, epsilon=1e-5),
        h.make_node("BatchNormalization", ["x", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-3),
        h.make_node("MatMul", ["x", "y"], ["mm"]),
        h.make_node("MatMul", ["xm", "y"], ["mmb"]),
        h.make_node("Gemm", ["a", "b", "cvec"], ["gemm_rt"], transA=1, transB=1, alpha=0.7, beta=1.0),
        h.make_node("MatMul", ["v", "xm"], ["vecmat"]),
        h.make_node("Gemm", ["xm", "wcol", "crow"], ["gemm_rowc"]),
    ]
    inits = [init("ln_s", w(4) + 1), init("ln_b", w(4)), init("bn_s", w(3) + 1), init("bn_b", w(3)),
             init("bn_m", w(3)), init("bn_v", np.abs(w(3)) + 0.5), init("xm", w(3, 4)), init("v", w(3)),
             init("wcol", w(4, 5)), init("crow", w(3, 1))]
    model = make(nodes, [vi("x", TP.FLOAT, [2, 3, 4]), vi("y", TP.FLOAT, [2, 4, 5]), vi("a", TP.FLOAT, [6, 3]),
                         vi("b", TP.FLOAT, [2, 6]), vi("cvec", TP.FLOAT, [2])],
                 [vi(n, TP.FLOAT, None) for n in ["ln", "bn", "mm", "mmb", "gemm_rt", "vecmat", "gemm_rowc"]],
                 inits, 17, "ops_norm")
    c.add("ops_norm", model, [{"x": randn(2, 3, 4), "y": randn(2, 4, 5), "a": randn(6, 3), "b": randn(2, 6),
                               "cvec": randn(2)}])


def ops_opset18(c):
    """Opset-18 forms and odds and ends exporters emit."""
    i64 = lambda *v: np.array(v, np.int64)
    wconst = nh.from_array(w(7, 5), "wc")
    nodes = [
        h.make_node("Constant", [], ["W"], value=wconst),  # weights as a Constant node, not an initializer
        h.make_node("MatMul", ["x", "W"], ["xw"]),
        h.make_node("Split", ["xw"], ["s0", "s1", "s2"], axis=1, num_outputs=3),  # 5 -> 2, 2, 1
        h.make_node("Unsqueeze", ["s2", "neg"], ["u"]),  # [3,1] -> [3,1,1]
        h.make_node("Squeeze", ["u"], ["sq"]),  # all 1-dims: [3]
        h.make_node("ReduceMax", ["xw", "ax1"], ["rmax"], keepdims=0),
        h.make_node("Gather", ["x", "idx32"], ["g"], axis=1),
        h.make_node("Slice", ["x", "st", "big"], ["tail"]),
        h.make_node("Concat", ["s0", "s1", "cst"], ["cat"], axis=1),
        h.make_node("Greater", ["x", "zero"], ["pos"]),
        h.make_node("Where", ["pos", "x", "col"], ["wh"]),
        h.make_node("Cast", ["x"], ["xb"], to=TP.BOOL), h.make_node("Cast", ["xb"], ["xbf"], to=TP.FLOAT),
        h.make_node("Mul", ["x", "ten"], ["x10"]), h.make_node("Cast", ["x10"], ["x8"], to=TP.INT8),
        h.make_node("Reshape", ["x", "shp"], ["r"], allowzero=0),
    ]
    inits = [init("neg", i64(-1)), init("ax1", i64(1)), init("idx32", np.array([6, 0, -2], np.int32)),
             init("st", i64(3)), init("big", i64(2**63 - 1)), init("cst", w(3, 2)),
             init("zero", np.array(0.0, np.float32)), init("col", w(3, 1)), init("ten", np.array(10.0, np.float32)),
             init("shp", i64(0, -1, 1))]
    outs = [vi(n, TP.FLOAT, None) for n in ["s0", "s1", "sq", "rmax", "g", "tail", "cat", "wh", "xbf", "r"]]
    outs.append(vi("x8", TP.INT8, None))
    model = make(nodes, [vi("x", TP.FLOAT, [3, 7])], outs, inits, 18, "ops_opset18")
    x = randn(3, 7)
    x[0, 2] = 0.0
    c.add("ops_opset18", model, [{"x": x}])


def ops_opset20(c):
    nodes = [h.make_node("Gelu", ["x"], ["gelu"]), h.make_node("Gelu", ["x"], ["gelu_tanh"], approximate="tanh"),
             h.make_node("Mish", ["x"], ["mish"])]
    model = make(nodes, [vi("x", TP.FLOAT, [2, 8])], [vi(n, TP.FLOAT, None) for n in ["gelu", "gelu_tanh", "mish"]],
                 [], 20, "ops_opset20")
    c.add("ops_opset20", model, [{"x": randn(2, 8) * 3}])


def typed_initializers(c):
    """Initializers in typed fields (float_data, int64_data, int32_data, double_data) instead of raw_data."""
    W = w(4, 6)
    nodes = [
        h.make_node("MatMul", ["x", "W"], ["m"]), h.make_node("Add", ["m", "b"], ["y0"]),
        h.make_node("Reshape", ["y0", "shape"], ["y"]),
        h.make_node("Cast", ["i32"], ["i32f"], to=TP.FLOAT), h.make_node("Add", ["y", "i32f"], ["z"]),
        h.make_node("Cast", ["x"], ["xd"], to=TP.DOUBLE), h.make_node("Mul", ["xd", "dbl"], ["xdd"]),
        h.make_node("Cast", ["u8"], ["u8f"], to=TP.FLOAT), h.make_node("Cast", ["flag"], ["flagf"], to=TP.FLOAT),
        h.make_node("Add", ["u8f", "flagf"], ["small"]),
    ]
    inits = [
        h.make_tensor("W", TP.FLOAT, [4, 6], W.flatten().tolist()),
        h.make_tensor("b", TP.FLOAT, [6], w(6).tolist()),
        h.make_tensor("shape", TP.INT64, [3], [2, 3, 1]),
        h.make_tensor("i32", TP.INT32, [2, 3, 1], [1, -2, 3, -4, 5, -6]),
        h.make_tensor("dbl", TP.DOUBLE, [4], [0.5, -1.25, 2.0, 1e-3]),
        h.make_tensor("u8", TP.UINT8, [3], [0, 200, 255]),
        h.make_tensor("flag", TP.BOOL, [3], [True, False, True]),
    ]
    model = make(nodes, [vi("x", TP.FLOAT, [1, 4])],
                 [vi("z", TP.FLOAT, [2, 3, 1]), vi("xdd", TP.DOUBLE, [1, 4]), vi("small", TP.FLOAT, [3])],
                 inits, 13, "typed_initializers")
    c.add("typed_initializers", model, [{"x": randn(1, 4)}])


def newest(c):
    """The newest opsets: 26 (newest ONNX Runtime 1.31 runs) and 28 (onnx 1.23; onnx.reference)."""
    mlp_gemm(c, name="mlp_opset26", opset=26)
    mlp_deep(c, opset=26, name="mlp_deep_opset26")
    mlp_gemm(c, name="mlp_opset28", opset=28, reference="onnx.reference")


def external_data(out):
    """The benchmark-shaped MLP with its weights in a separate file."""
    d = os.path.join(out, "external")
    os.makedirs(d, exist_ok=True)
    nodes = [h.make_node("Gemm", ["x", "w1", "b1"], ["h1"], transB=1), h.make_node("Relu", ["h1"], ["y"])]
    inits = [init("w1", w(32, 64)), init("b1", w(32))]
    model = make(nodes, [vi("x", TP.FLOAT, [1, 64])], [vi("y", TP.FLOAT, [1, 32])], inits, 17, "external")
    onnx.save_model(model, os.path.join(d, "mlp_external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="mlp_external.weights", size_threshold=0)
    x = randn(1, 64)
    y = run_ort(onnx.load(os.path.join(d, "mlp_external.onnx")), {"x": x})["y"]
    x.astype("<f4").tofile(os.path.join(d, "x.bin"))
    y.astype("<f4").tofile(os.path.join(d, "y.bin"))


def faults(out):
    """Models the engine must refuse with a message naming the culprit."""
    d = os.path.join(out, "faults")
    os.makedirs(d, exist_ok=True)

    def save(name, nodes, inputs, outputs, inits=(), opset=17, check=False):
        graph = h.make_graph(nodes, name, inputs, outputs, list(inits))
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], producer_name="mlbridge faults")
        m.ir_version = 8
        if check:
            onnx.checker.check_model(m)
        onnx.save(m, os.path.join(d, name + ".onnx"))

    x = [vi("x", TP.FLOAT, [1, 4])]
    y = [vi("y", TP.FLOAT, None)]
    save("unknown_op", [h.make_node("Relu", ["x"], ["a"], name="ok"), h.make_node("FancyOp", ["a"], ["y"], name="mystery")],
         x, y, check=False)
    save("custom_domain", [h.make_node("Relu", ["x"], ["y"], name="msrelu", domain="com.microsoft")], x, y, check=False)
    save("bad_attribute_value", [h.make_node("Relu", ["x"], ["a"]),
                                 h.make_node("Gemm", ["a", "wt"], ["y"], name="fc", transA=3)], x, y,
         [init("wt", w(4, 4))], check=False)
    save("unsupported_attribute", [h.make_node("Softmax", ["x"], ["y"], name="sm", temperature=2.0)], x, y, check=False)
    save("unsupported_activation",
         [h.make_node("LSTM", ["xs", "W", "R"], ["y"], name="rnn", hidden_size=2,
                      activations=["Sigmoid", "Tanh", "Softsign"])],
         [vi("xs", TP.FLOAT, [3, 1, 4])], y, [init("W", w(1, 8, 4)), init("R", w(1, 8, 2))])
    save("old_opset", [h.make_node("Relu", ["x"], ["y"])], x, y, opset=11)
    save("float16_input", [h.make_node("Relu", ["h"], ["y"], name="r")], [vi("h", TP.FLOAT16, [1, 4])],
         [vi("y", TP.FLOAT16, None)])
    save("undefined_input", [h.make_node("Add", ["x", "nope"], ["y"], name="adder")], x, y, check=False)
    save("shape_mismatch", [h.make_node("MatMul", ["x", "wm"], ["y"], name="mm")], x, y, [init("wm", w(5, 3))],
         check=False)
    save("runtime_reshape", [h.make_node("Reshape", ["x", "s"], ["y"], name="rs")],
         x + [vi("s", TP.INT64, [2])], y)


def limits(out):
    """Models from fuzzing and issue 13: bounded work on hostile models."""
    d = os.path.join(out, "limits")
    os.makedirs(d, exist_ok=True)

    def save(name, nodes, inputs, outputs, inits=()):
        graph = h.make_graph(nodes, name, inputs, outputs, list(inits))
        m = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], producer_name="mlbridge limits")
        m.ir_version = 8
        onnx.save(m, os.path.join(d, name + ".onnx"))

    # A float ConstantOfShape of 2^28 elements (1 GiB), Add chains, ReduceSum:
    # a few hundred bytes that asked for 5 GiB and 14 s before the budget.
    # The same with 2^10 elements (4 KiB each): the folding budget's unit test.
    for name, count in (("constant_of_shape_bomb", 1 << 28), ("constant_of_shape_small", 1 << 10)):
        nodes = [h.make_node("ConstantOfShape", ["n"], ["c0"], name="big",
                             value=nh.from_array(np.array([1.0], np.float32)))]
        for i in range(4):
            nodes.append(h.make_node("Add", [f"c{i}", f"c{i}"], [f"c{i + 1}"], name=f"add{i}"))
        nodes.append(h.make_node("ReduceSum", ["c4"], ["y"], name="sum", keepdims=0))
        save(name, nodes, [], [vi("y", TP.FLOAT, None)], [init("n", np.array([count], np.int64))])

    # Slice steps of INT64_MAX and INT64_MIN (each takes one element), on a
    # runtime input and on a constant (folded at load).
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    i64 = lambda *v: np.array(v, np.int64)
    save("slice_extreme_steps",
         [h.make_node("Slice", ["x", "s0", "e0", "ax", "stmax"], ["y_max"], name="slice_max"),
          h.make_node("Slice", ["x", "s3", "emin", "ax", "stmin"], ["y_min"], name="slice_min"),
          h.make_node("Slice", ["k", "s0", "e0", "ax", "stmax"], ["k_max"], name="fold_max"),
          h.make_node("Slice", ["k", "s3", "emin", "ax", "stmin"], ["k_min"], name="fold_min"),
          h.make_node("Add", ["y_max", "k_max"], ["a"], name="add_max"),
          h.make_node("Add", ["y_min", "k_min"], ["b"], name="add_min")],
         [vi("x", TP.FLOAT, [1, 4])], [vi("a", TP.FLOAT, [1, 1]), vi("b", TP.FLOAT, [1, 1])],
         [init("k", np.array([[10, 20, 30, 40]], np.float32)), init("s0", i64(0)), init("e0", i64(4)),
          init("s3", i64(3)), init("emin", i64(small)), init("ax", i64(1)), init("stmax", i64(big)),
          init("stmin", i64(small))])

    # Range over the whole int64 line (the element k * delta overflowed) and
    # next to INT64_MAX (the count, computed in double, was 0).
    save("range_int64_extremes",
         [h.make_node("Range", ["lo", "hi", "quarter"], ["wide"], name="range_wide"),
          h.make_node("Range", ["near", "hi", "three"], ["top"], name="range_top")],
         [], [vi("wide", TP.INT64, [4]), vi("top", TP.INT64, [4])],
         [init("lo", np.array(small, np.int64)), init("hi", np.array(big, np.int64)),
          init("quarter", np.array(1 << 62, np.int64)), init("near", np.array(big - 10, np.int64)),
          init("three", np.array(3, np.int64))])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    c = Corpus(args.out)
    mlp_gemm(c)
    mlp_matmul(c)
    mlp_deep(c)
    lstm_policy(c)
    lstm_variants(c)
    grus(c)
    actor_critic(c)
    ops_shape(c)
    ops_math(c)
    ops_reduce(c, 17)
    ops_reduce(c, 18)
    ops_int(c)
    ops_norm(c)
    ops_opset18(c)
    ops_opset20(c)
    typed_initializers(c)
    newest(c)
    c.write_manifest()
    external_data(args.out)
    faults(args.out)
    limits(args.out)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(args.out) for f in fs)
    print(f"wrote {len(c.entries)} models + faults to {args.out} ({total / 1024:.0f} KiB)")


if __name__ == "__main__":
    sys.exit(main())
