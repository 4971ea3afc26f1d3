"""Score a policy on a corpus: every module compiled with the policy deciding a
problem's questions and under its own -Oz pipeline (the baseline: the same
command, no policy option), in parallel; ``.text`` bytes per module and in total.

Baseline sizes are cached (``BaselineCache``) by what determines them: the
module's bitcode, its recompile command and the clang version; so scoring a
second policy on the same corpus compiles each module once.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import hashlib
import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from ..problems import DEFAULT, Problem, resolve
from .compile import CompileOptions, CompiledModule, Policy, Toolchain, cc1_args, compile_module
from .elf import ElfError
from .layout import Corpus, CorpusError, Module
from .programs import Program, load_programs
from .settings import Setting, build_program, program_key
from .where import FunctionChange, compare_functions
from . import training_logs

OZ = Policy("oz", "oz")
_CACHE_FORMAT = "1"   # bump when what a cached size means changes


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mlbridge", "oz-text")


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
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            with os.fdopen(fd, "w") as f:
                f.write(f"{text_bytes}\n")
            os.replace(tmp, path)
        except OSError:
            pass   # a cache that cannot be written only costs time


@dataclass
class ModuleScore:
    module: str
    baseline: CompiledModule
    policy: CompiledModule
    baseline_cached: bool = False
    #: per-function changes (where.py), when evaluate(where=True)
    functions: Optional[List["FunctionChange"]] = None

    @property
    def ok(self) -> bool:
        return self.baseline.ok and self.policy.ok

    @property
    def delta(self) -> Optional[int]:
        if not self.ok:
            return None
        return int(self.policy.text_bytes) - int(self.baseline.text_bytes)  # type: ignore[arg-type]

    @property
    def failures(self) -> List[CompiledModule]:
        seen: List[CompiledModule] = []
        for r in (self.baseline, self.policy):
            if not r.ok and all(r is not s for s in seen):
                seen.append(r)
        return seen

    def as_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {
            "module": self.module, "ok": self.ok,
            "oz_text": self.baseline.text_bytes, "policy_text": self.policy.text_bytes,
            "delta": self.delta, "delta_pct": _pct(self.delta, self.baseline.text_bytes),
            "oz_seconds": None if self.baseline_cached else round(self.baseline.seconds, 4),
            "policy_seconds": round(self.policy.seconds, 4), "decisions": self.policy.decisions,
            "oz_cached": self.baseline_cached,
        }
        if not self.ok:
            d["errors"] = [{"run": "oz" if r is self.baseline else "policy", "error": r.error,
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

    @property
    def failed(self) -> List[ModuleScore]:
        return [s for s in self.scores if not s.ok]

    def totals(self) -> Dict[str, Any]:
        ok = [s for s in self.scores if s.ok]
        oz = sum(int(s.baseline.text_bytes) for s in ok)  # type: ignore[arg-type]
        pol = sum(int(s.policy.text_bytes) for s in ok)  # type: ignore[arg-type]
        return {"modules": len(self.scores), "ok": len(ok), "failed": len(self.scores) - len(ok),
                "oz_text": oz, "policy_text": pol, "delta": pol - oz, "delta_pct": _pct(pol - oz, oz),
                "smaller": sum(1 for s in ok if (s.delta or 0) < 0),
                "larger": sum(1 for s in ok if (s.delta or 0) > 0),
                "decisions": sum(s.policy.decisions or 0 for s in ok)}

    def as_dict(self) -> Dict[str, Any]:
        return {"corpus": self.corpus, "policy": self.policy, "clang": self.clang, "jobs": self.jobs,
                "setting": self.setting, "wall_seconds": round(self.wall_seconds, 3), "total": self.totals(),
                "modules": [s.as_dict() for s in self.scores]}


def _pct(delta: Optional[int], base: Optional[int]) -> Optional[float]:
    if delta is None or not base:
        return None
    return round(100.0 * delta / base, 3)


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
    if setting is not None and setting.whole_program:
        return _evaluate_programs(corpus, policy, toolchain, setting, jobs, options, cache, on_done, where, log_dir)
    if log_dir is not None:
        options = training_logs.logging_options(options, policy, toolchain, lambda m: module_log(log_dir, m))
        if policy.kind == "oz":
            cache = None   # the logged run loads the plugin: its sizes are not plain -Oz's to cache
    if where:
        options = dataclasses.replace(options, keep_objects=True)
        cache = None
    base_opts = dataclasses.replace(options, extra_args=None, extra_env=None)
    result = Evaluation(corpus.root, policy.spec, toolchain.version, jobs)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="mlbridge-eval-") as work, \
            cf.ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="mlbridge-eval") as pool:
        def one(module: Module) -> ModuleScore:
            return _score(module, policy, work, toolchain, options, base_opts, cache, where, problem)

        # Largest bitcode first: the longest compiles do not end up alone at the end.
        futures = [pool.submit(one, m) for m in sorted(corpus.modules, key=_bc_size, reverse=True)]
        try:
            for fut in cf.as_completed(futures):
                score = fut.result()
                if on_done is not None:
                    on_done(score)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        by_name = {}
        for f in futures:
            s = f.result()
            by_name[s.module] = s
    result.scores = [by_name[m.name] for m in corpus.modules]
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


def _bc_size(module: Module) -> int:
    try:
        return os.path.getsize(module.bc)
    except OSError:
        return 0


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
                       log_dir: Optional[str] = None) -> Evaluation:
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
    result = Evaluation(corpus.root, policy.spec, toolchain.version, jobs, setting=setting.name)
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
            r = build_program(corpus, program, OZ, setting, work, toolchain, base_opts, tag="oz", keep=where)
            if r.ok and key is not None and cache is not None:
                cache.put(key, int(r.text_bytes))  # type: ignore[arg-type]
            return r, False

        def policy_run(program: Program) -> CompiledModule:
            if log_dir is None:
                return build_program(corpus, program, policy, setting, work, toolchain, options, tag="policy",
                                     keep=where)
            folder = training_logs.program_log_dir(log_dir, program)
            opts = training_logs.logging_options(options, policy, toolchain,
                                                 lambda m: training_logs.member_log(folder, m))
            link_env = {"MLBRIDGE_INLINE_TRAINING_LOG": training_logs.linker_log(folder)} if setting.lto else None
            return build_program(corpus, program, policy, setting, work, toolchain, opts, tag="policy", keep=where,
                                 link_env=link_env)

        # a logged -Oz run is its own build: the plugin it loads is not plain -Oz
        own_run = policy.kind != "oz" or policy.in_linker.kind != "oz" or log_dir is not None
        jobs_of = {p.name: (pool.submit(baseline, p), pool.submit(policy_run, p) if own_run else None)
                   for p in programs}
        try:
            for p in programs:
                bfut, pfut = jobs_of[p.name]
                base, cached = bfut.result()
                pol = base if pfut is None else pfut.result()
                score = ModuleScore(p.name, base, pol, baseline_cached=cached)
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
