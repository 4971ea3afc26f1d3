"""A linear inlining policy: inline iff sum(w[f] * feature[f]) <= bias.

One definition, two executions that must agree:
  * ``decide(obs)``: numpy, for a Python model over pipes (training);
  * ``export_onnx(path)``: an ONNX graph with LLVM's 38 inliner features as
    int64 [1] inputs and ``inlining_decision`` int64 [1] as output, the
    contract of LLVM's MLInlineAdvisor, for the plugin's in-process runners
    (onnx, aot, onnxruntime).

Integer weights keep both exact (no float rounding between numpy and the
engines).
"""
from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np

# LLVM 19's inliner contract: 38 features (FeatureMap order) and the decision.
from mlbridge.llvm.inliner_features import DECISION, FEATURES  # noqa: E402,F401


class LinearPolicy:
    """inline iff sum(weights[f] * obs[f]) <= bias (integers)."""

    def __init__(self, weights: Mapping[str, int], bias: int) -> None:
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown features: {sorted(unknown)}")
        self.weights: Dict[str, int] = {k: int(v) for k, v in weights.items() if int(v) != 0}
        self.bias = int(bias)
        self.decisions = 0

    def decide(self, obs: Any) -> np.ndarray:
        """The decision for one observation (``obs[name]``: int64 [1] views)."""
        total = 0
        for name, w in self.weights.items():
            total += w * int(obs[name][0])
        self.decisions += 1
        return np.array([1 if total <= self.bias else 0], dtype=np.int64)

    __call__ = decide

    def __repr__(self) -> str:
        terms = " + ".join(f"{w}*{n}" for n, w in self.weights.items()) or "0"
        return f"inline iff {terms} <= {self.bias}"

    def export_onnx(self, path: str, *, output_type: str = "int64") -> None:
        """Writes the policy as ONNX (opset 17). ``output_type`` other than
        int64 makes a deliberately wrong model (fault tests)."""
        import onnx
        from onnx import TensorProto, helper

        w = np.array([self.weights.get(n, 0) for n in FEATURES], dtype=np.int64)
        to = {"int64": TensorProto.INT64, "float": TensorProto.FLOAT, "int32": TensorProto.INT32}[output_type]
        inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in FEATURES]
        inits = [
            helper.make_tensor("w", TensorProto.INT64, [len(FEATURES)], w.tolist()),
            helper.make_tensor("bias", TensorProto.INT64, [1], [self.bias]),
            helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
        ]
        nodes = [
            helper.make_node("Concat", list(FEATURES), ["x"], axis=0),
            helper.make_node("Mul", ["x", "w"], ["wx"]),
            helper.make_node("ReduceSum", ["wx", "axes"], ["score"], keepdims=1),
            helper.make_node("LessOrEqual", ["score", "bias"], ["yes"]),
            helper.make_node("Cast", ["yes"], [DECISION], to=to),
        ]
        out = helper.make_tensor_value_info(DECISION, to, [1])
        graph = helper.make_graph(nodes, "linear_inline_policy", inputs, [out], inits,
                                  doc_string=repr(self))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                  producer_name="mlbridge.examples.llvm_plugin")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)
