"""The tuner's search curves from bench/tune_goal.py's JSON lines: per program, its
objects' stored bytes against -Oz's over the minutes of search (a PNG for
docs/tuning.md).

    python3 bench/tune_goal_plot.py OUT/zstd.jsonl OUT/lz4.jsonl ... -o docs/img/tune-goal-curve.png
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List


def rows(paths: List[str]) -> List[Dict[str, Any]]:
    """The last row of each program in PATHS (a resumed run appends a newer one)."""
    found: Dict[str, Dict[str, Any]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("{"):
                    row = json.loads(line)
                    found[row["program"]] = row
    return list(found.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("-o", "--out", required=True, help="the PNG")
    args = ap.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for r in sorted(rows(args.jsonl), key=lambda r: r["program"]):
        curve = r["curve"]
        oz = curve[0][1]
        xs = [c[0] for c in curve] + [r["minutes"]]
        ys = [100.0 * (c[1] - oz) / oz for c in curve]
        jobs = r.get("jobs")   # rows of an older bench have none
        ax.step(xs, ys + ys[-1:], where="post",
                label=r["program"] + (f" ({jobs} core{'s' if jobs != 1 else ''})" if jobs else ""))
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("minutes of search")
    ax.set_ylabel("objects' stored bytes vs -Oz (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
