"""A numpy linear policy over signed-log features, exportable to ONNX for the in-process runners."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np




class LinearPolicy:
    """``decision = (w . slog(x) + b > 0)`` with ``slog(x) = sign(x) *
    log(1 + |x|)`` over the features in ``names`` (each int64 [1], LLVM's
    inliner features). Computed in float32, like the exported ONNX graph."""

    def __init__(self, names: Sequence[str], params: Optional[np.ndarray] = None,
                 output: str = "inlining_decision") -> None:
        self.names = list(names)
        self.output = output
        self.params = (np.zeros(len(self.names) + 1, np.float32) if params is None
                       else np.asarray(params, np.float32).reshape(len(self.names) + 1).copy())

    @property
    def dim(self) -> int:
        return len(self.names) + 1

    def features(self, obs: Any) -> np.ndarray:
        x = np.array([obs[n][0] for n in self.names], dtype=np.float32)
        return np.sign(x) * np.log(np.abs(x) + np.float32(1))

    def __call__(self, obs: Any) -> int:
        """The decision (0/1) for one observation (a dict or an Observation)."""
        w, b = self.params[:-1], self.params[-1]
        return int(np.float32(self.features(obs) @ w + b) > 0)

    def export_onnx(self, path: str, opset: int = 17) -> str:
        """Write the policy as ONNX: inputs = the feature names (int64 [1]
        each, in order), output ``inlining_decision`` int64 [1]. Ops: Concat,
        Cast, Abs, Sign, Add, Log, Mul, Reshape, Gemm, Greater."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        n = len(self.names)
        w = self.params[:-1].astype(np.float32).reshape(n, 1)
        b = self.params[-1:].astype(np.float32)
        inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B"),
                 numpy_helper.from_array(np.ones(1, np.float32), "one"),
                 numpy_helper.from_array(np.zeros(1, np.float32), "zero"),
                 numpy_helper.from_array(np.array([1, n], np.int64), "row_shape"),
                 numpy_helper.from_array(np.array([1], np.int64), "out_shape")]
        nodes = [
            helper.make_node("Concat", self.names, ["xi"], axis=0),
            helper.make_node("Cast", ["xi"], ["x"], to=TensorProto.FLOAT),
            helper.make_node("Abs", ["x"], ["ax"]),
            helper.make_node("Sign", ["x"], ["sx"]),
            helper.make_node("Add", ["ax", "one"], ["ax1"]),
            helper.make_node("Log", ["ax1"], ["lx"]),
            helper.make_node("Mul", ["sx", "lx"], ["t"]),
            helper.make_node("Reshape", ["t", "row_shape"], ["row"]),
            helper.make_node("Gemm", ["row", "W", "B"], ["score"]),
            helper.make_node("Greater", ["score", "zero"], ["yes"]),
            helper.make_node("Cast", ["yes"], ["yes64"], to=TensorProto.INT64),
            helper.make_node("Reshape", ["yes64", "out_shape"], [self.output]),
        ]
        graph = helper.make_graph(
            nodes, "mlbridge_linear_inliner",
            [helper.make_tensor_value_info(nm, TensorProto.INT64, [1]) for nm in self.names],
            [helper.make_tensor_value_info(self.output, TensorProto.INT64, [1])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="mlbridge.training")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)
        return path

    def to_json(self) -> Dict[str, Any]:
        return {"names": self.names, "params": [float(v) for v in self.params], "output": self.output}

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "LinearPolicy":
        return cls(obj["names"], np.asarray(obj["params"], np.float32), obj.get("output", "inlining_decision"))
