"""Labels from search around the exact default eviction advisor (issue 38, step 2's
first part): per module, flip the default's decisions where its runner-up is
closest, keep what lowers the module's register-allocation score, and save the
best trajectory (observations and answers) as labels.

- **Margin.** Each question is answered by :class:`DefaultAdvisor` (LLVM 19's
  rule over the channel); its legal answers are ranked by the default's own cost
  order: registers the rule may evict (by urgent evictions, then broken hints,
  then largest interfering weight, then allocation order), then "evict nothing"
  (column 32), then the registers it refuses by weight. The *runner-up* is the
  first of them that is not the default's choice (never an index whose ``mask``
  is 0); the *margin* is how far it is from the choice in that order, in tiers so
  that a cost decided earlier is always farther: ``2 + gap`` when the urgent
  counts differ, ``1 + gap`` when the broken hints do, the weight gap otherwise
  (each gap capped at 1; the features are normalized by one maximum per
  question). Against "evict nothing" the gap is the one the default compares:
  the register's weight against the allocated range's. A question with one
  legal answer has no runner-up (margin inf).
- **Flips.** For a fixed set of earlier answers llc asks the same questions in
  the same order, so question *i* is named by its index, as the inliner's flips
  are (``problems/inlining/search.py``); :class:`FlipPolicy` answers as the
  default except at the listed indices, where it answers the runner-up, and
  records every question; :func:`compile_with_flips` runs one compile with it
  (no flips: the default's own trajectory).
- **Greedy search** (:func:`greedy_flips`): the K questions of the default's
  trajectory with the smallest margins are flipped one at a time (each such
  compile differs from the default from that question on only, so its score is
  the flip's alone); the flips that lowered the score are then combined, the
  best first, each combination measured again (a flip shifts the questions after
  it, so an index may name another question there) and kept only when it lowers
  the best score so far. At most ``max_compiles`` flip compiles per module.
- **Labels** (:func:`save_labels`): per module one ``.npz`` under
  ``ROOT/search/`` (written under a temporary name, then renamed): the best
  trajectory's observations, the answers taken, the default's answers, the
  runner-ups and margins, and a JSON summary. A module with a labels file is not
  searched again (:func:`run_search`); a damaged one is one line
  (:class:`EvictionSearchError`).

Not done yet: learning from the labels (DAgger rounds), ES started from what is
learned, and a shipped policy. The score is ``RegallocEviction.measure_ir``'s
(LLVM's RegAllocScore weights, ``llvm/regalloc_score.py``)."""
from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...core.errors import MLBridgeError
from ...core.files import replace_when_complete
from .default_advisor import SELF, DefaultAdvisor, costs
from .problem import RegallocEviction

FORMAT = "mlbridge-eviction-search/2"
NO_ALTERNATIVE = -1
#: the per-candidate features recorded per question (LLVM 19's, in its order), then ``progress``
OBS = tuple(f.name for f in RegallocEviction.features if f.name != "progress")
_DTYPES = {f.name: (np.int64 if f.dtype == "int64_t" else np.float32) for f in RegallocEviction.features}

_DEFAULT = DefaultAdvisor()
_savez: Callable[..., None] = np.savez_compressed   # typed loosely: the arrays are keyword arguments


class EvictionSearchError(MLBridgeError):
    """A labels file that cannot be read (one line, naming it)."""


# -- the default's cost order ---------------------------------------------------------

def _gap(a: float, b: float) -> float:
    d = abs(a - b)
    return 1.0 if not np.isfinite(d) else min(d, 1.0)   # inf/NaN: an unspillable weight, as far as it gets


def rank(obs: Mapping[str, Any]) -> Tuple[int, int, float]:
    """(the default's answer, its runner-up or NO_ALTERNATIVE, the margin) of one
    question (module docstring)."""
    c = costs(obs)
    choice = _DEFAULT.choose(c, obs)
    regs = np.flatnonzero(c.mask[:SELF])
    # group 0: registers the rule may evict; 1: evict nothing; 2: registers it refuses by weight
    group = np.where(c.evictable[regs], 0, 2)
    urgent = np.where(np.isnan(c.urgent), np.inf, c.urgent)
    hints = np.where(np.isnan(c.hints), np.inf, c.hints)
    idx, grp = regs, group
    u, h, w = urgent[regs], hints[regs], c.weight[regs]
    if c.mask[SELF]:
        idx, grp = np.append(idx, SELF), np.append(grp, 1)
        u, h, w = np.append(u, 0.0), np.append(h, 0.0), np.append(w, 0.0)
    order = idx[np.lexsort((idx, w, h, u, grp))]
    others = order[order != choice]
    if not len(others):
        return choice, NO_ALTERNATIVE, float("inf")
    alt = int(others[0])
    if choice == SELF or alt == SELF:
        # the default compares evict-nothing with a register by weight alone (shouldEvict)
        reg = alt if choice == SELF else choice
        return choice, alt, _gap(c.weight[reg], c.self_weight)
    for tier, col in ((2.0, urgent), (1.0, hints)):
        if col[choice] != col[alt]:
            return choice, alt, tier + _gap(col[choice], col[alt])
    return choice, alt, _gap(c.weight[choice], c.weight[alt])


# -- a trajectory and the policy that records it -----------------------------------------

@dataclass
class EvictionTrajectory:
    """Every question of one compile, in the order llc asked them: ``obs[name]``
    [n, 33] (LLVM's dtypes), ``progress`` [n], the function asked about
    (``context``), the default's answer, its runner-up and margin, the answer
    taken, and ``tested``: where a flip alone was tried and rejected with this
    prefix (the default's answer confirmed, as far as one compile shows)."""
    obs: Dict[str, np.ndarray]
    progress: np.ndarray
    context: np.ndarray
    default: np.ndarray
    runner_up: np.ndarray
    margin: np.ndarray
    answer: np.ndarray
    tested: np.ndarray

    def __len__(self) -> int:
        return len(self.answer)

    @property
    def flipped(self) -> np.ndarray:
        return self.answer != self.default

    def same_question(self, other: "EvictionTrajectory", i: int) -> bool:
        """Whether question I is the same in both (every feature equal)."""
        if i >= len(self) or i >= len(other):
            return False
        return all(np.array_equal(self.obs[n][i], other.obs[n][i], equal_nan=True) for n in OBS) and \
            np.array_equal(self.progress[i], other.progress[i], equal_nan=True)

    @classmethod
    def empty(cls) -> "EvictionTrajectory":
        return cls({n: np.zeros((0, SELF + 1), _DTYPES[n]) for n in OBS}, np.zeros(0, np.float32),
                   np.zeros(0, "<U1"), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64),
                   np.zeros(0, np.int64), np.zeros(0, bool))


#: ``base(obs, choice, runner_up, margin) -> True`` to answer the runner-up: a
#: learned flip model (problems/eviction/flip_model.py) the search walks around
Base = Callable[[Any, int, int, float], bool]


class FlipPolicy:
    """``policy(obs) -> index_to_evict``: the default's answer (or, with BASE,
    the base's choice between the default's answer and its runner-up), except
    at the question indices ``flips`` (0-based, in the order asked in one
    compile), where it answers the other of the two (a question without a
    runner-up keeps the default's). Records every question; one instance per
    compile."""

    def __init__(self, flips: Sequence[int] = (), base: Optional[Base] = None) -> None:
        self.flips = frozenset(int(i) for i in flips)
        self.base = base
        self._obs: Dict[str, List[np.ndarray]] = {n: [] for n in OBS}
        self._rows: List[Tuple[float, str, int, int, float, int]] = []

    def __call__(self, obs: Any) -> int:
        choice, alt, margin = rank(obs)
        i = len(self._rows)
        take_alt = alt != NO_ALTERNATIVE and self.base is not None and bool(self.base(obs, choice, alt, margin))
        if i in self.flips and alt != NO_ALTERNATIVE:
            take_alt = not take_alt
        answer = alt if take_alt else choice
        for n in OBS:   # the channel's views point into its buffer: copied
            self._obs[n].append(np.array(obs[n], _DTYPES[n]).reshape(-1))
        progress = float(np.asarray(obs["progress"]).reshape(-1)[0])
        self._rows.append((progress, str(getattr(obs, "context", "") or ""), choice, alt, margin, answer))
        return answer

    def trajectory(self) -> EvictionTrajectory:
        if not self._rows:
            return EvictionTrajectory.empty()
        p, ctx, d, r, m, a = zip(*self._rows)
        return EvictionTrajectory({n: np.stack(v) for n, v in self._obs.items()}, np.asarray(p, np.float32),
                                  np.asarray(ctx), np.asarray(d, np.int64), np.asarray(r, np.int64),
                                  np.asarray(m, np.float64), np.asarray(a, np.int64), np.zeros(len(a), bool))


def candidates(traj: EvictionTrajectory, k: int) -> List[int]:
    """K question indices, among those with a runner-up: first the questions
    where the start policy left the default (a base's flips, the earliest
    first: the labels that can correct it), then the smallest margins (ties:
    the earlier question), in increasing margin."""
    has = np.flatnonzero(traj.runner_up != NO_ALTERNATIVE)
    left = has[traj.answer[has] != traj.default[has]]
    rest = has[traj.answer[has] == traj.default[has]]
    order = np.concatenate([left, rest[np.argsort(traj.margin[rest], kind="stable")]])
    return [int(i) for i in order[:max(0, k)]]


# -- the greedy search, on any scorer ------------------------------------------------------

#: flips (sorted question indices) -> (score, what the compile recorded), or None when it failed
Measure = Callable[[Tuple[int, ...]], Optional[Tuple[float, Any]]]


@dataclass
class GreedyFlips:
    """What greedy_flips found."""
    flips: List[int]               # the flips kept (sorted)
    best: float                    # the score with them
    best_record: Any               # what measure recorded for them (the start's when none kept)
    singles: Dict[int, Optional[float]] = field(default_factory=dict)   # flip alone -> score (None: failed)
    combined: int = 0              # combinations measured
    failed: int = 0                # flip compiles that failed (never kept)

    @property
    def compiles(self) -> int:
        return len(self.singles) + self.combined


def greedy_flips(cands: Sequence[int], measure: Measure, start: float, start_record: Any, *,
                 max_compiles: int) -> GreedyFlips:
    """Each of CANDS flipped alone, then the flips that lowered START combined,
    the best single first, each combination re-measured and kept only when it
    lowers the best score so far; at most MAX_COMPILES calls of MEASURE. The
    result's score is never above START."""
    g = GreedyFlips([], start, start_record)
    first: Optional[Tuple[float, int, Any]] = None   # the best single (the first of equals), kept first
    for i in dict.fromkeys(int(c) for c in cands):   # each once, in order
        if g.compiles >= max_compiles:
            break
        got = measure((i,))
        g.singles[i] = None if got is None else got[0]
        if got is None:
            g.failed += 1
        elif got[0] < start and (first is None or got[0] < first[0]):
            first = (got[0], i, got[1])   # only its record is needed: the others are measured again combined
    if first is None:
        return g
    g.flips, g.best, g.best_record = [first[1]], first[0], first[2]
    # the other improving singles, best first (equals in the order tried)
    better = sorted((s, k, i) for k, (i, s) in enumerate(g.singles.items())
                    if s is not None and s < start and i != first[1])
    for _, _, i in better:
        if g.compiles >= max_compiles:
            break
        trial = tuple(sorted(g.flips + [i]))
        got = measure(trial)
        g.combined += 1
        if got is None:
            g.failed += 1
        elif got[0] < g.best:
            g.flips, g.best, g.best_record = list(trial), got[0], got[1]
    return g


# -- one module ----------------------------------------------------------------------------

@dataclass
class EvictionSearchConfig:
    k: int = 16                # questions tried per module (smallest margins)
    max_compiles: int = 32     # flip compiles per module (singles and combinations)
    timeout: float = 120.0     # seconds per llc run
    jobs: int = 1              # modules searched in parallel


@dataclass
class EvictionModuleSearch:
    """One module's search. Scores are RegallocEviction.measure_ir's: ``stock``
    stock llc-19 (no channel), ``start`` DefaultAdvisor over the channel (where
    the search starts; equal to ``stock`` where the advisor is exact), ``best``
    with ``flips``. ``shifted``: kept flips whose question differs from the
    default trajectory's at that index (an earlier flip moved it)."""
    module: str
    ok: bool
    stock: float = 0.0
    start: float = 0.0
    best: float = 0.0
    flips: List[int] = field(default_factory=list)
    compiles: int = 0          # llc runs, the two unflipped ones included
    failed: int = 0
    shifted: int = 0
    questions: int = 0
    singles: List[List[Any]] = field(default_factory=list)   # [question, score or None] per flip tried alone
    seconds: float = 0.0
    error: Optional[str] = None

    @property
    def tried(self) -> List[int]:
        """The questions flipped alone, in the order tried."""
        return [int(i) for i, _ in self.singles]

    @property
    def improving(self) -> int:
        """How many flips lowered the score alone."""
        return sum(1 for _, v in self.singles if v is not None and v < self.start)

    @property
    def gain(self) -> float:
        """Relative score reduction against the start (positive: lower)."""
        return (self.start - self.best) / self.start if self.ok and self.start > 0 else 0.0


def _one_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def compile_with_flips(ir: str, recorded: Sequence[str], flips: Sequence[int] = (), *, llc: str,
                       timeout: float, base: Optional[Base] = None) -> Tuple[float, EvictionTrajectory]:
    """IR compiled by LLC (``RegallocEviction.measure_ir``: every answer checked
    legal), the default answering every question but FLIPS (the runner-up
    there): the register-allocation score and every question recorded. With no
    flips, the default's own trajectory (BASE's, with a base). Raises what
    measure_ir raises."""
    pol = FlipPolicy(flips, base)
    value = RegallocEviction().measure_ir(ir, recorded, pol, tools={"llc": llc}, timeout=timeout).value
    return value, pol.trajectory()


def search_module(module: str, ir: str, recorded: Sequence[str], *, llc: str,
                  cfg: EvictionSearchConfig = EvictionSearchConfig(), base: Optional[Base] = None
                  ) -> Tuple[EvictionModuleSearch, EvictionTrajectory]:
    """The greedy flip search on one module (IR, compiled by LLC with
    ``RegallocEviction.codegen_args(recorded)``, as the trainer's
    ``RUN/modules.json`` rows give them), around the default or BASE. Returns
    the result and the *start* trajectory (the states the start policy visits,
    which every single flip was judged on: what learning from it needs), with
    ``tested`` set where a single flip did not lower the score. A failing start
    compile is a result with ``ok`` False and the error; a failing flip is not
    kept."""
    from ...llvm.interactive import CompilerFailed
    from ...llvm.regalloc_score import RegallocScoreError
    t0 = time.monotonic()
    res = EvictionModuleSearch(module, ok=False)

    def compile_(flips: Tuple[int, ...]) -> Tuple[float, EvictionTrajectory]:
        res.compiles += 1
        return compile_with_flips(ir, recorded, flips, llc=llc, timeout=cfg.timeout, base=base)

    def measure(flips: Tuple[int, ...]) -> Optional[Tuple[float, EvictionTrajectory]]:
        try:
            return compile_(flips)
        except (CompilerFailed, RegallocScoreError):   # this flip broke llc: not kept
            return None

    try:
        res.compiles += 1
        res.stock = RegallocEviction().measure_ir(ir, recorded, None, tools={"llc": llc}, timeout=cfg.timeout).value
        res.start, start_traj = compile_(())
    except (CompilerFailed, RegallocScoreError) as exc:
        res.error, res.seconds = _one_line(exc), time.monotonic() - t0
        return res, EvictionTrajectory.empty()
    res.ok, res.best = True, res.start
    cands = candidates(start_traj, cfg.k)
    g = greedy_flips(cands, measure, res.start, start_traj, max_compiles=cfg.max_compiles)
    best: EvictionTrajectory = g.best_record
    res.best, res.flips, res.failed = g.best, g.flips, g.failed
    res.singles = [[i, s] for i, s in g.singles.items()]
    res.shifted = sum(1 for i in g.flips if not best.same_question(start_traj, i))
    for i, s in g.singles.items():   # judged alone on the start trajectory: its answer confirmed
        if i < len(start_traj) and (s is None or s >= res.start):
            start_traj.tested[i] = True
    res.questions, res.seconds = len(start_traj), time.monotonic() - t0
    return res, start_traj


# -- labels on disk ------------------------------------------------------------------------

def labels_path(root: str, module: str) -> str:
    key = hashlib.sha1(module.encode()).hexdigest()[:16]
    return os.path.join(root, "search", f"{os.path.basename(module)[:40]}.{key}.npz")


def save_labels(path: str, res: EvictionModuleSearch, traj: EvictionTrajectory) -> str:
    """RES and TRAJ to PATH (.npz), whole or not at all."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    summary = json.dumps({"format": FORMAT, **asdict(res)}).encode()
    arrays = {f"obs_{n}": traj.obs[n] for n in OBS}
    arrays.update(progress=traj.progress, context=traj.context, default=traj.default, runner_up=traj.runner_up,
                  margin=traj.margin, answer=traj.answer, tested=traj.tested,
                  summary=np.frombuffer(summary, np.uint8))

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:   # a file object: numpy adds no suffix to the name
            _savez(f, **arrays)
    return replace_when_complete(path + ".tmp", path, write)


def load_labels(path: str) -> Tuple[EvictionModuleSearch, EvictionTrajectory]:
    """A labels file written by save_labels; EvictionSearchError (one line, naming
    PATH) when it cannot be read."""
    try:
        with np.load(path) as z:
            meta = json.loads(bytes(z["summary"]).decode())
            if not isinstance(meta, dict) or meta.pop("format", None) != FORMAT:
                raise ValueError(f"not an {FORMAT} file")
            for derived in ("tried", "improving"):   # written by early files: read from ``singles`` now
                meta.pop(derived, None)
            res = EvictionModuleSearch(**meta)
            t = EvictionTrajectory({n: z[f"obs_{n}"] for n in OBS}, z["progress"], z["context"], z["default"],
                                   z["runner_up"], z["margin"], z["answer"], z["tested"])
        n = len(t.answer)
        cols = [t.progress, t.context, t.default, t.runner_up, t.margin, t.tested]
        if any(len(c) != n for c in cols) or any(t.obs[k].shape != (n, SELF + 1) for k in OBS):
            raise ValueError("its arrays disagree on the number of questions")
        legal = np.take_along_axis(t.obs["mask"], t.answer.reshape(-1, 1).clip(0, SELF), 1).reshape(-1)
        if n and (t.answer.min() < 0 or t.answer.max() > SELF or not legal.all()):
            raise ValueError("an answer is not a legal candidate")
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        raise EvictionSearchError(f"{path}: damaged search labels ({_one_line(exc)}); remove it to search "
                                  "the module again") from None
    return res, t


def run_search(root: str, modules: Sequence[Mapping[str, Any]], *, llc: str,
               cfg: EvictionSearchConfig = EvictionSearchConfig(), base: Optional[Base] = None,
               on_done: Callable[[EvictionModuleSearch], None] = lambda r: None,
               deadline: Optional[float] = None) -> List[EvictionModuleSearch]:
    """Searches every module (rows of the trainer's ``RUN/modules.json``:
    ``module``, ``ir``, ``recorded``) that has no labels in ROOT yet, and returns
    every module's result (earlier runs' included). A module whose start compile
    failed is saved too (``ok`` False, its error) and not retried: remove its file
    to search it again. A damaged labels file stops the run (EvictionSearchError):
    it is never overwritten silently. No module starts after DEADLINE
    (``time.monotonic()``); those left are searched by the next run."""
    from concurrent.futures import ThreadPoolExecutor
    done: Dict[str, EvictionModuleSearch] = {}
    todo = []
    for m in modules:
        path = labels_path(root, m["module"])
        if os.path.exists(path):
            done[m["module"]] = load_labels(path)[0]
        else:
            todo.append(m)

    def one(m: Mapping[str, Any]) -> Optional[EvictionModuleSearch]:
        if deadline is not None and time.monotonic() >= deadline:
            return None   # left for the next run
        res, traj = search_module(m["module"], m["ir"], m["recorded"], llc=llc, cfg=cfg, base=base)
        save_labels(labels_path(root, m["module"]), res, traj)
        on_done(res)
        return res

    with ThreadPoolExecutor(max(1, cfg.jobs)) as pool:
        for got in pool.map(one, todo):
            if got is not None:
                done[got.module] = got
    return [done[m["module"]] for m in modules if m["module"] in done]
