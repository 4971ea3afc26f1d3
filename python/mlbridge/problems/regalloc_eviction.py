"""Register-allocation eviction for speed: the greedy allocator asks which live
range to evict, stock LLVM 19's advisor asks over its interactive channel (no
plugin: ``-regalloc-enable-advisor=release`` alone cannot create the advisor in
Debian's LLVM), and a register-allocation score is measured against the
default advisor (ml-compiler-opt's rl/regalloc). Its corpus scoring and
training come with issue 23's second part: no command serves it yet."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ..core.spec import TensorSpec
from .base import Compiled, Decider, Problem, ProblemError

#: candidates per question: 32 live ranges that may be evicted, then the one being allocated
CANDIDATES = 33
_INT = ("mask", "is_free", "is_hint", "is_local", "max_stage", "min_stage")
#: LLVM 19's MLRegallocEvictAdvisor features, in the order its channel sends them
_PER_CANDIDATE = ("mask", "is_free", "nr_urgent", "nr_broken_hints", "is_hint", "is_local", "nr_rematerializable",
                  "nr_defs_and_uses", "weighed_reads_by_max", "weighed_writes_by_max", "weighed_read_writes_by_max",
                  "weighed_indvars_by_max", "hint_weights_by_max", "start_bb_freq_by_max", "end_bb_freq_by_max",
                  "hottest_bb_freq_by_max", "liverange_size", "use_def_density", "max_stage", "min_stage")


class RegallocEviction(Problem):
    name = "regalloc-eviction"
    summary = "which live range the greedy register allocator evicts, for the fastest code"
    features = tuple(TensorSpec(n, "int64_t" if n in _INT else "float", (1, CANDIDATES)) for n in _PER_CANDIDATE) \
        + (TensorSpec("progress", "float", (1,)),)
    answer = TensorSpec("index_to_evict", "int64_t", (1,))
    baseline = "LLVM's default eviction advisor"
    measured = "the register-allocation score (copies, loads, stores, rematerialization by block frequency)"
    settings = ("objects",)
    commands = frozenset()
    refusal = "its corpus scoring and training come with issue 23 part 2"
    in_plugin = False

    def policy_options(self, policy: Decider) -> List[str]:
        if policy.kind != "python":
            raise ProblemError("policy", f"{{arg}} {policy.spec}: the {self.name} problem is answered over stock "
                               "LLVM's interactive channel: give a python:MODULE:FN policy")
        return ["-regalloc-enable-advisor=release", "-regalloc-evict-interactive-channel-base={base}"]

    def verdict(self, stderr: str, policy: Decider) -> Tuple[Optional[str], Optional[int]]:
        # Stock LLVM reports nothing: a compile that exited cleanly was the policy's.
        return None, None

    def measure(self, compiled: Compiled) -> float:
        # An object's bytes do not show the allocator's work: see score().
        raise ProblemError("problem", f"{{arg}} {self.name}: measured by score() on the module's IR, not from "
                           "an object (corpus scoring of eviction is issue 23 part 2)")

    def score(self, ir_path: str, policy: Any = None, **kw: Any) -> float:
        """The register-allocation score of IR_PATH, with POLICY deciding every
        eviction (None: the default advisor): llc-19 up to the end of register
        allocation, scored by ``mlbridge.llvm.regalloc_score.score_module``."""
        try:
            from ..llvm.regalloc_score import score_module
        except ImportError:
            raise ProblemError("problem", f"{{arg}} {self.name}: its register-allocation score "
                               "(mlbridge.llvm.regalloc_score.score_module) is not available") from None
        return float(score_module(ir_path, policy=policy, **kw).total)
