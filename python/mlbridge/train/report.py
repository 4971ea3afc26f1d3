"""The report of a training run: a Markdown page with PNG plots (learning curve,
per-project and per-module .text change against -Oz) that a person reads instead
of history.jsonl."""
from __future__ import annotations

import math
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


def _plt() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def learning_curve(history: Sequence[Dict[str, Any]], path: str) -> Optional[str]:
    if not history:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    steps = [h["step"] for h in history]
    ax.plot(steps, [100 * h["reward"] for h in history], lw=0.8, alpha=0.6, label="batch reward (mean policy)")
    ev = [h for h in history if "train_total_reward" in h]
    if ev:
        ax.plot([h["step"] for h in ev], [100 * h["train_total_reward"] for h in ev], "o-", lw=1.5,
                label="whole training set, greedy")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel(".text reduction vs -Oz (%)")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def delta_bars(labels: Sequence[str], deltas_pct: Sequence[float], path: str, title: str,
               max_bars: int = 60, xlabel: str = ".text change vs -Oz (%)") -> Optional[str]:
    """Horizontal bars of a change per item (negative: smaller than -Oz, or
    better than XLABEL's baseline), sorted."""
    if not labels:
        return None
    plt = _plt()
    pairs = sorted(zip(deltas_pct, labels))
    if len(pairs) > max_bars:   # the best and the worst; the middle is in the table
        pairs = pairs[:max_bars // 2] + pairs[-max_bars // 2:]
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.22 * len(pairs) + 1)))
    vals = [p[0] for p in pairs]
    ax.barh(range(len(pairs)), vals, color=["tab:green" if v < 0 else "tab:red" for v in vals])
    ax.set_yticks(range(len(pairs)))
    ax.set_yticklabels([p[1][-40:] for p in pairs], fontsize=7)
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def project_rows(results: Dict[str, Dict[str, Dict[str, int]]]) -> List[Dict[str, Any]]:
    """results: project -> module -> {"oz": bytes, "policy": bytes} -> one row per project."""
    rows = []
    for proj, mods in results.items():
        ok = [m for m in mods.values() if m.get("policy") is not None and m.get("oz")]
        oz = sum(m["oz"] for m in ok)
        pol = sum(m["policy"] for m in ok)
        rows.append({"project": proj, "modules": len(mods), "measured": len(ok), "oz": oz, "policy": pol,
                     "delta_pct": 100.0 * (pol - oz) / oz if oz else 0.0,
                     "worse_modules": sum(m["policy"] > m["oz"] for m in ok)})
    return rows


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def history_problem(history: Sequence[Any]) -> Optional[str]:
    """Why rows read from history.jsonl cannot be reported, or None: the report
    plots ``step`` against ``reward`` (and ``train_total_reward`` where a row
    has it) and sums ``compiles`` and ``wall_s``."""
    for i, h in enumerate(history, 1):
        if not isinstance(h, dict):
            return f"line {i}: not a JSON object"
        for key in ("step", "reward"):
            if not _number(h.get(key)):
                return f"line {i}: {key!r} is {h.get(key)!r}, not a finite number"
        for key in ("train_total_reward", "wall_s", "compiles"):
            if key in h and not _number(h[key]):
                return f"line {i}: {key!r} is {h[key]!r}, not a finite number"
    return None


def write_report(out_dir: str, *, history: Sequence[Dict[str, Any]], summary: Dict[str, Any],
                 results: Optional[Dict[str, Dict[str, Dict[str, int]]]] = None,
                 splits: Optional[Dict[str, str]] = None, title: str = "Training report") -> str:
    """Writes OUT/report.md and its PNGs; returns the report's path. ``splits``
    names each project's role ("train" / "eval"). Every file is written under
    a temporary name and renamed once all are complete: a failure leaves the
    previous report as it was, and no partial file."""
    staged: List[Tuple[str, str]] = []

    def stage(name: str) -> str:
        tmp = os.path.join(out_dir, f".tmp-{os.getpid()}-{name}")   # keeps the extension: the plot's format
        staged.append((tmp, os.path.join(out_dir, name)))
        return tmp

    try:
        path = _write_report(stage, history=history, summary=summary, results=results, splits=splits, title=title)
        for tmp, final in staged:
            if os.path.exists(tmp):
                os.replace(tmp, final)
    except BaseException:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    return path


def _write_report(stage: Callable[[str], str], *, history: Sequence[Dict[str, Any]], summary: Dict[str, Any],
                  results: Optional[Dict[str, Dict[str, Dict[str, int]]]],
                  splits: Optional[Dict[str, str]], title: str) -> str:
    lines = [f"# {title}", ""]
    for k, v in summary.items():
        lines.append(f"- **{k}**: {v}")
    lines.append("")
    lc = learning_curve(history, stage("learning_curve.png"))
    if lc:
        lines += ["## Learning curve", "", "![learning curve](learning_curve.png)", ""]
    if results:
        rows = project_rows(results)
        lines += ["## Per project", "", "| project | split | modules | -Oz bytes | policy bytes | change | worse modules |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for r in rows:
            split = (splits or {}).get(r["project"], "")
            lines.append(f"| {r['project']} | {split} | {r['measured']}/{r['modules']} | {r['oz']:,} | "
                         f"{r['policy']:,} | {r['delta_pct']:+.2f} % | {r['worse_modules']} |")
        for split in sorted(set((splits or {}).values())) or [""]:
            sel = [r for r in rows if (splits or {}).get(r["project"], "") == split]
            oz, pol = sum(r["oz"] for r in sel), sum(r["policy"] for r in sel)
            if oz:
                lines.append(f"| **total {split}** | | | {oz:,} | {pol:,} | {100.0 * (pol - oz) / oz:+.2f} % | |")
        lines.append("")
        if delta_bars([r["project"] for r in rows], [r["delta_pct"] for r in rows],
                      stage("per_project.png"), ".text vs -Oz per project"):
            lines += ["![per project](per_project.png)", ""]
        mods = [(f"{p}/{m}", 100.0 * (v["policy"] - v["oz"]) / v["oz"]) for p, ms in results.items()
                for m, v in ms.items() if v.get("policy") is not None and v.get("oz")]
        if delta_bars([m for m, _ in mods], [d for _, d in mods], stage("per_module.png"),
                      ".text vs -Oz per module (best and worst)"):
            lines += ["## Per module", "", "![per module](per_module.png)", ""]
    tmp = stage("report.md")
    with open(tmp, "w") as f:
        f.write("\n".join(lines))
    return os.path.join(os.path.dirname(tmp), "report.md")
