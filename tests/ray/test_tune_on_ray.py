"""`mlbridge tune --ray` (tune/ray_candidates.py): a candidate compiled by a Ray
task gives the same sizes and the same object bytes as one compiled in this
process (compiles are deterministic), and a whole tune on Ray keeps the
workload's output and never a larger program."""
from __future__ import annotations

import os
import sys

from ray_support import ROOT, require_llvm

sys.path.insert(0, str(ROOT / "python"))
from mlbridge.benchmark.speed_check import kernel_benchmarks  # noqa: E402
from mlbridge.corpus.compile import Toolchain  # noqa: E402
from mlbridge.tune import TuneOptions, tune  # noqa: E402
from mlbridge.tune.actions import OZ  # noqa: E402
from mlbridge.tune.run import Tuner  # noqa: E402
from mlbridge.tune.search import Proposal  # noqa: E402
from mlbridge.tune.workloads import benchmark_corpus, check_command  # noqa: E402


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_a_candidate_on_ray_is_the_candidate_here_and_a_tune_on_ray_keeps_the_output(tmp_path):
    require_llvm()
    tc = Toolchain.find(need_plugin=True)
    bench = next(b for b in kernel_benchmarks() if b.name == "sha256")
    corpus = benchmark_corpus(bench, str(tmp_path / "wl"), tc.clang)
    here = Tuner(corpus, str(tmp_path / "here"), tc, TuneOptions(setting="objects", jobs=1))
    there = Tuner(corpus, str(tmp_path / "there"), tc, TuneOptions(setting="objects", jobs=2, ray="local"))
    for t in (here, there):
        os.makedirs(t.work, exist_ok=True)
    sizes = set()
    for order in [(OZ,), (3, 0, 1, 14), (0, 10, 11, 3, 12, 1, 7)]:
        # per-callee answers travel with the candidate (chacha20_xor calls chacha20_block)
        for callees in ((), (("chacha20_block", 0),), (("chacha20_block", 1),)):
            cand = Proposal(order, callees, bool(callees))
            a, b = here._candidate(here.units[1], cand), there._candidate(there.units[1], cand)
            assert a[:2] == b[:2] and a[0] is not None, (a, b)
            assert _bytes(a[3]) == _bytes(b[3])
            sizes.add((order, a[0]))
    assert len(sizes) > 3          # the answers changed some object
    report = tune(corpus, str(tmp_path / "out"), tc,
                  TuneOptions(budget_minutes=0.15, jobs=2, ray="local", check=check_command(bench)))
    (prog,) = report["programs"]
    assert prog["check"] == "same output" and prog["stored"] <= prog["oz_stored"]
    assert report["total"]["candidates"] > 0 and report["total"]["failed_candidates"] == 0
