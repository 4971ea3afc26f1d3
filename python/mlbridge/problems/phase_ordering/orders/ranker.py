"""The ranker: from a module's 32 features, the log size ratio to -Oz that
each coreset order will give; the plugin tries the orders it ranks best.
A small numpy MLP (tanh hidden layer, Adam, masked squared error), exported
to ONNX with the ops the built-in engine runs (the inlining policy's set)."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from ..order_policy import FEATURES, SCORES
from ..problem import MODULE_FEATURES
from ....train.imitation import Adam
from ....train.policy import slog, slog_nodes

_F = np.float32
#: ratios are clipped to [1 - CLIP, 1 + CLIP] before the log: a ranker needs the
#: order of the good candidates, not how bad a bad one is
CLIP = 0.25


class Ranker:
    def __init__(self, n_orders: int, hidden: int = 32, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.n, self.hidden = n_orders, hidden
        self.mu = np.zeros(MODULE_FEATURES, _F)
        self.sigma = np.ones(MODULE_FEATURES, _F)
        self.w0 = rng.normal(0, np.sqrt(2.0 / (MODULE_FEATURES + hidden)), (MODULE_FEATURES, hidden)).astype(_F)
        self.b0 = np.zeros(hidden, _F)
        self.w1 = np.zeros((hidden, n_orders), _F)
        self.b1 = np.zeros(n_orders, _F)

    def _inputs(self, features: np.ndarray) -> np.ndarray:
        return (slog(np.asarray(features, _F)) - self.mu) / self.sigma

    def predict(self, features: np.ndarray) -> np.ndarray:
        """[m, orders] predicted log ratios (lower is better)."""
        h = np.tanh(self._inputs(features) @ self.w0 + self.b0)
        return h @ self.w1 + self.b1

    def fit(self, features: np.ndarray, ratios: np.ndarray, weights: np.ndarray, *, epochs: int = 1500,
            lr: float = 3e-3, l2: float = 1e-3) -> float:
        """Fits to ratios [m, orders] (inf: failed, learned as 1 + CLIP); returns the final loss."""
        s = slog(np.asarray(features, _F))
        self.mu = s.mean(0).astype(_F)
        self.sigma = np.maximum(s.std(0), 1e-3).astype(_F)
        x = self._inputs(features)
        r = np.where(np.isfinite(ratios), ratios, 1 + CLIP)
        y = np.log(np.clip(r, 1 - CLIP, 1 + CLIP)).astype(_F)
        w = (weights / weights.sum()).astype(_F)[:, None]
        params = [self.w0, self.b0, self.w1, self.b1]
        flat = np.concatenate([p.ravel() for p in params])
        opt = Adam(flat.size, lr)
        loss = 0.0
        for _ in range(epochs):
            self.w0, self.b0, self.w1, self.b1 = self._unflat(flat)
            z = x @ self.w0 + self.b0
            h = np.tanh(z)
            pred = h @ self.w1 + self.b1
            err = pred - y
            loss = float((w * err * err).sum() / self.n) + l2 * float((self.w0 ** 2).sum() + (self.w1 ** 2).sum())
            g = 2 * w * err / self.n
            gw1 = h.T @ g + 2 * l2 * self.w1
            gb1 = g.sum(0)
            gh = (g @ self.w1.T) * (1 - h * h)
            gw0 = x.T @ gh + 2 * l2 * self.w0
            gb0 = gh.sum(0)
            flat = opt.step(flat, np.concatenate([gw0.ravel(), gb0, gw1.ravel(), gb1]).astype(_F))
        self.w0, self.b0, self.w1, self.b1 = self._unflat(flat)
        return loss

    def _unflat(self, flat: np.ndarray) -> Any:
        a, h, n = MODULE_FEATURES, self.hidden, self.n
        i = 0
        w0 = flat[i:i + a * h].reshape(a, h); i += a * h
        b0 = flat[i:i + h]; i += h
        w1 = flat[i:i + h * n].reshape(h, n); i += h * n
        b1 = flat[i:i + n]
        return w0, b0, w1, b1

    def top(self, features: np.ndarray, k: int) -> np.ndarray:
        """[m, k] indices of the best-ranked orders (ties by index, as the plugin)."""
        scores = -self.predict(features)
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]

    def export_onnx(self, path: str) -> str:
        """Input module_features int64 [32]; output order_scores float [orders]
        (higher: tried first)."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        a = MODULE_FEATURES
        inits = [numpy_helper.from_array(np.ones(1, _F), "one"),
                 numpy_helper.from_array(np.array([1, a], np.int64), "row_shape"),
                 numpy_helper.from_array(np.array([self.n], np.int64), "out_shape"),
                 numpy_helper.from_array(self.mu.reshape(1, a), "mu"),
                 numpy_helper.from_array(self.sigma.reshape(1, a), "sigma"),
                 numpy_helper.from_array(np.ascontiguousarray(self.w0), "W0"),
                 numpy_helper.from_array(np.ascontiguousarray(self.b0), "B0"),
                 # scores are minus the predicted log ratio: folded into the last layer
                 numpy_helper.from_array(np.ascontiguousarray(-self.w1), "W1"),
                 numpy_helper.from_array(np.ascontiguousarray(-self.b1), "B1")]
        nodes = [
            *slog_nodes(FEATURES, "t"),
            helper.make_node("Reshape", ["t", "row_shape"], ["row"]),
            helper.make_node("Sub", ["row", "mu"], ["centered"]),
            helper.make_node("Div", ["centered", "sigma"], ["h0"]),
            helper.make_node("Gemm", ["h0", "W0", "B0"], ["z1"]),
            helper.make_node("Tanh", ["z1"], ["h1"]),
            helper.make_node("Gemm", ["h1", "W1", "B1"], ["s"]),
            helper.make_node("Reshape", ["s", "out_shape"], [SCORES]),
        ]
        graph = helper.make_graph(nodes, "mlbridge_order_ranker",
                                  [helper.make_tensor_value_info(FEATURES, TensorProto.INT64, [a])],
                                  [helper.make_tensor_value_info(SCORES, TensorProto.FLOAT, [self.n])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="mlbridge.train")
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, path)
        return path

    def to_json(self) -> Dict[str, Any]:
        return {"n": self.n, "hidden": self.hidden, "mu": self.mu.tolist(), "sigma": self.sigma.tolist(),
                "w0": self.w0.tolist(), "b0": self.b0.tolist(), "w1": self.w1.tolist(), "b1": self.b1.tolist()}
