"""Candidates per second per core of `mlbridge tune` (docs/tuning.md, "Cost").

For each corpus: the -Oz baseline, then SECONDS of search on -j JOBS compiles at
a time; one JSON line per corpus (the last line, the geometric mean over
corpora). A candidate is one `clang -cc1` of a module with a pass order in place
of -Oz's pipeline, measured in-process; the rate is set by the modules' compile
time, so it is given per corpus, with the corpus's code size beside it.

    python3 bench/tune_bench.py CORPUS [CORPUS ...] [--seconds 30] [-j 1]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from mlbridge.corpus.compile import Toolchain  # noqa: E402
from mlbridge.tune.run import TuneOptions, Tuner  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpora", nargs="+")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    args = ap.parse_args()
    tc = Toolchain.find(need_plugin=True)
    rates = []
    for corpus in args.corpora:
        with tempfile.TemporaryDirectory(prefix="mlbridge-tune-bench-") as out:
            t = Tuner(corpus, out, tc, TuneOptions(setting="objects", budget_minutes=args.seconds / 60.0,
                                                   jobs=args.jobs))
            start = time.monotonic()
            t.search()
            wall = time.monotonic() - start
            baseline = wall - t.elapsed
            rate = t.candidates / t.elapsed / args.jobs if t.elapsed > 0 else 0.0
            rates.append(rate)
            print(json.dumps({"bench": "tune_candidates", "corpus": os.path.basename(os.path.normpath(corpus)),
                              "modules": len(t.units), "oz_text": sum(u.oz_text for u in t.units),
                              "jobs": args.jobs, "search_seconds": round(t.elapsed, 2),
                              "baseline_seconds": round(baseline, 2), "candidates": t.candidates,
                              "failed": sum(u.search.failed for u in t.units if u.search),
                              "candidates_per_second_per_core": round(rate, 3)}), flush=True)
    good = [r for r in rates if r > 0]
    geo = math.exp(sum(math.log(r) for r in good) / len(good)) if good else 0.0
    print(json.dumps({"bench": "tune_candidates", "corpus": "geomean", "corpora": len(args.corpora),
                      "candidates_per_second_per_core": round(geo, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
