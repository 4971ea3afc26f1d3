"""Drive a stock LLVM 19 (Debian's ``opt-19``/``llc-19``/``clang-19``) in
MLGO interactive mode with a Python policy.

Every helper builds the command line, hands it to :func:`mlbridge.run_compiler`
(which owns the channel, the wire format and the child process) and returns
``(CompileResult, decisions)``: ``decisions`` is the list of answers the
policy gave, as Python scalars, in order. Check ``result.ok`` yourself.

Tools are found as ``NAME + suffix`` on ``PATH``; the suffix is ``-19`` unless
the environment variable ``MLBRIDGE_LLVM_SUFFIX`` says otherwise (``""`` for
unsuffixed tools). Every helper also takes an explicit path.

LLVM 19 pitfalls (observed on Debian's 19.1.7; see docs/llvm-interop.md):

- ``clang -O0`` marks every function ``noinline optnone``: the inliner asks
  nothing. Use :func:`make_inlinable_ir` (``-O1 -Xclang -disable-llvm-passes``).
- Register allocation on unoptimized IR (allocas everywhere) asks almost no
  eviction question: feed ``llc`` optimized IR (:func:`make_optimized_ir`).
- The inliner opens its channel when the advisor is built, even for a module
  with no call; the regalloc advisors open it at the first machine function
  (a module without functions never opens it). run_compiler copes with both.
- LLVM 19 cannot be told about a model error: if the model closes ``BASE.in``
  it spins at 100% CPU. run_compiler kills it and re-raises the policy error.
- With ``-inliner-interactive-include-default`` LLVM 19 writes the default
  decision into feature slot 25 (``callee_basic_block_count``) and leaves
  ``inlining_default`` at 0 (fixed upstream in LLVM 21).
- The ML inliner stops asking once the module's estimated size grows past
  ``-ml-advisor-size-increase-threshold`` (default 2x): an "always inline"
  policy can leave calls behind on big modules.
- Debian's LLVM has no TFLite: ``release`` mode without a channel fails, and
  ``development`` mode / ``-training-log`` do not exist.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ..core.ended import how_it_ended
from ..core.errors import MLBridgeError
from ..core.session import direct_call
from ..transport.pipe_server import PipeServer
from ..transport.supervise import CompileResult, run_compiler
from ..core.values import coerce_all

__all__ = [
    "LLVMNotFound", "CompilerFailed", "tool", "have_tool", "make_inlinable_ir", "make_optimized_ir",
    "inline", "regalloc_evict", "regalloc_priority", "check_result",
    "inline_command", "evict_command", "priority_command",
    "defined_functions", "call_sites", "recursive_functions", "count_calls", "count_instructions", "text_size",
    "SUFFIX_ENV", "DEFAULT_SUFFIX", "TOOLS_DIR_ENV", "find_tool",
]

SUFFIX_ENV = "MLBRIDGE_LLVM_SUFFIX"
TOOLS_DIR_ENV = "MLBRIDGE_LLVM_TOOLS_DIR"   # a folder of LLVM tools without suffix (a build of LLVM)
DEFAULT_SUFFIX = "-19"


class LLVMNotFound(FileNotFoundError):
    """An LLVM tool is not on PATH."""


class CompilerFailed(MLBridgeError):
    """The compiler failed, was killed (by a signal, or at the timeout) or
    died mid-session. The message is one line; ``returncode`` and ``stderr``
    are the compiler's, ``result`` the :class:`CompileResult` when known;
    ``timed_out``: it was killed at the timeout."""

    def __init__(self, message: str, *, returncode: Optional[int] = None, stderr: bytes = b"",
                 result: Optional[CompileResult] = None, timed_out: bool = False) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.result = result
        self.timed_out = timed_out or bool(result is not None and result.timed_out)


# a block-frequency print (-print-machine-bfi): "block-frequency-info: F", then
# "- BB0[entry]: float = ...", or "- BB46: float = ..." for a block with no IR
# block; a killed compiler can leave the last one cut short
_BFI_PRINT = re.compile(r"^\s*(-\s+BB\d+\b|block-frequency-info:)")
_ERROR_WORD = re.compile(r"\berror\b", re.I)
_STACK_DUMP = re.compile(r"^(#\d+ |\d+\.\s|Stack dump:|PLEASE submit)")


def _last_stderr_line(stderr: bytes) -> str:
    """The compiler's first error line ("LLVM ERROR: ...", "llc-19: error: ..."),
    else its last line that is neither a block-frequency print nor a stack dump's."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines()
             if ln.strip() and not _BFI_PRINT.match(ln)]
    for ln in lines:
        if _ERROR_WORD.search(ln):
            return ln[:300]
    lines = [ln for ln in lines if not _STACK_DUMP.match(ln)]
    return lines[-1][:300] if lines else ""


def check_result(result: CompileResult, cmd: Sequence[str], timeout: Optional[float],
                 decisions: int = 0) -> CompileResult:
    """``result`` if the compiler exited 0 in time, else :class:`CompilerFailed`
    with one line saying what happened (timeout, signal, exit status; the
    decisions answered; the compiler's error line, or its last one)."""
    if result.ok:
        return result
    what = os.path.basename(str(cmd[0])) if cmd else "compiler"
    msg = f"{what} {how_it_ended(result.returncode, timed_out=result.timed_out, timeout=timeout)}"
    if result.sessions:
        msg += f" during its session, after {decisions} decision(s)"
    last = _last_stderr_line(result.stderr)
    raise CompilerFailed(msg + (f": {last}" if last else ""), returncode=result.returncode,
                         stderr=result.stderr, result=result)


def tool(name: str, path: Optional[str] = None) -> str:
    """Path of LLVM tool ``name`` (e.g. "opt"): ``path`` if given (as it is), else
    what :func:`find_tool` finds."""
    return path if path else find_tool(name)


def find_tool(name: str, given: Optional[str] = None) -> str:
    """The one lookup of an LLVM tool: GIVEN (a path, or a name on PATH) as an
    absolute path (compiles run in scratch folders), else NAME in
    ``$MLBRIDGE_LLVM_TOOLS_DIR``, else ``NAME + $MLBRIDGE_LLVM_SUFFIX`` (default
    ``-19``) on PATH. :class:`LLVMNotFound` (one line) otherwise."""
    if given:
        found = shutil.which(given)
        if not found:
            raise LLVMNotFound(f"{given} is not on PATH")
        return os.path.abspath(found)
    tools = os.environ.get(TOOLS_DIR_ENV)
    if tools and os.access(os.path.join(tools, name), os.X_OK):
        return os.path.join(tools, name)
    exe = name + os.environ.get(SUFFIX_ENV, DEFAULT_SUFFIX)
    found = shutil.which(exe)
    if found is None:
        raise LLVMNotFound(f"{exe} is not on PATH (set {TOOLS_DIR_ENV} or {SUFFIX_ENV}, or give the tool's path)")
    return found


def have_tool(name: str) -> bool:
    try:
        tool(name)
        return True
    except LLVMNotFound:
        return False


# ---- making IR ------------------------------------------------------------------
def _clang(c_file: str, out_ll: str, flags: Sequence[str], clang: Optional[str], extra: Sequence[str]) -> str:
    cmd = [tool("clang", clang), *flags, "-emit-llvm", "-S", *extra, os.fspath(c_file), "-o", os.fspath(out_ll)]
    subprocess.run(cmd, check=True, capture_output=True)
    return os.fspath(out_ll)


def make_inlinable_ir(c_file: str, out_ll: str, *, level: str = "-O1", clang: Optional[str] = None,
                      extra_args: Sequence[str] = ()) -> str:
    """Compile C to IR the inliner will ask about: ``clang -O1 -Xclang
    -disable-llvm-passes -emit-llvm -S``. Not ``-O0``: that marks every
    function ``noinline optnone`` and no decision is ever asked."""
    return _clang(c_file, out_ll, [level, "-Xclang", "-disable-llvm-passes"], clang, extra_args)


def make_optimized_ir(c_file: str, out_ll: str, *, level: str = "-O2", clang: Optional[str] = None,
                      extra_args: Sequence[str] = ()) -> str:
    """Compile C to optimized IR (``clang -O2 -emit-llvm -S``): the input
    the register allocator should see (unoptimized IR keeps values in stack
    slots and asks almost no eviction question)."""
    return _clang(c_file, out_ll, [level], clang, extra_args)


# ---- command lines --------------------------------------------------------------
def inline_command(ir_path: str, out_path: str, *, extra_args: Sequence[str] = (),
                   include_default: bool = False, opt: Optional[str] = None) -> List[str]:
    """``opt -passes=scc-oz-module-inliner -enable-ml-inliner=release
    -inliner-interactive-channel-base={base} in.ll -S -o out.ll``."""
    cmd = [tool("opt", opt), "-passes=scc-oz-module-inliner", "-enable-ml-inliner=release",
           "-inliner-interactive-channel-base={base}"]
    if include_default:
        cmd.append("-inliner-interactive-include-default")
    return cmd + [*extra_args, os.fspath(ir_path), "-S", "-o", os.fspath(out_path)]


def evict_command(ir_path: str, out_path: str = os.devnull, *, extra_args: Sequence[str] = (),
                  llc: Optional[str] = None) -> List[str]:
    """``llc -regalloc=greedy -regalloc-enable-advisor=release
    -regalloc-evict-interactive-channel-base={base} in.ll -o out.s``."""
    return [tool("llc", llc), "-regalloc=greedy", "-regalloc-enable-advisor=release",
            "-regalloc-evict-interactive-channel-base={base}", *extra_args,
            os.fspath(ir_path), "-o", os.fspath(out_path)]


def priority_command(ir_path: str, out_path: str = os.devnull, *, extra_args: Sequence[str] = (),
                     llc: Optional[str] = None) -> List[str]:
    """``llc -regalloc=greedy -regalloc-enable-priority-advisor=release
    -regalloc-priority-interactive-channel-base={base} in.ll -o out.s``."""
    return [tool("llc", llc), "-regalloc=greedy", "-regalloc-enable-priority-advisor=release",
            "-regalloc-priority-interactive-channel-base={base}", *extra_args,
            os.fspath(ir_path), "-o", os.fspath(out_path)]


# ---- running --------------------------------------------------------------------
class _Recorder:
    """Wraps a policy: keeps every answer (as a Python scalar) and forwards
    the optional Model hooks. The server checks answers; this only records.
    It runs once per decision: what an answer of the usual kind needs is
    worked out once per session, in on_session_start."""

    def __init__(self, policy: Any) -> None:
        self.decisions: List[Any] = []
        self._append = self.decisions.append
        self._ask = direct_call(policy)
        self._session: Any = None
        self._exact: Any = None    # the Python type recorded as is (int or float advice of one element)
        self._convert: Any = None  # how other scalars are recorded (int or float), None: general path
        self._on_start = getattr(policy, "on_session_start", None)
        # The other optional hooks, forwarded as attributes of their own (a
        # __getattr__ would slow down every attribute read in __call__).
        for hook in ("on_context", "on_session_end"):
            f = getattr(policy, hook, None)
            if f is not None:
                setattr(self, hook, f)

    def on_session_start(self, session: Any) -> None:
        self._session = session
        advice = session.advice
        self._exact = self._convert = None
        if len(advice) == 1 and advice[0].dtype != "bool":
            self._convert = float if advice[0].dtype in ("float", "double") else int
            self._exact = self._convert
        if self._on_start is not None:
            self._on_start(session)

    def __call__(self, obs: Any) -> Any:
        value = self._ask(obs)
        if type(value) is self._exact:
            self._append(value)
            return value
        return self._other(obs, value)

    def _other(self, obs: Any, value: Any) -> Any:
        if obs.session is not self._session:   # a server that did not call on_session_start
            self.on_session_start(obs.session)
            if type(value) is self._exact:
                self._append(value)
                return value
        convert = self._convert
        if convert is not None and isinstance(value, (int, float, np.generic)):
            # One scalar (the usual LLVM case); the server checks it.
            self._append(convert(value))
            return value
        arrays = coerce_all(value, obs.session.advice, "advice")
        self._append(arrays[0].reshape(-1)[0].item() if len(arrays) == 1 and arrays[0].size == 1
                     else tuple(a.copy() for a in arrays))
        return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _run(cmd: List[str], policy: Any, server: Optional[PipeServer], timeout: Optional[float],
         env: Optional[Dict[str, str]], check: bool = False) -> Tuple[CompileResult, List[Any]]:
    # run_compiler watches the compiler (a pidfd) while it waits for the
    # channel: a compiler that exits without opening it (llc on a module
    # without functions) or dies mid-session ends the wait at once, never at
    # the timeout.
    rec = _Recorder(policy)
    try:
        result = run_compiler(cmd, rec, server=server, format="bitstream", timeout=timeout, env=env)
    except BaseException as exc:
        exc.decisions = rec.decisions  # type: ignore[attr-defined]
        raise
    if check:
        try:
            check_result(result, cmd, timeout, len(rec.decisions))
        except CompilerFailed as exc:
            exc.decisions = rec.decisions  # type: ignore[attr-defined]
            raise
    return result, rec.decisions


def inline(ir_path: str, policy: Any, *, out_path: str, extra_args: Sequence[str] = (),
           include_default: bool = False, timeout: Optional[float] = 60.0,
           server: Optional[PipeServer] = None, opt: Optional[str] = None,
           env: Optional[Dict[str, str]] = None, check: bool = False) -> Tuple[CompileResult, List[Any]]:
    """Run opt's ML inliner (-Oz module inliner pipeline) with ``policy``.

    Observations: 38 int64 [1] features (``callee_basic_block_count``,
    ``callsite_height``, ``callee_users``, ...); advice ``inlining_decision``
    int64 [1], non-zero = inline. One session per run, one empty context.
    ``check``: raise :class:`CompilerFailed` instead of returning a failed result.
    """
    cmd = inline_command(ir_path, out_path, extra_args=extra_args, include_default=include_default, opt=opt)
    return _run(cmd, policy, server, timeout, env, check)


def regalloc_evict(ir_path: str, policy: Any, *, out_path: str = os.devnull, extra_args: Sequence[str] = (),
                   timeout: Optional[float] = 60.0, server: Optional[PipeServer] = None,
                   llc: Optional[str] = None, env: Optional[Dict[str, str]] = None, check: bool = False
                   ) -> Tuple[CompileResult, List[Any]]:
    """Run llc's greedy allocator with ``policy`` choosing evictions.

    Observations: 21 features of shape [1,33] (int64 or float; one column per
    candidate, the last is the live range being allocated) plus ``progress``
    float [1]; advice ``index_to_evict`` int64 [1]: answer an index whose
    ``mask`` is 1 (LLVM's contract; it does not check it for you). One
    context per machine function, possibly with no observation.

    A module without functions never opens the channel: the call returns as
    soon as llc exits (no session, no decision), not at the timeout; so does
    a compiler that dies mid-session. ``check``: raise
    :class:`CompilerFailed` (one line) instead of returning a failed result.
    """
    return _run(evict_command(ir_path, out_path, extra_args=extra_args, llc=llc), policy, server, timeout, env,
                check)


def regalloc_priority(ir_path: str, policy: Any, *, out_path: str = os.devnull, extra_args: Sequence[str] = (),
                      timeout: Optional[float] = 60.0, server: Optional[PipeServer] = None,
                      llc: Optional[str] = None, env: Optional[Dict[str, str]] = None, check: bool = False
                      ) -> Tuple[CompileResult, List[Any]]:
    """Run llc's greedy allocator with ``policy`` giving live-range priorities.

    Observations: ``li_size`` int64 [1], ``stage`` int64 [1], ``weight``
    float [1]; advice ``priority`` float [1] (higher = allocated earlier).
    """
    return _run(priority_command(ir_path, out_path, extra_args=extra_args, llc=llc), policy, server, timeout, env,
                check)


# ---- reading textual IR -------------------------------------------------------------
_NAME = r'("(?:[^"\\]|\\.)*"|[-\w.$]+)'
_DEFINE = re.compile(r'^define\b[^@]*@' + _NAME + r'\((.*)$')
_ATTR_GROUP = re.compile(r'^attributes #(\d+) = \{(.*)\}\s*$')
_CALL = re.compile(r'\b(?:call|invoke|callbr)\b[^@;]*?@' + _NAME + r'\(')


def _unquote(tok: str) -> str:
    return tok[1:-1] if tok.startswith('"') else tok


def _parse(ll_text: str) -> Tuple[Dict[str, Dict[str, bool]], List[Tuple[str, str]]]:
    lines = ll_text.splitlines()
    groups = {}
    for line in lines:
        m = _ATTR_GROUP.match(line)
        if m:
            groups[m.group(1)] = m.group(2)
    defined: Dict[str, Dict[str, bool]] = {}
    calls: List[Tuple[str, str]] = []
    cur = None
    for line in lines:
        m = _DEFINE.match(line)
        if m:
            cur = _unquote(m.group(1))
            tail = m.group(2)
            attrs = tail + " " + " ".join(groups.get(g, "") for g in re.findall(r"#(\d+)", tail))
            defined[cur] = {"noinline": re.search(r"\bnoinline\b", attrs) is not None}
        elif cur is not None:
            if line.startswith("}"):
                cur = None
            else:
                calls.extend((cur, _unquote(c.group(1))) for c in _CALL.finditer(line))
    return defined, calls


def defined_functions(ll_text: str) -> Dict[str, Dict[str, bool]]:
    """Functions defined (with a body) in the module: name -> {"noinline": bool}."""
    return _parse(ll_text)[0]


def call_sites(ll_text: str) -> List[Tuple[str, str]]:
    """Every direct call in function bodies, as (caller, callee), intrinsics included."""
    return _parse(ll_text)[1]


def recursive_functions(ll_text: str) -> Set[str]:
    """Defined functions that can reach themselves through direct calls."""
    defined, calls = _parse(ll_text)
    graph: Dict[str, Set[str]] = {}
    for a, b in calls:
        if b in defined:
            graph.setdefault(a, set()).add(b)
    rec = set()
    for f in graph:
        seen: Set[str] = set()
        stack = list(graph[f])
        while stack:
            g = stack.pop()
            if g == f:
                rec.add(f)
                break
            if g not in seen:
                seen.add(g)
                stack.extend(graph.get(g, ()))
    return rec


def count_calls(ll_text: str, *, inlinable: bool = False) -> int:
    """Calls to functions defined in the module (so never to intrinsics or
    external declarations). ``inlinable``: only those an inliner could still
    inline, i.e. not to a ``noinline`` function nor to a recursive one."""
    defined, calls = _parse(ll_text)
    skip = recursive_functions(ll_text) if inlinable else set()
    return sum(1 for _, callee in calls
               if callee in defined and callee not in skip
               and not (inlinable and defined[callee]["noinline"]))


_NOT_INSTR = re.compile(r"^\s*($|;|[-\w.$\"]+:|}|define\b)")


def count_instructions(ll_text: str) -> int:
    """IR instructions in function bodies (a rough size measure)."""
    n, inside, in_list = 0, False, False
    for line in ll_text.splitlines():
        if line.startswith("define"):
            inside = True
        elif line.startswith("}"):
            inside = False
        elif in_list:                       # the cases of a switch
            in_list = not line.lstrip().startswith("]")
        elif inside and not _NOT_INSTR.match(line):
            n += 1
            in_list = line.rstrip().endswith("[")
    return n


# ---- measuring size -----------------------------------------------------------------
def text_size(ir_path: str, *, obj_path: Optional[str] = None, llc: Optional[str] = None,
              llvm_size: Optional[str] = None) -> int:
    """Bytes of ``.text`` sections once ``ir_path`` is compiled to an object
    file (``llc -filetype=obj``, then ``llvm-size -A``)."""
    obj = obj_path or os.fspath(ir_path) + ".o"
    subprocess.run([tool("llc", llc), "-filetype=obj", os.fspath(ir_path), "-o", obj], check=True,
                   capture_output=True)
    out = subprocess.run([tool("llvm-size", llvm_size), "-A", obj], check=True, capture_output=True,
                         text=True).stdout
    return sum(int(line.split()[1]) for line in out.splitlines() if line.startswith(".text"))
