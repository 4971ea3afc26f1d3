"""What a problem is: one kind of compiler decision, trained and scored the same way.

As ml-compiler-opt's problem configurations: a problem names the features a
policy sees and the answer it gives (LLVM's tensor contract), how a module is
compiled with a policy deciding, the baseline it is measured against, what is
measured and how that becomes a reward, and where it can be scored (settings)
and served (commands). The corpus, scoring and training code asks the problem
instead of knowing inlining; a problem that a command cannot serve says so in
one line (:class:`ProblemError`).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, FrozenSet, List, Optional, Protocol, Sequence, Tuple

from ..core.errors import ArgumentError, MLBridgeError
from ..core.spec import TensorSpec

#: the commands that take ``--problem`` (what Problem.commands names)
COMMANDS = ("corpus evaluate", "train run", "train search", "train report", "train room", "log show", "log export")


class ProblemError(ArgumentError):
    """A problem asked for what it cannot do (a command, a setting, a kind of
    policy), or one that does not exist; ``{arg}`` is the argument at fault."""


class IllegalAnswer(MLBridgeError):
    """The policy's answer cannot be used: not the problem's answer (its shape,
    its type) or one the compiler must not act on (e.g. an eviction candidate
    whose ``mask`` is 0). A failure of the policy, never scored as the baseline."""


class PolicyLike(Protocol):
    """Who decides (corpus.compile.Policy): ``oz`` is the baseline, with no option
    added; ``onnx`` runs MODEL in-process, ``python`` answers over a channel
    whose base is the ``{base}`` placeholder of the command, ``callees`` is a file.
    Read-only members, so a frozen dataclass fits."""
    @property
    def kind(self) -> str: ...
    @property
    def spec(self) -> str: ...
    @property
    def model(self) -> Optional[str]: ...


class Compiled(Protocol):
    """What a compile left to measure (corpus.compile.CompiledModule)."""
    @property
    def text_bytes(self) -> Optional[int]: ...
    @property
    def object_path(self) -> Optional[str]: ...


@dataclass(frozen=True)
class Measured:
    """What a problem measured on one module's IR (``Problem.measure_ir``): the
    number minimized, the policy's decisions, the compiler's seconds and the
    problem's own figures (e.g. spills and reloads)."""
    value: float
    decisions: int = 0
    seconds: float = 0.0
    details: Dict[str, Any] = field(default_factory=dict)


class Problem(ABC):
    #: the registry's key, and --problem's value
    name: ClassVar[str]
    #: one line: what is decided, and for what
    summary: ClassVar[str]
    #: what the policy sees at each decision, and what it answers
    features: ClassVar[Tuple[TensorSpec, ...]]
    answer: ClassVar[TensorSpec]
    #: who decides in the baseline compile (the same command, no policy option)
    baseline: ClassVar[str]
    #: what measure() returns; lower is better
    measured: ClassVar[str]
    #: corpus settings it can be scored in (corpus/settings.py's names)
    settings: ClassVar[Tuple[str, ...]]
    #: the commands (COMMANDS) that serve it, and why the others cannot
    commands: ClassVar[FrozenSet[str]]
    refusal: ClassVar[str] = ""
    #: whether a policy needs the mlbridge LLVM plugin loaded (else stock LLVM's own channel)
    in_plugin: ClassVar[bool]
    #: what a corpus module is compiled to before it is measured: "object" (its recorded
    #: command, with policy_options; measure()) or "ir" (its recorded command up to
    #: optimized bitcode, the baseline's; then measure_ir() decides and measures)
    compiles_to: ClassVar[str] = "object"
    #: what measure() or measure_ir() counts, for reports
    unit: ClassVar[str] = ".text bytes"
    #: the environment variable naming the plugin's training log inside the linker
    #: (LTO: lld parses -mllvm options before it loads plugins); "" if it logs nothing there
    linker_log_variable: ClassVar[str] = ""
    #: who trains it (``train run``): "size", problems/inlining/recipe.py (ES or PPO
    #: over compiled objects or linked programs); "eviction", problems/eviction/trainer.py
    trainer: ClassVar[str] = "size"

    @property
    def feature_names(self) -> List[str]:
        return [f.name for f in self.features]

    @abstractmethod
    def policy_options(self, policy: PolicyLike) -> List[str]:
        """The compiler's -mllvm options that put POLICY (not the baseline) in
        charge of every decision; a ProblemError about ``policy`` if this
        problem cannot run that kind of policy."""

    def linker_environment(self, policy: PolicyLike) -> Dict[str, str]:
        """The environment that puts POLICY in charge inside the linker (LTO: the
        plugin loaded into ld.lld, which parses -mllvm options before it loads
        plugins, so it reads its options from the environment). A
        ProblemError unless the problem decides in the linker."""
        raise ProblemError("problem", f"{{arg}} {self.name}: its policy does not decide in the linker")

    def training_log_options(self, path: str) -> List[str]:
        """The compiler arguments that make the (loaded) plugin log this problem's
        decisions to PATH in LLVM's training-log format (``corpus evaluate --log``);
        a ProblemError unless the problem writes training logs."""
        raise ProblemError("log", f"{{arg}}: the {self.name} problem writes no training logs")

    @abstractmethod
    def verdict(self, stderr: str, policy: PolicyLike) -> Tuple[Optional[str], Optional[int]]:
        """From a compile's stderr: why its result is not POLICY's (None if it
        is), and how many decisions the policy made (None if unknown)."""

    def capped(self, stderr: str) -> int:
        """Questions the compiler refused without asking the policy (a guard of the
        compiler's own, e.g. LLVM's ML inliner size cap), from a compile's stderr."""
        return 0

    @abstractmethod
    def measure(self, compiled: Compiled) -> float:
        """The number this problem minimizes, for one compile's output."""

    def measure_ir(self, ir_path: str, recorded: Sequence[str], policy: Any = None, *, tools: Dict[str, str],
                   timeout: float) -> Measured:
        """compiles_to "ir": IR_PATH (the module's optimized bitcode; RECORDED its cc1
        arguments) compiled with POLICY (a Python callable; None: the baseline)
        deciding, and measured. TOOLS names the executables (e.g. ``llc``)."""
        raise NotImplementedError(f"{self.name} is measured from objects")

    def codegen_args(self, recorded: Sequence[str]) -> List[str]:
        """compiles_to "ir": the code generator's options for a module whose cc1
        arguments were RECORDED (its -O level, relocation model, -mllvm options)."""
        raise NotImplementedError(f"{self.name} is measured from objects")

    def codegen_command(self, ir_path: str, args: Sequence[str], *, llc: str, policy: bool) -> str:
        """compiles_to "ir": the code-generation command measure_ir runs, as a shell
        line to show the user (with POLICY deciding, or the baseline)."""
        raise NotImplementedError(f"{self.name} is measured from objects")

    def fingerprint(self) -> str:
        """What changes a measurement besides the tools and their options (e.g. the
        scorer's code): part of the cached baselines' key. "" when nothing does."""
        return ""

    def reward(self, baseline: float, value: float) -> float:
        """Relative improvement on the baseline (positive: the policy did better)."""
        return (baseline - value) / baseline if baseline > 0 else 0.0

    def check(self, command: str, setting: str = "objects") -> None:
        """ProblemError unless COMMAND serves this problem in SETTING."""
        if command not in self.commands:
            raise ProblemError("problem", f"{{arg}} {self.name}: `mlbridge {command}` cannot serve it "
                               f"({self.refusal})")
        if setting not in self.settings:
            raise ProblemError("setting", f"{{arg}} {setting}: the {self.name} problem is scored in "
                               f"{', '.join(self.settings)} only")
