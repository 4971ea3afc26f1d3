"""The in-process benchmark's models (bench/mlp_floor.h: MLP 300 -> 64 tanh ->
64 relu -> 15 softmax, and FC 50,000 -> 1) as TensorFlow SavedModels with the
very same weights, read from the ONNX files mlbridge-aot-bench-models writes.
Runs in the TF environment (bench/tfaot.cmake, configure time):

    python tfaot_bench_models.py ONNX_DIR OUT_DIR   -> OUT_DIR/mlp, OUT_DIR/fc50k
"""
import os
import sys

import onnx
from onnx import numpy_helper
import tensorflow as tf


def weights(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def save(fn, spec, out):
    class M(tf.Module):
        pass

    m = M()
    m.f = tf.function(fn, input_signature=[spec])
    tf.saved_model.save(m, out, signatures={"serving_default": m.f})


def main():
    src, out = sys.argv[1], sys.argv[2]
    w = weights(os.path.join(src, "aot_bench_mlp.onnx"))
    # Gemm transB=1: weights are [out, in].
    c = {k: tf.constant(v) for k, v in w.items()}

    def mlp(x):
        h = tf.tanh(tf.matmul(x, c["w1"], transpose_b=True) + c["b1"])
        h = tf.nn.relu(tf.matmul(h, c["w2"], transpose_b=True) + c["b2"])
        return {"probs": tf.nn.softmax(tf.matmul(h, c["w3"], transpose_b=True) + c["b3"])}

    save(mlp, tf.TensorSpec([1, 300], tf.float32, name="x"), os.path.join(out, "mlp"))
    f = {k: tf.constant(v) for k, v in weights(os.path.join(src, "aot_bench_fc50k.onnx")).items()}

    def fc(x):
        return {"y": tf.matmul(x, f["w"], transpose_b=True) + f["b"]}

    save(fc, tf.TensorSpec([1, 50000], tf.float32, name="x"), os.path.join(out, "fc50k"))


if __name__ == "__main__":
    main()
