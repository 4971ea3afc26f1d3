"""The files a scoring writes besides its JSON (``Evaluation.as_dict()``): one CSV
row per module or program, and a PNG of the per-module change against -Oz in the
evaluation's unit (.text bytes, or a problem's own: phase ordering's stored bytes)
(``mlbridge corpus evaluate --csv``, ``--plot``)."""
from __future__ import annotations

import csv
import os
from typing import Any, Dict

CSV_FIELDS = ["module", "ok", "oz_text", "policy_text", "delta", "delta_pct", "oz_seconds", "policy_seconds",
              "decisions", "oz_cached", "error", "command"]


def write_csv(path: str, data: Dict[str, Any]) -> None:
    """One row per module (program) of an evaluation's JSON DATA, its errors and commands joined."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for m in data["modules"]:
            row = dict(m)
            errs = m.get("errors") or []
            row["error"] = "; ".join(f"{e['run']}: {e['error']}" for e in errs)
            row["command"] = " ;; ".join(e["command"] for e in errs)
            w.writerow(row)


def plot_deltas(path: str, data: Dict[str, Any]) -> None:
    """Per-module change against -Oz (percent), sorted; failed modules are left out.
    In DATA's unit: .text bytes (the inliner's evaluation, which has no "unit"), or
    the problem's ("unit", its totals baseline_score and policy_score: stored bytes)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = sorted((m for m in data["modules"] if m["ok"] and m["delta_pct"] is not None),
                key=lambda m: m["delta_pct"])
    vals = [m["delta_pct"] for m in ok]
    t = data["total"]
    fig, ax = plt.subplots(figsize=(max(6.0, min(16.0, 0.25 * len(vals) + 4)), 4.5))
    colors = ["tab:green" if v < 0 else "tab:red" if v > 0 else "tab:gray" for v in vals]
    ax.bar(range(len(vals)), vals, color=colors, width=0.9)
    ax.axhline(0, color="black", linewidth=0.8)
    if t["delta_pct"] is not None:
        ax.axhline(t["delta_pct"], color="tab:blue", linestyle="--", linewidth=1,
                   label=f"total {t['delta_pct']:+.2f}%")
        ax.legend(loc="upper left")
    # a problem's evaluation says its unit; the inliner's is in .text bytes (oz_text, policy_text)
    what, unit = (".text", "bytes") if not data.get("unit") else (data["unit"], data["unit"])
    base, pol = (t["oz_text"], t["policy_text"]) if "oz_text" in t else (t["baseline_score"], t["policy_score"])
    row = "module" if data.get("setting", "objects") == "objects" else "program"
    ax.set_xlabel(f"{row} (sorted; {len(vals)} of {len(data['modules'])})")
    ax.set_ylabel(f"{what} change vs -Oz (%)")
    name = os.path.basename(str(data["policy"]))
    name = name if len(name) <= 60 else name[:57] + "..."   # a pipeline's text can be long
    sizes = f"{_bytes(base)} -> {_bytes(pol)} {unit}"
    gap = " " if len(name) + len(sizes) <= 48 else "\n"   # two lines when one would be cut at the edge
    ax.set_title(f"{name} vs -Oz:{gap}{sizes}")
    if len(vals) <= 40:
        ax.set_xticks(range(len(vals)))
        ax.set_xticklabels([os.path.basename(m["module"]) for m in ok], rotation=60, ha="right", fontsize=7)
    else:
        ax.set_xticks([])
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _bytes(v: Any) -> str:
    """A total as a whole number (a problem's totals are floats), or - when there is none."""
    return "-" if v is None else f"{v:,.0f}"
