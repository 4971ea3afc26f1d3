"""Score a policy on a corpus: every module compiled with the policy deciding a
problem's questions and under its own -Oz pipeline (the baseline: the same
command, no policy option), in parallel; ``.text`` bytes per module and in total.

A problem measured on IR (``Problem.compiles_to == "ir"``: regalloc-eviction) is
scored per module instead from the module's optimized bitcode (its recorded
command with ``-emit-llvm-bc``, compiled once), measured twice by the problem
(``measure_ir``): with the baseline deciding and with the policy deciding; its
report is in the problem's unit (``Evaluation.as_dict``).

Baseline sizes are cached (``BaselineCache``) by what determines them: the
module's bitcode, its recompile command and the clang version (for IR problems
also llc, its version and options, and the scorer's code); so scoring a second
policy on the same corpus compiles each module once.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from ..core.ended import how_it_ended
from ..problems import DEFAULT, IllegalAnswer, Problem, ProblemError, resolve
from .compile import (CompileOptions, CompiledModule, Policy, Toolchain, cc1_args, command_for, compile_module,
                      _last_lines)
from .elf import ElfError
from .layout import Corpus, CorpusError, Module
from .programs import Program, load_programs
from .settings import Setting, build_program, program_key
from .where import FunctionChange, compare_functions
from . import training_logs

OZ = Policy("oz", "oz")
_CACHE_FORMAT = "1"   # bump when what a cached size means changes


def default_cache_dir(problem: Union[str, Problem, None] = None) -> str:
    """Where baselines are cached: ``oz-text`` (.text sizes), or for a problem
    measured on IR ``PROBLEM-baseline`` (e.g. regalloc-eviction-baseline)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    p = resolve(problem) if problem is not None else None
    return os.path.join(base, "mlbridge", f"{p.name}-baseline" if p is not None and p.compiles_to == "ir"
                        else "oz-text")


class BaselineCache:
    """-Oz .text sizes on disk, one small file per key (safe under parallel
    writers: each write is a rename)."""

    def __init__(self, root: str) -> None:
        self.root = root

    @staticmethod
    def key(module: Module, toolchain: Toolchain, thinlto: bool) -> str:
        h = hashlib.sha256()
        for part in (_CACHE_FORMAT, toolchain.version, os.path.realpath(toolchain.clang), str(thinlto)):
            h.update(part.encode() + b"\0")
        h.update("\0".join(cc1_args(module.command())).encode() + b"\0\0")
        with open(module.bc, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        if thinlto:
            with open(module.thinlto_index, "rb") as f:
                h.update(f.read())
        return h.hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key)

    def get(self, key: str) -> Optional[int]:
        try:
            with open(self._path(key), "rb") as f:
                text = f.read(32)
        except OSError:
            return None
        try:
            value = int(text.decode("ascii").strip())
        except (UnicodeDecodeError, ValueError):
            return None   # a damaged entry is a miss, and is rewritten
        return value if value >= 0 else None

    def put(self, key: str, text_bytes: int) -> None:
        self._write(key, f"{text_bytes}\n")

    def _write(self, key: str, text: str) -> None:
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except OSError:
            pass   # a cache that cannot be written only costs time

    @staticmethod
    def ir_key(module: Module, toolchain: Toolchain, ir_args: List[str], problem: Problem,
               codegen: List[str]) -> str:
        """The key of a problem measured on IR: the module's bitcode, the clang
        command that optimizes it (IR_ARGS) and clang, llc and its version, its
        options (CODEGEN), the problem and its scorer (``fingerprint``)."""
        h = hashlib.sha256()
        for part in (_CACHE_FORMAT, "ir", problem.name, problem.fingerprint(),
                     toolchain.version, os.path.realpath(toolchain.clang), toolchain.llc_version,
                     os.path.realpath(toolchain.llc or ""), "\0".join(ir_args), "\0".join(codegen)):
            h.update(part.encode() + b"\0")
        with open(module.bc, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def get_measured(self, key: str) -> Optional[Dict[str, Any]]:
        """A baseline of a problem measured on IR: {value, details, seconds}, or None."""
        try:
            with open(self._path(key), "rb") as f:
                d = json.loads(f.read(1 << 16).decode("utf-8"))
            float(d["value"])
            if not isinstance(d.get("details"), dict):
                return None
            return d
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
            return None   # missing or damaged: a miss, rewritten

    def put_measured(self, key: str, value: float, details: Dict[str, Any]) -> None:
        self._write(key, json.dumps({"value": value, "details": details}) + "\n")


@dataclass
class ModuleScore:
    module: str
    baseline: CompiledModule
    policy: CompiledModule
    baseline_cached: bool = False
    #: per-function changes (where.py), when evaluate(where=True)
    functions: Optional[List["FunctionChange"]] = None
    #: set for a problem measured on IR (its values are CompiledModule.value)
    problem: Optional[Problem] = None

    @property
    def ok(self) -> bool:
        return self.baseline.ok and self.policy.ok

    @property
    def delta(self) -> Optional[Union[int, float]]:
        if not self.ok:
            return None
        if self.problem is not None:
            return float(self.policy.value) - float(self.baseline.value)  # type: ignore[arg-type]
        return int(self.policy.text_bytes) - int(self.baseline.text_bytes)  # type: ignore[arg-type]

    @property
    def failures(self) -> List[CompiledModule]:
        seen: List[CompiledModule] = []
        for r in (self.baseline, self.policy):
            if not r.ok and all(r is not s for s in seen):
                seen.append(r)
        return seen

    def as_dict(self) -> Dict[str, Any]:
        if self.problem is not None:
            return self._ir_dict(self.problem)
        d: Dict[str, Any] = {
            "module": self.module, "ok": self.ok,
            "oz_text": self.baseline.text_bytes, "policy_text": self.policy.text_bytes,
            "delta": self.delta, "delta_pct": _pct(self.delta, self.baseline.text_bytes),
            "oz_seconds": None if self.baseline_cached else round(self.baseline.seconds, 4),
            "policy_seconds": round(self.policy.seconds, 4), "decisions": self.policy.decisions,
            "capped": self.policy.capped, "oz_cached": self.baseline_cached,
        }
        if not self.ok:
            d["errors"] = [{"run": "oz" if r is self.baseline else "policy", "error": r.error,
                            "command": r.command, "timed_out": r.timed_out} for r in self.failures]
        return d

    def _ir_dict(self, problem: Problem) -> Dict[str, Any]:
        b, p = self.baseline, self.policy
        d: Dict[str, Any] = {
            "module": self.module, "ok": self.ok,
            "baseline_score": _round(b.value), "policy_score": _round(p.value),
            "delta": _round(self.delta), "delta_pct": _pct(self.delta, b.value),
            "reward": _round(problem.reward(float(b.value), float(p.value))) if self.ok else None,  # type: ignore
            "decisions": p.decisions,
        }
        for key in ("spills", "reloads", "spill_reload_cost"):
            for side, r in (("baseline", b), ("policy", p)):
                d[f"{side}_{key}"] = _round(r.details.get(key)) if r.ok else None
        d.update(baseline_seconds=None if self.baseline_cached else round(b.seconds, 4),
                 policy_seconds=round(p.seconds, 4), baseline_cached=self.baseline_cached)
        if not self.ok:
            d["errors"] = [{"run": r.run or ("baseline" if r is b else "policy"), "error": r.error,
                            "command": r.command, "timed_out": r.timed_out} for r in self.failures]
        return d


@dataclass
class Evaluation:
    corpus: str
    policy: str
    clang: str
    jobs: int
    scores: List[ModuleScore] = field(default_factory=list)
    wall_seconds: float = 0.0
    #: objects, linked, lto or thinlto (settings.py); a score is a program but in objects
    setting: str = "objects"
    #: training logs whose reward was set (evaluate's log_dir)
    logged: int = 0
    #: set for a problem measured on IR: the report is in its unit, not .text bytes
    problem: Optional[Problem] = None
    #: llc's version (problems measured on IR)
    llc: str = ""

    @property
    def failed(self) -> List[ModuleScore]:
        return [s for s in self.scores if not s.ok]

    def totals(self) -> Dict[str, Any]:
        if self.problem is not None:
            return self._ir_totals(self.problem)
        ok = [s for s in self.scores if s.ok]
        oz = sum(int(s.baseline.text_bytes) for s in ok)  # type: ignore[arg-type]
        pol = sum(int(s.policy.text_bytes) for s in ok)  # type: ignore[arg-type]
        return {"modules": len(self.scores), "ok": len(ok), "failed": len(self.scores) - len(ok),
                "oz_text": oz, "policy_text": pol, "delta": pol - oz, "delta_pct": _pct(pol - oz, oz),
                "smaller": sum(1 for s in ok if (s.delta or 0) < 0),
                "larger": sum(1 for s in ok if (s.delta or 0) > 0),
                "decisions": sum(s.policy.decisions or 0 for s in ok),
                "capped": sum(s.policy.capped for s in ok), "capped_modules": sum(1 for s in ok if s.policy.capped)}

    def _ir_totals(self, problem: Problem) -> Dict[str, Any]:
        ok = [s for s in self.scores if s.ok]
        base = sum(float(s.baseline.value) for s in ok)  # type: ignore[arg-type]
        pol = sum(float(s.policy.value) for s in ok)  # type: ignore[arg-type]
        t: Dict[str, Any] = {
            "modules": len(self.scores), "ok": len(ok), "failed": len(self.scores) - len(ok),
            "baseline_score": _round(base), "policy_score": _round(pol), "delta": _round(pol - base),
            "delta_pct": _pct(pol - base, base), "reward": _round(problem.reward(base, pol)) if ok else None,
            "better": sum(1 for s in ok if (s.delta or 0) < 0), "worse": sum(1 for s in ok if (s.delta or 0) > 0),
            "decisions": sum(s.policy.decisions or 0 for s in ok)}
        for key in ("spills", "reloads", "spill_reload_cost"):
            for side in ("baseline", "policy"):
                t[f"{side}_{key}"] = _round(sum(getattr(s, side).details.get(key, 0) for s in ok))
        return t

    def as_dict(self) -> Dict[str, Any]:
        d = {"corpus": self.corpus, "policy": self.policy, "clang": self.clang, "jobs": self.jobs,
             "setting": self.setting, "wall_seconds": round(self.wall_seconds, 3), "total": self.totals(),
             "modules": [s.as_dict() for s in self.scores]}
        if self.problem is not None:   # the inliner's report is as it was
            d.update(problem=self.problem.name, unit=self.problem.unit, baseline=self.problem.baseline,
                     llc=self.llc)
        return d


def _pct(delta: Optional[Union[int, float]], base: Optional[Union[int, float]]) -> Optional[float]:
    if delta is None or not base:
        return None
    return round(100.0 * delta / base, 3)


def _round(v: Optional[Union[int, float]]) -> Optional[Union[int, float]]:
    """A score as reported: integers as they are, floats to 6 decimals."""
    return round(v, 6) if isinstance(v, float) else v


def evaluate(corpus: Corpus, policy: Policy, toolchain: Toolchain, *, jobs: Optional[int] = None,
             options: Optional[CompileOptions] = None, cache: Optional[BaselineCache] = None,
             on_done: Optional[Callable[[ModuleScore], None]] = None, where: bool = False,
             setting: Optional[Setting] = None, log_dir: Optional[str] = None,
             problem: Union[str, Problem] = DEFAULT) -> Evaluation:
    """Compiles every module with `policy` deciding PROBLEM's questions (a name
    or a Problem; a ProblemError if it is not scored in `setting`), and under
    -Oz, with `jobs` parallel compiles
    (default: all cores). `options.extra_args`/`extra_env` apply to the policy's
    compiles only (the baseline is plain -Oz). `on_done` is called, in the
    calling thread, as each module finishes (progress). `where`: also compare the
    two objects function by function (ModuleScore.functions); the baseline is then
    compiled, not taken from the cache, since its object is needed.
    `setting` linked, lto or thinlto: one score per program of the corpus's
    programs.json (settings.py), each the linked file's .text.
    `log_dir`: the policy's decisions logged in LLVM's training-log format
    (training_logs), each log's reward set from the measured sizes; with the
    policy ``oz`` the stock heuristic is logged (imitation data)."""
    problem = resolve(problem)
    problem.check("corpus evaluate", setting.name if setting is not None else "objects")
    jobs = max(1, jobs or os.cpu_count() or 1)
    options = options or CompileOptions(thinlto=corpus.has_thinlto)
    if problem.compiles_to == "ir":
        return _evaluate_ir(corpus, policy, toolchain, problem, jobs, options, cache, on_done, where, log_dir)
    # a problem scored from objects in its own unit (phase ordering: stored bytes): the
    # -Oz cache holds .text only, and every score is read in the problem's measure
    valued = problem if problem.unit != _TEXT else None
    if valued is not None:
        cache = None
    if log_dir is not None:   # a problem without training logs refuses here, before any compile
        problem.training_log_options(os.path.join(log_dir, "check.log"))
    if setting is not None and setting.whole_program:
        return _evaluate_programs(corpus, policy, toolchain, setting, jobs, options, cache, on_done, where, log_dir,
                                  valued)
    if log_dir is not None:
        options = training_logs.logging_options(options, policy, toolchain, lambda m: module_log(log_dir, m),
                                                problem)
        if policy.kind == "oz":
            cache = None   # the logged run loads the plugin: its sizes are not plain -Oz's to cache
    if where:
        options = dataclasses.replace(options, keep_objects=True)
        cache = None
    base_opts = dataclasses.replace(options, extra_args=None, extra_env=None)
    result = Evaluation(corpus.root, policy.spec, toolchain.version, jobs, problem=valued)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mlbridge-eval-") as work:
        result.scores = _score_modules(
            corpus, jobs, on_done,
            lambda m: _valued(_score(m, policy, work, toolchain, options, base_opts, cache, where, problem), valued))
    result.wall_seconds = time.monotonic() - start
    if log_dir is not None:
        for m, sc in zip(corpus.modules, result.scores):
            if sc.ok:
                result.logged += training_logs.set_rewards([module_log(log_dir, m)], sc)
    return result


def module_log(log_dir: str, module: Module) -> str:
    """Where --log puts a module's training log in the objects setting."""
    return os.path.join(log_dir, module.name + ".log")


def oz_sizes(corpus: Corpus, toolchain: Toolchain, *, jobs: Optional[int] = None,
             cache: Optional[BaselineCache] = None,
             on_done: Optional[Callable[[ModuleScore], None]] = None) -> Dict[str, int]:
    """-Oz .text bytes per module (cached in the user's cache by default); modules
    that fail to compile are left out (``evaluate(corpus, OZ, ...)`` says why)."""
    ev = evaluate(corpus, OZ, toolchain, jobs=jobs, cache=cache or BaselineCache(default_cache_dir()),
                  on_done=on_done)
    return {s.module: int(s.baseline.text_bytes) for s in ev.scores if s.ok and s.baseline.text_bytes}


def _score_modules(corpus: Corpus, jobs: int, on_done: Optional[Callable[[ModuleScore], None]],
                   score: Callable[[Module], ModuleScore]) -> List[ModuleScore]:
    """SCORE of every module of CORPUS on JOBS threads, in the corpus's order;
    ON_DONE hears each as it ends. Largest bitcode first, so the longest
    compiles do not end up alone at the end; the first error cancels the rest."""
    with cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mlbridge-eval") as pool:
        futures = [pool.submit(score, m) for m in sorted(corpus.modules, key=_bc_size, reverse=True)]
        try:
            for fut in cf.as_completed(futures):
                done = fut.result()
                if on_done is not None:
                    on_done(done)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    by_name = {s.module: s for s in (f.result() for f in futures)}
    return [by_name[m.name] for m in corpus.modules]


def _bc_size(module: Module) -> int:
    try:
        return os.path.getsize(module.bc)
    except OSError:
        return 0


#: the unit of problems scored as the inliner is (.text bytes, the baseline cache's)
_TEXT = ".text bytes"


def _valued(score: ModuleScore, problem: Optional[Problem]) -> ModuleScore:
    """SCORE read in PROBLEM's measure (its ``value``s set), for a problem scored
    from objects in its own unit; as it is otherwise."""
    if problem is not None:
        for r in (score.baseline, score.policy):
            if r.ok:
                r.value = problem.measure(r)
        score.problem = problem
    return score


def _score(module: Module, policy: Policy, work: str, toolchain: Toolchain, options: CompileOptions,
           base_opts: CompileOptions, cache: Optional[BaselineCache], where: bool = False,
           problem: Union[str, Problem] = DEFAULT) -> ModuleScore:
    key = None
    cached: Optional[int] = None
    if cache is not None:
        try:
            key = BaselineCache.key(module, toolchain, base_opts.thinlto)
            cached = cache.get(key)
        except (OSError, CorpusError):
            key = None   # the compile reports what is wrong with the module
    def baseline(opts: CompileOptions) -> CompiledModule:
        if cached is not None:
            return CompiledModule(module.name, ok=True, text_bytes=cached, command="(cached)")
        r = compile_module(module, OZ, work, toolchain, opts, tag="oz", problem=problem)
        if r.ok and key is not None:
            cache.put(key, int(r.text_bytes))  # type: ignore[union-attr, arg-type]
        return r

    if policy.kind == "oz":   # one compile is both the policy's and the baseline
        base = baseline(options)
        score = ModuleScore(module.name, base, base, baseline_cached=cached is not None)
    else:
        pol = compile_module(module, policy, work, toolchain, options, tag="policy", problem=problem)
        score = ModuleScore(module.name, baseline(base_opts), pol, baseline_cached=cached is not None)
    kept = {r.object_path for r in (score.baseline, score.policy) if r.object_path}
    if where and score.ok and score.baseline.object_path and score.policy.object_path:
        try:
            score.functions = compare_functions(module.name, score.baseline.object_path, score.policy.object_path)
        except (ElfError, OSError):
            score.functions = None   # the sizes stand; only the breakdown is missing
    if where:   # the objects were kept for the comparison only
        for path in kept:
            try:
                os.unlink(path)
            except OSError:
                pass
    return score


def _evaluate_programs(corpus: Corpus, policy: Policy, toolchain: Toolchain, setting: Setting, jobs: int,
                       options: CompileOptions, cache: Optional[BaselineCache],
                       on_done: Optional[Callable[[ModuleScore], None]], where: bool,
                       log_dir: Optional[str] = None, valued: Optional[Problem] = None) -> Evaluation:
    """evaluate() in a whole-program setting: per program, the -Oz build and the
    policy's (same flags, same link) run as parallel tasks. LOG_DIR: the logs of
    program P in LOG_DIR/P/ (training_logs.program_logs)."""
    if corpus.has_thinlto:
        raise CorpusError(f"{corpus.root}: a ThinLTO corpus cannot be linked in the {setting.name} setting "
                          "(its modules are ThinLTO backends)")
    programs = load_programs(corpus)
    if where:
        cache = None
    base_opts = dataclasses.replace(options, extra_args=None, extra_env=None)
    result = Evaluation(corpus.root, policy.spec, toolchain.version, jobs, setting=setting.name, problem=valued)
    problem: Union[str, Problem] = valued if valued is not None else DEFAULT
    start = time.monotonic()

    def key_of(program: Program) -> Optional[str]:
        try:
            parts = [BaselineCache.key(m, toolchain, False) for m in program.members(corpus)]
        except (OSError, CorpusError):
            return None
        return program_key(parts, program, setting)

    with tempfile.TemporaryDirectory(prefix="mlbridge-eval-") as work, \
            cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mlbridge-eval") as pool:
        def baseline(program: Program) -> "tuple[CompiledModule, bool]":
            key = key_of(program) if cache is not None else None
            cached = cache.get(key) if cache is not None and key is not None else None
            if cached is not None:
                return CompiledModule(program.name, ok=True, text_bytes=cached, command="(cached)"), True
            r = build_program(corpus, program, OZ, setting, work, toolchain, base_opts, tag="oz", keep=where,
                              problem=problem)
            if r.ok and key is not None and cache is not None:
                cache.put(key, int(r.text_bytes))  # type: ignore[arg-type]
            return r, False

        def policy_run(program: Program) -> CompiledModule:
            if log_dir is None:
                return build_program(corpus, program, policy, setting, work, toolchain, options, tag="policy",
                                     keep=where, problem=problem)
            folder = training_logs.program_log_dir(log_dir, program)
            opts = training_logs.logging_options(options, policy, toolchain,
                                                 lambda m: training_logs.member_log(folder, m), problem)
            link_env = ({resolve(problem).linker_log_variable: training_logs.linker_log(folder)} if setting.lto
                        else None)
            return build_program(corpus, program, policy, setting, work, toolchain, opts, tag="policy", keep=where,
                                 link_env=link_env, problem=problem)

        # a logged -Oz run is its own build: the plugin it loads is not plain -Oz
        own_run = policy.kind != "oz" or policy.in_linker.kind != "oz" or log_dir is not None
        jobs_of = {p.name: (pool.submit(baseline, p), pool.submit(policy_run, p) if own_run else None)
                   for p in programs}
        try:
            for p in programs:
                bfut, pfut = jobs_of[p.name]
                base, cached = bfut.result()
                pol = base if pfut is None else pfut.result()
                score = _valued(ModuleScore(p.name, base, pol, baseline_cached=cached), valued)
                if log_dir is not None and score.ok:
                    result.logged += training_logs.set_rewards(
                        training_logs.program_logs(training_logs.program_log_dir(log_dir, p)), score)
                if where and score.ok and base.object_path and pol.object_path:
                    try:
                        score.functions = compare_functions(p.name, base.object_path, pol.object_path)
                    except (ElfError, OSError):
                        score.functions = None
                result.scores.append(score)
                if on_done is not None:
                    on_done(score)
        except BaseException:
            for b, pf in jobs_of.values():
                b.cancel()
                if pf is not None:
                    pf.cancel()
            raise
    result.wall_seconds = time.monotonic() - start
    return result


# -- problems measured on IR (regalloc-eviction) ----------------------------------------------

def check_ir_problem(problem: Problem, policy: Policy, *, where: bool = False, log_dir: Optional[str] = None,
                     thinlto: bool = False) -> None:
    """A ProblemError, before any compile, for what a problem measured on IR
    cannot do: a kind of policy it cannot run, --where (a comparison of .text by
    function), training logs (the inliner's), a ThinLTO corpus."""
    if policy.kind != "oz":
        problem.policy_options(policy)   # ProblemError for a kind of policy it cannot run
    if where:
        raise ProblemError("where", f"{{arg}}: compares two objects' functions by .text bytes; the {problem.name} "
                           f"problem is scored in {problem.unit} per module (see --json for each module's figures)")
    if log_dir is not None:
        raise ProblemError("log", f"{{arg}}: training logs are written for the inlining-size problem only, "
                           f"not {problem.name}")
    if thinlto:
        raise ProblemError("problem", f"{{arg}} {problem.name}: a ThinLTO corpus (post-import backends) is not "
                           "scored for it: extract the pre-link compiles")


def _evaluate_ir(corpus: Corpus, policy: Policy, toolchain: Toolchain, problem: Problem, jobs: int,
                 options: CompileOptions, cache: Optional[BaselineCache],
                 on_done: Optional[Callable[[ModuleScore], None]], where: bool,
                 log_dir: Optional[str]) -> Evaluation:
    check_ir_problem(problem, policy, where=where, log_dir=log_dir, thinlto=options.thinlto or corpus.has_thinlto)
    if toolchain.llc is None:
        toolchain = toolchain.with_llc()
    result = Evaluation(corpus.root, policy.spec, toolchain.version, jobs, problem=problem,
                        llc=toolchain.llc_version)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mlbridge-eval-") as work:
        result.scores = _score_modules(
            corpus, jobs, on_done, lambda m: _score_ir(m, policy, work, toolchain, options, cache, problem))
    result.wall_seconds = time.monotonic() - start
    return result


def _score_ir(module: Module, policy: Policy, work: str, toolchain: Toolchain, options: CompileOptions,
              cache: Optional[BaselineCache], problem: Problem) -> ModuleScore:
    """One module: its optimized bitcode (the recorded command, -emit-llvm-bc),
    then the problem's baseline measure (cached) and the policy's."""
    def failed(error: str, command: str, run: str, timed_out: bool = False) -> ModuleScore:
        r = CompiledModule(module.name, ok=False, error=error, command=command, run=run, timed_out=timed_out)
        return ModuleScore(module.name, r, r, problem=problem)

    # NAME.opt.bc in a folder of its own: the commands shown run as they are in any folder
    folder = os.path.join(work, hashlib.sha1(module.name.encode()).hexdigest()[:16])
    short = f"{os.path.basename(module.name)[:60]}.opt.bc"
    ir = os.path.join(folder, short)
    ir_opts = dataclasses.replace(options, bitcode=True, extra_args=None, extra_env=None, keep_objects=False)
    try:
        cmd = command_for(module, Policy("oz", "oz"), short, toolchain, ir_opts, problem)
        recorded = cc1_args(module.command(), emit=())
        codegen = problem.codegen_args(recorded)
    except (CorpusError, OSError) as exc:
        return failed(f"cannot read the module's command: {exc}", f"(command of {module.name})", "clang")
    tools = {"llc": str(toolchain.llc)}
    llc_line = lambda with_policy: problem.codegen_command(short, codegen, llc=str(toolchain.llc),
                                                           policy=with_policy)
    ir_line = shlex.join(cmd)
    cache_key: Optional[str] = None
    cached: Optional[Dict[str, Any]] = None
    if cache is not None:
        try:
            cache_key = BaselineCache.ir_key(module, toolchain, recorded + ["-emit-llvm-bc"], problem, codegen)
            cached = cache.get_measured(cache_key)
        except OSError:
            cache_key = None
    cached_base = None if cached is None else CompiledModule(
        module.name, ok=True, value=float(cached["value"]), details=cached["details"], decisions=0, command="(cached)")
    if cached_base is not None and policy.kind == "oz":
        return ModuleScore(module.name, cached_base, cached_base, baseline_cached=True, problem=problem)

    start = time.monotonic()
    try:
        os.makedirs(folder, exist_ok=True)
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=options.timeout,
                           env=options.environ, cwd=folder)
    except subprocess.TimeoutExpired:
        return failed(f"clang {how_it_ended(None, timed_out=True, timeout=options.timeout)} "
                      "(optimizing the module to IR)", ir_line,
                      "clang", timed_out=True)
    except OSError as exc:
        return failed(f"cannot run {cmd[0]}: {exc}", ir_line, "clang")
    ir_seconds = time.monotonic() - start
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip()
        return failed(f"clang {how_it_ended(p.returncode)} (optimizing the module to IR)" + (f": {_last_lines(err)}" if err else ""),
                      ir_line, "clang")
    try:
        def measure(fn: Any, run: str) -> CompiledModule:
            line = f"{ir_line} && {llc_line(fn is not None)}"
            try:
                m = problem.measure_ir(ir, recorded, fn, tools=tools, timeout=options.timeout)
            except Exception as exc:   # llc failed or died, the policy raised or answered wrong
                what = _measure_error(exc).replace(ir, short)
                return CompiledModule(module.name, ok=False, error=what, command=line, run=run,
                                      timed_out=getattr(exc, "timed_out", False),
                                      seconds=time.monotonic() - start)
            return CompiledModule(module.name, ok=True, value=m.value, details=dict(m.details),
                                  decisions=m.decisions, seconds=ir_seconds + m.seconds, command=line)

        if cached_base is not None:
            base = cached_base
        else:
            base = measure(None, "baseline")
            if base.ok and cache is not None and cache_key is not None:
                cache.put_measured(cache_key, float(base.value), base.details)  # type: ignore[arg-type]
        pol = base if policy.kind == "oz" else measure(policy.fn, "policy")
        return ModuleScore(module.name, base, pol, baseline_cached=cached is not None, problem=problem)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure_error(exc: Exception) -> str:
    """One line for what stopped a measure: the compiler's failure as it words
    it (CompilerFailed and the scorer's errors are one line), a policy's
    unusable answer, or what a policy raised."""
    from ..core.errors import MLBridgeError
    if isinstance(exc, IllegalAnswer):
        return f"the Python policy's answer cannot be used: {exc}"
    if isinstance(exc, MLBridgeError):
        return str(exc)
    return f"the Python policy failed: {type(exc).__name__}: {exc}"
