"""A policy family for register-allocation eviction (issue 23): one linear score
per candidate over the candidate's features, the answer the best-scored
candidate whose ``mask`` is 1 (never an illegal index).

The same weights run two ways, with the same answers:

- :class:`EvictionPolicy`, a Python callable ``policy(obs) -> index_to_evict``,
  served over stock llc-19's interactive channel
  (``-regalloc-evict-interactive-channel-base``);
- :func:`export_onnx` writes it as a small ``.onnx`` (LLVM 19's 21 eviction
  tensors in, ``index_to_evict`` out), served in Python by
  :class:`OnnxEvictionPolicy` (onnxruntime). Stock llc-19 cannot load an ONNX
  model in-process (its release advisor is a compiled-in AOT model or the
  interactive channel), so the ``.onnx`` answers over the channel too.

The per-candidate inputs (``PHI``; candidates 0..31 are physical registers,
32 is the live range being allocated, whose choice means "evict nothing"):
the 19 features LLVM sends besides ``mask`` (already normalized by LLVM:
``_by_max`` features over the question's candidates; NaN read as 0, clipped to
+-1e6: an unspillable range's infinite weight gives NaN), then five derived ones:
``rel_weight`` (the candidate's largest interfering spill weight,
``use_def_density``, minus the allocated range's), ``lighter`` (1 when
``rel_weight < 0``: every interference is lighter than the allocated range,
the default advisor's condition for evicting), ``lighter_hint`` (``lighter``
times ``is_hint``), ``is_self`` (1 for column 32)
and ``self_progress`` (``progress`` on column 32). Column 32's raw features
and ``rel_weight``/``lighter``/``lighter_hint`` are zeroed, so its score is
``w[is_self] + w[self_progress] * progress``.

:func:`warm_start` hand-derives LLVM's default rule
(``DefaultEvictionAdvisor::canEvictInterferenceBasedOnCost``: evict only
lighter interference, then the fewest broken hints, then the lightest largest
weight, the first in allocation order on ties; nothing when no register
qualifies) as weights of this family."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from ...core.files import replace_when_complete, write_json_atomic

CANDIDATES = 33
SELF = CANDIDATES - 1
#: LLVM 19's per-candidate features besides ``mask``, in its order
RAW = ("is_free", "nr_urgent", "nr_broken_hints", "is_hint", "is_local", "nr_rematerializable",
       "nr_defs_and_uses", "weighed_reads_by_max", "weighed_writes_by_max", "weighed_read_writes_by_max",
       "weighed_indvars_by_max", "hint_weights_by_max", "start_bb_freq_by_max", "end_bb_freq_by_max",
       "hottest_bb_freq_by_max", "liverange_size", "use_def_density", "max_stage", "min_stage")
DERIVED = ("rel_weight", "lighter", "lighter_hint", "is_self", "self_progress")
PHI = RAW + DERIVED
_UDD = RAW.index("use_def_density")
_HINT = RAW.index("is_hint")
#: features are clipped to +-LIMIT (NaN: 0), in Python and in the ONNX model
LIMIT = np.float32(1.0e6)
#: the inputs the ONNX model takes (LLVM's names; ``progress`` is (1,))
INPUTS = ("mask",) + RAW + ("progress",)

FORMAT = "mlbridge-eviction-linear/1"


class PolicyFileError(ValueError):
    """A policy file that cannot be loaded (one line)."""


def phi(obs: Mapping[str, Any]) -> np.ndarray:
    """The (33, len(PHI)) float32 per-candidate inputs of one question."""
    x = np.zeros((CANDIDATES, len(PHI)), np.float32)
    n = len(RAW)
    for k, name in enumerate(RAW):
        x[:, k] = np.asarray(obs[name], np.float32).reshape(-1)
    # an unspillable range's infinite weight makes LLVM's normalized features inf or NaN
    x[:, :n] = np.clip(np.where(np.isnan(x[:, :n]), np.float32(0), x[:, :n]), -LIMIT, LIMIT)
    rel = x[:, _UDD] - x[SELF, _UDD]
    x[:, n] = rel
    x[:, n + 1] = (rel < 0).astype(np.float32)
    x[:, n + 2] = x[:, n + 1] * x[:, _HINT]
    x[SELF, :n + 3] = 0.0
    x[SELF, n + 3] = 1.0
    p = np.asarray(obs["progress"], np.float32).reshape(-1)[0]
    x[SELF, n + 4] = np.clip(np.float32(0) if np.isnan(p) else p, -LIMIT, LIMIT)
    return x


def choose(scores: np.ndarray, mask: np.ndarray) -> int:
    """The first best-scored candidate whose mask is 1 (float32, as the ONNX model)."""
    s = np.where(np.asarray(mask).reshape(-1) != 0, scores.astype(np.float32), np.float32(-3.0e38))
    return int(np.argmax(s))


class EvictionPolicy:
    """``policy(obs) -> index_to_evict``: argmax of ``phi(obs) @ weights`` over the legal candidates."""

    def __init__(self, weights: Sequence[float]) -> None:
        w = np.asarray(weights, np.float32).reshape(-1)
        if w.shape != (len(PHI),):
            raise ValueError(f"an eviction policy has {len(PHI)} weights ({', '.join(PHI)}), not {w.size}")
        if not np.all(np.isfinite(w)):
            raise ValueError("an eviction policy's weights must be finite")
        self.weights = w

    def scores(self, obs: Mapping[str, Any]) -> np.ndarray:
        return phi(obs) @ self.weights

    def __call__(self, obs: Mapping[str, Any]) -> int:
        return choose(self.scores(obs), obs["mask"])

    # -- files -------------------------------------------------------------------------

    def as_dict(self) -> Dict[str, Any]:
        return {"format": FORMAT, "features": list(PHI), "weights": [float(v) for v in self.weights]}

    def save(self, path: str) -> None:
        write_json_atomic(path, self.as_dict(), indent=1)

    @classmethod
    def load(cls, path: str) -> "EvictionPolicy":
        try:
            with open(path) as f:
                d = json.load(f)
            if d.get("format") != FORMAT or list(d.get("features", [])) != list(PHI):
                raise ValueError(f"not an {FORMAT} policy over {len(PHI)} features")
            return cls(d["weights"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PolicyFileError(f"{path}: cannot load the eviction policy: {exc}") from None


def warm_start() -> EvictionPolicy:
    """LLVM's default eviction rule, as weights (module docstring): a register whose
    interference is all lighter scores 1000 - 100 * broken hints - largest weight
    (in [899, 1000]; a hinted one 3000 more: the default takes the first evictable
    hint), one with heavier interference at most 0, evicting nothing 500."""
    w = np.zeros(len(PHI), np.float32)
    w[PHI.index("lighter")] = 1000.0
    w[PHI.index("lighter_hint")] = 3000.0
    w[PHI.index("nr_broken_hints")] = -100.0
    w[PHI.index("use_def_density")] = -1.0
    w[PHI.index("is_self")] = 500.0
    return EvictionPolicy(w)


#: the scale of each weight for ES (trainer.py): a step of 1 in ES's
#: space moves a weight by this much
SCALE = np.array([{"lighter": 100.0, "lighter_hint": 100.0, "is_self": 100.0, "nr_broken_hints": 10.0}.get(n, 1.0)
                  for n in PHI], np.float32)


def first_legal(obs: Mapping[str, Any]) -> int:
    return int(np.flatnonzero(np.asarray(obs["mask"]).reshape(-1))[0])


# -- ONNX --------------------------------------------------------------------------------

def export_onnx(policy: EvictionPolicy, path: str) -> str:
    """POLICY as an ONNX model (opset 13): inputs ``mask`` (int64, (1, 33)), the 19
    raw features ((1, 33), LLVM's types) and ``progress`` (float, (1,)); output
    ``index_to_evict`` (int64, (1,)), the same answer as ``policy(obs)``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: List[Any] = []
    inits: List[Any] = []
    inputs = []
    cols = []
    ints = {"is_free", "is_hint", "is_local", "max_stage", "min_stage"}
    for name in ("mask",) + RAW:
        t = TensorProto.INT64 if name in ints or name == "mask" else TensorProto.FLOAT
        inputs.append(helper.make_tensor_value_info(name, t, [1, CANDIDATES]))
    inputs.append(helper.make_tensor_value_info("progress", TensorProto.FLOAT, [1]))

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    const("zero", np.zeros((), np.float32))
    const("limit", np.array(LIMIT, np.float32))
    const("neg_limit", np.array(-LIMIT, np.float32))
    for name in RAW:
        src = name
        if name in ints:
            nodes.append(helper.make_node("Cast", [name], [name + "_f"], to=TensorProto.FLOAT))
            src = name + "_f"
        nodes.append(helper.make_node("Reshape", [src, const(name + "_shape", np.array([CANDIDATES, 1], np.int64))],
                                      [name + "_r"]))
        nodes.append(helper.make_node("IsNaN", [name + "_r"], [name + "_nan"]))
        nodes.append(helper.make_node("Where", [name + "_nan", "zero", name + "_r"], [name + "_nn"]))
        nodes.append(helper.make_node("Clip", [name + "_nn", "neg_limit", "limit"], [name + "_col"]))
        cols.append(name + "_col")
    # derived columns
    self_mask = np.zeros((CANDIDATES, 1), np.float32)
    self_mask[SELF, 0] = 1.0
    const("self_onehot", self_mask)
    const("not_self", 1.0 - self_mask)
    const("self_index", np.array([SELF], np.int64))
    udd = "use_def_density_col"
    nodes.append(helper.make_node("Gather", [udd, "self_index"], ["udd_self"], axis=0))          # (1, 1)
    nodes.append(helper.make_node("Sub", [udd, "udd_self"], ["rel_weight_col"]))
    nodes.append(helper.make_node("Less", ["rel_weight_col", "zero"], ["lighter_b"]))
    nodes.append(helper.make_node("Cast", ["lighter_b"], ["lighter_col"], to=TensorProto.FLOAT))
    nodes.append(helper.make_node("Mul", ["lighter_col", "is_hint_col"], ["lighter_hint_col"]))
    nodes.append(helper.make_node("Reshape", ["progress", const("one_one", np.array([1, 1], np.int64))],
                                  ["progress_r"]))
    nodes.append(helper.make_node("IsNaN", ["progress_r"], ["progress_nan"]))
    nodes.append(helper.make_node("Where", ["progress_nan", "zero", "progress_r"], ["progress_nn"]))
    nodes.append(helper.make_node("Clip", ["progress_nn", "neg_limit", "limit"], ["progress_11"]))
    nodes.append(helper.make_node("Mul", ["self_onehot", "progress_11"], ["self_progress_col"]))
    nodes.append(helper.make_node("Concat", cols + ["rel_weight_col", "lighter_col", "lighter_hint_col"], ["cand_raw"], axis=1))
    nodes.append(helper.make_node("Mul", ["cand_raw", "not_self"], ["cand"]))
    nodes.append(helper.make_node("Concat", ["cand", "self_onehot", "self_progress_col"], ["phi"], axis=1))
    const("weights", policy.weights.reshape(-1, 1).astype(np.float32))
    nodes.append(helper.make_node("MatMul", ["phi", "weights"], ["scores_col"]))                  # (33, 1)
    nodes.append(helper.make_node("Reshape", ["scores_col", const("flat", np.array([CANDIDATES], np.int64))],
                                  ["scores"]))
    nodes.append(helper.make_node("Reshape", ["mask", "flat"], ["mask_flat"]))
    nodes.append(helper.make_node("Cast", ["mask_flat"], ["mask_b"], to=TensorProto.BOOL))
    const("neg", np.array(-3.0e38, np.float32))
    nodes.append(helper.make_node("Where", ["mask_b", "scores", "neg"], ["masked"]))
    nodes.append(helper.make_node("ArgMax", ["masked"], ["index_to_evict"], axis=0, keepdims=1,
                                  select_last_index=0))
    out = helper.make_tensor_value_info("index_to_evict", TensorProto.INT64, [1])
    graph = helper.make_graph(nodes, "mlbridge_eviction_linear", inputs, [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="mlbridge")
    model.doc_string = json.dumps({"format": FORMAT, "features": list(PHI)})
    onnx.checker.check_model(model)
    return replace_when_complete(path + ".tmp", path, lambda tmp: onnx.save(model, tmp))


class OnnxEvictionPolicy:
    """An exported eviction ``.onnx`` served by onnxruntime: ``policy(obs) -> index``."""

    def __init__(self, path: str) -> None:
        try:
            import onnxruntime as ort
        except ImportError:
            raise PolicyFileError("serving an .onnx eviction policy needs onnxruntime (pip install "
                                  "onnxruntime)") from None
        try:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = 1
            self._sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise PolicyFileError(f"{path}: cannot load the ONNX model: {exc}") from None
        self._inputs = {i.name: i.type for i in self._sess.get_inputs()}
        missing = [n for n in INPUTS if n not in self._inputs]
        if missing:
            raise PolicyFileError(f"{path}: not an eviction model: no input {missing[0]!r}")

    def __call__(self, obs: Mapping[str, Any]) -> int:
        feed = {}
        for name, t in self._inputs.items():
            dt = np.int64 if "int64" in t else np.float32
            shape = (1,) if name == "progress" else (1, CANDIDATES)
            feed[name] = np.asarray(obs[name], dt).reshape(shape)
        return int(self._sess.run(None, feed)[0].reshape(-1)[0])


def load_policy(path: str) -> Any:
    """A policy file: an ``.onnx`` (OnnxEvictionPolicy) or a JSON (EvictionPolicy)."""
    if path.endswith(".onnx"):
        return OnnxEvictionPolicy(path)
    return EvictionPolicy.load(path)
