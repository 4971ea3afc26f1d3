"""``mlbridge tune``: one program made smaller the way PGO makes one faster, by
searching, per module, the pass order that clang runs in place of -Oz's.

    result = tune("corpus/", "out/", Toolchain.find(need_plugin=True), TuneOptions(budget_minutes=60))
    # out/tuning.json: what any build applies (tuning_file.flags); out/report.json, report.md, curve.png

1. **Baseline**: every module compiled with its recorded command (``clang-19
   -cc1 ... -Oz``), the plugin loaded only to say the module's source file; its
   stored bytes (code + read-only + initialized data) and ``.text``.
2. **Search** (search.py) until the budget's wall minutes are spent, on ``-j``
   compiles at a time: each candidate is the module's own command with the
   plugin replacing the -O pipeline by an order of steps (actions.py), and
   once a module has had a few, per-callee inlining answers on its best order
   (search.py: the callees -Oz's inliner asks about, from one traced compile); a
   candidate that fails, crashes, times out or does not verify is recorded and
   never kept. The module asked next is the one where a compile buys the most
   expected bytes: large modules first, fewer tries each as they add up.
3. **Linked** (``--setting linked``, the default): the programs of
   ``programs.json`` linked by ``ld.lld-19 --gc-sections`` with each module's
   best object; a module whose tuned object does not make the linked programs
   smaller goes back to -Oz. Judged on what ships. **LTO** (``--setting lto``):
   the modules are compiled once to full-LTO bitcode with their own -Oz, and
   what is searched is each *program's* link pipeline, the one ld.lld runs on
   the merged module (``--lto-newpm-passes``; its whole-pipeline step is the
   link's own ``lto<O2>``): a unit of the search is a program, a candidate one
   link.
4. **Wrong code** (``check``): a command run on each linked program, -Oz's
   and the tuned one; different output or exit status is a miscompile, the
   modules responsible are found by bisection and left at -Oz.
5. **Output**: OUT/tuning.json (the tuning file), OUT/report.json and .md
   (per module and program, stored bytes and ``.text`` against -Oz, the
   search's curve), OUT/curve.png.

The state is OUT/checkpoint.json, rewritten whole every few seconds: a stopped
tune started again with the same OUT resumes (its minutes count against the
budget); a damaged checkpoint is named in one line and left as it is.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.ended import how_it_ended
from ..core.errors import ArgumentError, MLBridgeError
from ..core.files import write_json_atomic
from ..corpus.compile import (CompileOptions, CompiledModule, Policy, Toolchain, compile_module, plugin_args)
from ..corpus.elf import ElfError, function_sizes
from ..corpus.layout import Corpus, CorpusError, Module, load
from ..corpus.programs import Program, load_programs
from ..corpus.settings import Setting, link_program, opt_level
from .tuning_file import lto_pipeline_args
from . import tuning_file
from .actions import LTO, STEPS, order_names, pipeline_text
from .callee_file import with_callees, write_callees
from .checkpoint import CHECKPOINT, CHECKPOINT_FORMAT, CHECKPOINT_VERSION, read_checkpoint
from .search import Proposal, OrderSearch, Order, parse_trace, seeds

TUNING = "tuning.json"
SETTINGS = ("objects", "linked", "lto")
#: a candidate compile slower than this is recorded as failed (timed out)
CANDIDATE_TIMEOUT = 120.0
#: the -Oz compile of a module is bounded by this (or the candidates' bound if longer)
BASELINE_TIMEOUT = 600.0
#: seconds between checkpoints
CHECKPOINT_EVERY = 15.0
#: winning orders kept in the pool that modules share
POOL_SIZE = 64
#: a module stops being searched after this many candidates
MAX_TRIES = 4000
_PHASES = "phase-ordering"


class TuneError(MLBridgeError):
    """The tune cannot start or go on (the message is one line)."""


class TuneArgumentError(TuneError, ArgumentError):
    """A tune refused because of one argument (``out``, ``setting``, ...)."""


@dataclass
class TuneOptions:
    setting: str = "linked"
    budget_minutes: float = 60.0
    jobs: int = 0
    seed: int = 0
    timeout: float = CANDIDATE_TIMEOUT
    #: a command run on each linked program (``{program}`` is its path); the tuned
    #: build must print what -Oz's prints (stdout and exit status)
    check: Optional[str] = None
    check_timeout: float = 300.0
    max_tries: int = MAX_TRIES
    #: candidates as Ray tasks on the cluster at this address ("local": a Ray instance
    #: here); every node needs the corpus, clang and the plugin at the same paths
    ray: Optional[str] = None

    def validate(self) -> None:
        if self.setting not in SETTINGS:
            raise TuneArgumentError("setting", f"{{arg}} {self.setting!r}: expected one of {', '.join(SETTINGS)}")
        if not self.budget_minutes > 0:
            raise TuneArgumentError("budget_minutes", "{arg} must be positive")
        if self.jobs < 0:
            raise TuneArgumentError("jobs", "{arg} must be 0 (all cores) or more")
        if self.check is not None and "{program}" not in self.check:
            raise TuneArgumentError("check", "{arg} must name the linked program as {program}")
        if self.ray is not None and self.setting == "lto":
            raise TuneArgumentError("ray", "{arg}: not with --setting lto (its candidates are links of every "
                                    "module's bitcode, made here)")


@dataclass
class _Unit:
    """One module as the tuner sees it, or under LTO one program (its link pipeline)."""
    module: Module                           # lto: the program's first member (for its -O level)
    key: str                                 # file names under OUT/objects
    options: CompileOptions
    program: Optional[Program] = None        # lto: the program whose link is searched
    search: Optional[OrderSearch] = None
    source: str = ""
    oz_text: int = 0
    best_text: Optional[int] = None
    error: Optional[str] = None              # the baseline failed: not tuned
    #: the linked or check step sent it back to -Oz (why)
    reverted: Optional[str] = None
    running: int = 0
    #: a compile is asking which callees -Oz's inliner considers (Tuner._questions)
    asking: bool = False
    #: lto: the members' LTO bitcode, once compiled (Tuner._bitcode)
    bitcode: List[str] = field(default_factory=list)
    #: the tuned build against -Oz's (Tuner._final): IR instructions, compile seconds
    final: Dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.program.name if self.program is not None else self.module.name

    @property
    def oz_object(self) -> str:
        return self.key + ".oz.o"

    @property
    def best_object(self) -> str:
        return self.key + ".best.o"


class Tuner:
    def __init__(self, corpus_root: str, out: str, toolchain: Toolchain, options: TuneOptions,
                 progress: Optional[Callable[[str], None]] = None,
                 tick: Optional[Callable[[float, float, str], None]] = None) -> None:
        options.validate()
        #: called about once a second while searching: (minutes spent, budget minutes, a status)
        self.tick = tick
        if not toolchain.plugin:
            raise TuneError("mlbridge tune needs the mlbridge LLVM plugin (libMLBridgeLLVM.so)")
        self.tc, self.opts, self.say = toolchain, options, progress or (lambda line: None)
        self.out = os.path.abspath(out)
        try:
            self.corpus: Corpus = load(corpus_root)
            self.programs: List[Program] = load_programs(self.corpus) if options.setting != "objects" else []
        except CorpusError as exc:
            raise TuneArgumentError("corpus", str(exc).replace("{", "{{").replace("}", "}}")) from None
        self.setting = Setting(options.setting)
        self.objects = os.path.join(self.out, "objects")
        self.work = os.path.join(self.out, "work")
        self.lock = threading.Lock()
        self.units: List[_Unit] = self._units()
        self.elapsed = 0.0                   # search seconds of earlier runs
        self.curve: List[Tuple[float, int]] = []
        self.candidates = 0
        #: the latest orders that beat -Oz on some module (OrderSearch.propose)
        self.pool: List[Order] = []
        self._ray: Optional[Any] = None
        if options.ray is not None:
            from .ray_candidates import RayCandidates
            self._ray = RayCandidates(options.ray, options.jobs or None)

    # -- setup --------------------------------------------------------------
    def _units(self) -> List[_Unit]:
        base = CompileOptions(timeout=self.opts.timeout, keep_objects=True)
        if self.setting.lto:
            units = []
            for p in self.programs:
                members = p.members(self.corpus)
                if members:
                    units.append(_Unit(members[0], "prog-" + hashlib.sha1(p.name.encode()).hexdigest()[:16],
                                       self.setting.compile_options(p, base), program=p))
            if not units:
                raise TuneArgumentError("corpus", "{arg}: no program to tune")
            return units
        opts: Dict[str, CompileOptions] = {}
        if self.programs:
            # one object per module for all its programs (-ffunction-sections; position
            # independent, not only for an executable, when a shared library links it),
            # the -Oz baseline alike; modules no program links are not tuned
            for p in sorted(self.programs, key=lambda p: p.kind != "shared"):
                for m in p.members(self.corpus):
                    opts.setdefault(m.name, self.setting.compile_options(p, base))
        units = []
        for m in self.corpus.modules:
            if self.programs and m.name not in opts:
                continue
            o = opts.get(m.name, base)
            key = hashlib.sha1(m.name.encode()).hexdigest()[:16]
            units.append(_Unit(m, key, o))
        if not units:
            raise TuneArgumentError("corpus", "{arg}: no module to tune")
        return units

    @property
    def _what(self) -> str:
        return "programs (their LTO links)" if self.setting.lto else "modules"

    def _checkpoint_path(self) -> str:
        return os.path.join(self.out, CHECKPOINT)

    def _identity(self) -> Dict[str, Any]:
        return {"corpus": os.path.abspath(self.corpus.root), "setting": self.opts.setting,
                "clang": self.tc.version, "steps": [s.pipeline for s in STEPS]}

    def _load_checkpoint(self) -> None:
        path = self._checkpoint_path()
        if not os.path.exists(path):
            return
        try:
            d = read_checkpoint(path)
            ident = self._identity()
            for k in ("corpus", "setting", "clang"):
                if d.get(k) != ident[k]:
                    raise TuneArgumentError("out", f"{{arg}} {self.out}: its checkpoint is of another tune "
                                            f"({k} {d.get(k)!r}, not {ident[k]!r}): give another folder")
            by_name = {u.name: u for u in self.units}
            for name, md in d["modules"].items():
                u = by_name.get(name)
                if u is None:
                    continue
                u.source, u.oz_text, u.error = md.get("source", ""), int(md.get("oz_text", 0)), md.get("error")
                u.best_text = md.get("best_text")
                if md["search"] is not None:
                    u.search = md["search"]
                    for obj in (u.oz_object, u.best_object if u.search.gain else None):
                        if obj and not os.path.isfile(os.path.join(self.objects, obj)):
                            raise ValueError(f"object {obj} of module {name} is missing")
            self.pool = [u.search.best_order for u in self.units
                         if u.search and u.search.gain and u.search.best_order][-POOL_SIZE:]
            self.elapsed = float(d.get("elapsed", 0.0))
            self.candidates = int(d.get("candidates", 0))
            self.curve = [(float(a), int(b)) for a, b in d.get("curve", [])]
        except TuneError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TuneError(f"{path}: damaged checkpoint ({exc}); left as it is: move it away to start over, "
                            "or give another --out") from None

    def _save_checkpoint(self, elapsed: float) -> None:
        with self.lock:
            d = dict(self._identity(), format=CHECKPOINT_FORMAT, version=CHECKPOINT_VERSION, elapsed=elapsed,
                     candidates=self.candidates, curve=[[round(a, 2), b] for a, b in self.curve],
                     modules={u.name: {"source": u.source, "oz_text": u.oz_text, "error": u.error,
                                       "best_text": u.best_text,
                                       "search": u.search.as_dict() if u.search else None}
                              for u in self.units})
        write_json_atomic(self._checkpoint_path(), d)

    # -- compiles -----------------------------------------------------------
    def _compile(self, u: _Unit, policy: Policy, tag: str, callees: Optional[str] = None) -> CompiledModule:
        opts = with_callees(u.options, callees)
        if policy.kind == "oz":
            # the plugin loaded only to say the module's source file; -Oz's compile is
            # bounded as a module's compile, not as a candidate's
            opts = dataclasses.replace(opts, extra_args=lambda m: plugin_args(self.tc.plugin or ""),
                                       extra_env=lambda m: {"MLBRIDGE_TUNING_TRACE": "1"},
                                       timeout=max(opts.timeout, BASELINE_TIMEOUT))
        return compile_module(u.module, policy, self.work, self.tc, opts, tag=tag, problem=_PHASES)

    def _bitcode(self, u: _Unit) -> List[str]:
        """lto: U's program's members compiled once to full-LTO bitcode with their
        own -Oz (OUT/objects), for every link of its search."""
        assert u.program is not None
        if u.bitcode:
            return u.bitcode
        out = []
        for m in u.program.members(self.corpus):
            path = os.path.join(self.objects, f"{u.key}-{hashlib.sha1(m.name.encode()).hexdigest()[:16]}.bc")
            if not os.path.isfile(path):
                r = compile_module(m, Policy("oz", "oz"), self.work, self.tc,
                                   dataclasses.replace(u.options, timeout=max(u.options.timeout, BASELINE_TIMEOUT)),
                                   tag="lto", problem=_PHASES)
                if not r.ok or not r.object_path:
                    raise TuneError(f"program {u.name}: module {m.name} does not compile: {r.error}")
                os.replace(r.object_path, path)
            out.append(path)
        u.bitcode = out
        return out

    def _link_unit(self, u: _Unit, order: Optional[Order], tag: str) -> CompiledModule:
        """lto: U's program linked with ORDER as the link's pipeline (None: the link's own)."""
        assert u.program is not None
        folder = os.path.join(self.work, f"link-{tag}-{threading.get_ident() % 10**6}")
        os.makedirs(folder, exist_ok=True)
        try:
            return link_program(u.program, self._bitcode(u), Policy("oz", "oz"), self.setting, folder, self.tc,
                                dataclasses.replace(u.options, timeout=self.opts.timeout), opt_level(u.module),
                                keep=True, link_args=lto_pipeline_args(pipeline_text(order) if order else None))
        except TuneError as exc:
            return CompiledModule(u.name, ok=False, error=str(exc))

    def _baseline(self, u: _Unit) -> None:
        if u.program is not None:
            r = self._link_unit(u, None, "oz")
            if not r.ok or r.stored_bytes is None or not r.object_path:
                u.error = r.error or "no size"
                return
            os.replace(r.object_path, os.path.join(self.objects, u.oz_object))
            u.source, u.oz_text = u.program.name, int(r.text_bytes or 0)
            u.search = OrderSearch(u.name, int(r.stored_bytes), self.opts.seed, whole=LTO)
            u.search.questions = []     # callee answers are not searched in the link
            return
        r = self._compile(u, Policy("oz", "oz"), "oz")
        if not r.ok or r.stored_bytes is None:
            u.error = r.error or "no size"
            return
        src = [ln for ln in r.stderr.splitlines() if ln.startswith("mlbridge-tuning: source ")]
        os.replace(r.object_path, os.path.join(self.objects, u.oz_object))   # type: ignore[arg-type]
        if not src:
            u.error = "the plugin did not report the module's source file (no optimization pipeline?)"
            return
        u.source = src[0][len("mlbridge-tuning: source "):].rsplit(": ", 1)[0]
        u.oz_text = int(r.text_bytes or 0)
        u.search = OrderSearch(u.module.name, int(r.stored_bytes), self.opts.seed)

    def _candidate(self, u: _Unit, cand: Proposal) -> Tuple[Optional[int], Optional[int], float, Optional[str]]:
        """(stored bytes, .text, seconds, the object's path or the error) of CAND on U;
        the object is kept as U's best only if it is the new best (checked by the
        caller under the lock)."""
        tag = f"c{threading.get_ident() % 10**6}"
        if u.program is not None:
            r = self._link_unit(u, cand.order, tag)
            if not r.ok:
                return None, None, r.seconds, r.error
            return r.stored_bytes, r.text_bytes, r.seconds, r.object_path
        if self._ray is not None:
            return self._ray.candidate(u.module, pipeline_text(cand.order), self.tc, u.options, self.work, tag,
                                       cand.callees)
        path = write_callees(cand.callees, self.work, tag)
        try:
            r = self._compile(u, Policy.pipeline(pipeline_text(cand.order)), tag, path)
        finally:
            _unlink(path)
        if not r.ok:
            if r.object_path:
                _unlink(r.object_path)
            return None, None, r.seconds, r.error
        return r.stored_bytes, r.text_bytes, r.seconds, r.object_path

    def _questions(self, u: _Unit) -> List[Tuple[str, int]]:
        """The callees -Oz's inliner asks about in U, most calls first, with its
        answers: the plugin's inliner trace of one -Oz compile (its advisor
        asking the stock heuristic). None found, or a failed compile: no callee
        search for U."""
        fd, trace = tempfile.mkstemp(dir=self.work, prefix="trace-", suffix=".txt")
        os.close(fd)
        try:
            opts = dataclasses.replace(u.options, timeout=max(u.options.timeout, BASELINE_TIMEOUT),
                                       extra_args=lambda m: plugin_args(self.tc.plugin or "") +
                                       ["-mllvm", f"-mlbridge-inline-trace={trace}"])
            r = compile_module(u.module, Policy("oz", "oz"), self.work, self.tc, opts, tag="trace", problem=_PHASES)
            if not r.ok:
                return []
            with open(trace, encoding="utf-8", errors="replace") as f:
                return parse_trace(f.read(), function_sizes(os.path.join(self.objects, u.oz_object)))
        except (OSError, ElfError):
            return []
        finally:
            _unlink(trace)

    # -- the search ---------------------------------------------------------
    def _pick(self) -> Optional[_Unit]:
        """The module where one more compile is expected to buy the most bytes
        per second. A module's gain grows about as its code size times the log of
        its tries, so the marginal gain of one more try is about CODE / (1 + tries),
        and one try costs its compile time: code bytes per compile second, divided
        by 1 + tries. Pass orders move code, rarely data: a module of tables with
        no code gets its seed orders and no more."""
        best, best_score = None, 0.0
        for u in self.units:
            s = u.search
            if s is None or s.tried + u.running >= self.opts.max_tries:
                continue
            n = s.tried + u.running
            if n >= len(seeds()) and u.oz_text == 0:
                continue
            per_try = max(0.05, s.seconds / s.tried) if s.tried else 1.0
            score = (u.oz_text + 64) / per_try / (1.0 + n)
            if score > best_score:
                best, best_score = u, score
        return best

    def _total_best(self) -> int:
        return sum((u.search.best_bytes if u.search.best_bytes is not None and u.search.best_bytes < u.search.oz_bytes
                    else u.search.oz_bytes) for u in self.units if u.search)

    def _worker(self, deadline: float, start: float) -> None:
        while time.monotonic() < deadline:
            with self.lock:
                u = self._pick()
                if u is None:
                    return
                s = u.search
                assert s is not None
                ask = s.wants_questions and not u.asking
                if ask:
                    u.asking = True
                else:
                    cand = s.propose_candidate(self.pool)
                u.running += 1
            if ask:
                questions = self._questions(u)
                with self.lock:
                    u.running -= 1
                    u.asking = False
                    s.questions = questions
                continue
            size, text, seconds, obj_or_err = self._candidate(u, cand)
            with self.lock:
                u.running -= 1
                self.candidates += 1
                improved = s.record(cand.order, size, seconds, cand.callees, cand.flip)
                if size is not None:
                    if improved and size < s.oz_bytes:
                        os.replace(obj_or_err, os.path.join(self.objects, u.best_object))  # type: ignore[arg-type]
                        u.best_text = text
                        if cand.order not in self.pool:
                            self.pool.append(cand.order)
                            del self.pool[:-POOL_SIZE]
                        self.curve.append((self.elapsed + time.monotonic() - start, self._total_best()))
                    else:
                        _unlink(obj_or_err)    # type: ignore[arg-type]

    def search(self) -> None:
        os.makedirs(self.objects, exist_ok=True)
        os.makedirs(self.work, exist_ok=True)
        todo = [u for u in self.units if u.search is None and u.error is None]
        if todo:
            self.say(f"baseline: {len(todo)} {self._what} with -Oz")
            self._parallel(self._baseline, todo)
            self.curve.append((self.elapsed, self._total_best()))
            self._save_checkpoint(self.elapsed)
        budget = self.opts.budget_minutes * 60.0
        left = budget - self.elapsed
        if left <= 0:
            return
        start = time.monotonic()
        deadline = start + left
        jobs = self.opts.jobs or os.cpu_count() or 1
        oz = sum(u.search.oz_bytes for u in self.units if u.search)
        self.say(f"search: {len([u for u in self.units if u.search])} {self._what}, {oz:,} stored bytes at -Oz, "
                 f"{left / 60:.1f} of {budget / 60:.1f} minutes left, {jobs} compiles at a time")
        threads = [threading.Thread(target=self._worker, args=(deadline, start), daemon=True)
                   for _ in range(jobs)]
        for t in threads:
            t.start()
        next_save = time.monotonic() + CHECKPOINT_EVERY
        try:
            while True:
                alive = [t for t in threads if t.is_alive()]
                if not alive:
                    break
                alive[0].join(timeout=1.0)   # wakes at once when the workers end
                now = time.monotonic()
                if self.tick is not None:
                    best = self._total_best()
                    self.tick((self.elapsed + now - start) / 60.0, budget / 60.0,
                              f"{self.candidates:,} candidates, {100.0 * (best - oz) / oz:+.2f} % stored bytes")
                if now >= next_save:
                    next_save = now + CHECKPOINT_EVERY
                    self._save_checkpoint(self.elapsed + now - start)
                    best = self._total_best()
                    self.say(f"search: {(self.elapsed + now - start) / 60:.1f} min, {self.candidates:,} "
                             f"candidates, stored bytes {best:,} ({100.0 * (best - oz) / oz:+.2f} % vs -Oz)")
        finally:
            # a stop (Ctrl-C) keeps what was found: the workers end after their compile
            self._save_checkpoint(self.elapsed + min(time.monotonic(), deadline) - start)
        self.elapsed += min(time.monotonic(), deadline) - start

    def _parallel(self, fn: Callable[[_Unit], None], units: Sequence[_Unit]) -> None:
        jobs = self.opts.jobs or os.cpu_count() or 1
        it = iter(sorted(units, key=lambda u: -_size(u.module.bc)))
        lock = threading.Lock()

        def run() -> None:
            while True:
                with lock:
                    u = next(it, None)
                if u is None:
                    return
                fn(u)
        threads = [threading.Thread(target=run, daemon=True) for _ in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    # -- what ships -----------------------------------------------------------
    def tuned(self) -> List[_Unit]:
        return [u for u in self.units if u.search and u.search.gain > 0 and u.reverted is None]

    def _objects_for(self, program: Program, tuned: Sequence[_Unit]) -> List[str]:
        chosen = {u.name for u in tuned}
        by_name = {u.name: u for u in self.units}
        out = []
        for m in program.members(self.corpus):
            u = by_name[m.name]
            out.append(os.path.join(self.objects, u.best_object if m.name in chosen else u.oz_object))
        return out

    def link(self, program: Program, tuned: Sequence[_Unit], tag: str, keep: bool = False
             ) -> CompiledModule:
        if self.setting.lto:
            u = next(x for x in self.units if x.program is program)
            order = u.search.best_order if u in tuned and u.search else None
            r = self._link_unit(u, order, tag)
            if not keep and r.object_path:
                _unlink(r.object_path)
                r.object_path = None
            return r
        folder = os.path.join(self.work, "link-" + tag)
        os.makedirs(folder, exist_ok=True)
        members = program.members(self.corpus)
        return link_program(program, self._objects_for(program, tuned), Policy("oz", "oz"), self.setting, folder,
                            self.tc, CompileOptions(timeout=self.opts.timeout), opt_level(members[0]), keep=keep)

    def program_sizes(self) -> Dict[str, Dict[str, Any]]:
        """Each program linked with -Oz's objects and with the tuned ones."""
        sizes: Dict[str, Dict[str, Any]] = {}
        for p in self.programs:
            oz, tuned = self.link(p, [], "oz"), self.link(p, self.tuned(), "tuned")
            for what, r in (("-Oz", oz), ("tuned", tuned)):
                if not r.ok:
                    raise TuneError(f"program {p.name}: the link of the {what} objects failed: {r.error}")
            sizes[p.name] = {"oz_stored": oz.stored_bytes, "oz_text": oz.text_bytes, "stored": tuned.stored_bytes,
                             "text": tuned.text_bytes}
        return sizes

    def settle_linked(self) -> None:
        """Smallest object gain first, a module goes back to -Oz when that does
        not make the programs that link it larger. (lto: a unit is a program,
        judged linked already.)"""
        if self.setting.lto:
            return
        members = {p.name: {m.name for m in p.members(self.corpus)} for p in self.programs}
        current = {p.name: self.link(p, self.tuned(), "tuned") for p in self.programs}
        for name, r in current.items():
            if not r.ok:
                raise TuneError(f"program {name}: the link of the tuned objects failed: {r.error}")
        for u in sorted(self.tuned(), key=lambda u: u.search.gain):   # type: ignore[union-attr]
            progs = [p for p in self.programs if u.name in members[p.name]]
            without = [x for x in self.tuned() if x is not u]
            trial = {p.name: self.link(p, without, "trial") for p in progs}
            if all(t.ok for t in trial.values()) and \
                    sum(t.stored_bytes or 0 for t in trial.values()) <= sum(current[p.name].stored_bytes or 0
                                                                           for p in progs):
                u.reverted = "no smaller linked program"
                current.update(trial)

    def check_outputs(self) -> Dict[str, str]:
        """OPTIONS.check on each program, -Oz's build and the tuned one; a
        difference is a miscompile: the responsible modules are found by
        bisection and go back to -Oz. Returns per program what was found."""
        found: Dict[str, str] = {}
        if not self.opts.check:
            return found
        for p in self.programs:
            ref = self._run_check(p, [], "check-oz")
            if isinstance(ref, str):
                raise TuneError(f"program {p.name}: the check of -Oz's build failed: {ref}")
            names = {m.name for m in p.members(self.corpus)} | {p.name}
            bad: List[str] = []
            while True:
                cand = [u for u in self.tuned() if u.name in names]
                got = self._run_check(p, cand, "check-tuned")
                if got == ref:
                    break
                culprit = self._bisect(p, cand, ref)
                culprit.reverted = "miscompile: the program's output changed"
                bad.append(culprit.name)
            found[p.name] = "same output" if not bad else f"miscompile in {', '.join(bad)} (left at -Oz)"
        return found

    def _bisect(self, p: Program, cand: List[_Unit], ref: Any) -> _Unit:
        lo = cand
        while len(lo) > 1:
            half = lo[:len(lo) // 2]
            if self._run_check(p, half, "check-bisect") != ref:
                lo = half
            else:
                lo = lo[len(lo) // 2:]
        return lo[0]

    def _run_check(self, p: Program, tuned: Sequence[_Unit], tag: str) -> Any:
        r = self.link(p, tuned, tag, keep=True)
        if not r.ok or not r.object_path:
            return f"the link failed: {r.error}"
        cmd = self.opts.check.replace("{program}", shlex.quote(r.object_path))   # type: ignore[union-attr]
        # its own process group: a check that hangs is killed with everything it started
        proc = subprocess.Popen(cmd, shell=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, cwd=os.path.dirname(r.object_path), start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=self.opts.check_timeout)
            return (proc.returncode, out)
        except subprocess.TimeoutExpired:
            return how_it_ended(None, timed_out=True, timeout=self.opts.check_timeout)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.communicate()
            _unlink(r.object_path)

    # -- the tuned build against -Oz's: IR instructions, compile time -----------
    def _final(self, u: _Unit) -> None:
        """U's optimized IR instructions and compile seconds (to an object) under
        -Oz and under its tuned order (the -Oz figures for a module left at -Oz)."""
        s = u.search
        assert s is not None
        tuned = u in self.tuned()
        if u.program is not None:
            # the link's seconds, -Oz's pipeline against the tuned one (IR: not measured in the link)
            fig: Dict[str, Any] = {"oz_ir": None, "ir": None}
            for side, order in (("oz", None), ("", s.best_order if tuned else None)):
                r = self._link_unit(u, order, f"final{side}")
                _unlink(r.object_path)
                fig[("oz_" if side else "") + "seconds"] = round(r.seconds, 3) if r.ok else None
            u.final = fig
            return
        pol = Policy.pipeline(pipeline_text(s.best_order)) if tuned and s.best_order else Policy("oz", "oz")
        callees = write_callees(s.best_callees, self.work, f"final-{u.key}") if tuned else None
        fig = {}
        for side, policy in (("oz", Policy("oz", "oz")), ("tuned", pol)):
            if side == "tuned" and not tuned:
                fig.update(ir=fig.get("oz_ir"), seconds=fig.get("oz_seconds"))
                continue
            opts = with_callees(u.options, callees if side == "tuned" else None)
            obj = compile_module(u.module, policy, self.work, self.tc, dataclasses.replace(opts, keep_objects=False),
                                 tag=f"final-{side}", problem=_PHASES)
            bc = compile_module(u.module, policy, self.work, self.tc,
                                dataclasses.replace(opts, bitcode=True, keep_objects=True),
                                tag=f"ir-{side}", problem=_PHASES)
            key = "oz_" if side == "oz" else ""
            fig[key + "seconds"] = round(obj.seconds, 3) if obj.ok else None
            fig[key + "ir"] = _ir_instructions(bc.object_path, self.opts.timeout) if bc.ok else None
            _unlink(bc.object_path)
        _unlink(callees)
        u.final = fig

    def final_figures(self) -> None:
        self._parallel(self._final, [u for u in self.units if u.search])

    # -- output ---------------------------------------------------------------
    def tuning(self) -> tuning_file.TuningFile:
        tuned = self.tuned()
        about = {"corpus": os.path.abspath(self.corpus.root), "setting": self.opts.setting, "clang": self.tc.version,
                 "candidates": self.candidates, "minutes": round(self.elapsed / 60.0, 2)}
        if self.setting.lto:
            tf = tuning_file.TuningFile(_llvm_major(self.tc.version), about=about)
            for u in tuned:
                s = u.search
                assert s is not None and s.best_order is not None
                tf.link[u.name] = {"pipeline": pipeline_text(s.best_order), "order": order_names(s.best_order).split(),
                                   "oz_bytes": s.oz_bytes, "bytes": s.best_bytes, "oz_text": u.oz_text,
                                   "text": u.best_text}
            return tf
        keys = tuning_file.source_keys(u.source for u in self.units if u.source)
        by_key: Dict[str, List[_Unit]] = {}
        for u in tuned:
            by_key.setdefault(keys[os.path.normpath(u.source)], []).append(u)
        tf = tuning_file.TuningFile(_llvm_major(self.tc.version), about=about)
        for key, us in by_key.items():
            orders = {(u.search.best_order, u.search.best_callees) for u in us}   # type: ignore[union-attr]
            if len(orders) > 1:
                # one source file compiled in two ways, with different best orders: -Oz for both
                for u in us:
                    u.reverted = "its source file is compiled twice with different best orders"
                continue
            u = us[0]
            s = u.search
            tf.modules[key] = {"pipeline": pipeline_text(s.best_order), "order": order_names(s.best_order).split(),
                               "oz_bytes": s.oz_bytes, "bytes": s.best_bytes, "oz_text": u.oz_text,
                               "text": u.best_text}
            if s.best_callees:
                # the plugin applies them while the order runs (callee_answers.h)
                tf.modules[key]["callees"] = dict(s.best_callees)
        return tf


def tune(corpus: str, out: str, toolchain: Toolchain, options: Optional[TuneOptions] = None,
         progress: Optional[Callable[[str], None]] = None,
         tick: Optional[Callable[[float, float, str], None]] = None) -> Dict[str, Any]:
    """Tunes CORPUS (its programs.json in the linked setting) into OUT; returns
    the report (also OUT/report.json). Resumes from OUT/checkpoint.json.
    PROGRESS hears one line per stage and every few seconds; TICK (minutes
    spent, budget minutes, status) about once a second while searching."""
    options = options or TuneOptions()
    t = Tuner(corpus, out, toolchain, options, progress, tick)
    os.makedirs(t.out, exist_ok=True)
    t._load_checkpoint()
    t.search()
    say = t.say
    programs: Dict[str, Dict[str, Any]] = {}
    checks: Dict[str, str] = {}
    if t.programs:
        say("linked: each module's best object kept only where it makes the linked programs smaller")
        t.settle_linked()
        if options.check:
            say("check: each program's output, -Oz's build against the tuned one")
            checks = t.check_outputs()
        programs = t.program_sizes()
    tf = t.tuning()
    say("figures: IR instructions and compile time of the tuned build against -Oz's")
    t.final_figures()
    tf.write(os.path.join(t.out, TUNING))
    from .report import write_report
    report = write_report(t, programs, checks)
    shutil.rmtree(t.work, ignore_errors=True)
    return report


def _ir_instructions(bitcode: Optional[str], timeout: float) -> Optional[int]:
    """Instructions in the functions of a bitcode file (llvm-dis, then one count
    per instruction line); None if it cannot be read."""
    if not bitcode:
        return None
    from ..llvm.interactive import LLVMNotFound, find_tool
    try:
        dis = find_tool("llvm-dis")
        p = subprocess.run([dis, bitcode, "-o", "-"], stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout)
    except (LLVMNotFound, OSError, subprocess.TimeoutExpired):
        return None
    if p.returncode != 0:
        return None
    n, inside = 0, False
    for line in p.stdout.decode(errors="replace").splitlines():
        if line.startswith("define "):
            inside = True
        elif line.startswith("}"):
            inside = False
        elif inside and line.startswith("  ") and not line.lstrip().startswith(";"):
            n += 1
    return n


def _llvm_major(version: str) -> int:
    import re
    m = re.search(r"version (\d+)\.", version)
    if not m:
        raise TuneError(f"cannot read the LLVM version from {version!r}")
    return int(m.group(1))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _unlink(path: Optional[str]) -> None:
    if path:
        try:
            os.unlink(path)
        except OSError:
            pass
