"""The shipped eviction policies, for ``--policy python:regalloc_eviction_policy:NAME``
(``PYTHONPATH=policies/regalloc_eviction``); all answer over stock llc-19's
interactive channel.

- ``flip_policy`` (issue 38): LLVM's default advisor exactly, taking its runner-up
  where ``flip_model.json``'s network says so; ``flip_onnx_policy`` serves the
  same network from ``flip_model.onnx`` with onnxruntime (the same answers).
- ``policy`` (issue 23): ``policy.json``'s linear weights in Python;
  ``onnx_policy`` serves ``policy.onnx`` with onnxruntime (the same answers).
- ``default``: the default advisor's rule over the channel
  (``DefaultAdvisor``), the flip policy's start."""
import os

from mlbridge.problems.eviction.default_advisor import DefaultAdvisor
from mlbridge.problems.eviction.flip_model import load_flip_policy
from mlbridge.problems.eviction.policy import EvictionPolicy, OnnxEvictionPolicy

HERE = os.path.dirname(os.path.abspath(__file__))
policy = EvictionPolicy.load(os.path.join(HERE, "policy.json"))
flip_policy = load_flip_policy(os.path.join(HERE, "flip_model.json"))
default = DefaultAdvisor()
_onnx = {}


def _served(name, load):
    if name not in _onnx:
        _onnx[name] = load(os.path.join(HERE, name))
    return _onnx[name]


def onnx_policy(obs):
    return _served("policy.onnx", OnnxEvictionPolicy)(obs)


def flip_onnx_policy(obs):
    return _served("flip_model.onnx", load_flip_policy)(obs)
