"""Does an eviction policy make real programs faster? (issue 23's speed check)

    python3 bench/regalloc_speed.py [--policy first-legal|python:MODULE:FN]
                                    [--programs lz4 zstd brotli chacha20 sha256 dgemm]
                                    [--repeats 5] [--no-data] [--work DIR] [--json-out FILE]

Builds each program twice (every unit clang-19 -O2 to bitcode, then llc-19 with
the default eviction advisor or with the policy deciding every eviction over
stock LLVM's interactive channel), checks both outputs against the program's
reference, and counts executed instructions and data reads + writes under
valgrind --tool=callgrind; native CPU time over --repeats alternating runs
(95 % confidence intervals), perf stat cycles where the machine counts them.
lz4, zstd and brotli come from the corpus recipes' pinned PyPI sdists
(downloaded once with pip into ~/.cache/mlbridge/corpora) and compress and
decompress a fixed 200 KB text; chacha20, sha256 and dgemm are the benchmark programs'
kernels with bench_main.c; erfa is pyerfa's liberfa (a training-split project) computing
the precession-nutation matrix (erfa_main.c). Prints a Markdown table; --json-out writes the
result (``SpeedCheck.as_dict()``). The default policy, ``first-legal``, answers
the first candidate whose mask is 1. See docs/training.md, "Register
allocation: the speed check".
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from mlbridge.core.errors import MLBridgeError  # noqa: E402
from mlbridge.benchmark import speed_check as sc  # noqa: E402
from mlbridge.problems.eviction.policy import first_legal  # noqa: E402

ALL = ("lz4", "zstd", "brotli", "chacha20", "sha256", "dgemm", "erfa")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="first-legal", help="first-legal, or python:MODULE:FN")
    ap.add_argument("--programs", nargs="+", default=list(ALL), choices=ALL)
    ap.add_argument("--repeats", type=int, default=5, help="native timed runs per build (0: none)")
    ap.add_argument("--no-data", action="store_true", help="no callgrind cache simulation (no data accesses)")
    ap.add_argument("--work", default=None, help="keep the builds (and the bitcode cache) here")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    try:
        if args.policy == "first-legal":
            policy = first_legal
        elif args.policy.startswith("python:"):
            from mlbridge.corpus.python_callable import load_callable
            policy = load_callable(args.policy[len("python:"):], "policy")
        else:
            ap.error(f"--policy {args.policy}: give first-legal or python:MODULE:FN")
        codecs = [n for n in args.programs if n in ("lz4", "zstd", "brotli")]
        kernels = [k for k in sc.kernel_benchmarks() if k.name in args.programs]
        benches = sc.codec_benchmarks(codecs) + kernels
        if "erfa" in args.programs:   # a numeric kernel of a training-split project (pyerfa)
            benches.append(sc.erfa_benchmark())
        benches.sort(key=lambda b: ALL.index(b.name))
        t0 = time.monotonic()
        print(f"load average {os.getloadavg()[0]:.1f}; perf cycles: "
              f"{'yes' if sc.perf_cycles_available() else 'no (perf stat: <not supported>)'}", file=sys.stderr)
        res = sc.speed_check(benches, policy, work_dir=args.work, repeats=args.repeats,
                             data_accesses=not args.no_data,
                             progress=lambda p: print(f"{p.name}: {100 * p.instructions_delta:+.2f} % instructions, "
                                                      f"{time.monotonic() - t0:.0f} s", file=sys.stderr))
    except MLBridgeError as exc:
        print(f"regalloc_speed: error: {exc}", file=sys.stderr)
        return 1
    print(res.table())
    print(f"load average {os.getloadavg()[0]:.1f}; {time.monotonic() - t0:.0f} s", file=sys.stderr)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res.as_dict(), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
