"""The speed check of register-allocation eviction (issue 23): does a policy make
real programs faster?

A :class:`Benchmark` is a program's C sources, its compile and link flags, a
workload (arguments, a file on stdin) and the output it must print. It is built
twice, each translation unit ``clang-19 -O2`` to bitcode then ``llc-19`` to an
object: once with the default eviction advisor, once with the policy deciding
every eviction over stock LLVM's interactive channel
(:func:`mlbridge.llvm.regalloc_evict`; a unit without functions never opens the
channel and costs nothing). Both are linked with ``clang-19`` and run on the
workload: the output must equal the reference (under the policy a difference is
a :class:`Miscompile`, never a speed result), and ``valgrind --tool=callgrind``
counts the executed instructions (and data reads and writes), which do not
depend on the machine's load. Native CPU time is measured too, over repeated
runs with a 95 % confidence interval, and ``perf stat`` cycles where the machine
has hardware counters (:func:`perf_cycles_available`).

    from mlbridge.benchmark.speed_check import real_benchmarks, speed_check
    result = speed_check(real_benchmarks(), policy)      # policy(obs) -> index_to_evict
    print(result.table()); result.as_dict()

Every failure is one line, a :class:`SpeedCheckError` (an ``MLBridgeError``).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import signal
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..core.ended import how_it_ended
from ..core.errors import ArgumentError, MLBridgeError
from ..core.files import replace_when_complete
from ..llvm import interactive as _llvm

__all__ = [
    "Benchmark", "Timing", "ProgramResult", "SpeedCheck", "speed_check", "check_program", "build_program",
    "count_instructions", "time_runs", "perf_cycles_available", "real_benchmarks", "kernel_benchmarks",
    "codec_benchmarks", "erfa_benchmark", "workload_text",
    "SpeedCheckError", "ToolMissing", "BuildFailed", "BenchmarkFailed", "Miscompile", "SpeedCheckPolicyError",
]


# ---- errors -----------------------------------------------------------------------
class SpeedCheckError(MLBridgeError):
    """The speed check could not give a result; the message is one line."""


class ToolMissing(SpeedCheckError, ArgumentError):
    """clang-19, llc-19 or valgrind is not on PATH (``argument``: "clang", "llc" or "valgrind")."""


class BuildFailed(SpeedCheckError):
    """A compiler or the linker failed, died or ran past its timeout."""


class BenchmarkFailed(SpeedCheckError):
    """A benchmark program exited non-zero, was killed, ran past its timeout, or
    printed something else than its reference output (``build`` says which
    build: ``"default"`` or ``"policy"``)."""

    def __init__(self, message: str, *, benchmark: str = "", build: str = "") -> None:
        super().__init__(message)
        self.benchmark = benchmark
        self.build = build


class Miscompile(BenchmarkFailed):
    """The program is correct with the default advisor and not under the policy."""


class SpeedCheckPolicyError(SpeedCheckError):
    """The policy does not fit the eviction problem (its declared features, an
    answer of the wrong shape or type, an index the mask forbids) or raised."""


# ---- benchmarks -------------------------------------------------------------------
@dataclass(frozen=True)
class Benchmark:
    """One program and its workload. ``expected`` is its whole stdout."""
    name: str
    sources: Tuple[str, ...]
    expected: bytes
    cflags: Tuple[str, ...] = ()
    ldflags: Tuple[str, ...] = ()
    args: Tuple[str, ...] = ()
    #: a file fed on stdin (None: /dev/null)
    stdin: Optional[str] = None
    #: seconds for one run under callgrind (a native run gets the same)
    timeout: float = 300.0
    #: the project's split ("train" or "eval", as its corpus recipe says; "" if none):
    #: the issue's goal is judged on programs never trained on
    split: str = ""


@dataclass
class Timing:
    """Repeated measurements: mean and the half-width of its 95 % confidence
    interval (Student's t), in ``unit``."""
    mean: float
    ci95: float
    runs: int
    unit: str

    @staticmethod
    def of(values: Sequence[float], unit: str) -> "Timing":
        n = len(values)
        mean = statistics.fmean(values)
        ci = _T95.get(n - 1, 1.96) * statistics.stdev(values) / math.sqrt(n) if n > 1 else float("nan")
        return Timing(mean, ci, n, unit)

    def __str__(self) -> str:
        return f"{self.mean:.3g} ± {self.ci95:.2g} {self.unit}"


#: Student's t, two-sided 95 %, by degrees of freedom
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 25: 2.060, 30: 2.042}


@dataclass
class ProgramResult:
    """One benchmark, default advisor against the policy."""
    name: str
    instructions_default: int
    instructions_policy: int
    #: data reads + writes (callgrind's Dr + Dw), None when not counted
    data_accesses_default: Optional[int]
    data_accesses_policy: Optional[int]
    #: both builds printed the reference output (a result exists only then)
    outputs_equal: bool
    #: the policy's answers over all translation units
    decisions: int
    #: llc-19's wall time over all translation units
    llc_seconds_default: float
    llc_seconds_policy: float
    #: native CPU time (user + system) of the workload, repeated runs
    cpu_default: Optional[Timing] = None
    cpu_policy: Optional[Timing] = None
    #: perf stat cycles, where the machine counts them
    cycles_default: Optional[Timing] = None
    cycles_policy: Optional[Timing] = None
    #: the benchmark's split ("train", "eval" or "")
    split: str = ""

    @property
    def instructions_delta(self) -> float:
        """(policy - default) / default: negative is faster."""
        return self.instructions_policy / self.instructions_default - 1.0

    @property
    def data_accesses_delta(self) -> Optional[float]:
        if not self.data_accesses_default or self.data_accesses_policy is None:
            return None
        return self.data_accesses_policy / self.data_accesses_default - 1.0

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["instructions_delta"] = self.instructions_delta
        d["data_accesses_delta"] = self.data_accesses_delta
        return d


@dataclass
class SpeedCheck:
    """Every benchmark's result, and the totals."""
    programs: List[ProgramResult] = field(default_factory=list)
    #: whether cycles were measured (perf stat with hardware counters)
    perf_cycles: bool = False

    @property
    def instructions_default(self) -> int:
        return sum(p.instructions_default for p in self.programs)

    @property
    def instructions_policy(self) -> int:
        return sum(p.instructions_policy for p in self.programs)

    @property
    def instructions_delta(self) -> float:
        return self.instructions_policy / self.instructions_default - 1.0 if self.programs else 0.0

    @property
    def worst_delta(self) -> float:
        """The largest per-program instruction change (the goal: <= 0 on every program)."""
        return max((p.instructions_delta for p in self.programs), default=0.0)

    def as_dict(self) -> Dict[str, Any]:
        return {"programs": [p.as_dict() for p in self.programs], "perf_cycles": self.perf_cycles,
                "total": {"instructions_default": self.instructions_default,
                          "instructions_policy": self.instructions_policy,
                          "instructions_delta": self.instructions_delta, "worst_delta": self.worst_delta,
                          "decisions": sum(p.decisions for p in self.programs),
                          "llc_seconds_default": sum(p.llc_seconds_default for p in self.programs),
                          "llc_seconds_policy": sum(p.llc_seconds_policy for p in self.programs)}}

    def table(self) -> str:
        """A Markdown table, one row per program and the total."""
        rows = ["| program | instructions: default | policy | Δ | data reads + writes: default | policy | Δ "
                "| CPU ms: default | policy | decisions | llc s: default | policy |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

        def pct(x: Optional[float]) -> str:
            return "-" if x is None else f"{100 * x:+.2f} %"

        def ms(t: Optional[Timing]) -> str:
            return "-" if t is None else f"{t.mean * 1e3:.1f} ± {t.ci95 * 1e3:.1f}"

        def num(x: Optional[int]) -> str:
            return "-" if x is None else f"{x:,}"

        for p in self.programs:
            rows.append(f"| {p.name} | {p.instructions_default:,} | {p.instructions_policy:,} | "
                        f"{pct(p.instructions_delta)} | {num(p.data_accesses_default)} | "
                        f"{num(p.data_accesses_policy)} | {pct(p.data_accesses_delta)} | {ms(p.cpu_default)} | "
                        f"{ms(p.cpu_policy)} | {p.decisions:,} | {p.llc_seconds_default:.1f} | "
                        f"{p.llc_seconds_policy:.1f} |")
        d = self.as_dict()["total"]
        rows.append(f"| **total** | {self.instructions_default:,} | {self.instructions_policy:,} | "
                    f"{pct(self.instructions_delta)} | | | | | | {d['decisions']:,} | "
                    f"{d['llc_seconds_default']:.1f} | {d['llc_seconds_policy']:.1f} |")
        return "\n".join(rows)


# ---- tools ------------------------------------------------------------------------
def _tool(name: str, given: Optional[str]) -> str:
    try:
        return _llvm.find_tool(name, given)
    except _llvm.LLVMNotFound as exc:
        raise ToolMissing(name, f"{{arg}}: {exc}") from None


def _valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise ToolMissing("valgrind", "{arg} is not on PATH (the speed check counts instructions "
                          "with valgrind --tool=callgrind: apt-get install valgrind)")
    return found


_PERF: Optional[bool] = None


def perf_cycles_available() -> bool:
    """Whether ``perf stat -e cycles`` counts here (no hardware counters in most VMs)."""
    global _PERF
    if _PERF is None:
        perf = shutil.which("perf")
        _PERF = False
        if perf is not None:
            try:
                p = subprocess.run([perf, "stat", "-x", ",", "-e", "cycles", "--", "true"], capture_output=True,
                                   text=True, timeout=30)
                first = (p.stderr.strip().splitlines() or [""])[-1].split(",")[0]
                _PERF = p.returncode == 0 and first.strip().isdigit()
            except (OSError, subprocess.TimeoutExpired):
                _PERF = False
    return _PERF


def _one_line(text: str) -> str:
    """A tool's telling line: its first error (the linker's own, not clang's
    "linker command failed"), else its last line outside a stack dump."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not re.match(r"^(#\d+ |\d+\.\s|Stack dump:|PLEASE submit)", ln)]
    for ln in lines:
        if re.search(r"\berror\b|cannot find|undefined reference", ln, re.I) and "linker command failed" not in ln:
            return ln[:300]
    return lines[-1][:300] if lines else ""


def _run_tool(cmd: List[str], what: str, timeout: float, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"{what}: {os.path.basename(cmd[0])} {how_it_ended(None, timed_out=True, timeout=timeout)}") \
            from None
    except OSError as exc:
        raise BuildFailed(f"{what}: cannot run {cmd[0]}: {exc.strerror}") from None
    if p.returncode != 0:
        last = _one_line(p.stderr)
        raise BuildFailed(f"{what}: {os.path.basename(cmd[0])} {how_it_ended(p.returncode)}" + (f": {last}" if last else ""))
    return p


# ---- the policy -------------------------------------------------------------------
def _problem_features() -> Dict[str, Tuple[int, ...]]:
    from ..problems.eviction.problem import RegallocEviction
    return {s.name: tuple(s.shape) for s in RegallocEviction.features}


def _check_declared(policy: Any) -> None:
    """A policy that declares its inputs (``features``: TensorSpecs, or
    ``names``/``feature_names``) must ask for the eviction problem's."""
    known = _problem_features()
    specs = getattr(policy, "features", None)
    if isinstance(specs, (list, tuple)) and specs and all(hasattr(s, "shape") and hasattr(s, "name") for s in specs):
        for s in specs:
            if s.name not in known:
                raise SpeedCheckPolicyError(f"the policy reads feature {s.name!r}, "
                                            "which the eviction advisor does not send")
            if tuple(s.shape) != known[s.name]:
                raise SpeedCheckPolicyError(f"the policy reads feature {s.name!r} of shape {list(s.shape)}; "
                                            f"the eviction advisor sends {list(known[s.name])}")
        return
    names = getattr(policy, "feature_names", None) or getattr(policy, "names", None)
    if isinstance(names, (list, tuple)):
        missing = [n for n in names if n not in known]
        if missing:
            raise SpeedCheckPolicyError(f"the policy reads feature(s) {', '.join(map(repr, missing[:3]))}, "
                                        "which the eviction advisor does not send")


class _Checked:
    """Wraps a policy: every answer must be one integer whose ``mask`` is 1."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def __getattr__(self, name: str) -> Any:        # on_session_start and friends
        if name in ("on_session_start", "on_context", "on_session_end"):
            return getattr(self.policy, name)
        raise AttributeError(name)

    def __call__(self, obs: Any) -> int:
        try:
            value = self.policy(obs)
        except MLBridgeError:
            raise
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise SpeedCheckPolicyError(f"the policy raised {type(exc).__name__}: {first}") from exc
        arr = np.asarray(value)
        if arr.size != 1 or arr.dtype.kind not in "iub":
            raise SpeedCheckPolicyError(f"the policy answered {arr.dtype} of shape {list(arr.shape)}; "
                                        "index_to_evict is one integer (int64 [1])")
        i = int(arr.reshape(-1)[0])
        mask = obs["mask"].reshape(-1)
        if not 0 <= i < mask.size or not mask[i]:
            raise SpeedCheckPolicyError(f"the policy answered index {i}, which the mask does not allow "
                                        f"(legal: {np.flatnonzero(mask).tolist()})")
        return i


# ---- building ---------------------------------------------------------------------
def _digest(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _bitcode(src: str, cflags: Sequence[str], clang: str, cache: str, what: str) -> str:
    """clang -O2 to bitcode, cached by the preprocessed source and the flags."""
    pre = _run_tool([clang, "-O2", *cflags, "-E", src], f"{what}: {os.path.basename(src)}", 600.0)
    key = _digest(clang, tuple(cflags), pre.stdout.encode())
    out = os.path.join(cache, f"{os.path.basename(src)}.{key}.bc")
    if not os.path.isfile(out):
        tmp = out + f".{os.getpid()}.tmp"
        _run_tool([clang, "-O2", *cflags, "-c", "-emit-llvm", src, "-o", tmp], f"{what}: {os.path.basename(src)}",
                  1800.0)
        os.replace(tmp, out)
    return out


_LLC_ARGS = ("-relocation-model=pic", "-filetype=obj")


def build_program(bench: Benchmark, policy: Any, out_dir: str, *, cache: Optional[str] = None,
                  clang: Optional[str] = None, llc: Optional[str] = None,
                  llc_timeout: float = 1800.0) -> Tuple[str, int, float]:
    """Builds BENCH into OUT_DIR/prog: every unit to bitcode, llc-19 with the
    default advisor (``policy=None``) or POLICY deciding every eviction, then
    linked. Returns (executable, decisions, llc wall seconds). A default build
    already in OUT_DIR from the same bitcode, tools and flags is reused (its
    llc seconds are the first build's)."""
    clang_p, llc_p = _tool("clang", clang), _tool("llc", llc)
    cache = cache or os.path.join(out_dir, "bc")
    os.makedirs(cache, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    label = "default" if policy is None else "policy"
    what = f"{bench.name} ({label} build)"
    bcs = []
    for src in bench.sources:
        if not os.path.isfile(src):
            raise BuildFailed(f"{what}: no source {src}")
        bcs.append(_bitcode(src, bench.cflags, clang_p, cache, what))
    exe = os.path.join(out_dir, "prog")
    meta = os.path.join(out_dir, "build.json")
    key = _digest(label, tuple(bcs), clang_p, llc_p, os.stat(llc_p).st_mtime_ns, bench.ldflags)
    if policy is None:
        try:
            with open(meta) as f:
                old = json.load(f)
            if old["key"] == key and os.path.isfile(exe):
                return exe, 0, float(old["llc_seconds"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    try:
        os.unlink(meta)
    except OSError:
        pass
    checked = None if policy is None else _Checked(policy)
    objs, decisions, seconds = [], 0, 0.0
    for i, (src, bc) in enumerate(zip(bench.sources, bcs)):
        obj = os.path.join(out_dir, f"{i}.{os.path.basename(src)}.o")
        t0 = time.monotonic()
        if checked is None:
            _run_tool([llc_p, *_LLC_ARGS, bc, "-o", obj], f"{what}: {os.path.basename(src)}", llc_timeout)
        else:
            try:
                _, answers = _llvm.regalloc_evict(bc, checked, out_path=obj, extra_args=list(_LLC_ARGS),
                                                  timeout=llc_timeout, llc=llc_p, check=True)
            except _llvm.CompilerFailed as exc:
                raise BuildFailed(f"{what}: {os.path.basename(src)}: {exc}") from None
            except SpeedCheckPolicyError as exc:
                raise SpeedCheckPolicyError(f"{what}: {os.path.basename(src)}: {exc}") from None
            except SpeedCheckError:
                raise
            except MLBridgeError as exc:     # the server's own check of an answer
                raise SpeedCheckPolicyError(f"{what}: {os.path.basename(src)}: {exc}") from None
            decisions += len(answers)
        seconds += time.monotonic() - t0
        objs.append(obj)
    _run_tool([clang_p, *objs, *bench.ldflags, "-o", exe], f"{what}: link", 600.0)
    with open(meta, "w") as f:
        json.dump({"key": key, "llc_seconds": seconds, "decisions": decisions}, f)
    return exe, decisions, seconds


def _file_digest(path: Optional[str]) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "unreadable"


def _counted(bench: Benchmark, exe: str, data_accesses: bool) -> Tuple[int, Optional[int]]:
    """The default build's callgrind counts, reused when its build, the workload,
    the reference and valgrind are the same as when they were counted."""
    d = os.path.dirname(exe)
    try:
        with open(os.path.join(d, "build.json")) as f:
            build_key = json.load(f)["key"]
    except (OSError, ValueError, KeyError, TypeError):
        build_key = None
    key = _digest(build_key, bench.args, _file_digest(bench.stdin), bench.expected, data_accesses, _valgrind())
    path = os.path.join(d, "counts.json")
    if build_key is not None:
        try:
            with open(path) as f:
                old = json.load(f)
            if old["key"] == key:
                return int(old["instructions"]), old["data_accesses"]
        except (OSError, ValueError, KeyError, TypeError):
            pass
    ins, data = count_instructions(bench, exe, "default", data_accesses=data_accesses)
    if build_key is not None:
        with open(path, "w") as f:
            json.dump({"key": key, "instructions": ins, "data_accesses": data}, f)
    return ins, data


# ---- running ----------------------------------------------------------------------
_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def _stdin(bench: Benchmark) -> Any:
    if bench.stdin is None:
        return contextlib.nullcontext(subprocess.DEVNULL)
    try:
        return open(bench.stdin, "rb")
    except OSError as exc:
        raise BenchmarkFailed(f"{bench.name}: cannot open its stdin {bench.stdin}: {exc.strerror}",
                              benchmark=bench.name) from None


def _check_output(bench: Benchmark, build: str, returncode: int, stdout: bytes, stderr: bytes) -> None:
    fail = Miscompile if build == "policy" else BenchmarkFailed
    if returncode != 0:
        last = _one_line(stderr.decode("utf-8", "replace"))
        raise fail(f"{bench.name} ({build} build) {how_it_ended(returncode)}" + (f": {last}" if last else ""), benchmark=bench.name,
                   build=build)
    if stdout != bench.expected:
        got = stdout.decode("utf-8", "replace").strip().splitlines() or [""]
        want = bench.expected.decode("utf-8", "replace").strip().splitlines() or [""]
        raise fail(f"{bench.name} ({build} build) printed {got[0][:80]!r}, its reference output is "
                   f"{want[0][:80]!r}", benchmark=bench.name, build=build)


def count_instructions(bench: Benchmark, exe: str, build: str = "default", *,
                       data_accesses: bool = True) -> Tuple[int, Optional[int]]:
    """Runs EXE on the workload under callgrind (checking the output):
    (executed instructions, data reads + writes or None)."""
    vg = _valgrind()
    cwd = os.path.dirname(os.path.abspath(exe))
    log = os.path.join(cwd, "callgrind.log")
    cmd = [vg, "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}",
           *(["--cache-sim=yes"] if data_accesses else []), "./" + os.path.basename(exe), *bench.args]
    with _stdin(bench) as stdin:
        try:
            p = subprocess.run(cmd, stdin=stdin, capture_output=True, cwd=cwd, env=_ENV, timeout=bench.timeout)
        except subprocess.TimeoutExpired:
            fail = Miscompile if build == "policy" else BenchmarkFailed
            raise fail(f"{bench.name} ({build} build) did not finish within {bench.timeout:g} s under callgrind",
                       benchmark=bench.name, build=build) from None
    _check_output(bench, build, p.returncode, p.stdout, p.stderr)
    with open(log) as f:
        text = f.read()
    m = re.search(r"Collected : ([\d ]+)", text)
    if m is None:
        raise SpeedCheckError(f"{bench.name} ({build} build): no instruction count in callgrind's log {log}")
    counts = [int(x) for x in m.group(1).split()]
    # events: Ir, then with the cache simulation Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
    return counts[0], (counts[1] + counts[2] if data_accesses and len(counts) >= 3 else None)


def time_runs(bench: Benchmark, exe: str, build: str = "default", *,
              repeats: int = 5) -> Tuple[Timing, Optional[Timing]]:
    """REPEATS native runs (each output checked): CPU time (user + system) of
    the workload, and perf stat cycles when available."""
    cwd = os.path.dirname(os.path.abspath(exe))
    perf = perf_cycles_available()
    cpu, cycles = [], []
    for _ in range(repeats):
        cmd = ["./" + os.path.basename(exe), *bench.args]
        perf_out = os.path.join(cwd, "perf.csv")
        if perf:
            cmd = [shutil.which("perf") or "perf", "stat", "-x", ",", "-e", "cycles", "-o", perf_out, "--", *cmd]
        with _stdin(bench) as stdin:
            returncode, out, err, seconds = run_timed(cmd, stdin=stdin, cwd=cwd, timeout=bench.timeout)
        if returncode is None:
            fail = Miscompile if build == "policy" else BenchmarkFailed
            raise fail(f"{bench.name} ({build} build) did not finish within {bench.timeout:g} s",
                       benchmark=bench.name, build=build)
        _check_output(bench, build, returncode, out, err)
        cpu.append(seconds)
        if perf:
            with open(perf_out) as f:
                perf_lines = f.read().splitlines()
            for ln in perf_lines:
                f = ln.split(",")
                if len(f) > 2 and f[2].startswith("cycles") and f[0].strip().isdigit():
                    cycles.append(float(f[0]))
    return Timing.of(cpu, "s"), (Timing.of(cycles, "cycles") if cycles else None)


def run_timed(cmd: Sequence[str], *, stdin: Any = None, cwd: Optional[str] = None,
              timeout: float) -> Tuple[Optional[int], bytes, bytes, float]:
    """Runs CMD to its end: (exit status, or None when it was killed at TIMEOUT
    seconds; stdout; stderr; its own CPU seconds, user + system). The child is
    reaped here with wait4, which returns that child's resource use alone: other
    threads starting and reaping children meanwhile do not count in it (as they
    would in a difference of getrusage(RUSAGE_CHILDREN))."""
    proc = subprocess.Popen(list(cmd), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=_ENV)
    streams: Dict[str, bytes] = {}

    def drain(name: str, f: Any) -> None:
        streams[name] = f.read()

    readers = [threading.Thread(target=drain, args=(n, f), daemon=True)
               for n, f in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        os.kill(proc.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    try:
        # ended but not reaped (WNOWAIT): until wait4 below the pid stays this child's,
        # so the timer, stopped and joined first, can never signal a reused pid
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    except BaseException:   # interrupted: the child does not outlive the call
        timer.cancel()
        proc.kill()
        proc.wait()
        raise
    timer.cancel()
    timer.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)   # reaped: Popen must not wait for it again
    for t in readers:
        t.join()
    proc.stdout.close()
    proc.stderr.close()
    return (None if killed.is_set() else proc.returncode, streams.get("out", b""), streams.get("err", b""),
            usage.ru_utime + usage.ru_stime)


# ---- the check --------------------------------------------------------------------
def check_program(bench: Benchmark, policy: Any, work: str, *, repeats: int = 5, data_accesses: bool = True,
                  cache: Optional[str] = None, clang: Optional[str] = None, llc: Optional[str] = None,
                  llc_timeout: float = 1800.0) -> ProgramResult:
    """One benchmark, built and measured with the default advisor and with POLICY."""
    _valgrind()
    exe_d, _, llc_d = build_program(bench, None, os.path.join(work, bench.name, "a"), cache=cache, clang=clang,
                                    llc=llc, llc_timeout=llc_timeout)
    # the default build's workload first: a benchmark that fails on its own costs no policy compile
    ins_d, data_d = _counted(bench, exe_d, data_accesses)
    exe_p, decisions, llc_p = build_program(bench, policy, os.path.join(work, bench.name, "b"), cache=cache,
                                            clang=clang, llc=llc, llc_timeout=llc_timeout)
    ins_p, data_p = count_instructions(bench, exe_p, "policy", data_accesses=data_accesses)
    res = ProgramResult(bench.name, ins_d, ins_p, data_d, data_p, True, decisions, llc_d, llc_p, split=bench.split)
    if repeats > 0:
        cpu_d, cpu_p, cyc_d, cyc_p = [], [], [], []
        for _ in range(repeats):    # alternating, so a change of load hits both alike
            t, c = time_runs(bench, exe_d, "default", repeats=1)
            cpu_d.append(t.mean), cyc_d.extend([c.mean] if c else [])
            t, c = time_runs(bench, exe_p, "policy", repeats=1)
            cpu_p.append(t.mean), cyc_p.extend([c.mean] if c else [])
        res.cpu_default, res.cpu_policy = Timing.of(cpu_d, "s"), Timing.of(cpu_p, "s")
        if cyc_d and cyc_p:
            res.cycles_default, res.cycles_policy = Timing.of(cyc_d, "cycles"), Timing.of(cyc_p, "cycles")
    return res


def speed_check(benchmarks: Sequence[Benchmark], policy: Any, *, work_dir: Optional[str] = None,
                repeats: int = 5, data_accesses: bool = True, clang: Optional[str] = None,
                llc: Optional[str] = None, llc_timeout: float = 1800.0,
                progress: Optional[Callable[[ProgramResult], Any]] = None) -> SpeedCheck:
    """Every benchmark with the default advisor and with POLICY (``policy(obs) ->
    index_to_evict``). Bitcode is cached in WORK_DIR/bc and the default build
    and its counts in WORK_DIR/NAME/a, so a second policy checked in the same
    WORK_DIR compiles and counts only its own build (default: a temporary
    folder, removed after). Raises the first :class:`SpeedCheckError`."""
    if policy is None or not callable(policy):
        raise SpeedCheckPolicyError(f"the policy must be a callable policy(obs) -> index_to_evict, got {policy!r}")
    _check_declared(policy)
    _tool("clang", clang), _tool("llc", llc), _valgrind()
    tmp = None
    if work_dir is None:
        tmp = work_dir = tempfile.mkdtemp(prefix="mlbridge-speed-")
    try:
        out = SpeedCheck(perf_cycles=perf_cycles_available() and repeats > 0)
        for b in benchmarks:
            r = check_program(b, policy, work_dir, repeats=repeats, data_accesses=data_accesses,
                              cache=os.path.join(work_dir, "bc"), clang=clang, llc=llc, llc_timeout=llc_timeout)
            out.programs.append(r)
            if progress is not None:
                progress(r)
        return out
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


# ---- the real programs ------------------------------------------------------------
def _programs() -> str:
    """The benchmark programs' C sources, shipped with the package (package data)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


_WORDS = ("the of and to in is was that for on with as by at from register allocator eviction live range spill "
          "reload copy loop block frequency compiler policy model decision interval weight split stage hint "
          "virtual physical interference queue priority cost").split()


def workload_text(size: int = 200_000, seed: int = 1) -> bytes:
    """SIZE bytes of deterministic English-like text (the same on every machine:
    a 64-bit LCG, not Python's random): compressible like real text."""
    out, n, x = [], 0, seed
    while n < size:
        x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        w = _WORDS[(x >> 33) % len(_WORDS)]
        sep = ".\n" if (x >> 20) % 10 == 0 else (f" {(x >> 40) % 1000} " if (x >> 24) % 13 == 0 else " ")
        piece = (w + sep).encode()
        out.append(piece)
        n += len(piece)
    return b"".join(out)[:size]


def kernel_benchmarks() -> List[Benchmark]:
    """The register-pressure kernels (benchmark/programs/) with bench_main.c's workload."""
    d = _programs()
    srcs = tuple(os.path.join(d, f) for f in ("bench_main.c", "chacha20.c", "sha256.c", "dgemm.c"))
    return [Benchmark(name, srcs, expected, args=(name,)) for name, expected in _KERNEL_OUTPUTS.items()]


_KERNEL_OUTPUTS = {
    "chacha20": b"cbada0b33d73433d\n",
    "sha256": b"2d7a0bfea0285f25079e32e925d7a0a0369b5b7d2138503536990d3dcce9810c\n",
    "dgemm": b"-1172.000000\n",
}

#: the codecs' output on workload_text(200_000, 1): sizes and FNV-1a of the compressed bytes
_CODEC_OUTPUTS = {
    "lz4": b"lz4 200000 -> 57320 bytes, fnv1a 091a156fb162fa10\n",
    "zstd": b"zstd 200000 -> 50473 bytes, fnv1a 0c083533b26f12a4\n",
    "brotli": b"brotli 200000 -> 52150 bytes, fnv1a 4c65fd23e55d8d6d\n",
}


def codec_benchmarks(names: Sequence[str] = ("lz4", "zstd", "brotli"), *, cache: Optional[str] = None,
                     work_dir: Optional[str] = None) -> List[Benchmark]:
    """lz4, zstd and brotli from the corpus recipes' pinned PyPI sdists (fetched
    once with pip into the corpus cache), each compressing and decompressing
    ``workload_text()`` on stdin with benchmark/programs/codec_main.c."""
    from ..corpus.recipes.build import default_cache
    cache = os.path.abspath(cache or default_cache())
    work_dir = work_dir or os.path.join(cache, ".work", "speed-check")
    os.makedirs(work_dir, exist_ok=True)
    text = os.path.join(work_dir, "workload-200000-1.txt")
    if not os.path.isfile(text):
        def write(tmp: str) -> None:
            with open(tmp, "wb") as f:
                f.write(workload_text(200_000, 1))
        replace_when_complete(text + ".tmp", text, write)
    main = os.path.join(_programs(), "codec_main.c")
    setup = {
        "lz4": ("lz4", ("lz4libs/lz4.c", "lz4libs/lz4hc.c"), ("lz4libs",), ("-DCODEC_LZ4",), ()),
        "zstd": ("zstandard", ("zstd/zstd.c",), ("zstd",), ("-DCODEC_ZSTD",), ()),
        "brotli": ("brotli", ("c/common/*.c", "c/dec/*.c", "c/enc/*.c"), ("c/include",), ("-DCODEC_BROTLI",),
                   ("-lm",)),
    }
    out = []
    for name in names:
        if name not in setup:
            raise ArgumentError("names", f"{{arg}}: no codec benchmark {name!r} (known: {', '.join(setup)})")
        recipe_name, globs, include, defines, libs = setup[name]
        top, srcs, split = _recipe_sources(recipe_name, globs, cache)
        out.append(Benchmark(name, (main,) + srcs, _CODEC_OUTPUTS[name],
                             cflags=tuple(f"-I{os.path.join(top, i)}" for i in include) + defines,
                             ldflags=libs, stdin=text, split=split))
    return out


def _recipe_sources(recipe_name: str, globs: Sequence[str], cache: str,
                    leave_out: Sequence[str] = ()) -> Tuple[str, Tuple[str, ...], str]:
    """A corpus recipe's pinned sdist, fetched once and unpacked under CACHE: its
    top folder, the sources GLOBS name (but LEAVE_OUT's base names) and its split."""
    import glob as _glob
    from ..corpus.recipes import recipes
    from ..corpus.recipes.build import fetch, unpack
    r = recipes()[recipe_name]
    work = os.path.join(cache, ".work", f"{r.name}-{r.version}")
    os.makedirs(work, exist_ok=True)
    top = unpack(fetch(r, work), os.path.join(work, "src"))
    srcs = sorted(p for g in globs for p in _glob.glob(os.path.join(top, g)) if os.path.basename(p) not in leave_out)
    return top, tuple(srcs), r.split


def erfa_benchmark(*, cache: Optional[str] = None) -> Benchmark:
    """A numeric kernel of a training-split project: pyerfa's liberfa (every
    source but its tests and its version file, which needs configure) and
    benchmark/programs/erfa_main.c, the precession-nutation matrix for 200
    dates. Its output is the same at -O0 and -O2."""
    from ..corpus.recipes.build import default_cache
    cache = os.path.abspath(cache or default_cache())
    top, srcs, split = _recipe_sources("pyerfa", ("liberfa/erfa/src/*.c",), cache,
                                       leave_out=("t_erfa_c.c", "t_erfa_c_extra.c", "erfaversion.c"))
    return Benchmark("erfa", (os.path.join(_programs(), "erfa_main.c"),) + srcs, b"erfa 3001.648563900811\n",
                     cflags=(f"-I{os.path.join(top, 'liberfa', 'erfa', 'src')}",), ldflags=("-lm",), split=split)


def real_benchmarks(*, cache: Optional[str] = None) -> List[Benchmark]:
    """The three compressors and the three kernels."""
    return codec_benchmarks(cache=cache) + kernel_benchmarks()
