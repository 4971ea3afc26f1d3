"""``mlbridge train orders``: the stages in turn, each resumable from OUT.

    OUT/candidates.json   the tunes' winning orders (an order policy file with tries 0,
                          which the plugin's measure mode reads)
    OUT/labels.jsonl      per training module: features, -Oz's and every candidate's sizes
    OUT/policy/order_policy.json (+ ranker.onnx)   what clang applies
    OUT/report.json, report.md   leave-one-project-out figures: how the choice generalizes

The choice between a fixed coreset (the first `tries` orders of the greedy list
for every module) and a ranker (the `tries` of the coreset it ranks best for the
module) is made on the leave-one-project-out figures of the training projects:
each project in turn is held out, the coreset and ranker are built on the others
and scored on it. The evaluation projects play no part."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ....core.errors import ArgumentError, MLBridgeError
from ....core.files import replace_when_complete, write_json_atomic, write_text_atomic
from ....corpus.compile import Toolchain
from ....corpus.layout import CorpusError, load
from ..order_policy import OrderPolicyError, OrderPolicyFile
from . import candidates as cand
from .coreset import greedy, oracle, project_weights, ratio_matrix, score
from .labels import ModuleLabels, measure_corpora
from .ranker import Ranker
from ....tune.actions import stable_pipeline

POLICY_DIR = "policy"
POLICY_FILE = "order_policy.json"
RANKER_FILE = "ranker.onnx"


class OrdersSetupError(ArgumentError):
    """`train orders` refused because of one argument (the message is one line)."""


@dataclass
class OrdersConfig:
    tries: int = 3
    max_orders: int = 48
    coreset: int = 16
    jobs: int = 0
    timeout: float = 600.0
    seed: int = 0
    #: "auto": whichever the leave-one-project-out figures favour; "fixed"; "ranker"
    choose: str = "auto"


def _projects(corpora: Sequence[str]) -> List[Tuple[str, Any]]:
    evals = cand.evaluation_projects()
    out = []
    for path in corpora:
        name = cand.project_of(path)
        if name in evals:
            raise OrdersSetupError("corpora", f"{{arg}} {path}: {name} is an evaluation-split project: "
                                   "train on training projects only")
        try:
            out.append((name, load(path)))
        except CorpusError as exc:
            raise OrdersSetupError("corpora", f"{{arg}} {exc}") from None
    if len({n for n, _ in out}) != len(out):
        raise OrdersSetupError("corpora", "{arg}: two corpora with the same folder name")
    return out


def _candidates(out: str, tunes: Sequence[str], cfg: OrdersConfig, llvm_major: int) -> OrderPolicyFile:
    path = os.path.join(out, "candidates.json")
    if os.path.exists(path):
        try:
            return OrderPolicyFile.load(path)
        except OrderPolicyError as exc:
            raise MLBridgeError(f"{exc} (remove it to start again)") from None
    if not tunes:
        raise OrdersSetupError("tunes", "{arg}: give at least one `mlbridge tune` folder of a training project")
    found = cand.from_tunes(tunes, cfg.max_orders)
    pol = OrderPolicyFile(llvm_major, [c.pipeline for c in found], 0, names=[c.names for c in found],
                          about={"origins": [c.origin for c in found], "gains": [round(c.gain, 5) for c in found],
                                 "saved": [c.saved for c in found],
                                 "tunes": [os.path.abspath(t) for t in tunes]})
    pol.write(path)
    return pol


def _cv(rows: Sequence[ModuleLabels], ratios: np.ndarray, feats: np.ndarray, cfg: OrdersConfig
        ) -> Dict[str, Any]:
    """Leave one project out: per held-out project, the geomean ratio of the fixed
    coreset, the ranker, the coreset's oracle and the oracle of all candidates."""
    projects = sorted({r.corpus for r in rows})
    per: Dict[str, Dict[str, float]] = {}
    curve_fixed: Dict[int, List[float]] = {}
    for p in projects:
        held = np.array([r.corpus == p for r in rows])
        tr = ~held
        if not held.any() or not tr.any():
            continue
        wt = project_weights([r for r, t in zip(rows, tr) if t])
        g = greedy(ratios[tr], wt, cfg.coreset)
        wh = np.full(int(held.sum()), 1.0 / held.sum())
        fig = {"modules": int(held.sum()),
               "fixed": score(ratios[held], np.array(g[:cfg.tries], int), wh),
               "coreset_oracle": score(ratios[held], np.array(g, int), wh),
               "oracle": oracle(ratios[held], wh)}
        for k in range(0, min(len(g), 8) + 1):
            curve_fixed.setdefault(k, []).append(score(ratios[held], np.array(g[:k], int), wh))
        if len(g) > cfg.tries:
            rk = Ranker(len(g), seed=cfg.seed)
            rk.fit(feats[tr], ratios[tr][:, g], wt)
            top = np.array(g, int)[rk.top(feats[held], cfg.tries)]
            fig["ranker"] = score(ratios[held], top, wh)
        else:
            fig["ranker"] = fig["fixed"]
        per[p] = fig

    def gm(key: str) -> float:
        return float(np.exp(np.mean([np.log(f[key]) for f in per.values()]))) if per else 1.0
    return {"per_project": per, "fixed": gm("fixed"), "ranker": gm("ranker"),
            "coreset_oracle": gm("coreset_oracle"), "oracle": gm("oracle"),
            "fixed_by_tries": {str(k): float(np.exp(np.mean(np.log(v)))) for k, v in sorted(curve_fixed.items())}}


def train_orders(out: str, corpora: Sequence[str], tunes: Sequence[str], toolchain: Toolchain,
                 cfg: Optional[OrdersConfig] = None, *, llvm_major: int,
                 stage: Optional[Callable[[Optional[int], str, str], Any]] = None,
                 note: Callable[[str], None] = lambda _s: None) -> Dict[str, Any]:
    cfg = cfg or OrdersConfig()
    if cfg.tries < 1 or cfg.coreset < cfg.tries or cfg.max_orders < cfg.coreset:
        raise OrdersSetupError("tries", "{arg}: need 1 <= --tries <= --coreset <= --max-orders")
    if cfg.choose not in ("auto", "fixed", "ranker"):
        raise OrdersSetupError("choose", "{arg}: auto, fixed or ranker")
    projects = _projects(corpora)
    os.makedirs(out, exist_ok=True)
    cands = _candidates(out, tunes, cfg, llvm_major)
    n = len(cands.orders)
    total = sum(len(c.modules) for _, c in projects)
    jobs = cfg.jobs or os.cpu_count() or 1
    note(f"{n} candidate orders; measuring {total} modules of {len(projects)} projects ({jobs} at a time)")
    names = {name for name, _ in projects}
    bar = stage(total, "measure", "modules") if stage else None
    try:
        rows = measure_corpora(os.path.join(out, "labels.jsonl"), projects, os.path.join(out, "candidates.json"),
                               n, toolchain, jobs=jobs, timeout=cfg.timeout,
                               progress=(lambda k, name: bar.update(k, postfix=name)) if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    failed = [r for r in rows if r.corpus in names and r.error]
    rows = [r for r in rows if r.corpus in names and not r.error and r.oz and r.oz[0] > 0]
    if not rows:
        raise MLBridgeError("no module could be measured" + (f" (first error: {failed[0].error})" if failed else ""))
    ratios = ratio_matrix(rows)
    feats = np.array([r.features for r in rows], np.float64)
    # an order that does not give the same bytes twice is never chosen (candidates
    # files written before the tuner knew it may hold one)
    usable = np.array([stable_pipeline(o) for o in cands.orders])
    if not usable.any():
        raise MLBridgeError("no candidate order gives the same bytes twice")
    ratios[:, ~usable] = np.inf
    cv = _cv(rows, ratios, feats, cfg)
    kind = cfg.choose if cfg.choose != "auto" else ("ranker" if cv["ranker"] < cv["fixed"] - 0.001 else "fixed")
    w = project_weights(rows)
    g = greedy(ratios, w, cfg.coreset)
    pdir = os.path.join(out, POLICY_DIR)
    os.makedirs(pdir, exist_ok=True)
    model = None
    if kind == "ranker" and len(g) > cfg.tries:
        rk = Ranker(len(g), seed=cfg.seed)
        rk.fit(feats, ratios[:, g], w)
        replace_when_complete(os.path.join(pdir, RANKER_FILE + ".tmp"), os.path.join(pdir, RANKER_FILE),
                              rk.export_onnx)
        model = RANKER_FILE
    else:
        kind = "fixed"
        g = g[:max(cfg.tries, 1)] if g else [0]
    tries = min(cfg.tries, len(g))
    policy = OrderPolicyFile(llvm_major, [cands.orders[j] for j in g], tries, model,
                             names=[cands.names[j] for j in g] if cands.names else [],
                             about={"kind": kind, "trained_on": sorted(names),
                                    "train_geomean": score(ratios, np.array(g[:tries], int), w)})
    policy_path = policy.write(os.path.join(pdir, POLICY_FILE))
    summary = {"policy": policy_path, "kind": kind, "tries": tries, "orders": len(g), "candidates": n,
               "modules": len(rows), "failed_modules": len(failed), "projects": sorted(names), "cv": cv,
               "train_geomean": policy.about["train_geomean"], "train_oracle": oracle(ratios, w)}
    write_json_atomic(os.path.join(out, "report.json"), summary, indent=1, newline=True)
    write_text_atomic(os.path.join(out, "report.md"), _report_md(summary))
    return summary


def _pct(r: float) -> str:
    return f"{100 * (r - 1):+.2f} %"


def _report_md(s: Dict[str, Any]) -> str:
    cv = s["cv"]
    lines = [f"# Order policy: {s['kind']}, {s['tries']} tries per module", "",
             f"{s['modules']} training modules of {len(s['projects'])} projects ({', '.join(s['projects'])}), "
             f"{s['candidates']} candidate orders; {s['failed_modules']} modules could not be measured.", "",
             "Stored bytes against clang -Oz, geomean over modules (projects weighted equally); "
             "each project held out in turn (coreset and ranker built on the others):", "",
             "| held-out project | modules | fixed coreset | ranker | coreset, every order | every candidate |",
             "|---|---:|---:|---:|---:|---:|"]
    for p, f in sorted(cv["per_project"].items()):
        lines.append(f"| {p} | {f['modules']} | {_pct(f['fixed'])} | {_pct(f['ranker'])} | "
                     f"{_pct(f['coreset_oracle'])} | {_pct(f['oracle'])} |")
    lines += [f"| **all** | | **{_pct(cv['fixed'])}** | **{_pct(cv['ranker'])}** | {_pct(cv['coreset_oracle'])} | "
              f"{_pct(cv['oracle'])} |", "",
              "Fixed coreset by orders tried (held-out geomean): " +
              ", ".join(f"{k}: {_pct(v)}" for k, v in cv["fixed_by_tries"].items()), "",
              f"On the training modules themselves: {_pct(s['train_geomean'])} "
              f"(every candidate: {_pct(s['train_oracle'])}).", "", f"Policy: `{s['policy']}`", ""]
    return "\n".join(lines)
