"""How much room inlining leaves around -Oz, per program and setting: a greedy
search over joint decisions, measured before training (docs/training.md,
"Where the room is").

A single-flip search cannot find "inline every call of f, so f disappears":
each flip alone adds a copy of f and is rejected. Here a candidate sets the
answer for *every* call of one callee at once (the plugin's callee file,
``Policy.callees``): 1 inlines them all, 0 none. Starting from -Oz's
heuristic (the plugin without a model), the search tries each candidate on
top of the ones kept so far, keeps it when the program's measured ``.text``
shrinks, and learns the callees to try from the plugin's trace of every
question the inliner asked (``MLBRIDGE_INLINE_TRACE``), including the new
call sites a kept candidate exposes.

Candidates run ``jobs`` at a time against the same kept set; the best that
shrinks the program is kept and the other improvements are tried again on top
of it. Resumable: ``OUT/NAME.SETTING.json`` is rewritten (through a temporary
name) after each batch; a run started again goes on where it stopped.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import fnmatch
import glob
import json
import os
import shutil
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...core.errors import BAD_JSON, MLBridgeError
from ...core.files import write_json_atomic
from ...corpus.compile import CompileOptions, CompiledModule, Policy, Toolchain, compile_module
from ...corpus.layout import Corpus
from ...corpus.programs import Program
from ...corpus.settings import Setting, build_program, link_program, opt_level

STATE_FORMAT = 1
#: a trace larger than this is not read (a program asks far fewer questions)
MAX_TRACE_BYTES = 512 << 20

Candidate = Tuple[str, int]   # (callee, answer for all its calls)
#: where a search starts: the callee file's lines before any candidate ("*": every other callee)
STARTS = {"oz": {}, "never": {"*": 0}}


class RoomError(MLBridgeError):
    """A state file that is not one of ours, or a program whose base build fails."""


@dataclass
class Measure:
    ok: bool
    text_bytes: Optional[int] = None
    #: per callee: (calls answered yes, calls answered no)
    calls: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    error: Optional[str] = None
    command: str = ""


@dataclass
class RoomState:
    program: str
    setting: str
    #: where the search starts: "oz" (-Oz's heuristic) or "never" (no call inlined)
    start: str = "oz"
    oz: Optional[int] = None
    base: Optional[int] = None
    best: Optional[int] = None
    kept: Dict[str, int] = field(default_factory=dict)
    #: candidates not yet tried, in order
    queue: List[Candidate] = field(default_factory=list)
    #: [callee, answer, size or None, kept?]
    tried: List[List[Any]] = field(default_factory=list)
    builds: int = 0
    seconds: float = 0.0
    done: bool = False

    def as_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["format"] = STATE_FORMAT
        d["queue"] = [list(c) for c in self.queue]
        return d

    @staticmethod
    def load(path: str) -> "RoomState":
        try:
            with open(path, "rb") as f:
                d = json.loads(f.read(64 << 20))
            if not isinstance(d, dict) or d.get("format") != STATE_FORMAT:
                raise ValueError("not a room-search state of this version")
            st = RoomState(str(d["program"]), str(d["setting"]), str(d.get("start", "oz")))
            if st.start not in STARTS:
                raise ValueError(f"start {st.start!r} is not one of {', '.join(STARTS)}")
            for k in ("oz", "base", "best"):
                v = d.get(k)
                if v is not None and (not isinstance(v, int) or v < 0):
                    raise ValueError(f"{k} is not a size")
                setattr(st, k, v)
            kept = d.get("kept", {})
            if not isinstance(kept, dict) or not all(isinstance(k, str) and v in (0, 1) for k, v in kept.items()):
                raise ValueError("kept is not a map of callee to 0|1")
            st.kept = dict(kept)
            st.queue = [(str(c), int(a)) for c, a in d.get("queue", [])]
            if any(a not in (0, 1) for _, a in st.queue):
                raise ValueError("a queued answer is not 0 or 1")
            st.tried = [list(t) for t in d.get("tried", [])]
            st.builds, st.seconds, st.done = int(d.get("builds", 0)), float(d.get("seconds", 0.0)), bool(d["done"])
            return st
        except (OSError, *BAD_JSON, KeyError, TypeError, ValueError) as exc:
            raise RoomError(f"{path}: damaged room-search state ({exc}); left as it is: remove it to start "
                            "again") from None

    def save(self, path: str) -> None:
        write_json_atomic(path, self.as_dict(), indent=1)


def read_trace(path: str) -> Dict[str, Tuple[int, int]]:
    """caller<TAB>callee<TAB>answer lines -> callee: (yes, no)."""
    yes: Counter = Counter()
    no: Counter = Counter()
    try:
        if os.path.getsize(path) > MAX_TRACE_BYTES:
            raise RoomError(f"{path}: trace larger than {MAX_TRACE_BYTES} bytes")
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 3 or parts[2] not in ("0", "1"):
                    continue
                (yes if parts[2] == "1" else no)[parts[1]] += 1
    except FileNotFoundError:
        return {}
    return {c: (yes[c], no[c]) for c in set(yes) | set(no)}


def candidates_from(calls: Dict[str, Tuple[int, int]], kept: Dict[str, int],
                    exported: Callable[[str], bool] = lambda name: False) -> List[Candidate]:
    """Every callee not yet decided: inline all its calls (if some were
    declined), none (if some were inlined). Inlining every call of a callee the
    program does not export, fewest calls first, comes first: that is what
    lets the callee go; an exported one stays whatever its callers do."""
    out: List[Tuple[int, int, int, str, int]] = []
    for callee, (y, n) in calls.items():
        if callee in kept or callee == "*":
            continue
        if n:
            out.append((int(exported(callee)), y + n, 0, callee, 1))
        if y:
            out.append((1, y + n, 1, callee, 0))
    return [(c, a) for _, _, _, c, a in sorted(out)]


def _add(total: Counter, calls: Dict[str, Tuple[int, int]]) -> None:
    for c, (y, n) in calls.items():
        total[(c, 1)] += y
        total[(c, 0)] += n


def _pairs(total: Counter) -> Dict[str, Tuple[int, int]]:
    names = {c for c, _ in total}
    return {c: (total[(c, 1)], total[(c, 0)]) for c in names}


@dataclass
class CacheEntry:
    #: the forces it was built under, restricted to the callees it asked about
    forces: Dict[str, int]
    calls: Dict[str, Tuple[int, int]]
    path: str
    text_bytes: Optional[int]


class ModuleCache:
    """Built members (objects, or LTO pre-link bitcode) by the answers they were
    given. A build asks about some callees only; under other forces that agree
    on those callees, the same questions get the same answers, so the build is
    the same and is reused: a candidate recompiles only the modules that call
    its callee, and in lto the search pays mostly for the link."""

    MAX_PER_MODULE = 64

    def __init__(self) -> None:
        import threading
        self.folder = tempfile.mkdtemp(prefix="mlbridge-room-cache-")
        self._lock = threading.Lock()
        self._entries: Dict[str, List[CacheEntry]] = {}
        self._ids = 0
        self.hits = 0
        self.misses = 0

    def next_id(self) -> int:
        with self._lock:
            self._ids += 1
            return self._ids

    def find(self, module: str, forces: Dict[str, int]) -> Optional[CacheEntry]:
        with self._lock:
            lst = self._entries.get(module, [])
            for i, e in enumerate(lst):
                if all(forces.get(c) == a for c, a in e.forces.items()) and ("*" in forces) == ("*" in e.forces) \
                        and not any(c in forces for c in e.calls if c not in e.forces):
                    self.hits += 1
                    lst.insert(0, lst.pop(i))   # most recently used first: the last to go
                    return e
            self.misses += 1
            return None

    def add(self, module: str, forces: Dict[str, int], calls: Dict[str, Tuple[int, int]], path: str,
            text_bytes: Optional[int]) -> CacheEntry:
        entry = CacheEntry({c: a for c, a in forces.items() if c in calls or c == "*"}, calls, path, text_bytes)
        with self._lock:
            lst = self._entries.setdefault(module, [])
            lst.insert(0, entry)
            while len(lst) > self.MAX_PER_MODULE:
                old = lst.pop()
                try:
                    os.unlink(old.path)
                except OSError:
                    pass
        return entry

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self._entries.clear()


class RoomSearch:
    """The search for one program in one setting (``objects``: the program's
    member objects, summed)."""

    def __init__(self, corpus: Corpus, program: Program, setting: Setting, toolchain: Toolchain, out: str, *,
                 jobs: int = 2, options: Optional[CompileOptions] = None, start: str = "oz") -> None:
        if start not in STARTS:
            raise RoomError(f"start {start!r}: expected one of {', '.join(STARTS)}")
        self.corpus, self.program, self.setting, self.toolchain = corpus, program, setting, toolchain
        self.jobs = max(1, jobs)
        self.options = options or CompileOptions()
        self.path = os.path.join(out, f"{program.name}.{setting.name}.{start}.json")
        self.cache: Optional[ModuleCache] = None   # made by run()
        self.state = RoomState.load(self.path) if os.path.exists(self.path) else \
            RoomState(program.name, setting.name, start, kept=dict(STARTS[start]))
        if (self.state.program, self.state.setting, self.state.start) != (program.name, setting.name, start):
            raise RoomError(f"{self.path}: the state of another program or setting; left as it is")

    def exported(self, name: str) -> bool:
        """Whether the linked program keeps NAME whatever its callers do (its
        API, or main); per object, any external function may be used elsewhere."""
        if not self.setting.whole_program:
            return False
        if self.program.kind == "executable":
            return name == "main"
        return any(fnmatch.fnmatchcase(name, p) for p in self.program.exports)

    # -- one build ------------------------------------------------------------------
    def measure(self, forces: Dict[str, int], work: str) -> Measure:
        """The program's .text with every call of each forced callee answered as
        given (the rest: -Oz's heuristic), and the trace of what was asked.
        Members come from the module cache when the forces they were built
        under agree with FORCES on every callee they asked about."""
        cache = self.cache
        if cache is None:
            raise RoomError("RoomSearch.measure runs inside run()")
        folder = tempfile.mkdtemp(prefix="m-", dir=work)
        try:
            callees = os.path.join(folder, "callees.txt")
            with open(callees, "w", encoding="utf-8") as f:
                f.writelines(f"{c}\t{a}\n" for c, a in sorted(forces.items()))
            policy = Policy.callees(callees)
            opts = self.setting.compile_options(self.program, self.options) if self.setting.whole_program \
                else dataclasses.replace(self.options, keep_objects=True)
            calls: Counter = Counter()
            inputs: List[str] = []
            members = self.program.members(self.corpus)
            total = 0
            for m in members:
                entry = cache.find(m.name, forces)
                if entry is None:
                    trace = os.path.join(folder, f"trace.{len(inputs)}")
                    mopts = dataclasses.replace(opts, environ=dict(opts.environ, MLBRIDGE_INLINE_TRACE=trace))
                    r = compile_module(m, policy, cache.folder, self.toolchain, mopts, tag=f"{cache.next_id()}")
                    if not r.ok:
                        return Measure(False, error=f"module {m.name}: {r.error}", command=r.command)
                    entry = cache.add(m.name, forces, read_trace(trace), str(r.object_path), r.text_bytes)
                inputs.append(entry.path)
                total += int(entry.text_bytes or 0)
                _add(calls, entry.calls)
            if not self.setting.whole_program:
                return Measure(True, total, _pairs(calls))
            trace = os.path.join(folder, "trace.link")
            r = link_program(self.program, inputs, policy, self.setting, folder, self.toolchain, self.options,
                             opt_level(members[0]), extra_env={"MLBRIDGE_INLINE_TRACE": trace})
            if not r.ok:
                return Measure(False, error=r.error, command=r.command)
            _add(calls, read_trace(trace))
            return Measure(True, r.text_bytes, _pairs(calls))
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def logged(self, forces: Dict[str, int], work: str) -> Tuple[Measure, List[Any]]:
        """Builds the program under FORCES with a training log per process (each
        pre-link compile, and the linker): the decisions taken with their 38
        features, what learning from the search imitates."""
        from .logged_compile import read_decisions
        folder = tempfile.mkdtemp(prefix="log-", dir=work)
        try:
            callees = os.path.join(folder, "callees.txt")
            with open(callees, "w", encoding="utf-8") as f:
                f.writelines(f"{c}\t{a}\n" for c, a in sorted(forces.items()))
            logs: List[str] = []

            def log_env(module: Any) -> Dict[str, str]:
                logs.append(os.path.join(folder, f"m{len(logs)}.log"))
                return {"MLBRIDGE_INLINE_TRAINING_LOG": logs[-1]}

            opts = dataclasses.replace(self.options, extra_env=log_env)
            # one log per backend: ThinLTO runs one per module ({module}: the plugin names it)
            link_log = os.path.join(folder, "link.{module}.log")
            if self.setting.whole_program:
                opts = dataclasses.replace(opts, environ=dict(opts.environ))
                r = build_program(self.corpus, self.program, Policy.callees(callees), self.setting, folder,
                                  self.toolchain, opts, tag="log", link_env={"MLBRIDGE_INLINE_TRAINING_LOG": link_log})
            else:
                r = self._objects(Policy.callees(callees), folder, opts)
            link_logs = sorted(glob.glob(os.path.join(glob.escape(folder), "link.*.log")))
            trajs = [t for p in logs + link_logs if os.path.exists(p) for t in [read_decisions(p)] if t is not None]
            return Measure(r.ok, r.text_bytes, {}, r.error, r.command), trajs
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _objects(self, policy: Policy, folder: str, opts: CompileOptions) -> CompiledModule:
        total = CompiledModule(self.program.name, ok=True, text_bytes=0)
        for m in self.program.members(self.corpus):
            r = compile_module(m, policy, folder, self.toolchain, opts, tag="room")
            if not r.ok:
                return r
            total.text_bytes = int(total.text_bytes or 0) + int(r.text_bytes or 0)
        return total

    # -- the search ------------------------------------------------------------------
    def run(self, *, budget: int, deadline: Optional[float] = None,
            on_step: Optional[Callable[[RoomState], None]] = None) -> RoomState:
        """Tries at most BUDGET candidates in all (counting earlier runs), and
        starts no batch after DEADLINE (time.monotonic()). Returns the state."""
        st = self.state
        self._since = time.monotonic()
        self.cache = ModuleCache()   # per run: its folder goes with the run
        work = tempfile.mkdtemp(prefix="mlbridge-room-")
        try:
            if st.base is None:
                oz = self._oz(work)
                base = self.measure(dict(st.kept), work)
                st.builds += 2
                if not base.ok:
                    raise RoomError(f"program {self.program.name} ({self.setting.name}): the {st.start} start with "
                                    f"the plugin failed: {base.error}")
                st.oz, st.base, st.best = oz, base.text_bytes, base.text_bytes
                st.queue = candidates_from(base.calls, st.kept, self.exported)
                self._save()
            with cf.ThreadPoolExecutor(max_workers=self.jobs) as pool:
                while st.queue and len(st.tried) < budget and not st.done:
                    if deadline is not None and time.monotonic() > deadline:
                        break
                    n = min(self.jobs, budget - len(st.tried), len(st.queue))
                    batch, st.queue = st.queue[:n], st.queue[n:]
                    results = list(pool.map(lambda c: self.measure(dict(st.kept, **{c[0]: c[1]}), work), batch))
                    st.builds += len(batch)
                    better = sorted((m.text_bytes, i) for i, m in enumerate(results)
                                    if m.ok and m.text_bytes is not None and m.text_bytes < int(st.best or 0))
                    winner = better[0][1] if better else None
                    for i, (cand, m) in enumerate(zip(batch, results)):
                        st.tried.append([cand[0], cand[1], m.text_bytes if m.ok else None, i == winner])
                    if winner is not None:
                        cand, m = batch[winner], results[winner]
                        st.kept[cand[0]] = cand[1]
                        st.best = m.text_bytes
                        # the other improvements are tried again on top of the new best,
                        # and callees the kept candidate exposed join the queue
                        again = [batch[i] for _, i in better[1:]]
                        queued = set(st.queue) | set(again)
                        fresh = [c for c in candidates_from(m.calls, st.kept, self.exported) if c not in queued
                                 and not any(t[0] == c[0] and t[1] == c[1] for t in st.tried)]
                        st.queue = again + st.queue + fresh
                    self._save()
                    if on_step is not None:
                        on_step(st)
            st.done = not st.queue
            self._save()
            return st
        finally:
            shutil.rmtree(work, ignore_errors=True)
            self.cache.close()

    def _oz(self, work: str) -> Optional[int]:
        """The plain -Oz build (no plugin) in this setting, for the table."""
        oz = Policy("oz", "oz")
        if self.setting.whole_program:
            r = build_program(self.corpus, self.program, oz, self.setting, work, self.toolchain, self.options,
                              tag="oz")
        else:
            r = self._objects(oz, work, self.options)
        if not r.ok:
            raise RoomError(f"program {self.program.name} ({self.setting.name}): the -Oz build failed: {r.error}")
        return r.text_bytes

    def _save(self) -> None:
        """Adds the time since the last save to the state, and writes it."""
        now = time.monotonic()
        self.state.seconds += now - self._since
        self._since = now
        self.state.save(self.path)


def room_row(st: RoomState) -> Dict[str, Any]:
    """One row of the room table."""
    pct = None
    if st.oz and st.best is not None:
        pct = round(100.0 * (st.best - st.oz) / st.oz, 3)
    return {"program": st.program, "setting": st.setting, "start": st.start, "oz": st.oz, "base": st.base, "best": st.best,
            "room_pct": pct, "kept": len([c for c in st.kept if c != "*"]), "tried": len(st.tried), "builds": st.builds,
            "minutes": round(st.seconds / 60.0, 2), "done": st.done}
