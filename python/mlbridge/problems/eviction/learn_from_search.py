"""Learning an eviction policy from search, in rounds (issue 38):
``mlbridge train search --problem regalloc-eviction CORPUS... -o OUT``.

1. **Modules** (``OUT/modules.json``, ``OUT/ir/``): up to ``per_project``
   modules of every training-split corpus (a fixed sample by name and seed, so
   that every project counts, not the largest one), each optimized once to IR
   by its recorded clang-19 command (trainer.make_module_ir).
2. **Search** (``OUT/round-K/search/*.npz``): search.run_search on every module,
   round 0 around the exact default advisor, round K > 0 around round K-1's
   fitted flip model (DAgger: the states the learned policy visits, labelled by
   flipping its own answers). Resumable: a searched module is kept.
3. **Fit** (:func:`fit_flip_model`, ``OUT/round-K/flip_model.json``): every
   single flip of every round so far is one example: its question's features
   (flip_model.question_features), the label "the runner-up is better" (the
   flip lowered the score and took the runner-up, or raised it and took it
   back), weighted by how much the score moved (in % of the module's score)
   plus ``floor`` (a flip that changed nothing still says: keep the default).
   train/imitation.py's fit (weighted logistic loss, Adam); then the output
   bias is set (``calibrate``) so that the model flips the share of examples
   that lowered the summed score most *out of fold*: judged by models fitted
   without the example's project, i.e. what carries to code not trained on.
   When no share helps there, the model flips nothing and is the default.
   ``round-K/flip_model_in_sample.json`` is the same fit with the share judged
   on its own examples: ES's start (flip_es.py), which then judges its flips on
   whole compiles of the training modules.
"""
from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ...core.errors import MLBridgeError
from ...core.files import write_json_atomic
from ...train.imitation import fit_imitation
from .flip_model import QUESTION, FlipModel, question_rows, untrained
from .search import NO_ALTERNATIVE, EvictionSearchConfig, load_labels, run_search
from .trainer import made_modules, make_module_ir, refuse_eval_split


class LearnFromSearchError(MLBridgeError):
    """The run cannot start or go on (one line)."""


def sample_modules(corpus: Any, per_project: int, seed: int = 0) -> List[Any]:
    """Up to PER_PROJECT of CORPUS's modules: a fixed pseudo-random sample (by
    module name and SEED, not by anything measured), in name order."""
    mods = sorted(corpus.modules, key=lambda m: m.name)
    key = [zlib.crc32(f"{seed}:{m.name}".encode()) for m in mods]
    keep = sorted(np.argsort(key, kind="stable")[:max(0, per_project)].tolist())
    return [mods[i] for i in keep]


def prepare_rows(out: str, corpora: Sequence[Any], *, per_project: int, seed: int, toolchain: Any, problem: Any,
                 jobs: int = 2, timeout: float = 120.0,
                 note: Callable[[str], None] = lambda s: None) -> List[Dict[str, Any]]:
    """OUT/modules.json (made once): ``{"module", "corpus", "ir", "recorded"}`` per
    sampled module whose IR clang could make."""
    import concurrent.futures as cf
    path = os.path.join(out, "modules.json")
    made = made_modules(path, "rows", lambda d: d.get("per_project") == per_project)
    if made is not None:
        return made
    refuse_eval_split(corpora, LearnFromSearchError)
    ir_dir = os.path.join(out, "ir")
    os.makedirs(ir_dir, exist_ok=True)
    items = [(c, m) for c in corpora for m in sample_modules(c, per_project, seed)]

    def one(item: Tuple[Any, Any]) -> Optional[Dict[str, Any]]:
        corpus, module = item
        name = f"{os.path.basename(os.path.normpath(corpus.root))}/{module.name}"
        # named by the module, not its place in the sample: a larger sample reuses what was made
        ir = os.path.join(ir_dir, f"{zlib.crc32(name.encode()):08x}.{os.path.basename(module.name)[:40]}.bc")
        recorded = make_module_ir(ir, module, toolchain=toolchain, problem=problem, timeout=timeout)
        if recorded is None:
            note(f"skipped {module.name}: clang failed making its IR")
            return None
        return {"module": name, "corpus": corpus.root, "ir": ir, "recorded": recorded}

    with cf.ThreadPoolExecutor(max(1, jobs)) as pool:
        rows = [r for r in pool.map(one, items) if r is not None]
    if not rows:
        raise LearnFromSearchError("no training module could be made into IR")
    write_json_atomic(path, {"per_project": per_project, "seed": seed, "rows": rows}, indent=1)
    return rows


def round_dir(out: str, k: int) -> str:
    return os.path.join(out, f"round-{k}")


def search_round(out: str, k: int, rows: Sequence[Dict[str, Any]], *, llc: str, cfg: EvictionSearchConfig,
                 on_done: Callable[[Any], None] = lambda r: None, deadline: Optional[float] = None) -> List[Any]:
    """Round K's search: around the default (K 0) or round K-1's flip model."""
    base = None
    if k > 0:
        prev = os.path.join(round_dir(out, k - 1), "flip_model.json")
        if not os.path.exists(prev):
            raise LearnFromSearchError(f"{prev}: round {k - 1} has no fitted model yet; fit it first")
        base = FlipModel.load(prev)
    return run_search(round_dir(out, k), rows, llc=llc, cfg=cfg, base=base, on_done=on_done, deadline=deadline)


# -- examples ---------------------------------------------------------------------------

@dataclass
class Examples:
    x: np.ndarray        # [n, len(QUESTION)] question features
    y: np.ndarray        # [n] 1: the runner-up is the better answer
    delta: np.ndarray    # [n] the flip's score change, % of the module's start score (negative: lower)
    flipped_to_alt: np.ndarray   # [n] the flip took the runner-up (not back to the default's answer)
    margin: np.ndarray   # [n]
    module: np.ndarray   # [n] module index (into ``modules``)
    modules: List[str]

    def __len__(self) -> int:
        return len(self.y)


def examples(label_dirs: Sequence[str]) -> Examples:
    """Every single flip of every labels file under LABEL_DIRS (each a round's
    folder): one example each (module docstring). A damaged file stops it
    (search.EvictionSearchError)."""
    xs, ys, ds, ts, ms, mods, names = [], [], [], [], [], [], []
    for d in label_dirs:
        sd = os.path.join(d, "search")
        if not os.path.isdir(sd):
            continue
        for fn in sorted(os.listdir(sd)):
            if not fn.endswith(".npz"):
                continue
            res, t = load_labels(os.path.join(sd, fn))
            pairs = [(int(i), s) for i, s in res.singles if s is not None and int(i) < len(t)]
            if not res.ok or res.start <= 0 or not pairs:
                continue
            idx = np.array([i for i, _ in pairs])
            ok = t.runner_up[idx] != NO_ALTERNATIVE
            idx = idx[ok]
            score = np.array([s for _, s in pairs], np.float64)[ok]
            if not len(idx):
                continue
            took_alt = t.answer[idx] == t.runner_up[idx]       # the start policy's answer there
            delta = 100.0 * (score - res.start) / res.start
            better = delta < 0
            xs.append(question_rows({n: t.obs[n][idx] for n in t.obs}, t.default[idx], t.runner_up[idx],
                                    t.margin[idx], t.progress[idx]))
            ys.append(np.where(better, ~took_alt, took_alt))
            ds.append(delta)
            ts.append(~took_alt)
            ms.append(t.margin[idx])
            mods.append(np.full(len(idx), len(names)))
            names.append(res.module)
    if not xs:
        return Examples(np.zeros((0, len(QUESTION)), np.float32), np.zeros(0, bool), np.zeros(0), np.zeros(0, bool),
                        np.zeros(0), np.zeros(0, np.int64), [])
    return Examples(np.concatenate(xs), np.concatenate(ys), np.concatenate(ds), np.concatenate(ts),
                    np.concatenate(ms), np.concatenate(mods), names)


def _fit(ex: "Examples", sel: np.ndarray, hidden: Sequence[int], epochs: int, floor: float, lr: float, l2: float,
         seed: int) -> Tuple[Any, Dict[str, float]]:
    net = untrained(tuple(hidden), seed)
    info = fit_imitation(net, ex.x[sel], ex.y[sel].astype(np.float32), epochs=epochs, lr=lr, l2=l2,
                         weights=floor + np.abs(ex.delta[sel]))
    return net, info


class FlipFit(NamedTuple):
    """What fit_flip_model gives: the model calibrated out of fold, the fit's
    figures, and the same fit calibrated on its own examples (ES's start)."""
    model: FlipModel
    info: Dict[str, float]
    in_sample: FlipModel


def fit_flip_model(ex: Examples, *, hidden: Sequence[int] = (8,), epochs: int = 600, floor: float = 0.01,
                   lr: float = 1e-2, l2: float = 1e-3, seed: int = 0) -> FlipFit:
    """A flip model fitted to EX (module docstring), then calibrated on scores
    out of fold by project (``calibrate``)."""
    if not len(ex):
        raise LearnFromSearchError("no labelled flips to learn from: search some modules first")
    projects = np.array([ex.modules[i].split("/", 1)[0] for i in ex.module])
    oof = np.zeros(len(ex))
    names = np.unique(projects)
    for p in names if len(names) > 1 else []:
        net, _ = _fit(ex, projects != p, hidden, epochs, floor, lr, l2, seed)
        oof[projects == p] = net.scores(net.inputs(ex.x[projects == p]))
    net, info = _fit(ex, np.ones(len(ex), bool), hidden, epochs, floor, lr, l2, seed)
    max_margin = float(np.max(ex.margin[np.isfinite(ex.margin)]))
    model = FlipModel(net, max_margin)
    # the same fit calibrated on its own scores: what the labels say about the
    # training modules themselves (ES's start, which judges it on whole compiles)
    in_sample = FlipModel(net.with_params(net.params.copy()), max_margin)
    info.update({f"in_sample_{k}": v for k, v in calibrate(in_sample, ex).items()})
    info.update(calibrate(model, ex, oof if len(names) > 1 else None))
    return FlipFit(model, info, in_sample)


def _best_count(scores: np.ndarray, gain: np.ndarray) -> int:
    """How many of the top-scored examples to flip for the lowest summed change (0: none)."""
    order = np.argsort(-scores, kind="stable")
    csum = np.concatenate([[0.0], np.cumsum(gain[order])])
    return int(np.argmin(csum))


def calibrate(model: FlipModel, ex: Examples, oof: Optional[np.ndarray] = None) -> Dict[str, float]:
    """Sets the network's output bias so that it flips the share of examples
    that lowers their summed score change most, that share judged on OOF (the
    scores of models fitted without each example's project: what carries to
    unseen code) when given, else on the model's own scores. A share of 0
    flips nothing: the model is then the default advisor."""
    s = model.net.scores(model.net.inputs(ex.x)).astype(np.float64)
    gain = np.where(ex.y, -np.abs(ex.delta), np.abs(ex.delta))   # the change of taking the runner-up
    k = _best_count(s if oof is None else oof, gain)
    order = np.argsort(-s, kind="stable")
    if k == 0:
        shift = -(float(s.max()) + 1.0)
    else:   # just below the k-th score, above the next
        lo = s[order[k]] if k < len(s) else s[order[k - 1]] - 1.0
        shift = -(s[order[k - 1]] + lo) / 2.0
    model.net.params[-1] = np.float32(model.net.params[-1] + shift)
    flips = model.net.scores(model.net.inputs(ex.x)) > 0
    out = {"bias_shift": float(shift), "flipped": float(flips.sum()),
           "examples_change_pct": float(gain[flips].sum())}
    if oof is not None:
        f = np.argsort(-oof, kind="stable")[:k]
        out["oof_flipped"], out["oof_change_pct"] = float(k), float(gain[f].sum())
    return out


# -- the whole run --------------------------------------------------------------------------

@dataclass
class LearnConfig:
    rounds: int = 2            # round 0 around the default, then DAgger rounds around each fit
    per_project: int = 8       # modules sampled per training corpus
    seed: int = 0
    hidden: Tuple[int, ...] = (8,)
    epochs: int = 600
    floor: float = 0.01        # an example's weight besides its score change (%)
    budget_s: Optional[float] = None   # no module starts after this long (resumable)


def learn_eviction(out: str, corpora: Sequence[Any], cfg: LearnConfig, search: EvictionSearchConfig, *,
                   toolchain: Any, problem: Any, note: Callable[[str], None] = lambda s: None,
                   on_module: Callable[[Any], None] = lambda r: None) -> Dict[str, Any]:
    """Runs (or resumes) the rounds of the module docstring; returns the summary
    (also ``OUT/summary.json``). The newest complete round's model is
    ``OUT/flip_model.json`` and ``OUT/flip_model.onnx``."""
    import time
    os.makedirs(out, exist_ok=True)
    deadline = None if cfg.budget_s is None else time.monotonic() + cfg.budget_s
    rows = prepare_rows(out, corpora, per_project=cfg.per_project, seed=cfg.seed, toolchain=toolchain,
                        problem=problem, jobs=search.jobs, timeout=search.timeout, note=note)
    note(f"{len(rows)} training modules from {len(corpora)} corpora ({out}/modules.json)")
    summary: Dict[str, Any] = {"out": os.path.abspath(out), "modules": len(rows), "rounds": []}
    for k in range(cfg.rounds):
        results = search_round(out, k, rows, llc=str(toolchain.llc), cfg=search, on_done=on_module,
                               deadline=deadline)
        ok = [r for r in results if r.ok]
        start, best = sum(r.start for r in ok), sum(r.best for r in ok)
        rec: Dict[str, Any] = {"round": k, "searched": len(results), "failed": len(results) - len(ok),
                               "compiles": sum(r.compiles for r in results), "start_total": start,
                               "best_total": best, "stock_total": sum(r.stock for r in ok)}
        summary["rounds"].append(rec)
        if len(results) < len(rows):
            note(f"round {k}: {len(results)} of {len(rows)} modules searched; run again to go on")
            summary["complete"] = False
            break
        ex = examples([round_dir(out, j) for j in range(k + 1)])
        model, info, in_sample = fit_flip_model(ex, hidden=cfg.hidden, epochs=cfg.epochs, floor=cfg.floor,
                                                seed=cfg.seed)
        in_sample.save(os.path.join(round_dir(out, k), "flip_model_in_sample.json"))
        for d in (round_dir(out, k), out):   # the round's, and the newest one's at the top (each written whole)
            model.save(os.path.join(d, "flip_model.json"))
            model.export_onnx(os.path.join(d, "flip_model.onnx"))
        rec.update(examples=len(ex), positive=int(ex.y.sum()), **{f"fit_{a}": b for a, b in info.items()})
        note(f"round {k}: {len(results)} modules, search {100 * (best - start) / max(start, 1e-9):+.3f}% score; "
             f"fit on {len(ex)} flips ({int(ex.y.sum())} runner-ups better): accuracy "
             f"{100 * info['accuracy']:.1f}%, flips {int(info['flipped'])}")
        summary["complete"] = k == cfg.rounds - 1
    summary["policy"] = os.path.join(os.path.abspath(out), "flip_model.json")
    write_json_atomic(os.path.join(out, "summary.json"), summary, indent=1)
    return summary
