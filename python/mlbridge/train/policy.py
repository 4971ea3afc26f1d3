"""Inlining policies as small numpy networks over signed-log features, exportable
to ONNX with ops every in-process runner executes (the built-in engine, mlbridge-aot,
ONNX Runtime), so a policy trained in Python ships inside the compiler.

    score = MLP((slog(x) - mu) / sigma),  slog(x) = sign(x) * log(1 + |x|)
    decision = score > 0,   P(inline) = sigmoid(score) when sampling

``MLPPolicy(names, hidden=(16,))`` has tanh hidden layers; ``hidden=()`` is a linear
score (:class:`LinearPolicy`). All arithmetic is float32, like the exported graph, so
numpy and the compiler take the same decisions. Parameters are one flat vector
(layer by layer: W row-major [in, out], then b) for evolution strategies.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

_F = np.float32


def slog(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, _F)
    return np.sign(x) * np.log(np.abs(x) + _F(1))


def slog_nodes(inp: str, out: str) -> List[Any]:
    """ONNX nodes computing ``out = slog(float(inp))`` (needs a float initializer
    ``one`` = [1]): the feature transform every exported policy starts with."""
    from onnx import TensorProto, helper
    return [helper.make_node("Cast", [inp], ["x"], to=TensorProto.FLOAT),
            helper.make_node("Abs", ["x"], ["ax"]),
            helper.make_node("Sign", ["x"], ["sx"]),
            helper.make_node("Add", ["ax", "one"], ["ax1"]),
            helper.make_node("Log", ["ax1"], ["lx"]),
            helper.make_node("Mul", ["sx", "lx"], [out])]


class MLPPolicy:
    """An inlining policy: features (int64 [1] each, ``names``) -> one score."""

    kind = "mlp"

    def __init__(self, names: Sequence[str], hidden: Sequence[int] = (16,), params: Optional[np.ndarray] = None,
                 output: str = "inlining_decision", mu: Optional[np.ndarray] = None,
                 sigma: Optional[np.ndarray] = None, seed: int = 0) -> None:
        self.names = list(names)
        self.hidden = tuple(int(h) for h in hidden)
        self.output = output
        n = len(self.names)
        self.mu = np.zeros(n, _F) if mu is None else np.asarray(mu, _F).reshape(n).copy()
        self.sigma = np.ones(n, _F) if sigma is None else np.asarray(sigma, _F).reshape(n).copy()
        if params is None:
            self.params = self._init(np.random.default_rng(seed))
        else:
            self.params = np.asarray(params, _F).reshape(self.dim).copy()

    # ---- shapes and parameters ---------------------------------------------------
    @property
    def sizes(self) -> List[int]:
        return [len(self.names), *self.hidden, 1]

    @property
    def dim(self) -> int:
        s = self.sizes
        return sum(a * b + b for a, b in zip(s[:-1], s[1:]))

    def _init(self, rng: np.random.Generator) -> np.ndarray:
        parts = []
        s = self.sizes
        for i, (a, b) in enumerate(zip(s[:-1], s[1:])):
            last = i == len(s) - 2
            # hidden layers: Glorot; the output layer starts at 0 (score 0: no preference)
            w = np.zeros((a, b), _F) if last else rng.normal(0, np.sqrt(2.0 / (a + b)), (a, b)).astype(_F)
            parts += [w.ravel(), np.zeros(b, _F)]
        return np.concatenate(parts)

    def layers(self, params: Optional[np.ndarray] = None) -> List[Tuple[np.ndarray, np.ndarray]]:
        """(W [in, out], b [out]) per layer: views into the flat vector."""
        p = self.params if params is None else params
        out, i = [], 0
        s = self.sizes
        for a, b in zip(s[:-1], s[1:]):
            out.append((p[i:i + a * b].reshape(a, b), p[i + a * b:i + a * b + b]))
            i += a * b + b
        return out

    def with_params(self, params: np.ndarray) -> "MLPPolicy":
        return type(self).from_json({**self.to_json(), "params": [float(v) for v in np.asarray(params).ravel()]})

    # ---- evaluation ----------------------------------------------------------------
    def inputs(self, raw: np.ndarray) -> np.ndarray:
        """Raw feature rows [m, n] (any numeric dtype) -> the network's input."""
        return (slog(raw) - self.mu) / self.sigma

    def features(self, obs: Any) -> np.ndarray:
        """One observation (a dict or an Observation) -> the network's input row."""
        return self.inputs(np.array([obs[n][0] for n in self.names], dtype=_F))

    def forward(self, x: np.ndarray, params: Optional[np.ndarray] = None) -> Tuple[np.ndarray, List[np.ndarray]]:
        """Scores [m] for inputs [m, n], and the activations backward() needs."""
        acts = [np.atleast_2d(np.asarray(x, _F))]
        layers = self.layers(params)
        for i, (w, b) in enumerate(layers):
            z = acts[-1] @ w + b
            acts.append(np.tanh(z) if i < len(layers) - 1 else z)
        return acts[-1][:, 0], acts

    def backward(self, acts: List[np.ndarray], dscore: np.ndarray, params: Optional[np.ndarray] = None) -> np.ndarray:
        """d(sum_i dscore_i * score_i)/d(params), as a flat vector like params."""
        layers = self.layers(params)
        grads: List[np.ndarray] = []
        g = np.asarray(dscore, _F).reshape(-1, 1)
        for i in range(len(layers) - 1, -1, -1):
            w, _ = layers[i]
            grads = [(acts[i].T @ g).ravel(), g.sum(0)] + grads
            if i:
                g = (g @ w.T) * (1 - acts[i] ** 2)   # through tanh
        return np.concatenate(grads).astype(_F)

    def scores(self, x: np.ndarray) -> np.ndarray:
        return self.forward(x)[0]

    def __call__(self, obs: Any) -> int:
        """The decision (0/1) for one observation."""
        return int(self.scores(self.features(obs)[None, :])[0] > 0)

    # ---- ONNX ------------------------------------------------------------------------
    def export_onnx(self, path: str, opset: int = 17) -> str:
        """Inputs: the feature names (int64 [1] each, in order); output ``self.output``
        int64 [1]. Ops: Concat, Cast, Abs, Sign, Add, Log, Mul, Sub, Div, Reshape, Gemm,
        Tanh, Greater — all in docs/engine.md, the AOT generator and ONNX Runtime."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        n = len(self.names)
        inits = [numpy_helper.from_array(np.ones(1, _F), "one"), numpy_helper.from_array(np.zeros(1, _F), "zero"),
                 numpy_helper.from_array(np.array([1, n], np.int64), "row_shape"),
                 numpy_helper.from_array(np.array([1], np.int64), "out_shape")]
        nodes = [helper.make_node("Concat", self.names, ["xi"], axis=0), *slog_nodes("xi", "t"),
                 helper.make_node("Reshape", ["t", "row_shape"], ["row"])]
        body, body_inits = self.network_nodes("row", "score")
        nodes += body
        inits += body_inits
        nodes += [helper.make_node("Greater", ["score", "zero"], ["yes"]),
                  helper.make_node("Cast", ["yes"], ["yes64"], to=TensorProto.INT64),
                  helper.make_node("Reshape", ["yes64", "out_shape"], [self.output])]
        graph = helper.make_graph(
            nodes, f"mlbridge_{self.kind}_inliner",
            [helper.make_tensor_value_info(nm, TensorProto.INT64, [1]) for nm in self.names],
            [helper.make_tensor_value_info(self.output, TensorProto.INT64, [1])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                  producer_name="mlbridge.train")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)
        return path

    def network_nodes(self, row: str, out: str) -> Tuple[List[Any], List[Any]]:
        """ONNX nodes and initializers from ROW (float [1, n], the features after
        slog) to OUT ([1, 1], the score): normalization, then each layer; the
        part of the graph every exported network shares (this export, and the
        eviction flip model's)."""
        from onnx import helper, numpy_helper
        n = len(self.names)
        nodes: List[Any] = []
        inits: List[Any] = []
        prev = row
        if self.mu.any() or (self.sigma != 1).any():   # an identity normalization costs no node
            nodes += [helper.make_node("Sub", [row, "mu"], ["centered"]),
                      helper.make_node("Div", ["centered", "sigma"], ["h0"])]
            inits += [numpy_helper.from_array(self.mu.reshape(1, n), "mu"),
                      numpy_helper.from_array(self.sigma.reshape(1, n), "sigma")]
            prev = "h0"
        layers = self.layers()
        for i, (w, b) in enumerate(layers):
            inits += [numpy_helper.from_array(np.ascontiguousarray(w), f"W{i}"),
                      numpy_helper.from_array(np.ascontiguousarray(b), f"B{i}")]
            last = i == len(layers) - 1
            z = out if last else f"z{i + 1}"
            nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"B{i}"], [z]))
            if not last:
                nodes.append(helper.make_node("Tanh", [z], [f"h{i + 1}"]))
                prev = f"h{i + 1}"
        return nodes, inits

    # ---- saving ----------------------------------------------------------------------
    def to_json(self) -> Dict[str, Any]:
        return {"kind": self.kind, "names": self.names, "hidden": list(self.hidden), "output": self.output,
                "mu": [float(v) for v in self.mu], "sigma": [float(v) for v in self.sigma],
                "params": [float(v) for v in self.params]}

    @classmethod
    def from_json(cls, obj: Dict[str, Any]) -> "MLPPolicy":
        hidden = obj.get("hidden", [])
        if cls is LinearPolicy or (cls is MLPPolicy and obj.get("kind") == "linear"):
            return LinearPolicy(obj["names"], np.asarray(obj["params"], _F), obj.get("output", "inlining_decision"),
                                mu=obj.get("mu"), sigma=obj.get("sigma"))
        return MLPPolicy(obj["names"], hidden, np.asarray(obj["params"], _F), obj.get("output", "inlining_decision"),
                         mu=obj.get("mu"), sigma=obj.get("sigma"))

    def save(self, path: str) -> str:
        with open(path, "w") as f:
            json.dump(self.to_json(), f)
        return path

    @staticmethod
    def load(path: str) -> "MLPPolicy":
        with open(path) as f:
            return MLPPolicy.from_json(json.load(f))


class LinearPolicy(MLPPolicy):
    """``decision = (w . slog(x) + b > 0)``: an MLP without hidden layers; ``params``
    is ``[w..., b]`` over ``names``."""

    kind = "linear"

    def __init__(self, names: Sequence[str], params: Optional[np.ndarray] = None,
                 output: str = "inlining_decision", mu: Optional[np.ndarray] = None,
                 sigma: Optional[np.ndarray] = None) -> None:
        super().__init__(names, (), params, output, mu, sigma)
