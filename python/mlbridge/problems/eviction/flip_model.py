"""A learned eviction policy that starts from the default advisor exactly
(issue 38): at every question it answers the default's choice (``DefaultAdvisor``)
or its runner-up in the default's own cost order (``search.rank``), and takes
the runner-up only when a small network over the question's features says so.
With the network's output at or below 0 everywhere it *is* the default, so
training moves away from the default only where the labels from search
(``search.py``) say the runner-up lowered the register-allocation score.

- **Features** (:func:`question_features`, ``QUESTION``): the 19 per-candidate
  features LLVM sends (besides ``mask``) of the choice and of the runner-up
  (as LLVM normalizes them; NaN read as 0, clipped to +-1e6, as policy.py's),
  whether each is "evict nothing" (column 32), the allocated range's largest
  weight (column 32's ``use_def_density``), the margin between them, the number
  of legal answers and ``progress``. The network is train/policy.py's
  ``MLPPolicy`` over them (signed log, normalization, tanh layers).
- **Where it may flip**: only at questions whose margin is at most
  ``max_margin`` (the largest margin among its training labels): the search
  tries the closest alternatives, so farther ones are out of what was learned;
  there the default's answer stands, and the network is not even run (speed).
- **Files**: :meth:`FlipModel.save` writes JSON (format, ``max_margin``, the
  network); :meth:`FlipModel.export_onnx` writes the network as ``.onnx``
  (``question_features`` row in, the runner-up's score out), served by
  onnxruntime (:class:`OnnxFlipModel`) with the same answers.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

import numpy as np

from ...core.files import replace_when_complete, write_json_atomic
from ...train.policy import MLPPolicy, slog_nodes
from .default_advisor import SELF
from .policy import LIMIT, RAW, PolicyFileError

FORMAT = "mlbridge-eviction-flip/1"
QUESTION = (tuple(f"choice_{n}" for n in RAW) + tuple(f"runner_up_{n}" for n in RAW)
            + ("choice_is_self", "runner_up_is_self", "self_use_def_density", "margin", "legal", "progress"))
_UDD = RAW.index("use_def_density")


def _clean(x: np.ndarray) -> np.ndarray:
    return np.clip(np.where(np.isnan(x), np.float32(0), x), -LIMIT, LIMIT)


def question_features(obs: Mapping[str, Any], choice: int, alt: int, margin: float) -> np.ndarray:
    """The (len(QUESTION),) float32 row of one question (module docstring)."""
    row = np.empty(len(QUESTION), np.float32)
    n = len(RAW)
    for k, name in enumerate(RAW):   # only the two columns read: a question is answered in microseconds
        col = np.asarray(obs[name]).reshape(-1)
        row[k], row[n + k] = col[choice], col[alt]
    p = float(np.asarray(obs["progress"]).reshape(-1)[0])
    row[2 * n:] = (choice == SELF, alt == SELF, float(np.asarray(obs["use_def_density"]).reshape(-1)[SELF]),
                   min(margin, 3.0), float(np.count_nonzero(np.asarray(obs["mask"]).reshape(-1))),
                   0.0 if np.isnan(p) else p)
    return _clean(row)


def question_rows(obs: Mapping[str, np.ndarray], choice: np.ndarray, alt: np.ndarray, margin: np.ndarray,
                  progress: np.ndarray) -> np.ndarray:
    """question_features for many recorded questions at once ([n, 33] arrays per
    feature, as a labels file holds them): [n, len(QUESTION)]."""
    n = len(choice)
    rows = np.empty((n, len(QUESTION)), np.float32)
    idx = np.arange(n)
    nr = len(RAW)
    for k, name in enumerate(RAW):
        col = _clean(np.asarray(obs[name], np.float32))
        rows[:, k] = col[idx, choice]
        rows[:, nr + k] = col[idx, alt]
    udd = _clean(np.asarray(obs["use_def_density"], np.float32))[:, SELF]
    legal = np.count_nonzero(np.asarray(obs["mask"]), axis=1).astype(np.float32)
    p = np.asarray(progress, np.float32)
    rows[:, 2 * nr:] = _clean(np.stack([choice == SELF, alt == SELF, udd, np.minimum(margin, 3.0), legal,
                                        np.where(np.isnan(p), 0, p)], axis=1).astype(np.float32))
    return rows


class FlipModel:
    """``model(obs, choice, runner_up, margin) -> bool``: take the runner-up
    (search.FlipPolicy's ``base``); :meth:`policy` is the full eviction policy."""

    def __init__(self, net: MLPPolicy, max_margin: float) -> None:
        if list(net.names) != list(QUESTION):
            raise ValueError(f"a flip model's network reads the {len(QUESTION)} question features")
        if not np.isfinite(max_margin):
            raise ValueError("max_margin must be finite")
        self.net = net
        self.max_margin = float(max_margin)

    def score(self, row: np.ndarray) -> float:
        return float(self.net.scores(self.net.inputs(row[None, :]))[0])

    def __call__(self, obs: Any, choice: int, alt: int, margin: float) -> bool:
        if margin > self.max_margin:
            return False
        return self.score(question_features(obs, choice, alt, margin)) > 0

    # -- files ---------------------------------------------------------------------
    def as_dict(self) -> Dict[str, Any]:
        return {"format": FORMAT, "max_margin": self.max_margin, "network": self.net.to_json()}

    def save(self, path: str) -> str:
        write_json_atomic(path, self.as_dict(), indent=1)
        return path

    @classmethod
    def from_dict(cls, d: Any) -> "FlipModel":
        """The model of ``as_dict`` (a file's, or one kept in an ES checkpoint);
        ValueError, KeyError, TypeError or AttributeError when it is not one."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"not an {FORMAT} model")
        net = MLPPolicy.from_json(d["network"])
        if not np.all(np.isfinite(net.params)) or not np.all(np.isfinite(net.sigma)):
            raise ValueError("its network has non-finite numbers")
        return cls(net, float(d["max_margin"]))

    @classmethod
    def load(cls, path: str) -> "FlipModel":
        try:
            with open(path) as f:
                return cls.from_dict(json.load(f))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PolicyFileError(f"{path}: cannot load the eviction flip model: {exc}") from None

    def export_onnx(self, path: str) -> str:
        """The network as ONNX: input ``question`` (float [1, len(QUESTION)]), output
        ``runner_up_score`` (float [1]); the model's JSON in ``doc_string``."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper
        n = len(QUESTION)
        body, body_inits = self.net.network_nodes("t", "score")
        inits = [numpy_helper.from_array(np.ones(1, np.float32), "one"),
                 numpy_helper.from_array(np.array([1], np.int64), "out_shape"), *body_inits]
        nodes = [*slog_nodes("question", "t"), *body]
        nodes.append(helper.make_node("Reshape", ["score", "out_shape"], ["runner_up_score"]))
        graph = helper.make_graph(nodes, "mlbridge_eviction_flip",
                                  [helper.make_tensor_value_info("question", TensorProto.FLOAT, [1, n])],
                                  [helper.make_tensor_value_info("runner_up_score", TensorProto.FLOAT, [1])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mlbridge")
        model.ir_version = 8
        model.doc_string = json.dumps({"format": FORMAT, "max_margin": self.max_margin, "features": list(QUESTION)})
        onnx.checker.check_model(model)
        return replace_when_complete(path + ".tmp", path, lambda tmp: onnx.save(model, tmp))


class OnnxFlipModel(FlipModel):
    """A flip model's ``.onnx`` (export_onnx) served by onnxruntime."""

    def __init__(self, path: str) -> None:   # noqa: D107 - no network object: the session scores
        try:
            import onnxruntime as ort
        except ImportError:
            raise PolicyFileError("serving an .onnx eviction flip model needs onnxruntime") from None
        try:
            import onnx
            meta = json.loads(onnx.load(path).doc_string)
            if meta.get("format") != FORMAT or meta.get("features") != list(QUESTION):
                raise ValueError(f"not an {FORMAT} model")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            self._sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            self.max_margin = float(meta["max_margin"])
        except Exception as exc:
            raise PolicyFileError(f"{path}: cannot load the eviction flip model: {exc}") from None

    def score(self, row: np.ndarray) -> float:
        return float(self._sess.run(None, {"question": row.reshape(1, -1).astype(np.float32)})[0][0])


class FlipModelPolicy:
    """``policy(obs) -> index_to_evict``: the default's answer, or its runner-up
    where the flip model says so (never an index whose mask is 0)."""

    def __init__(self, model: FlipModel) -> None:
        self.model = model

    def __call__(self, obs: Any) -> int:
        from .search import NO_ALTERNATIVE, rank
        choice, alt, margin = rank(obs)
        if alt != NO_ALTERNATIVE and self.model(obs, choice, alt, margin):
            return alt
        return choice


def load_flip_policy(path: str) -> FlipModelPolicy:
    """A flip model file (``.json`` or ``.onnx``) as an eviction policy."""
    return FlipModelPolicy(OnnxFlipModel(path) if path.endswith(".onnx") else FlipModel.load(path))


def untrained(hidden: Optional[tuple] = (8,), seed: int = 0) -> MLPPolicy:
    """A network that never flips (output layer zero: score 0, not > 0; hidden
    layers drawn from SEED, for a fit to start from)."""
    return MLPPolicy(QUESTION, hidden or (), output="runner_up_score", seed=seed)
