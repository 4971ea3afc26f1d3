"""ES on a fitted flip model (issue 38, after learning from search):
``mlbridge train run --problem regalloc-eviction --init OUT/flip_model.json``
tunes the network's output layer (its hidden features stay as the fit learned
them; a linear model: every weight) on the real objective, the
register-allocation score of whole compiles, over the search's training modules
(``OUT/modules.json``: every training project, not one).

- **Fitness** of a candidate: the mean over projects of each project's total
  score change against stock llc-19's default advisor (``stock`` in the search's
  labels), negated (higher is better): every project counts the same, and
  within a project its hot modules count most, as in the goal's total. A module
  under which llc fails counts as twice its default score; when every candidate
  of a generation fails somewhere (llc itself is broken), the run stops in one
  line.
- **Modules**: the searched modules with at least one eviction question (of
  the corpora given: training-split ones only).
- **State**: ``RUN/state.json`` (train/es.py's state, the history, the start
  model), written atomically after every generation with the best model so far
  (``RUN/flip_model.json`` and ``.onnx``); a run resumes from it. A damaged
  state is one line.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from ...core.errors import MLBridgeError
from ...core.files import write_json_atomic
from ...train.es import ES
from .flip_model import FlipModel, FlipModelPolicy
from .search import labels_path, load_labels
from .trainer import FAILED_SCORE, check_not_all_failed, read_checkpoint, score_grid

FORMAT = "mlbridge-eviction-flip-es/1"


class FlipESError(MLBridgeError):
    """The run cannot start or go on (one line)."""


@dataclass
class FlipESConfig:
    pairs: int = 4
    sigma: float = 0.3
    lr: float = 0.3
    steps: int = 15
    budget_s: Optional[float] = None
    jobs: int = 2
    seed: int = 0
    timeout: float = 120.0


def head(model: FlipModel) -> slice:
    """The slice of the network's flat parameters ES tunes: the output layer."""
    net = model.net
    n_in = net.sizes[-2]
    return slice(net.dim - (n_in + 1), net.dim)


def with_head(model: FlipModel, theta: np.ndarray) -> FlipModel:
    p = model.net.params.copy()
    p[head(model)] = np.asarray(theta, np.float32)
    return FlipModel(model.net.with_params(p), model.max_margin)


def es_modules(search_out: str, projects: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
    """The rows of SEARCH_OUT/modules.json whose round-0 search asked at least one
    question, each with ``stock`` (its default score) and ``project``; only
    PROJECTS' (corpus folder names) when given, each of which must be there."""
    try:
        with open(os.path.join(search_out, "modules.json")) as f:
            rows = json.load(f)["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise FlipESError(f"{search_out}/modules.json: not a search run's module list ({exc})") from None
    out = []
    for r in rows:
        path = labels_path(os.path.join(search_out, "round-0"), r["module"])
        if not os.path.exists(path):
            continue
        res, _ = load_labels(path)
        if res.ok and res.questions > 0 and res.stock > 0:
            out.append(dict(r, stock=res.stock, project=r["module"].split("/", 1)[0]))
    if projects is not None:
        missing = sorted(set(projects) - {m["project"] for m in out})
        if missing:
            raise FlipESError(f"{search_out}: no searched module of {missing[0]} asks an eviction question "
                              "(give the corpora `train search` searched)")
        out = [m for m in out if m["project"] in set(projects)]
    if not out:
        raise FlipESError(f"{search_out}: no searched module with eviction questions")
    return out


def fitness(models: Sequence[FlipModel], modules: Sequence[Dict[str, Any]], *, problem: Any, llc: str, jobs: int,
            timeout: float) -> List[Dict[str, Any]]:
    """Per model: ``fitness`` (module docstring), ``change_pct`` per project,
    ``total`` and ``stock`` (summed scores), ``failed`` (modules) and
    ``failures`` ("MODULE: why" each)."""
    grid = score_grid([FlipModelPolicy(m) for m in models], modules, problem=problem, llc=llc, jobs=jobs,
                      timeout=timeout)
    out = []
    for vals in grid:
        per: Dict[str, List[float]] = {}
        for m, (v, _) in zip(modules, vals):
            s = per.setdefault(m["project"], [0.0, 0.0])
            s[0] += m["stock"] * FAILED_SCORE if v is None else v
            s[1] += m["stock"]
        change = {p: 100.0 * (a - b) / b for p, (a, b) in per.items()}
        out.append({"fitness": -float(np.mean(list(change.values()))), "change_pct": change,
                    "total": float(sum(a for a, _ in per.values())), "stock": float(sum(b for _, b in per.values())),
                    "failed": sum(1 for v, _ in vals if v is None),
                    "failures": [why for v, why in vals if v is None]})
    return out


def read_state(run: str) -> Optional[Dict[str, Any]]:
    """RUN/state.json, or None when there is none; FlipESError when it is damaged
    (its start model too: ES's parameters are that model's output layer)."""
    return read_checkpoint(run, FORMAT, lambda st: FlipModel.from_dict(st["start"]), FlipESError)


def train_flip_es(run: str, search_out: str, start: FlipModel, cfg: FlipESConfig, *, problem: Any, llc: str,
                  projects: Optional[Sequence[str]] = None, note: Callable[[str], None] = lambda s: None,
                  on_step: Callable[[Dict[str, Any]], None] = lambda r: None) -> Dict[str, Any]:
    """Runs (or resumes) ES from START (module docstring); returns the summary."""
    os.makedirs(run, exist_ok=True)
    modules = es_modules(search_out, projects)
    st = read_state(run)
    if st is None:
        es = ES(start.net.params[head(start)].astype(np.float64), pairs=cfg.pairs, sigma=cfg.sigma, lr=cfg.lr,
                seed=cfg.seed, optimizer="sgd")
        f0 = fitness([start], modules, problem=problem, llc=llc, jobs=cfg.jobs, timeout=cfg.timeout)[0]
        es.best, es.best_f = es.mean.copy(), f0["fitness"]
        st = {"format": FORMAT, "config": asdict(cfg), "start": start.as_dict(), "start_fitness": f0,
              "modules": [m["module"] for m in modules], "history": []}
        note(f"start on {len(modules)} training modules of {len(f0['change_pct'])} projects: mean project change "
             f"{-f0['fitness']:+.3f}% against the default advisor")
    else:
        es = ES.from_state(st["es"])
        start = FlipModel.from_dict(st["start"])
        note(f"resuming {run} at step {es.generation}")
    _write(run, es, start, st)
    t0 = time.monotonic()
    while es.generation < cfg.steps:
        if cfg.budget_s is not None and time.monotonic() - t0 >= cfg.budget_s:
            break
        cands = es.ask()
        res = fitness([with_head(start, c) for c in cands], modules, problem=problem, llc=llc, jobs=cfg.jobs,
                      timeout=cfg.timeout)
        # llc itself broken: ES must not go on ranking failures
        check_not_all_failed([r["failures"] for r in res], FlipESError)
        rec = es.tell([r["fitness"] for r in res])
        rec.update(mean_change_pct=res[0]["change_pct"], failed=sum(r["failed"] for r in res),
                   elapsed_s=time.monotonic() - t0)
        st["history"].append(rec)
        _write(run, es, start, st)
        on_step(rec)
    return {"run": os.path.abspath(run), "steps": es.generation, "modules": len(modules),
            "start_fitness": st["start_fitness"]["fitness"], "best_fitness": es.best_f,
            "policy": os.path.join(os.path.abspath(run), "flip_model.json")}


def _write(run: str, es: ES, start: FlipModel, st: Dict[str, Any]) -> None:
    best = with_head(start, es.best)
    best.save(os.path.join(run, "flip_model.json"))
    best.export_onnx(os.path.join(run, "flip_model.onnx"))
    write_json_atomic(os.path.join(run, "state.json"), dict(st, es=es.state_dict(), best_fitness=es.best_f), indent=1)
