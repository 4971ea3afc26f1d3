"""The recipe of ``mlbridge train report``: a run's report (report.py), with its
policy scored against -Oz on training and evaluation-only corpora. What stops it
before any compile (no policy yet, a damaged history, a corpus or a toolchain
that cannot be used) is a :class:`RunSetupError`."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..corpus.compile import CompileSetupError, Policy, Toolchain
from ..corpus.layout import Corpus, CorpusError, load
from ..problems import DEFAULT, Problem
from .stage import Stage, no_progress
from .report import write_report
from .run_folder import RunSetupError, checked_history, problem_for, setup_error


def load_corpora(paths: Sequence[str]) -> List[Corpus]:
    """The corpora at PATHS; a RunSetupError naming the first that cannot be read."""
    try:
        return [load(p) for p in paths]
    except CorpusError as exc:
        raise setup_error(exc) from None


def project_name(corpus: Corpus) -> str:
    return os.path.basename(os.path.normpath(corpus.root))


def report_run(run_dir: str, *, train: Sequence[str] = (), eval: Sequence[str] = (), clang: Optional[str] = None,
               plugin: Optional[str] = None, jobs: Optional[int] = None, stage: Stage = no_progress,
               problem: Union[str, Problem] = DEFAULT) -> str:
    """Writes RUN_DIR/report.md (history, and the PROBLEM policy's .text against
    -Oz on the corpora at TRAIN and EVAL); returns its path."""
    from ..corpus.evaluate import BaselineCache, default_cache_dir, evaluate
    found = problem_for(problem, "train report")
    model = os.path.join(run_dir, "policy.onnx")
    if not os.path.exists(model):
        raise RunSetupError(f"{run_dir}: no policy.onnx (has the run evaluated a policy yet?)")
    history = checked_history(run_dir)
    results: Dict[str, Dict[str, Dict[str, int]]] = {}
    splits: Dict[str, str] = {}
    corpora: List[Tuple[Corpus, str]] = ([(c, "train") for c in load_corpora(train)]
                                         + [(c, "eval") for c in load_corpora(eval)])
    if corpora:
        try:
            toolchain = Toolchain.find(clang, plugin, need_plugin=True)
        except CompileSetupError as exc:
            raise setup_error(exc) from None
        pol = Policy("onnx", model, model=os.path.abspath(model))
        with stage(sum(len(c) for c, _ in corpora), "scoring", "module") as bar:
            for c, split in corpora:
                ev = evaluate(c, pol, toolchain, jobs=jobs, cache=BaselineCache(default_cache_dir()),
                              on_done=lambda _: bar.update(1), problem=found)
                name = project_name(c)
                splits[name] = split
                results[name] = {s.module: {"oz": s.baseline.text_bytes, "policy": s.policy.text_bytes}
                                 for s in ev.scores if s.ok}
    summary: Dict[str, Any] = {"run": os.path.abspath(run_dir), "steps": len(history)}
    if history:
        summary["wall (s)"] = round(history[-1].get("wall_s", 0.0))
        summary["compiles"] = sum(h.get("compiles", 0) for h in history)
    return write_report(run_dir, history=history, summary=summary, results=results, splits=splits)
