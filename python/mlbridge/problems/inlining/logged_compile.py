"""Compile one corpus module with the mlbridge plugin logging every inliner
query (LLVM's training-log format: the 38 features, the stock heuristic's
answer, the answer taken), optionally with answers inverted at chosen queries
(``-mlbridge-inline-flip``) and a policy deciding in-process. The primitive of
the -Oz teacher (no flip, no policy: the stock heuristic's own decisions) and of
learning from search (search.py)."""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ...corpus.compile import CompileOptions, CompiledModule, Policy, Toolchain, compile_module, plugin_args
from ...corpus.layout import Module
from ...llvm.inliner_features import DEFAULT_DECISION, FEATURES
from ...llvm.training_log import read_training_log
from .problem import InliningForSize

_OZ = Policy("oz", "oz")
_INLINING = InliningForSize()
_DECISION = "inlining_decision"


@dataclass
class LoggedDecisions:
    """Per query: raw features [n, 38], the stock answer, the answer taken, and
    (for the search) whether a flip was tried there."""
    x: np.ndarray
    default: np.ndarray
    decision: np.ndarray
    tested: np.ndarray


def read_decisions(log_path: str) -> Optional[LoggedDecisions]:
    """A training log's queries as a LoggedDecisions (None when it logged none)."""
    log = read_training_log(log_path)
    trajs = [t for t in log.trajectories if t.steps]
    if not trajs:
        return None
    x = np.concatenate([np.column_stack([t.features[n].reshape(t.steps) for n in FEATURES]) for t in trajs])
    default = np.concatenate([t.features[DEFAULT_DECISION].reshape(t.steps) for t in trajs]).astype(np.int8)
    decision = np.concatenate([t.features[_DECISION].reshape(t.steps) for t in trajs]).astype(np.int8)
    return LoggedDecisions(x.astype(np.int64), default, decision, np.zeros(len(default), bool))


def _flip_args(plugin: str, log_path: str, flips: Sequence[int], model: Optional[str]) -> List[str]:
    args = plugin_args(plugin) + _INLINING.training_log_options(log_path)
    if model:
        args += ["-mllvm", "-mlbridge-inline-runner=onnx", "-mllvm", f"-mlbridge-inline-model={model}"]
    if flips:
        args += ["-mllvm", "-mlbridge-inline-flip=" + ",".join(str(int(i)) for i in sorted(flips))]
    return args


def compile_with_flips(module: Module, flips: Sequence[int], toolchain: Toolchain, work: str, *,
                       timeout: float = 120.0, want_log: bool = True, model: Optional[str] = None
                       ) -> Tuple[CompiledModule, Optional[LoggedDecisions]]:
    """Compiles ``module`` with the stock heuristic (or the ONNX policy
    ``model``, in-process) deciding, its answers inverted at ``flips``; the
    result (its size; ok=False with the reason when it failed) and
    (``want_log``) the logged trajectory, or None when nothing was logged."""
    if not toolchain.plugin:
        raise ValueError("logging the inliner's decisions needs the mlbridge LLVM plugin")
    key = hashlib.sha1(module.name.encode()).hexdigest()[:16]
    log_path = os.path.join(work, f"{key}.{threading.get_ident()}.log")
    opts = CompileOptions(timeout=timeout, extra_args=lambda m: _flip_args(toolchain.plugin or "", log_path, flips,
                                                                                  model))
    try:
        r = compile_module(module, _OZ, work, toolchain, opts, tag=f"flip{threading.get_ident()}")
        if not r.ok or not want_log or not os.path.exists(log_path):
            return r, None
        return r, read_decisions(log_path)
    finally:
        try:
            os.unlink(log_path)
        except OSError:
            pass


