"""The recipe of ``mlbridge train search``: learning from search. Per module, a
greedy search over flips of the decisions taken (``search.py``); then one
policy fitted to the decisions that made each module smallest, among this run
and earlier ones (``data``); then, unless told not to, the policy scored on the
training modules. Writes RUN/policy.json, RUN/policy.onnx and RUN/summary.json.

Everything that stops the recipe before the search is a :class:`RunSetupError`;
progress is reported through ``stage`` (recipe.py), so the library prints nothing."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ...corpus.compile import CompileSetupError, Policy, Toolchain
from ...corpus.layout import Corpus
from .. import DEFAULT, Problem
from ...train.imitation import fit_imitation
from ...train.policy import MLPPolicy
from ...train.stage import Stage, no_progress
from ...train.run_folder import RunArgumentError, RunSetupError, load_policy_file, problem_for, setup_error
from .search import ModuleSearch, SearchConfig, best_searches, run_search, search_dataset
from .size_trainer import corpus_modules


def learn_from_search(out: str, corpora: Sequence[Corpus], cfg: SearchConfig, *, hidden: Tuple[int, ...] = (16,),
                      clang: Optional[str] = None, plugin: Optional[str] = None, data: Sequence[str] = (),
                      flip_weight: float = 10.0, tested_weight: float = 2.0, epochs: int = 600,
                      score: bool = True, stage: Stage = no_progress,
                      problem: Union[str, Problem] = DEFAULT) -> Dict[str, Any]:
    """Searches the modules of CORPORA into run folder OUT, fits a PROBLEM policy to the
    best decisions found (in OUT and the earlier search folders DATA) and returns
    the summary (also RUN/summary.json); ``score``: the policy's .text against
    -Oz on the training modules too."""
    found = problem_for(problem, "train search")
    for argument, path in (("propose", cfg.propose), ("around", cfg.around)):
        if path:
            load_policy_file(path, argument, found)   # the checks a run's init gets
    try:
        toolchain = Toolchain.find(clang, plugin, need_plugin=True)
    except CompileSetupError as exc:
        raise setup_error(exc) from None
    modules = corpus_modules(corpora)
    for d in data:
        if not os.path.isdir(os.path.join(d, "search")):
            raise RunArgumentError("data", f"{{arg}} {d}: not a search folder (no search/ inside)")
    with stage(len(modules), "flip search", "module") as bar:
        gained = [0, 0]

        def done(r: ModuleSearch) -> None:
            if r.ok:
                gained[0] += r.oz
                gained[1] += r.oz - r.best
            bar.update(1, postfix=f"{100 * gained[1] / max(1, gained[0]):.2f}% smaller")
        results = run_search(out, modules, toolchain, cfg, on_done=done)
    ok = [r for r in results if r.ok]
    # with data: per module the smallest of all searches, as learned from
    kept = best_searches([*data, out], modules)
    oz, best = sum(r.oz for r in kept), sum(r.best for r in kept)
    summary: Dict[str, Any] = {
        "modules": len(modules), "searched": len(results), "failed": len(results) - len(ok),
        "compiles": sum(r.tried + 1 for r in results), "search_seconds": round(sum(r.seconds for r in results), 1),
        "kept_flips": sum(len(r.flips) for r in kept), "searched_oz": oz, "searched_best": best,
        "search_gain": (oz - best) / oz if oz else 0.0}
    x, y, w, stock = search_dataset([*data, out], modules, flip_weight=flip_weight, tested_weight=tested_weight)
    if len(y) == 0:
        raise RunSetupError("the search logged no inlining decision to learn from")
    pol = MLPPolicy(found.feature_names, hidden, seed=cfg.seed)
    fit = fit_imitation(pol, x, y, weights=w, epochs=epochs)
    flipped = y != stock
    summary.update(fit_accuracy=fit["accuracy"], decisions=int(len(y)), flipped_decisions=int(flipped.sum()),
                   flips_reproduced=float(np.mean((pol.scores(pol.inputs(x[flipped])) > 0) == (y[flipped] > 0)))
                   if flipped.any() else None)
    pol.save(os.path.join(out, "policy.json"))
    pol.export_onnx(os.path.join(out, "policy.onnx"))
    summary["policy"] = os.path.join(out, "policy.onnx")
    if score:
        from ...corpus.evaluate import BaselineCache, default_cache_dir, evaluate
        model = os.path.abspath(summary["policy"])
        oz_total = pol_total = failures = 0
        for c in corpora:
            t = evaluate(c, Policy("onnx", model, model=model), toolchain, jobs=cfg.jobs or None,
                         cache=BaselineCache(default_cache_dir()), problem=found).totals()
            oz_total, pol_total, failures = oz_total + t["oz_text"], pol_total + t["policy_text"], failures + t["failed"]
        summary.update(train_total_reward=found.reward(oz_total, pol_total),
                       train_failures=failures)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    return summary
