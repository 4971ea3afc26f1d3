"""Speed of reading and exporting LLVM training logs (docs/training-logs.md).

    python3 bench/training_log_bench.py [--steps 20000] [--logs 4] [--reps 3]

A synthetic inliner log laid out as the plugin writes it (40 int64 [1]
features, delta_size score, one context) of --steps observations, --logs
copies; measures (median of --reps, wall time) read_training_log and
`log export` for tfrecord and npz (in-process, no subprocess), and prints one
JSON line per measurement, like mlbridge-bench:
  {"bench": "training_log", "op": "read|export_tfrecord|export_npz", "steps": N, "seconds": s, "steps_per_s": r}
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from mlbridge.cli.log import export as cli_export  # noqa: E402
from mlbridge.llvm.training_log import read_training_log  # noqa: E402

NAMES = [f"f{i}" for i in range(38)] + ["inlining_default", "inlining_decision"]


def write_log(path: str, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    spec = lambda n: {"name": n, "port": 0, "shape": [1], "type": "int64_t"}  # noqa: E731
    hdr = {"features": [spec(n) for n in NAMES], "score": spec("delta_size"), "advice": spec("inlining_decision")}
    values = rng.integers(-1000, 1000, size=(steps, len(NAMES)), dtype=np.int64)
    with open(path, "wb") as f:
        f.write(json.dumps(hdr, separators=(",", ":")).encode() + b'\n{"context":""}\n')
        zero = np.int64(0).tobytes()
        for i in range(steps):
            f.write(b'{"observation":%d}\n' % i + values[i].tobytes() + b'\n{"outcome":%d}\n' % i + zero + b"\n")


def timed(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--logs", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="mlbridge-logbench-")
    try:
        paths = []
        for k in range(a.logs):
            p = os.path.join(d, f"m{k}.log")
            write_log(p, a.steps, k)
            paths.append(p)
        total = a.steps * a.logs
        s = timed(lambda: [read_training_log(p) for p in paths], a.reps)
        print(json.dumps({"bench": "training_log", "op": "read", "steps": total, "seconds": round(s, 4),
                          "steps_per_s": round(total / s), "mb_per_s": round(sum(map(os.path.getsize, paths)) / s / 1e6, 1)}))
        for fmt in ("tfrecord", "npz"):
            out = os.path.join(d, "out-" + fmt)
            ns = argparse.Namespace(logs=paths, output=out, format=fmt, reward="auto", quiet=True, json=False)
            s = timed(lambda: cli_export(ns), a.reps)
            print(json.dumps({"bench": "training_log", "op": f"export_{fmt}", "steps": total, "seconds": round(s, 4),
                              "steps_per_s": round(total / s)}))
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
