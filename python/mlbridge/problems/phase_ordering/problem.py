"""Phase ordering: which passes run on a module, in which order, for the
smallest program.

Two ways to decide, both in the mlbridge LLVM plugin:

* inside ``clang-19`` (the corpus commands, ``mlbridge tune``): a pass pipeline
  replaces the module's -O pipeline, one for every module (``pipeline:TEXT``,
  what the tuner's candidates are) or per source file from a tuning file
  (``tuning:FILE``, what ``mlbridge tune`` writes); code generation is clang's
  own. Measured in stored bytes (code, read-only and initialized data) against
  ``clang-19 -Oz`` (docs/tuning.md);
* in ``opt-19 -passes=mlbridge-phase-order`` (POSET-RL style): a model picks one
  of 15 pass subsequences per step from 32 module features
  (docs/phase-ordering.md; examples/phase_ordering/ trains one).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from ...core.spec import TensorSpec
from ..base import Compiled, PolicyLike, Problem, ProblemError

#: module_features' length (integrations/llvm/phase_ordering_features.cc)
MODULE_FEATURES = 32
#: the plugin's trace line for a module whose pipeline it replaced
APPLIED = "mlbridge-tuning: source "
#: the plugin's warnings about an order policy (the module compiled as -Oz)
POLICY_WARNING = "mlbridge-po-policy: "


class PhaseOrdering(Problem):
    name = "phase-ordering"
    summary = "which passes run on a module, in which order, for the fewest stored bytes"
    features = (TensorSpec("module_features", "int64_t", (MODULE_FEATURES,)), TensorSpec("step", "int64_t", (1,)))
    answer = TensorSpec("action", "int64_t", (1,))
    baseline = "clang-19 -Oz's pass pipeline"
    measured = "stored bytes (Berkeley text + data) of the object (or of the linked program)"
    unit = "stored bytes"
    settings = ("objects", "linked")
    #: train room runs `mlbridge tune`; the log commands read the logs of `mlbridge tune log` (logs.py)
    commands = frozenset({"corpus evaluate", "train room", "log show", "log export"})
    refusal = ("pass orders are searched per module by `mlbridge tune` (docs/tuning.md); an order policy is "
               "learned by `mlbridge train orders` (docs/phase-ordering-policy.md); a POSET-RL policy that picks "
               "orders is trained by examples/phase_ordering/")
    in_plugin = True

    def policy_options(self, policy: PolicyLike) -> List[str]:
        # -mlbridge-tuning-trace: the line verdict() reads, one per module
        if policy.kind == "tuning":
            return [f"-mlbridge-tuning={policy.model}", "-mlbridge-tuning-trace"]
        if policy.kind == "pipeline":
            return [f"-mlbridge-po-pipeline={policy.model}", "-mlbridge-tuning-trace"]
        if policy.kind == "orders":
            return [f"-mlbridge-po-policy={policy.model}", "-mlbridge-tuning-trace"]
        raise ProblemError("policy", f"{{arg}} {policy.spec}: in clang the {self.name} problem takes tuning:FILE "
                           "(from `mlbridge tune`), orders:FILE (from `mlbridge train orders`) or pipeline:TEXT")

    def verdict(self, stderr: str, policy: PolicyLike) -> Tuple[Optional[str], Optional[int]]:
        """Decisions: modules whose pipeline was replaced (an order policy: modules
        where one of its orders was kept). A pipeline given for every module that
        the plugin did not apply is a failure (no size of -Oz's stands in for it);
        a tuning file or an order policy may leave a module to -Oz."""
        if policy.kind == "oz":
            return None, None
        lines = [ln for ln in stderr.splitlines() if ln.startswith(APPLIED)]
        applied = sum(1 for ln in lines if ": applied " in ln or "], kept order " in ln)
        if policy.kind == "pipeline" and applied == 0:
            return "the plugin did not replace the pipeline (was it loaded, and the module optimized?)", None
        if policy.kind == "tuning" and not lines:
            return "the plugin did not read the tuning file (was it loaded?)", None
        if policy.kind == "orders":
            # a policy the plugin could not use compiled the module as -Oz: that is
            # a failure of the policy, never an -Oz size reported as its result
            for ln in stderr.splitlines():
                if POLICY_WARNING in ln and "warning" in ln:
                    return ln.split(POLICY_WARNING, 1)[1].strip(), None
            if not any(": policy tried " in ln for ln in lines):
                return "the plugin did not apply the order policy (was it loaded, and the module optimized?)", None
        return None, applied

    def measure(self, compiled: Compiled) -> float:
        stored = getattr(compiled, "stored_bytes", None)
        return float(stored) if stored is not None else float("nan")
