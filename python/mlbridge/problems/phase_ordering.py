"""Phase ordering (POSET-RL): the plugin's ``mlbridge-phase-order`` pass asks
for one of 15 pass subsequences per step, and the output's ``.text`` bytes are
measured against ``clang-19 -Oz`` (docs/phase-ordering.md). The pass is
registered by name only, so it runs in ``opt-19 -passes=mlbridge-phase-order``,
not inside a corpus module's clang pipeline: no corpus or training command
serves it; examples/phase_ordering/train.py trains it."""
from __future__ import annotations

from typing import List, Optional, Tuple

from ..core.spec import TensorSpec
from .base import Compiled, Decider, Problem, ProblemError

#: module_features' length (integrations/llvm/phase_ordering_features.cc)
MODULE_FEATURES = 32


class PhaseOrdering(Problem):
    name = "phase-ordering"
    summary = "which pass subsequence runs next on a module, for the smallest .text"
    features = (TensorSpec("module_features", "int64_t", (MODULE_FEATURES,)), TensorSpec("step", "int64_t", (1,)))
    answer = TensorSpec("action", "int64_t", (1,))
    baseline = "clang-19 -Oz's pass pipeline"
    measured = ".text bytes of the output after llc-19 -filetype=obj"
    settings = ()
    commands = frozenset()
    refusal = ("its pass runs in opt-19 -passes=mlbridge-phase-order, not in a corpus module's clang pipeline; "
               "see examples/phase_ordering/")
    in_plugin = True

    def policy_options(self, policy: Decider) -> List[str]:
        # opt-19's options, next to -load-pass-plugin and -passes=mlbridge-phase-order
        if policy.kind == "onnx":
            return [f"-mlbridge-po-model={policy.model}"]
        if policy.kind == "python":
            return ["-mlbridge-po-pipe={base}"]
        raise ProblemError("policy", f"{{arg}} {policy.spec}: the {self.name} problem takes MODEL.onnx or "
                           "python:MODULE:FN")

    def verdict(self, stderr: str, policy: Decider) -> Tuple[Optional[str], Optional[int]]:
        return None, None

    def measure(self, compiled: Compiled) -> float:
        return float(compiled.text_bytes) if compiled.text_bytes is not None else float("nan")
