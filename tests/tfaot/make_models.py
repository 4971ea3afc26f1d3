"""Builds the TensorFlow test models (run with the TF venv's Python, never
mlbridge's: scripts/get-tensorflow.sh):

    .deps/tf-venv/bin/python tests/tfaot/make_models.py OUT_DIR

OUT_DIR/inliner/   SavedModel with exactly LLVM 19's ML inliner signature: its
                   38 int64 [1] features, inlining_default, and TF-Agents'
                   step_type / discount / reward; output inlining_decision
                   int64 [1] = callee_basic_block_count <= 3 (the decision of
                   tests/integrations/llvm/models/callee_bb_le_3.onnx), computed
                   as an integer dot product so every engine is exact.
OUT_DIR/mlp/       SavedModel: x float32 [1,16] -> Dense(32, tanh) -> Dense(4)
                   -> probs (softmax) float32 [1,4] and action (argmax) int64 [1].
OUT_DIR/*/cases.json  random inputs and TensorFlow's own outputs for them.
OUT_DIR/*.tflite   the same models converted by TensorFlow's TFLite converter,
                   and OUT_DIR/inliner_llvm/ as LLVM's development-mode model
                   folder (model.tflite + output_spec.json).
"""
import json
import importlib.util
import os
import sys

import numpy as np
import tensorflow as tf

# LLVM 19's FeatureMap order (llvm/Analysis/InlineModelFeatureMaps.h).
# The one definition, python/mlbridge/llvm/inliner_features.py, is loaded by path:
# this runs in the TensorFlow environment, where the mlbridge package does not import.
HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "inliner_features", os.path.join(HERE, "..", "..", "python", "mlbridge", "llvm", "inliner_features.py"))
_features = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_features)
FEATURES = list(_features.FEATURES)

CASES = 64


def inliner(out: str) -> None:
    w = np.zeros(len(FEATURES), np.int64)
    w[FEATURES.index("callee_basic_block_count")] = 1
    specs = [tf.TensorSpec([1], tf.int64, name=n) for n in FEATURES]
    specs += [tf.TensorSpec([1], tf.int64, name="inlining_default"),
              tf.TensorSpec([1], tf.int32, name="step_type"),
              tf.TensorSpec([1], tf.float32, name="discount"),
              tf.TensorSpec([1], tf.float32, name="reward")]
    names = [s.name for s in specs]

    class Policy(tf.Module):
        @tf.function(input_signature=specs)
        def action(self, *args):
            x = tf.concat(list(args[:len(FEATURES)]), axis=0)
            score = tf.reduce_sum(x * tf.constant(w), keepdims=True)
            return {"inlining_decision": tf.cast(score <= 3, tf.int64)}

    p = Policy()
    tf.saved_model.save(p, out, signatures={"serving_default": p.action})
    rng = np.random.default_rng(19)
    cases = []
    for _ in range(CASES):
        feed = {n: rng.integers(0, 8, size=[1]).astype(np.int64) for n in FEATURES}
        feed["inlining_default"] = np.array([1], np.int64)
        feed["step_type"] = np.array([0], np.int32)
        feed["discount"] = np.array([0], np.float32)
        feed["reward"] = np.array([0], np.float32)
        got = p.action(*[tf.constant(feed[n]) for n in names])
        cases.append({"inputs": {n: v.tolist() for n, v in feed.items()},
                      "outputs": {"inlining_decision": got["inlining_decision"].numpy().tolist()}})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f)


def mlp(out: str) -> None:
    rng = np.random.default_rng(7)
    w1 = tf.constant(rng.normal(0, 0.5, [16, 32]).astype(np.float32))
    b1 = tf.constant(rng.normal(0, 0.1, [32]).astype(np.float32))
    w2 = tf.constant(rng.normal(0, 0.5, [32, 4]).astype(np.float32))
    b2 = tf.constant(rng.normal(0, 0.1, [4]).astype(np.float32))

    class Mlp(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([1, 16], tf.float32, name="x")])
        def action(self, x):
            h = tf.tanh(tf.matmul(x, w1) + b1)
            logits = tf.matmul(h, w2) + b2
            return {"probs": tf.nn.softmax(logits), "action": tf.argmax(logits, axis=1, output_type=tf.int64)}

    m = Mlp()
    tf.saved_model.save(m, out, signatures={"serving_default": m.action})
    cases = []
    for _ in range(CASES):
        x = rng.normal(0, 1, [1, 16]).astype(np.float32)
        got = m.action(tf.constant(x))
        cases.append({"inputs": {"x": x.tolist()},
                      "outputs": {"probs": got["probs"].numpy().tolist(), "action": got["action"].numpy().tolist()}})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    inliner(os.path.join(out, "inliner"))
    mlp(os.path.join(out, "mlp"))
    for name in ("inliner", "mlp"):
        flat = tf.lite.TFLiteConverter.from_saved_model(os.path.join(out, name)).convert()
        with open(os.path.join(out, name + ".tflite"), "wb") as f:
            f.write(flat)
    llvm = os.path.join(out, "inliner_llvm")
    os.makedirs(llvm, exist_ok=True)
    with open(os.path.join(out, "inliner.tflite"), "rb") as src, open(os.path.join(llvm, "model.tflite"), "wb") as dst:
        dst.write(src.read())
    # LLVM's output_spec.json (TFModelEvaluator's format): the decision's tensor
    # by its TFLite name and port, as LLVM's development mode looks it up.
    interp = tf.lite.Interpreter(model_path=os.path.join(llvm, "model.tflite"))
    names = {d["index"]: d["name"] for d in interp.get_tensor_details()}
    out_index = interp.get_signature_runner().get_output_details()["inlining_decision"]["index"]
    tensor, _, port = names[out_index].partition(":")
    spec = [{"logging_name": "inlining_decision",
             "tensor_spec": {"name": tensor, "port": int(port or 0), "type": "int64_t", "shape": [1]}}]
    with open(os.path.join(llvm, "output_spec.json"), "w") as f:
        json.dump(spec, f)


if __name__ == "__main__":
    main()
