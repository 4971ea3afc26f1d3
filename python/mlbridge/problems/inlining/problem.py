"""Inlining for size: LLVM's ML inliner decides every call site of the -Oz
pipeline, the mlbridge plugin runs the policy, and the object's ``.text`` bytes
are measured against -Oz's own heuristic (ml-compiler-opt's rl/inlining)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ...core.spec import TensorSpec
from ...llvm.inliner_features import DECISION, FEATURES
from ..base import COMMANDS, Compiled, PolicyLike, Problem, ProblemError

#: the plugin's bound on each remote (pipe) decision, in ms
PIPE_DECISION_TIMEOUT_MS = 10000


class InliningForSize(Problem):
    name = "inlining-size"
    summary = "inline or not at each call site, for the smallest .text"
    features = tuple(TensorSpec(n, "int64_t", (1,)) for n in FEATURES)
    answer = TensorSpec(DECISION, "int64_t", (1,))
    baseline = "-Oz's inlining heuristic (the module's own pipeline, no plugin)"
    measured = ".text bytes of the object (or of the linked program)"
    settings = ("objects", "linked", "lto", "thinlto")
    commands = frozenset(COMMANDS)
    in_plugin = True
    linker_log_variable = "MLBRIDGE_INLINE_TRAINING_LOG"

    def policy_options(self, policy: PolicyLike) -> List[str]:
        _refuse_pass_order(policy)
        if policy.kind == "onnx":
            opts = ["-mlbridge-inline-runner=onnx", f"-mlbridge-inline-model={policy.model}"]
        elif policy.kind == "callees":
            opts = [f"-mlbridge-inline-callees={policy.model}"]
        else:   # python: answered over the plugin's pipe runner
            opts = ["-mlbridge-inline-runner=pipe", "-mlbridge-inline-channel={base}",
                    f"-mlbridge-inline-timeout-ms={PIPE_DECISION_TIMEOUT_MS}"]
        # the report line verdict() reads: without it a size is not the policy's
        return opts + ["-mlbridge-inline-stats"]

    def linker_environment(self, policy: PolicyLike) -> Dict[str, str]:
        """policy_options as the plugin's ``MLBRIDGE_INLINE_*`` variables (docs/llvm-plugin.md),
        for the plugin inside ld.lld."""
        _refuse_pass_order(policy)
        env = {"MLBRIDGE_INLINE_STATS": "1"}   # the report verdict() reads, as in a compile
        if policy.kind == "onnx":
            env.update(MLBRIDGE_INLINE_RUNNER="onnx", MLBRIDGE_INLINE_MODEL=str(policy.model))
        elif policy.kind == "callees":
            env["MLBRIDGE_INLINE_CALLEES"] = str(policy.model)
        else:
            env.update(MLBRIDGE_INLINE_RUNNER="pipe", MLBRIDGE_INLINE_CHANNEL="{base}",
                       MLBRIDGE_INLINE_TIMEOUT_MS=str(PIPE_DECISION_TIMEOUT_MS))
        return env

    def training_log_options(self, path: str) -> List[str]:
        return ["-mllvm", f"-mlbridge-inline-training-log={path}"]

    def verdict(self, stderr: str, policy: PolicyLike) -> Tuple[Optional[str], Optional[int]]:
        """A plugin warning means it fell back to the stock inliner; no report at
        all means it never decided (not loaded, or no inliner ran): either way
        the size is not the policy's, so it must not be scored as one. The
        warning counts for the baseline too (a logged -Oz run loads the plugin)."""
        warning = next((ln for ln in stderr.splitlines() if ln.startswith("mlbridge: warning:")), None)
        if warning is not None:
            return f"the policy was not used: {warning[len('mlbridge: warning: '):]}", None
        if policy.kind == "oz":
            return None, None
        decisions = _decisions(stderr)
        if decisions is None:
            return "the plugin did not report its inliner (was the module's pipeline without an inliner?)", None
        return None, decisions

    def capped(self, stderr: str) -> int:
        """Sum of `mlbridge: inliner cap: N call sites ...` lines: calls MLInlineAdvisor
        refused without asking once the module outgrew -ml-advisor-size-increase-threshold."""
        total = 0
        for ln in stderr.splitlines():
            if ln.startswith(_CAP):
                words = ln[len(_CAP):].split()
                if words and words[0].isdigit():
                    total += int(words[0])
        return total

    def measure(self, compiled: Compiled) -> float:
        return float(compiled.text_bytes) if compiled.text_bytes is not None else float("nan")


_CAP = "mlbridge: inliner cap: "


def _refuse_pass_order(policy: PolicyLike) -> None:
    if policy.kind in ("tuning", "pipeline"):
        raise ProblemError("policy", f"{{arg}} {policy.spec}: a pass order decides phase ordering, not "
                           "inlining: give --problem phase-ordering")


def _decisions(stderr: str) -> Optional[int]:
    """Sum of `mlbridge: inliner: N model decisions, ...` lines (one per inliner
    run), or without a model of `mlbridge: inliner callees: K of N answers ...`
    (N questions answered by the heuristic, K of them set by callee)."""
    total, seen = 0, False
    for ln in stderr.splitlines():
        words = ln.split()
        try:
            if ln.startswith("mlbridge: inliner: "):
                total += int(words[2])
            elif ln.startswith("mlbridge: inliner callees: "):
                total += int(words[5])
            else:
                continue
            seen = True
        except (IndexError, ValueError):
            continue
    return total if seen else None
