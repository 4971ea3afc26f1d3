"""Extraction speed: `mlbridge corpus extract` against LLVM's extract_ir on the same
compile_commands.json (docs/corpus.md, "Extracting").

    python3 bench/corpus_extract.py DB.json [--jobs 1 2] [--reps 3]

e.g. DB = ~/.cache/mlbridge/corpora/.work/pyerfa-2.0.1.5/obj/compile_commands.json
after `mlbridge corpus build pyerfa`. Prints JSON lines: per tool and -j, the median
wall time of a fresh extraction, and for mlbridge also of the re-run that finds
nothing changed. The outputs of both tools are checked to be identical.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from mlbridge.corpus.extract import Options, extract, sources_from_compile_commands  # noqa: E402


def files(root: str) -> dict:
    out = {}
    for d, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(d, name), "rb") as f:
                out[os.path.relpath(os.path.join(d, name), root)] = f.read()
    out.pop(".mlbridge-extract.json", None)
    return out


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("db")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, os.cpu_count() or 1])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--objcopy", default=shutil.which("llvm-objcopy-19") or "llvm-objcopy")
    args = ap.parse_args()
    sources, _ = sources_from_compile_commands(args.db)
    n = len(sources)
    with tempfile.TemporaryDirectory(prefix="mlbridge-bench-") as tmp:
        for jobs in args.jobs:
            ours, rerun, theirs = [], [], []
            for rep in range(args.reps):
                out = os.path.join(tmp, f"ours-{jobs}-{rep}")
                ours.append(timed(lambda: extract(sources, out, options=Options(), jobs=jobs)))
                rerun.append(timed(lambda: extract(sources, out, options=Options(), jobs=jobs)))
                peer = os.path.join(tmp, f"theirs-{jobs}-{rep}")
                cmd = [sys.executable, "-m", "mlgo.corpus.extract_ir", "--input", args.db, "--input_type",
                       "json", "--output_dir", peer, "--llvm_objcopy_path", args.objcopy,
                       "--num_workers", str(jobs)]
                theirs.append(timed(lambda: subprocess.run(cmd, check=True, capture_output=True, timeout=3600)))
                if files(out) != files(peer):
                    print("mlbridge and extract_ir wrote different corpora", file=sys.stderr)
                    return 1
            for tool, times in (("mlbridge", ours), ("mlbridge-rerun", rerun), ("extract_ir", theirs)):
                med = statistics.median(times)
                print(json.dumps({"bench": "corpus_extract", "tool": tool, "jobs": jobs, "modules": n,
                                  "seconds": round(med, 4), "modules_per_s": round(n / med, 1)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
