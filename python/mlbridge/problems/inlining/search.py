"""Learning from search: per module, a greedy search over single decision flips
of the -Oz heuristic finds decisions that make the module's ``.text`` smaller;
the improved decisions, with the features LLVM logged for them, become the
labels of behavioral cloning (``imitation.fit_imitation``). Credit is per call
site, where ES has one number per module.

The primitive is the plugin's ``-mlbridge-inline-flip=I,J,...``: the stock
heuristic decides every call site except query I, J, ... (0-based, in the
order the advisor asks), whose answer is inverted; the plugin logs every
query (features, the stock answer, the answer taken) in LLVM's training-log
format. Compiles are deterministic, so with the decisions before query ``i``
unchanged, query ``i`` is the same call site with the same features. The
search therefore walks candidate indices in increasing order: it flips ``i``
on top of the flips kept so far, compiles, and keeps the flip iff the module
got strictly smaller. Every tried index stays valid in the final trajectory
(its prefix never changes), so a rejected flip is evidence too: there, the
stock answer was at least as good.

The search can also start from a policy's decisions (``around``: the policy
runs in-process and the flips invert its answers), trying its own departures
from -Oz first: DAgger rounds, with the search as the expert. Results are kept
per module in ``RUN/search/`` (resumable: a module already searched is
skipped) and summarized in ``RUN/search.jsonl``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
import time
import warnings
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...corpus.compile import Toolchain
from ...corpus.layout import Module
from ...llvm.inliner_features import FEATURES
from .logged_compile import LoggedDecisions, compile_with_flips


@dataclass
class SearchConfig:
    tries: int = 48            # flips tried per module (indices drawn uniformly, walked in order)
    jobs: int = 0              # modules searched in parallel (0: all cores)
    seed: int = 0
    timeout: float = 120.0     # per compile
    budget_s: Optional[float] = None   # stop starting new modules after this long
    propose: Optional[str] = None      # a policy.json: try first where it disagrees with the decisions taken
    around: Optional[str] = None       # a policy.json: search around its decisions (default: -Oz's)


@dataclass
class ModuleSearch:
    """One module's search: sizes, the flips kept, and its final trajectory."""
    module: str
    ok: bool
    oz: int = 0                # .text of the -Oz heuristic
    best: int = 0              # .text with `flips`
    start: int = 0             # .text with no flip (-Oz's, or the policy's searched around)
    flips: List[int] = field(default_factory=list)
    tried: int = 0             # compiles spent on flips
    queries: int = 0           # call sites the advisor was asked about (final trajectory)
    seconds: float = 0.0
    error: Optional[str] = None

    @property
    def gain(self) -> float:
        """Relative .text reduction against -Oz (positive: smaller)."""
        return (self.oz - self.best) / self.oz if self.ok and self.oz > 0 else 0.0


def search_module(module: Module, toolchain: Toolchain, work: str, tries: int, rng: np.random.Generator, *,
                  timeout: float = 120.0, propose: Optional[Callable[[LoggedDecisions], np.ndarray]] = None,
                  model: Optional[str] = None) -> Tuple[ModuleSearch, Optional[LoggedDecisions]]:
    """The greedy flip search on one module (see the module docstring).

    Candidates are ``tries`` query indices drawn uniformly, or, with
    ``propose`` (a trajectory -> bool mask of the queries worth flipping, e.g.
    where a policy disagrees with -Oz), the proposed ones first (asked again
    after every kept flip, since the queries after it changed), then uniform
    draws for the tries left. With ``model`` (an ONNX policy) the search is
    around that policy's decisions instead of -Oz's: it starts from the
    policy's size (``start``) and is scored against -Oz's (``oz``)."""
    t0 = time.monotonic()
    res = ModuleSearch(module.name, ok=False)
    r, traj = compile_with_flips(module, [], toolchain, work, timeout=timeout, model=model)
    if not r.ok or r.text_bytes is None:
        res.error = r.error or "no size"
        return res, None
    res.ok, res.oz, res.best, res.start = True, r.text_bytes, r.text_bytes, r.text_bytes
    if model is not None:   # the policy's size is where the search starts; -Oz's is what it is scored against
        oz, _ = compile_with_flips(module, [], toolchain, work, timeout=timeout, want_log=False)
        if not oz.ok or oz.text_bytes is None:
            res.ok, res.error = False, oz.error or "no size"
            return res, None
        res.oz = oz.text_bytes
    if traj is None or not r.text_bytes:   # no call site asked about, or no code: nothing to search
        res.seconds = time.monotonic() - t0
        return res, None
    flips: List[int] = []
    tested: List[int] = []

    def try_flip(i: int) -> bool:
        nonlocal traj
        r, new = compile_with_flips(module, flips + [i], toolchain, work, timeout=timeout, model=model)
        res.tried += 1
        kept = bool(r.ok and r.text_bytes and r.text_bytes < res.best and new is not None)
        if kept:
            res.best = r.text_bytes or 0
            flips.append(i)
            traj = new
            # a rejection after i was judged on the queries before this flip: no evidence now
            tested[:] = [t for t in tested if t < i]
        tested.append(i)
        return kept

    if propose is not None:
        last = -1
        while res.tried < tries:
            mask = np.asarray(propose(traj), bool)
            mask[:last + 1] = False
            nxt = np.flatnonzero(mask)
            if not len(nxt):
                break
            for i in (int(v) for v in nxt):
                last = i
                if try_flip(i) or res.tried >= tries:
                    break   # a kept flip changes the queries after it: propose again
    n = len(traj.default)
    left = np.setdiff1d(np.arange(n), np.asarray(tested, np.int64))
    # Uniform draws walk in order too; with proposals they come after them (a
    # draw before the last kept flip would be judged on a changed suffix).
    left = left[left > (max(flips) if flips else -1)] if propose is not None else left
    k = min(tries - res.tried, len(left))
    draws = np.sort(rng.choice(left, size=k, replace=False)) if k > 0 else np.zeros(0, np.int64)
    for i in (int(c) for c in draws):
        if i < len(traj.default):   # a kept flip may have shortened the trajectory
            try_flip(i)
    traj.tested[[i for i in tested if i < len(traj.tested)]] = True
    res.flips, res.queries = flips, len(traj.default)
    res.seconds = time.monotonic() - t0
    return res, traj


def _module_file(root: str, name: str) -> str:
    key = hashlib.sha1(name.encode()).hexdigest()[:16]
    return os.path.join(root, "search", f"{os.path.basename(name)[:40]}.{key}.npz")


def save_module(root: str, res: ModuleSearch, traj: Optional[LoggedDecisions]) -> None:
    """Writes the module's trajectory (atomically) and appends its summary line."""
    path = _module_file(root, res.module)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp.npz"
    if traj is None:
        traj = LoggedDecisions(np.zeros((0, len(FEATURES)), np.int64), np.zeros(0, np.int8), np.zeros(0, np.int8),
                          np.zeros(0, bool))
    np.savez_compressed(tmp, x=traj.x, default=traj.default, decision=traj.decision, tested=traj.tested,
                        summary=np.frombuffer(json.dumps(asdict(res)).encode(), np.uint8))
    os.replace(tmp, path)
    with open(os.path.join(root, "search.jsonl"), "a") as f:
        f.write(json.dumps(asdict(res)) + "\n")


def _read(root: str, name: str, arrays: bool) -> Optional[Tuple[ModuleSearch, Optional[LoggedDecisions]]]:
    """A saved module: its summary and (``arrays``) its trajectory. None when
    there is none, or when the file cannot be read (it is searched again)."""
    path = _module_file(root, name)
    if not os.path.exists(path):
        return None
    try:
        with np.load(path) as z:   # NpzFile reads only the members asked for
            res = ModuleSearch(**json.loads(bytes(z["summary"]).decode()))
            if not arrays:
                return res, None
            return res, LoggedDecisions(z["x"], z["default"], z["decision"], z["tested"])
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        warnings.warn(f"{path}: unreadable search result ({type(exc).__name__}: {exc}); searching it again")
        return None


def load_summary(root: str, name: str) -> Optional[ModuleSearch]:
    got = _read(root, name, arrays=False)
    return got[0] if got is not None else None


def load_module(root: str, name: str) -> Optional[Tuple[ModuleSearch, LoggedDecisions]]:
    got = _read(root, name, arrays=True)
    return (got[0], got[1]) if got is not None and got[1] is not None else None


def _proposer(cfg: SearchConfig) -> Optional[Callable[[LoggedDecisions], np.ndarray]]:
    """--propose: where that policy disagrees with the decisions taken; --around
    alone: each of the policy's own departures from -Oz (checked in context)."""
    if cfg.propose:
        from ...train.policy import MLPPolicy
        pol = MLPPolicy.load(cfg.propose)
        return lambda t: (pol.scores(pol.inputs(t.x)) > 0) != (t.decision > 0)
    if cfg.around:
        return lambda t: t.decision != t.default
    return None


def run_search(root: str, modules: Sequence[Module], toolchain: Toolchain, cfg: SearchConfig, *,
               on_done: Optional[Callable[[ModuleSearch], None]] = None) -> List[ModuleSearch]:
    """Searches every module not yet searched in ``root`` (in parallel), and
    returns every module's result (earlier runs' included). A module's random
    draws depend only on the seed and its name, so a resumed run finds what an
    uninterrupted one would have."""
    os.makedirs(root, exist_ok=True)
    done: Dict[str, ModuleSearch] = {}
    todo: List[Module] = []
    for m in modules:
        res = load_summary(root, m.name)
        if res is not None:
            done[m.name] = res
        else:
            todo.append(m)
    # largest bitcode first: no long module searched alone at the end
    todo.sort(key=lambda m: -os.path.getsize(m.bc))
    start = time.monotonic()
    lock = threading.Lock()
    propose = _proposer(cfg)
    work = tempfile.mkdtemp(prefix="mlbridge-search-")
    try:
        model = None
        if cfg.around:
            from ...train.policy import MLPPolicy
            model = MLPPolicy.load(cfg.around).export_onnx(os.path.join(work, "around.onnx"))

        def one(m: Module) -> Optional[ModuleSearch]:
            if cfg.budget_s is not None and time.monotonic() - start > cfg.budget_s:
                return None
            seed = int.from_bytes(hashlib.sha256(f"{cfg.seed}:{m.name}".encode()).digest()[:8], "little")
            res, traj = search_module(m, toolchain, work, cfg.tries, np.random.default_rng(seed),
                                      timeout=cfg.timeout, propose=propose, model=model)
            with lock:
                save_module(root, res, traj)
            if on_done is not None:
                on_done(res)
            return res

        with ThreadPoolExecutor(max(1, cfg.jobs or os.cpu_count() or 1)) as pool:
            for res in pool.map(one, todo):
                if res is not None:
                    done[res.module] = res
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [done[m.name] for m in modules if m.name in done]


def best_searches(roots: Sequence[str], modules: Sequence[Module]) -> List[ModuleSearch]:
    """Per module, the search that made it smallest among the run folders ``roots``."""
    out = []
    for m in modules:
        found = [r for r in (load_summary(root, m.name) for root in roots) if r is not None and r.ok]
        if found:
            out.append(min(found, key=lambda r: r.best))
    return out


def search_dataset(roots: Sequence[str], modules: Sequence[Module], *, flip_weight: float = 1.0,
                   tested_weight: float = 1.0) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every searched trajectory of ``modules`` in the run folders ``roots``
    (all rounds, as DAgger aggregates): rows [m, 38], labels [m], weights [m]
    and the -Oz heuristic's answers [m]. A query's label is what a compile
    showed where one was tried (a kept flip, weight ``flip_weight``; the answer
    a rejected flip confirmed, weight ``tested_weight``) and the -Oz
    heuristic's answer elsewhere (weight 1: the prior, also in searches around
    a policy, whose untried departures from -Oz are not evidence)."""
    xs, ys, ws, ds = [], [], [], []
    for root in roots:
        for m in modules:
            got = load_module(root, m.name)
            if got is None or not got[0].ok or len(got[1].decision) == 0:
                continue
            res, t = got
            y = t.default.copy()
            y[t.tested] = t.decision[t.tested]
            w = np.ones(len(y), np.float32)
            w[t.tested] = tested_weight
            kept = np.asarray([i for i in res.flips if i < len(y)], np.int64)
            w[kept] = flip_weight
            xs.append(t.x)
            ys.append(y)
            ws.append(w)
            ds.append(t.default)
    if not xs:
        return (np.zeros((0, len(FEATURES)), np.int64), np.zeros(0, np.int8), np.zeros(0, np.float32),
                np.zeros(0, np.int8))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(ws), np.concatenate(ds)
