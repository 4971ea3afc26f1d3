"""Compile one corpus module with a policy deciding and measure its ``.text`` bytes.

The one primitive that scoring (``evaluate``) and training share. A module is
compiled the way ml-compiler-opt compiles it: ``clang -cc1`` with the module's
own recorded arguments, then ``-x ir MODULE.bc -o OUT.o`` (so exactly the
production pipeline, e.g. ``-Oz``), with a few recorded flags dropped because
they would write files elsewhere or embed the bitcode again (``cc1_args``).

Policies (``Policy.parse``):
  ``oz``                 no plugin: the module's own pipeline (its -Oz heuristic)
  ``MODEL.onnx``         the mlbridge LLVM plugin runs the model in-process
  ``python:MODULE:FN``   FN(observation) -> decision, answered in this process
                         over the plugin's pipe runner (``run_compiler``)

A module that fails (the compiler's exit code, a timeout, a plugin warning
saying the policy was not used, an object we cannot read) is a result with
``ok=False``, its reason and the command: never an exception, never a silent
-Oz size standing in for the policy's.

What the policy decides, which options put it in charge and how a compile's
stderr tells whether it did, is the problem's (``problem=``, a name or a
``problems.Problem``; default ``inlining-size``).
"""
from __future__ import annotations

import dataclasses

import hashlib
import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..core.ended import how_it_ended
from ..core.errors import ArgumentError
from ..problems import DEFAULT, Problem, resolve
from .elf import ElfError, stored_sizes
from .layout import CorpusError, Module
from .python_callable import load_callable

#: A compile slower than this is reported as timed out.
DEFAULT_TIMEOUT = 300.0

# Recorded cc1 flags that must not be replayed, with how many arguments follow.
# -fembed-bitcode*: the recompile would embed the bitcode again (slower, bigger .o);
# -o / input language: we give our own; -fthinlto-index: added per corpus.
# Every flag that makes clang write a file of its own (dependency and header
# lists, split DWARF, optimization records, statistics, time traces, coverage
# notes, stack usage, module caches, crash reports) is dropped: a corpus comes
# from someone's build, and a score writes only into its own scratch folder
# (two compiles of one module would also race on such a path).
_DROP_WITH_VALUE = {"-o", "-x", "-dependency-file", "-MT", "-MQ", "-split-dwarf-file", "-split-dwarf-output",
                    "-opt-record-file", "-opt-record-passes", "-opt-record-format", "-header-include-file",
                    "-module-dependency-dir", "-coverage-notes-file", "-coverage-data-file", "-stack-usage-file",
                    "-stats-file"}
_DROP = {"-fembed-bitcode", "-fembed-bitcode-marker", "-emit-llvm", "-emit-llvm-bc", "-emit-llvm-only",
         "-emit-codegen-only", "-S", "-emit-obj", "-ftime-trace", "-sys-header-deps", "-module-file-deps",
         "-print-stats"}
_DROP_PREFIX = ("-fembed-bitcode=", "-fthinlto-index=", "-stats-file=", "-ftime-trace=", "-ftime-trace-granularity=",
                "-fmodules-cache-path=", "-fcrash-diagnostics-dir=", "-opt-record-file=", "-header-include-file=",
                "-fprofile-instrument-path=", "-stack-usage-file=")
# The same for LLVM's own options that write a file (-mllvm NAME=PATH, or NAME and PATH
# as two -mllvm pairs): statistics and timers, IR and dot dumps, summaries, remarks.
_DROP_MLLVM = {"info-output-file", "ir-dump-directory", "dot-cfg-dir", "opt-bisect-print-ir-path",
               "print-on-crash-path", "lowertypetests-write-summary", "wholeprogramdevirt-write-summary",
               "module-summary-dot-file", "memprof-dot-file-path-prefix", "orderfile-write-mapping",
               "lto-pass-remarks-output", "lto-stats-file", "crash-diagnostics-dir"}
_PLUGIN_ENV = "MLBRIDGE_LLVM_PLUGIN"
#: the plugin's environment variables that choose who decides: never inherited by
#: a compile, so the baseline stays -Oz whatever the user's shell has set
PLUGIN_ENV_PREFIXES = ("MLBRIDGE_INLINE_", "MLBRIDGE_PO_", "MLBRIDGE_TUNING")


class CompileSetupError(CorpusError):
    """Something every compile needs is missing or wrong (clang, the plugin, the
    policy): raised once, before any module is compiled."""


class SetupArgumentError(CompileSetupError, ArgumentError):
    """A compile setup refused because of one argument (``clang``, ``plugin``,
    ``setting``): the command line words it with its flag."""


class PolicyError(SetupArgumentError):
    """A policy spec that names nothing usable (no such file, not callable, an unknown form)."""


@dataclass(frozen=True)
class Policy:
    """Who makes the decisions (``oz``: the baseline, no option added)."""
    kind: str                                   # "oz", "onnx", "python", "callees"
    spec: str                                   # as the user wrote it
    model: Optional[str] = None                 # onnx: absolute path; callees: the callee file
    fn: Optional[Callable[..., Any]] = None     # python: the policy function
    #: who decides in the LTO backends of the linker, when not this policy
    #: (under LTO the compiles and the linker are two places to decide)
    linker: Optional["Policy"] = None

    @property
    def uses_plugin(self) -> bool:
        return self.kind != "oz"

    @property
    def in_linker(self) -> "Policy":
        return self.linker if self.linker is not None else self

    def with_linker(self, linker: Optional["Policy"]) -> "Policy":
        """This policy in the compiles, LINKER in the linker's LTO backends."""
        if linker is None:
            return self
        return dataclasses.replace(self, linker=linker, spec=f"{self.spec} (linker: {linker.spec})")

    @staticmethod
    def callees(path: str) -> "Policy":
        """-Oz's heuristic, except that every call of a listed callee gets the
        listed answer (a file of NAME<TAB>0|1 lines): joint decisions, the
        room search's policy (problems/inlining/room.py)."""
        return Policy("callees", f"callees:{path}", model=os.path.abspath(path))

    @staticmethod
    def pipeline(text: str) -> "Policy":
        """A pass pipeline in place of the module's -O pipeline (phase ordering)."""
        return Policy("pipeline", f"pipeline:{text}", model=text)

    @staticmethod
    def parse(spec: str, argument: str = "policy") -> "Policy":
        """``oz``, ``PATH.onnx``, ``python:MODULE:FN``, ``callees:FILE``,
        ``tuning:FILE``, ``orders:FILE`` or ``pipeline:TEXT``; a PolicyError about
        ``argument`` otherwise."""
        if spec in ("oz", "default"):   # the baseline: -Oz's heuristic, the default advisor
            return Policy("oz", spec)
        if spec.startswith("tuning:"):  # a tuning file from `mlbridge tune` (phase ordering)
            path = spec[len("tuning:"):]
            if not os.path.isfile(path):
                raise PolicyError(argument, f"{{arg}} {spec}: no such tuning file")
            return Policy("tuning", spec, model=os.path.abspath(path))
        if spec.startswith("orders:"):  # an order policy from `mlbridge train orders` (phase ordering)
            path = spec[len("orders:"):]
            if not os.path.isfile(path):
                raise PolicyError(argument, f"{{arg}} {spec}: no such order policy file")
            return Policy("orders", spec, model=os.path.abspath(path))
        if spec.startswith("pipeline:") and len(spec) > len("pipeline:"):
            return Policy.pipeline(spec[len("pipeline:"):])
        if spec.startswith("callees:"):
            path = spec[len("callees:"):]
            if not os.path.isfile(path):
                raise PolicyError(argument, f"{{arg}} {spec}: no such callee file")
            return Policy.callees(path)
        if spec.startswith("python:"):
            try:
                fn = load_callable(spec[len("python:"):], argument)
            except ArgumentError as exc:
                raise PolicyError(argument, exc.template.replace("{arg}", "{arg} python:", 1)) from None
            if isinstance(fn, type):
                fn = fn()   # a Model subclass: instantiate it, as `mlbridge serve` does
            if not callable(fn):
                raise PolicyError(argument, f"{{arg}} {spec}: not callable")
            return Policy("python", spec, fn=fn)
        if spec.endswith(".onnx"):
            if not os.path.isfile(spec):
                raise PolicyError(argument, f"{{arg}} {spec}: no such model file")
            return Policy("onnx", spec, model=os.path.abspath(spec))
        raise PolicyError(argument, f"{{arg}} {spec!r}: expected oz, MODEL.onnx, python:MODULE:FN, callees:FILE, "
                          "tuning:FILE, orders:FILE or pipeline:TEXT")


@dataclass(frozen=True)
class Toolchain:
    clang: str
    plugin: Optional[str]
    #: clang's --version first line: part of the baseline cache key
    version: str
    #: llc, for problems measured on IR (regalloc-eviction), and its --version (the LLVM line)
    llc: Optional[str] = None
    llc_version: str = ""

    @staticmethod
    def find(clang: Optional[str] = None, plugin: Optional[str] = None, *, need_plugin: bool = False,
             timeout: float = 30.0, llc: Optional[str] = None, need_llc: bool = False) -> "Toolchain":
        """clang: the argument, else $MLBRIDGE_LLVM_TOOLS_DIR/clang, else clang-19 on PATH.
        plugin: the argument, else $MLBRIDGE_LLVM_PLUGIN, else build/libMLBridgeLLVM.so of
        this source tree or the current folder. llc (need_llc or given): as clang."""
        path = find_clang(clang)
        version = _version_line(path, timeout, first=True)
        found_plugin = find_plugin(plugin) if need_plugin else plugin
        tc = Toolchain(path, found_plugin, version)
        return tc.with_llc(llc, timeout) if need_llc or llc else tc

    def with_llc(self, llc: Optional[str] = None, timeout: float = 30.0) -> "Toolchain":
        """This toolchain with llc found (the argument, else $MLBRIDGE_LLVM_TOOLS_DIR/llc,
        else llc-19 on PATH) and its version read."""
        path = find_llc(llc)
        return dataclasses.replace(self, llc=path, llc_version=_version_line(path, timeout))


def _version_line(path: str, timeout: float, first: bool = False) -> str:
    """The tool's --version: its first line (clang), or its "LLVM version" line (llc)."""
    try:
        proc = subprocess.run([path, "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileSetupError(f"cannot run {path} --version: {exc}") from None
    if proc.returncode != 0:
        raise CompileSetupError(f"{path} --version failed (exit {proc.returncode})")
    lines = [ln.strip() for ln in proc.stdout.decode(errors="replace").splitlines() if ln.strip()]
    if not first:
        lines = [ln for ln in lines if ln.startswith("LLVM version")] + lines
    return lines[0] if lines else path


def find_llc(llc: Optional[str] = None) -> str:
    return _find_tool("llc", llc)


def find_clang(clang: Optional[str] = None) -> str:
    return _find_tool("clang", clang)


def _find_tool(name: str, given: Optional[str]) -> str:
    """llvm.interactive.find_tool, refused as a SetupArgumentError about argument NAME."""
    from ..llvm.interactive import LLVMNotFound, find_tool
    try:
        return find_tool(name, given)
    except LLVMNotFound as exc:
        raise SetupArgumentError(name, f"{{arg}}: {exc}") from None


def find_plugin(plugin: Optional[str] = None) -> str:
    """The mlbridge LLVM plugin: the argument, $MLBRIDGE_LLVM_PLUGIN, the package's
    own install (``pip install .``), the environment's prefix (``cmake --install``),
    then build/ of a source checkout (mlbridge.native)."""
    if plugin:
        if not os.path.isfile(plugin):
            raise SetupArgumentError("plugin", f"{{arg}}: plugin {plugin} does not exist")
        return os.path.abspath(plugin)
    from_env = os.environ.get(_PLUGIN_ENV)
    if from_env:
        if not os.path.isfile(from_env):
            raise CompileSetupError(f"{_PLUGIN_ENV}: plugin {from_env} does not exist")
        return os.path.abspath(from_env)
    from .. import native
    found = native.find("llvm-plugin")
    if found:
        return found
    raise SetupArgumentError("plugin", f"the mlbridge LLVM plugin (libMLBridgeLLVM.so) was not found: "
                             f"{native.HOW_TO_GET}; or give {{arg}} or set {_PLUGIN_ENV}")


def cc1_args(recorded: Sequence[str], *, drop: Sequence[str] = (), emit: Sequence[str] = ("-emit-obj",)) -> List[str]:
    """The recorded cc1 arguments without the flags a recompile from IR must not
    replay (see _DROP*) and without DROP, ending with EMIT (default -emit-obj).
    CorpusError if not a cc1 command."""
    if not recorded or recorded[0] != "-cc1":
        first = recorded[0] if recorded else "nothing"
        raise CorpusError(f"the command does not start with -cc1 (starts with {first!r})")
    out: List[str] = []
    it = iter(recorded)
    for a in it:
        if a in _DROP_WITH_VALUE:
            next(it, None)
        elif a in _DROP or a in drop or a.startswith(_DROP_PREFIX):
            continue
        elif a == "-mllvm":
            opt = next(it, "")
            if opt.lstrip("-").partition("=")[0] not in _DROP_MLLVM:
                out += [a, opt] if opt else [a]
            elif "=" not in opt:         # the path is the next -mllvm pair
                next(it, None), next(it, None)
        else:
            out.append(a)
    return out + list(emit)


def plugin_args(plugin: str) -> List[str]:
    """What loads the plugin into ``clang -cc1``. cc1 spells the driver's -fplugin as
    ``-load``: that makes the plugin's -mllvm options known before clang parses
    them; ``-fpass-plugin=`` installs its passes."""
    return ["-load", plugin, f"-fpass-plugin={plugin}"]


def driver_plugin_flags(plugin: str, option: str, path: str) -> List[str]:
    """The clang driver flags that load the plugin (-fplugin makes its options
    known, -fpass-plugin runs its passes) and give OPTION the absolute PATH: what
    a user's build adds for a tuning file or an order policy."""
    return [f"-fplugin={plugin}", f"-fpass-plugin={plugin}", "-mllvm", f"-{option}={os.path.abspath(path)}"]


def policy_args(policy: Policy, plugin: Optional[str], problem: Union[str, Problem] = DEFAULT) -> List[str]:
    """What puts POLICY in charge of PROBLEM's decisions: the plugin loaded
    (plugin_args) when the problem runs in it, and the problem's options."""
    if not policy.uses_plugin:
        return []
    problem = resolve(problem)
    args: List[str] = []
    if problem.in_plugin:
        if not plugin:
            raise CompileSetupError(f"policy {policy.spec} needs the mlbridge LLVM plugin")
        args = plugin_args(plugin)
    for o in problem.policy_options(policy):
        args += ["-mllvm", o]
    return args


@dataclass
class CompiledModule:
    """One module compiled under one policy."""
    module: str
    ok: bool
    text_bytes: Optional[int] = None
    seconds: float = 0.0
    #: the command as run (a shell line), for reports and reproduction
    command: str = ""
    error: Optional[str] = None
    #: decisions the model made (plugin policies; None for oz)
    decisions: Optional[int] = None
    timed_out: bool = False
    stderr: str = ""
    #: the object file, when CompileOptions.keep_objects kept it
    object_path: Optional[str] = None
    #: problems measured on IR (Problem.measure_ir): the number minimized and the
    #: problem's own figures; ``run`` names the step that failed in reports
    value: Optional[float] = None
    details: Dict[str, Any] = field(default_factory=dict)
    run: Optional[str] = None
    #: questions the compiler refused without asking the policy (Problem.capped)
    capped: int = 0
    #: every allocated byte with contents: code, read-only and initialized data
    #: (llvm-size's Berkeley text + data; elf.stored_sizes)
    stored_bytes: Optional[int] = None

    def as_dict(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("module", "ok", "text_bytes", "seconds", "command", "error",
                                               "decisions", "timed_out")}


@dataclass
class CompileOptions:
    """How every module of a run is compiled. ``extra_args``/``extra_env``
    return per-module additions (e.g. a training log's path): the hook for
    ``evaluate --log``."""
    timeout: float = DEFAULT_TIMEOUT
    thinlto: bool = False
    extra_args: Optional[Callable[[Module], Sequence[str]]] = None
    extra_env: Optional[Callable[[Module], Mapping[str, str]]] = None
    keep_objects: bool = False
    #: what a whole-program setting changes in every compile, baseline and policy
    #: alike (settings.py): cc1 flags added and dropped, and whether the output is
    #: LTO bitcode (kept for the link, not measured) instead of an object
    setting_args: Tuple[str, ...] = ()
    setting_drop: Tuple[str, ...] = ()
    bitcode: bool = False
    environ: Dict[str, str] = field(default_factory=lambda: {k: v for k, v in os.environ.items()
                                                             if not k.startswith(PLUGIN_ENV_PREFIXES)})


def command_for(module: Module, policy: Policy, out: str, toolchain: Toolchain,
                options: Optional[CompileOptions] = None, problem: Union[str, Problem] = DEFAULT) -> List[str]:
    """The full clang command that compiles `module` with `policy` deciding PROBLEM's questions into `out`."""
    options = options or CompileOptions()
    emit = ("-emit-llvm-bc",) if options.bitcode else ("-emit-obj",)
    args = module.command()   # CorpusError naming the .cmd when it cannot be read
    try:
        recorded = cc1_args(args, drop=options.setting_drop, emit=emit)
    except CorpusError as exc:   # cc1_args judges a list: name the file the list came from
        raise CorpusError(f"{module.command_file}: {exc}") from None
    cmd = ([toolchain.clang] + recorded + list(options.setting_args) + ["-x", "ir", os.path.abspath(module.bc)])
    if options.thinlto:
        cmd += [f"-fthinlto-index={os.path.abspath(module.thinlto_index)}", "-mllvm", "-thinlto-assume-merged"]
    cmd += policy_args(policy, toolchain.plugin, problem)
    if options.extra_args is not None:
        cmd += list(options.extra_args(module))
    return cmd + ["-o", out]


def compile_module(module: Module, policy: Policy, out_dir: str, toolchain: Toolchain,
                   options: Optional[CompileOptions] = None, *, tag: str = "",
                   problem: Union[str, Problem] = DEFAULT) -> CompiledModule:
    """Compiles `module` with `policy` deciding PROBLEM's questions into
    OUT_DIR/<hash>.<tag>.o, measures its .text bytes and removes the object
    (unless options.keep_objects)."""
    options = options or CompileOptions()
    problem = resolve(problem)
    key = hashlib.sha1(module.name.encode()).hexdigest()[:16]
    out = os.path.join(out_dir, f"{os.path.basename(module.name)[:40]}.{key}{'.' + tag if tag else ''}"
                            + (".bc" if options.bitcode else ".o"))
    res = CompiledModule(module.name, ok=False)
    try:
        cmd = command_for(module, policy, out, toolchain, options, problem)
    except (CorpusError, OSError) as exc:
        res.error = f"cannot read the module's command: {exc}"
        res.command = f"(command of {module.name})"
        return res
    env = dict(options.environ)
    if options.extra_env is not None:
        env.update(options.extra_env(module))
    res.command = shlex.join(cmd)
    start = time.monotonic()
    try:
        if policy.kind == "python":
            from ..transport.supervise import run_compiler
            try:
                r = run_compiler(cmd, policy.fn, timeout=options.timeout, env=env, cwd=out_dir)
            except Exception as exc:   # the policy raised: the compiler was killed
                res.error = f"the Python policy failed: {type(exc).__name__}: {exc}"
                r = getattr(exc, "result", None)
                res.stderr = r.stderr.decode(errors="replace") if r is not None else ""
                return res
            # run_compiler ran the command with {base} replaced: show what ran
            rc, stderr, res.timed_out = r.returncode, r.stderr.decode(errors="replace"), r.timed_out
        else:
            try:
                p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=options.timeout,
                                   env=env, cwd=out_dir)
                rc, stderr = p.returncode, p.stderr.decode(errors="replace")
            except subprocess.TimeoutExpired as exc:
                rc, res.timed_out = None, True
                stderr = (exc.stderr or b"").decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        res.seconds = time.monotonic() - start
        res.stderr = stderr
        if res.timed_out:
            res.error = f"clang {how_it_ended(None, timed_out=True, timeout=options.timeout)}"
            return res
        if rc != 0:
            res.error = f"clang {how_it_ended(rc)}: {_last_lines(stderr)}"
            return res
        res.error, res.decisions = problem.verdict(stderr, policy)
        res.capped = problem.capped(stderr)
        if res.error is not None:
            return res
        if options.bitcode:   # LTO bitcode for a link: nothing to measure yet
            res.ok, res.object_path = True, out
            return res
        try:
            res.text_bytes, res.stored_bytes = stored_sizes(out)
        except (ElfError, OSError) as exc:
            res.error = f"cannot measure the object: {exc}"
            return res
        res.ok = True
        if options.keep_objects:
            res.object_path = out
        return res
    except OSError as exc:
        res.error = f"cannot run {cmd[0]}: {exc}"
        return res
    finally:
        if not res.seconds:
            res.seconds = time.monotonic() - start
        if not options.keep_objects and not (res.ok and options.bitcode):
            try:
                os.unlink(out)
            except OSError:
                pass


def _last_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:]) if lines else "(no output)"
