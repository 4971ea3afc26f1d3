"""The recipe of ``mlbridge train room``: how much room inlining leaves around
-Oz, per program and setting. For each program of each corpus and each start,
a resumable search (room.py); per program the search holding its smallest build;
with ``fit``, one policy imitating the decisions of those builds. Writes
OUT/room.json (and OUT/policy.json, OUT/policy.onnx with ``fit``).

What stops it before any build is a :class:`RunSetupError`; a program whose
search fails is a row with its error (``warn`` is told), the others go on."""
from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...core.files import write_json_atomic
from ...corpus.compile import CompileOptions, CompileSetupError, Toolchain
from ...corpus.layout import CorpusError, load
from ...corpus.programs import load_programs
from ...corpus.settings import Setting, find_lld
from .. import get as get_problem
from ...train.imitation import fit_imitation
from ...train.policy import MLPPolicy
from ...train.stage import Stage, no_progress
from .room import RoomError, RoomSearch, room_row
from ...train.run_folder import RunArgumentError, setup_error

#: where searches start: -Oz's decisions, or no call inlined
STARTS = ("oz", "never")


def measure_room(corpora: Sequence[str], out: str, setting: str = "lto", *, budget: int = 100,
                 minutes: Optional[float] = None, programs: Optional[Sequence[str]] = None,
                 starts: Sequence[str] = STARTS, fit: bool = False, hidden: Tuple[int, ...] = (16,),
                 jobs: int = 0, seed: int = 0, timeout: float = 120.0, clang: Optional[str] = None,
                 plugin: Optional[str] = None, stage: Stage = no_progress,
                 warn: Callable[[str], None] = lambda _: None) -> Dict[str, Any]:
    """Searches the programs of the corpora at CORPORA (only PROGRAMS, when given)
    in SETTING, BUDGET candidates per program and start; returns the summary
    written to OUT/room.json: ``programs`` (a row per program and start, with
    ``error`` when its search failed) and, with FIT, ``fit``."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise RunArgumentError("out", f"{{arg}} {out}: exists and is not a folder")
    work: List[Any] = []
    try:
        toolchain = Toolchain.find(clang, plugin, need_plugin=True)
        where = Setting.parse(setting)
        if where.whole_program:
            find_lld(toolchain.clang)
        for path in corpora:
            corpus = load(path)
            for prog in load_programs(corpus):
                if programs is None or prog.name in programs:
                    work.append((corpus, prog))
    except (CorpusError, CompileSetupError) as exc:
        raise setup_error(exc) from None
    if not work:
        raise RunArgumentError("programs", "no program to search (check {arg})")
    os.makedirs(out, exist_ok=True)
    options = CompileOptions(timeout=timeout)
    jobs = jobs or os.cpu_count() or 1
    deadline = None if minutes is None else time.monotonic() + 60.0 * minutes
    rows: List[Dict[str, Any]] = []
    best: Dict[str, RoomSearch] = {}   # program -> the search holding its smallest build
    with stage(len(work) * len(starts) * budget, f"room ({where.name})", "build") as bar:
        for (corpus, prog), start in [(w, s) for w in work for s in starts]:
            project = os.path.basename(os.path.normpath(corpus.root))
            try:
                search = RoomSearch(corpus, prog, where, toolchain, out, jobs=jobs, options=options, start=start)
                seen = [len(search.state.tried)]
                bar.update(seen[0], postfix=prog.name)

                def step(st: Any, seen: List[int] = seen) -> None:
                    bar.update(len(st.tried) - seen[0], postfix=f"{prog.name} {len(st.kept)} kept")
                    seen[0] = len(st.tried)

                st = search.run(budget=budget, deadline=deadline, on_step=step)
                bar.update(budget - seen[0])
                rows.append(dict(room_row(st), corpus=project))
                key = f"{corpus.root}/{prog.name}"
                if st.best is not None and (key not in best or st.best < best[key].state.best):
                    best[key] = search
            except RoomError as exc:
                warn(str(exc))
                rows.append({"corpus": project, "program": prog.name, "setting": where.name, "start": start,
                             "error": str(exc)})
    summary: Dict[str, Any] = {"setting": where.name, "programs": rows}
    if fit and best:
        summary["fit"] = fit_to_best_builds(list(best.values()), hidden, out, seed, stage=stage, warn=warn)
    write_json_atomic(os.path.join(out, "room.json"), summary, indent=1)
    return summary


def fit_to_best_builds(searches: List[RoomSearch], hidden: Tuple[int, ...], out: str, seed: int, *,
                       stage: Stage = no_progress, warn: Callable[[str], None] = lambda _: None) -> Dict[str, Any]:
    """Learning from the search: each program's best build, logged, imitated by
    one policy (the decisions of all programs at once)."""
    xs, ys = [], []
    with tempfile.TemporaryDirectory(prefix="mlbridge-room-fit-") as work, \
            stage(len(searches), "logging the best builds", "program") as bar:
        for s in searches:
            m, trajs = s.logged(dict(s.state.kept), work)
            bar.update(1, postfix=s.program.name)
            if not m.ok:
                warn(f"{s.program.name}: the logged build failed: {m.error}")
                continue
            for t in trajs:
                xs.append(t.x)
                ys.append(t.decision)
    if not xs:
        raise RunArgumentError("fit", "{arg}: no decision was logged")
    x, y = np.concatenate(xs), np.concatenate(ys).astype(np.int64)
    policy = MLPPolicy(get_problem("inlining-size").feature_names, hidden, seed=seed)
    result = fit_imitation(policy, x, y)
    policy.save(os.path.join(out, "policy.json"))
    onnx = policy.export_onnx(os.path.join(out, "policy.onnx"))
    return {"programs": len(searches), "decisions": int(y.size), "inlined": int(y.sum()),
            "accuracy": float(result["accuracy"]), "policy": onnx}
