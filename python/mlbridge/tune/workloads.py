"""Programs with workloads, as corpora the tuner takes: the wrong-code check.

A tuned build must print what the -Oz build prints. The programs that have a
workload and a known output are the speed check's (benchmark/speed_check.py: the
lz4, zstd and brotli codecs and three kernels, each with its reference output);
``benchmark_corpus`` builds one of them the way a user's build would be made a
corpus (``clang-19 -Oz -c -Xclang -fembed-bitcode=all``, then ``corpus extract``),
with ``programs.json`` naming the executable and ``check_command`` the shell line
that runs the workload, for ``mlbridge tune --check``.

``build_with`` compiles the same sources as a user's build does, with the tuning
file applied by the flags of ``tuning_file.flags`` (or without: stock -Oz), links
them and returns what the workload printed.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
from typing import List, Optional, Sequence, Tuple

from ..core.ended import how_it_ended
from ..core.errors import MLBridgeError
from ..corpus.extract import extract, sources_from_compile_commands
from ..corpus.programs import Program, write_programs
from ..benchmark.speed_check import Benchmark

COMPILE_TIMEOUT = 600.0


class WorkloadError(MLBridgeError):
    """A workload program could not be built or run (the message is one line)."""


def _libs(bench: Benchmark) -> Tuple[str, ...]:
    return tuple(a[2:] for a in bench.ldflags if a.startswith("-l"))


def _objects(bench: Benchmark, folder: str) -> List[str]:
    return [os.path.join(folder, f"{i:02d}-{os.path.basename(s)}.o") for i, s in enumerate(bench.sources)]


def _compile(clang: str, bench: Benchmark, src: str, obj: str, extra: Sequence[str], cwd: str) -> None:
    cmd = [clang, "-Oz", *bench.cflags, *extra, "-c", src, "-o", obj]
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=COMPILE_TIMEOUT, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise WorkloadError(f"{bench.name}: compiling {os.path.basename(src)} "
                            f"{how_it_ended(None, timed_out=True, timeout=COMPILE_TIMEOUT)}") from None
    if p.returncode != 0:
        last = p.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["(no output)"]
        raise WorkloadError(f"{bench.name}: compiling {os.path.basename(src)} {how_it_ended(p.returncode)}: "
                            f"{last[0]}")


def benchmark_corpus(bench: Benchmark, out: str, clang: str) -> str:
    """BENCH's sources compiled with -Oz and their bitcode embedded, extracted
    into the corpus OUT/corpus with programs.json (one executable); returns it."""
    build = os.path.join(out, "build")
    os.makedirs(build, exist_ok=True)
    entries = []
    for src, obj in zip(bench.sources, _objects(bench, build)):
        # -ffunction-sections as the linked setting compiles; the recorded command keeps it
        _compile(clang, bench, src, obj, ["-Xclang", "-fembed-bitcode=all"], build)
        entries.append({"directory": build, "file": src,
                        "arguments": [clang, "-Oz", *bench.cflags, "-c", src, "-o", os.path.basename(obj)]})
    cc = os.path.join(build, "compile_commands.json")
    with open(cc, "w", encoding="utf-8") as f:
        json.dump(entries, f)
    corpus = os.path.join(out, "corpus")
    sources, pre = sources_from_compile_commands(cc)
    report = extract(sources, corpus, pre_outcomes=pre, jobs=1)
    bad = [o for o in report.outcomes if o.status not in ("extracted", "unchanged")]
    if bad:
        raise WorkloadError(f"{bench.name}: extracting {bad[0].name}: {bad[0].status} {bad[0].reason}")
    write_programs(corpus, [Program(bench.name, "executable", ("*",), (), _libs(bench))])
    return corpus


def check_command(bench: Benchmark) -> str:
    """The shell line that runs BENCH's workload on ``{program}`` (tune --check)."""
    line = "{program} " + " ".join(shlex.quote(a) for a in bench.args)
    return line + (f" < {shlex.quote(bench.stdin)}" if bench.stdin else " < /dev/null")


def build_with(bench: Benchmark, folder: str, clang: str, flags: Sequence[str] = (),
               ldflags: Sequence[str] = ()) -> Tuple[str, bytes]:
    """BENCH built as a user's build is, with FLAGS added to every compile (a
    tuning file's) and LDFLAGS to the link, linked, and run on its workload: (the
    program, its stdout). WorkloadError if a step fails or the program exits non-zero."""
    os.makedirs(folder, exist_ok=True)
    objs = _objects(bench, folder)
    for src, obj in zip(bench.sources, objs):
        _compile(clang, bench, src, obj, flags, folder)
    exe = os.path.join(folder, bench.name)
    link = subprocess.run([clang, "-fuse-ld=lld", *ldflags, *objs, *bench.ldflags, "-o", exe], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=COMPILE_TIMEOUT)
    if link.returncode != 0:
        raise WorkloadError(f"{bench.name}: the link {how_it_ended(link.returncode)}")
    return exe, run_workload(bench, exe)


def run_workload(bench: Benchmark, exe: str, timeout: Optional[float] = None) -> bytes:
    stdin = open(bench.stdin, "rb") if bench.stdin else subprocess.DEVNULL
    try:
        p = subprocess.run([exe, *bench.args], stdin=stdin, capture_output=True, timeout=timeout or bench.timeout)
    except subprocess.TimeoutExpired:
        raise WorkloadError(f"{bench.name}: the workload "
                            f"{how_it_ended(None, timed_out=True, timeout=timeout or bench.timeout)}") from None
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()   # type: ignore[union-attr]
    if p.returncode != 0:
        raise WorkloadError(f"{bench.name}: the workload {how_it_ended(p.returncode)}")
    return p.stdout
