"""The recipe of ``mlbridge train room --problem phase-ordering``: how much room
pass orders leave around -Oz, per program, in stored bytes (code + read-only +
initialized data). The search is ``mlbridge tune``'s (docs/tuning.md), one per
corpus into ``OUT/<corpus folder name>/tune`` with MINUTES as its budget; a room
run started again resumes each tune (its minutes count against the budget).
Writes OUT/room.json.

Per program of ``programs.json``: in the linked setting the program linked with
-Oz's objects and with the tuned ones, as the tune reports it; in the lto
setting the program's full-LTO link with its own pipeline and with the best
link pipeline found (the tune's unit is the program); in the objects
setting the sum of its modules' objects (a corpus without ``programs.json``:
one row for all its modules). The tuner has no per-program budget of
candidates: it spends the minutes where a compile buys the most bytes."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Sequence

from ...core.errors import ArgumentError
from ...core.files import write_json_atomic
from ...corpus.compile import CompileSetupError, Toolchain
from ...corpus.layout import Corpus, CorpusError, load
from ...corpus.programs import PROGRAMS, Program, load_programs
from ...corpus.settings import find_lld
from ...train.run_folder import RunArgumentError, setup_error
from ...train.stage import Stage, no_progress
from ...tune.run import SETTINGS, TuneError, TuneOptions, tune
from .. import get

PROBLEM = get("phase-ordering")
#: every module of a corpus without programs.json (objects setting)
ALL_MODULES = "(all modules)"


def measure_room(corpora: Sequence[str], out: str, setting: str = "linked", *, minutes: Optional[float] = None,
                 jobs: int = 0, seed: int = 0, timeout: float = 120.0, clang: Optional[str] = None,
                 plugin: Optional[str] = None, stage: Stage = no_progress,
                 warn: Callable[[str], None] = lambda _: None) -> Dict[str, Any]:
    """Tunes each corpus of CORPORA in SETTING for MINUTES (default: the tuner's)
    and returns the summary written to OUT/room.json: ``programs``, a row per
    program (``error`` when its corpus's tune failed; the others go on)."""
    if setting not in SETTINGS:
        raise RunArgumentError("setting", f"{{arg}} {setting}: the phase-ordering room is measured in "
                               f"{', '.join(SETTINGS)}: ThinLTO's backends are not searched")
    budget = TuneOptions().budget_minutes if minutes is None else minutes
    if not budget > 0:
        raise RunArgumentError("minutes", "{arg} must be positive")
    if os.path.exists(out) and not os.path.isdir(out):
        raise RunArgumentError("out", f"{{arg}} {out}: exists and is not a folder")
    work = []
    try:
        toolchain = Toolchain.find(clang, plugin, need_plugin=True)
        if setting != "objects":
            find_lld(toolchain.clang)
        for path in corpora:
            corpus = load(path)
            # objects: programs.json, where there is one, only groups the rows
            has = setting != "objects" or os.path.isfile(os.path.join(corpus.root, PROGRAMS))
            work.append((os.path.basename(os.path.normpath(path)), corpus, load_programs(corpus) if has else []))
    except (CorpusError, CompileSetupError) as exc:
        raise setup_error(exc) from None
    names = [name for name, _, _ in work]
    if len(set(names)) != len(names):
        raise RunArgumentError("corpora", "{arg}: two corpora in folders of the same name (each tunes into "
                               "OUT/NAME/tune)")
    os.makedirs(out, exist_ok=True)
    options = TuneOptions(setting=setting, budget_minutes=budget, jobs=jobs, seed=seed, timeout=timeout)
    rows: List[Dict[str, Any]] = []
    seconds = int(round(budget * 60))
    for name, corpus, programs in work:
        with stage(seconds, f"room {name} ({setting})", "s") as bar:
            shown = [0]   # seconds of search the bar shows

            def tick(spent: float, _budget: float, status: str, shown: List[int] = shown) -> None:
                now = min(int(spent * 60), seconds)
                if now > shown[0]:
                    bar.update(now - shown[0], postfix=status)
                    shown[0] = now
            try:
                report = tune(corpus.root, os.path.join(out, name, "tune"), toolchain, options, tick=tick)
            except TuneError as exc:   # a damaged checkpoint, a failed link: this corpus's row says so
                # (a checkpoint of another tune names the folder, which is no flag of this command)
                why = exc.worded("").strip() if isinstance(exc, ArgumentError) else str(exc)
                warn(why)
                rows.append({"corpus": name, "program": "*", "setting": setting, "error": why})
                continue
        rows += room_rows(name, corpus, programs, report)
    summary: Dict[str, Any] = {"problem": PROBLEM.name, "setting": setting, "minutes": budget, "programs": rows}
    write_json_atomic(os.path.join(out, "room.json"), summary, indent=1)
    return summary


def room_rows(name: str, corpus: Corpus, programs: Sequence[Program], report: Dict[str, Any]
              ) -> List[Dict[str, Any]]:
    """A row per program from a tune's REPORT: -Oz's stored bytes, the best found,
    the room, its modules tuned and candidates tried."""
    modules = {r["module"]: r for r in report["modules"]}
    linked = {p["program"]: p for p in report["programs"]}
    groups = [(p.name, [m.name for m in p.members(corpus)]) for p in programs] or [(ALL_MODULES, list(modules))]
    rows = []
    for program, members in groups:
        if report["setting"] == "lto":   # the unit of the search is the program
            members = [program]
        ok = [modules[m] for m in members if modules.get(m, {}).get("ok")]
        if program in linked:
            oz, best = linked[program]["oz_stored"], linked[program]["stored"]
        else:
            oz, best = sum(r["oz_stored"] for r in ok), sum(r["stored"] for r in ok)
        rows.append({"corpus": name, "program": program, "setting": report["setting"], "oz": oz, "best": best,
                     "room_pct": round(100.0 * (best - oz) / oz, 3) if oz else None,
                     "tuned": sum(1 for r in ok if r["kept"]), "modules": len(members),
                     "tried": sum(r["tried"] for r in ok), "minutes": report["total"]["minutes"]})
    return rows
