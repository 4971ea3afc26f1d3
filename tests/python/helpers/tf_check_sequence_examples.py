"""Run with a python that has TensorFlow: parse an exported TFRecord the way
ml-compiler-opt's trainers do (tf.data.TFRecordDataset +
tf.io.parse_single_sequence_example with FixedLenSequenceFeature scalars:
observation features int64, inlining_decision int64, reward float32) and print
the parsed lists of the first record as one JSON line.

usage: tf_check_sequence_examples.py FILE.tfrecord '["feature", ...]'
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

path, names = sys.argv[1], json.loads(sys.argv[2])
spec = {n: tf.io.FixedLenSequenceFeature(shape=(), dtype=tf.int64) for n in names}
spec["delta_size"] = tf.io.FixedLenSequenceFeature(shape=(), dtype=tf.int64)
spec["reward"] = tf.io.FixedLenSequenceFeature(shape=(), dtype=tf.float32)
for raw in tf.data.TFRecordDataset([path]).take(1):
    _, lists = tf.io.parse_single_sequence_example(raw, sequence_features=spec)
    print(json.dumps({k: v.numpy().tolist() for k, v in lists.items()}))
