"""Register-allocation eviction for speed: the greedy allocator asks which live
range to evict, stock LLVM 19's advisor asks over its interactive channel (no
plugin: ``-regalloc-enable-advisor=release`` alone cannot create the advisor in
Debian's LLVM), and a register-allocation score is measured against the
default advisor (ml-compiler-opt's rl/regalloc).

On a corpus (``mlbridge corpus evaluate --problem regalloc-eviction``) a module is
compiled by clang-19 with its recorded command up to optimized bitcode, then by
``llc-19`` at the module's own -O level, relocation and code model to the end of
register allocation, the policy answering over llc's interactive channel, and
scored (``measure_ir``). Its policy and trainer are beside it (``policy.py``,
``trainer.py``); the speed check is ``mlbridge.benchmark.speed_check``."""
from __future__ import annotations

import functools
import hashlib
import re
import shlex
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...core.errors import MLBridgeError
from ...core.session import direct_call
from ...core.spec import TensorSpec
from ..base import Compiled, IllegalAnswer, PolicyLike, Measured, Problem, ProblemError

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
    commands = frozenset({"corpus evaluate", "train run", "train search"})
    refusal = ("`mlbridge corpus evaluate` scores it, `mlbridge train run` trains it with its own ES "
               "(problems/eviction/trainer.py) and `mlbridge train search` learns it from search "
               "(problems/eviction/learn_from_search.py); the other commands and the inliner's recipes are not for it")
    in_plugin = False
    compiles_to = "ir"
    unit = "register-allocation score"
    trainer = "eviction"   # its own ES (problems/eviction/trainer.py), not the size recipes

    def policy_options(self, policy: PolicyLike) -> List[str]:
        if policy.kind != "python":
            raise ProblemError("policy", f"{{arg}} {policy.spec}: the {self.name} problem is answered over stock "
                               "LLVM's interactive channel: give a python:MODULE:FN policy")
        return ["-regalloc-enable-advisor=release", "-regalloc-evict-interactive-channel-base={base}"]

    def verdict(self, stderr: str, policy: PolicyLike) -> Tuple[Optional[str], Optional[int]]:
        # Stock LLVM reports nothing: a compile that exited cleanly was the policy's.
        return None, None

    def measure(self, compiled: Compiled) -> float:
        # An object's bytes do not show the allocator's work: see score().
        raise ProblemError("problem", f"{{arg}} {self.name}: measured by measure_ir() on the module's IR, not "
                           "from an object")

    def score(self, ir_path: str, policy: Any = None, **kw: Any) -> float:
        """The register-allocation score of IR_PATH, with POLICY deciding every
        eviction (None: the default advisor): llc-19 up to the end of register
        allocation, scored by ``mlbridge.llvm.regalloc_score.score_module``."""
        try:
            from ...llvm.regalloc_score import score_module
        except ImportError:
            raise ProblemError("problem", f"{{arg}} {self.name}: its register-allocation score "
                               "(mlbridge.llvm.regalloc_score.score_module) is not available") from None
        return float(score_module(ir_path, policy=policy, **kw).total)

    # -- on a corpus module (corpus evaluate) ----------------------------------------------

    def codegen_args(self, recorded: Sequence[str]) -> List[str]:
        """llc's options for a module compiled by RECORDED (its cc1 arguments), as
        clang's own code generation would run: the -O level (cc1's -Os/-Oz are
        codegen -O2; no -O is -O0), the relocation and code models and the
        recorded -mllvm options. The target, CPU and features are in the IR."""
        level, out, mllvm = "0", [], []
        it = iter(recorded)
        for a in it:
            m = _OPT_LEVEL.match(a)
            if m:
                v = m.group(1)
                level = {"": "1", "s": "2", "z": "2", "g": "1", "fast": "3"}.get(v) or str(min(int(v), 3))
            elif a == "-mrelocation-model":
                out = [o for o in out if not o.startswith("-relocation-model=")]
                out.append(f"-relocation-model={next(it, 'pic')}")
            elif a.startswith("-mcmodel="):
                out = [o for o in out if not o.startswith("-code-model=")]
                out.append("-code-model=" + a[len("-mcmodel="):])
            elif a == "-mllvm":
                v = next(it, None)
                if v is not None:
                    mllvm.append(v)
        return [f"-O{level}"] + out + mllvm

    def codegen_command(self, ir_path: str, args: Sequence[str], *, llc: str, policy: bool) -> str:
        """The llc command measure_ir runs (a shell line; a policy's channel as {base})."""
        from ...llvm.regalloc_score import SCORE_ARGS, score_command
        if not policy:
            return shlex.join(score_command(ir_path, "OUT.mir", llc=llc, extra_args=args))
        return shlex.join([llc, "-regalloc=greedy", "-regalloc-enable-advisor=release",
                           "-regalloc-evict-interactive-channel-base={base}", *SCORE_ARGS, *args, ir_path,
                           "-o", "OUT.mir"])

    def fingerprint(self) -> str:
        """What changes the score of one IR, besides llc and its options: the
        scorer's code (part of the baseline cache's key)."""
        return _scorer_digest()

    def measure_ir(self, ir_path: str, recorded: Sequence[str], policy: Any = None, *, tools: Dict[str, str],
                   timeout: float) -> Measured:
        """IR_PATH compiled by llc (``tools["llc"]``) with codegen_args(RECORDED),
        POLICY deciding every eviction (None: the default advisor; every answer
        checked: legal_answers), scored by regalloc_score.score_module. Raises
        CompilerFailed (llc failed, died, timed out), IllegalAnswer, or what
        the policy raised."""
        from ...llvm.interactive import CompilerFailed
        from ...llvm.regalloc_score import score_module
        checked = None if policy is None else legal_answers(policy)
        try:
            s = score_module(ir_path, llc=tools["llc"], extra_args=self.codegen_args(recorded), policy=checked,
                             timeout=timeout)
        except CompilerFailed:
            if checked is not None and checked.refused:   # LLVM 19 cannot be told: it was stopped
                raise PolicyRefused(f"the Python policy refused llc's session: {checked.refused}") from None
            raise
        return Measured(float(s.total), s.decisions, s.seconds,
                        {"spills": s.spills, "reloads": s.reloads, "spill_reload_cost": s.spill_reload_cost,
                         "functions": len(s.functions)})


@functools.lru_cache(maxsize=1)
def _scorer_digest() -> str:
    """The scorer's source hashed once a process, not once per module scored."""
    from ...llvm import regalloc_score
    with open(regalloc_score.__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


_OPT_LEVEL = re.compile(r"^-O(\d+|s|z|g|fast)?$")


class PolicyRefused(MLBridgeError):
    """A policy's session did not start: the compiler's features are not the
    problem's, or the policy's ``on_session_start`` refused them (e.g. a model
    trained on other shapes)."""


def legal_answers(policy: Any) -> "LegalAnswers":
    """POLICY with each of its answers checked (LegalAnswers)."""
    return LegalAnswers(policy)


class LegalAnswers:
    """POLICY, with each answer checked before LLVM sees it: one integer index
    of a candidate whose ``mask`` is 1 (LLVM 19 does not check it: a wrong
    index evicts a live range that cannot be evicted). Each session is
    checked first: the compiler's features must be the problem's (names and
    shapes), then the policy's own ``on_session_start`` may refuse it;
    ``refused`` says why. The other Model hooks are forwarded."""

    def __init__(self, policy: Any) -> None:
        self._ask = direct_call(policy)
        self._start = getattr(policy, "on_session_start", None)
        self.refused: Optional[str] = None
        for hook in ("on_context", "on_session_end"):
            f = getattr(policy, hook, None)
            if f is not None:
                setattr(self, hook, f)

    def on_session_start(self, session: Any) -> None:
        got = [(f.name, tuple(f.shape)) for f in session.features]
        want = [(f.name, tuple(f.shape)) for f in RegallocEviction.features]
        if got != want:
            diff = next((f"{g} where the problem has {w}" for g, w in zip(got, want) if g != w),
                        f"{len(got)} features where the problem has {len(want)}")
            self.refused = f"the compiler's eviction features are not the problem's (LLVM 19's): {diff}"
            raise PolicyRefused(self.refused)
        if self._start is not None:
            try:
                self._start(session)
            except Exception as exc:
                self.refused = f"{type(exc).__name__}: {exc}"
                raise

    def __call__(self, obs: Any) -> Any:
        answer = self._ask(obs)
        if type(answer) is int or isinstance(answer, np.integer):   # the usual answers (an argmax): no conversions
            mask = obs["mask"].reshape(-1)
            if 0 <= answer < mask.size and mask[answer]:
                return int(answer)
        a = np.asarray(answer)
        if a.size != 1 or not (np.issubdtype(a.dtype, np.integer) or
                               (np.issubdtype(a.dtype, np.floating) and float(a.reshape(-1)[0]).is_integer())):
            raise IllegalAnswer(f"the policy answered {_show(answer)}: index_to_evict is one integer, "
                                f"a candidate index (0..{CANDIDATES - 1}) whose mask is 1")
        i = int(a.reshape(-1)[0])
        mask = np.asarray(obs["mask"]).reshape(-1)
        if not 0 <= i < mask.size or not mask[i]:
            legal = np.flatnonzero(mask).tolist()
            raise IllegalAnswer(f"the policy answered index {i}, not a legal candidate (legal: {legal}): "
                                "index_to_evict must be a candidate whose mask is 1")
        return i


def _show(answer: Any) -> str:
    a = np.asarray(answer)
    text = repr(answer) if a.size <= 4 else f"{a.size} values"
    return f"{text} (shape {a.shape}, {a.dtype})"
