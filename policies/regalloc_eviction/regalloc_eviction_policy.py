"""The shipped eviction policy, for ``--policy python:regalloc_eviction_policy:policy``
(``PYTHONPATH=policies/regalloc_eviction``): ``policy`` runs ``policy.json``'s
weights in Python, ``onnx_policy`` serves ``policy.onnx`` with onnxruntime (the
same answers); both answer over stock llc-19's interactive channel."""
import os

from mlbridge.problems.eviction.policy import EvictionPolicy, OnnxEvictionPolicy

HERE = os.path.dirname(os.path.abspath(__file__))
policy = EvictionPolicy.load(os.path.join(HERE, "policy.json"))
_onnx = None


def onnx_policy(obs):
    global _onnx
    if _onnx is None:
        _onnx = OnnxEvictionPolicy(os.path.join(HERE, "policy.onnx"))
    return _onnx(obs)
