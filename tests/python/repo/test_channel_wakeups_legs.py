"""bench/advisor_overhead.py --legs (issue 24): the per-decision legs around
the agent read from a ``perf script`` of system-call tracepoints. A made-up
trace with known times: the parser must pair each compiler write with the
agent's next read, that read with the agent's answer, the answer with the
compiler's read of it, and ignore everything else (other threads, the
compiler's header and output writes, short reads)."""
from __future__ import annotations

import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import advisor_overhead  # noqa: E402


def _line(comm: str, tid: int, t: float, side: str, call: str, rest: str) -> str:
    return f"{comm:>16} {tid:6d} {t:.6f}: syscalls:sys_{side}_{call}: {rest}"


def _decision(t: float, wake: float, own: float, back: float, other: bool) -> list:
    """One decision from t: llc writes the observation, python's readv
    returns ``wake`` later, its answer's write starts ``own`` after that, and
    llc's read returns the answer ``back`` after that."""
    r = t + wake
    w = r + own
    noise = [_line("python3", 101, r + 1e-6, "exit", "readv", "0x10")] if other else []   # another thread
    return noise + [
        _line("llc-19", 200, t, "enter", "write", "fd: 0x00000005, buf: 0x1, count: 0x00000d80"),
        _line("llc-19", 200, t + 1e-6, "exit", "write", "0xd80"),
        _line("llc-19", 200, t + 2e-6, "enter", "read", "fd: 0x00000004, buf: 0x2, count: 0x00000008"),
        _line("python3", 100, r - 1e-6, "enter", "readv", "fd: 0x00000007, vec: 0x3, vlen: 0x00000001"),
        _line("python3", 100, r, "exit", "readv", "0xd80"),
        _line("python3", 100, w, "enter", "write", "fd: 0x00000003, buf: 0x4, count: 0x00000008"),
        _line("python3", 100, w + 1e-6, "exit", "write", "0x8"),
        _line("llc-19", 200, w + back, "exit", "read", "0x8"),
    ]


def test_legs_are_paired_in_order_and_medians_taken():
    # The header, read together with the first observation: a leg starts at
    # the compiler's last write before the agent's read.
    lines = [_line("llc-19", 200, 0.5, "enter", "write", "fd: 0x00000005, buf: 0x1, count: 0x00000300")]
    t = 1.0
    for i, (wake, own, back) in enumerate(((10e-6, 20e-6, 12e-6), (8e-6, 30e-6, 14e-6), (12e-6, 25e-6, 16e-6))):
        lines += _decision(t, wake, own, back, other=i == 1)
        t += 0.001
    lines.append(_line("llc-19", 200, t, "enter", "write", "fd: 0x00000006, buf: 0x5, count: 0x00001000"))  # the .s
    got = advisor_overhead.legs_of("\n".join(lines), 8)
    want = dict(zip(advisor_overhead.LEGS, (10.0, 25.0, 14.0)))
    for leg, us in want.items():
        assert abs(got[leg] - us) < 0.5, (leg, got)
