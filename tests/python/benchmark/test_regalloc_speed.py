"""mlbridge.benchmark.speed_check: a small program built with the default advisor and
with a trivial policy (both correct, instruction counts deterministic), and every
failure path as one typed line: a wrong reference output, a workload that exits
non-zero, a miscompile under the policy, a policy of the wrong shape, a compiler
that fails or dies, a missing tool.

Skips without clang-19/llc-19/valgrind, except under CI (env CI set), where a
missing tool is a failure. About 25 s on 2 cores.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
try:
    import mlbridge
except ImportError:   # run from a checkout without installing
    sys.path.insert(0, str(ROOT / "python"))
    import mlbridge
from conftest import kill_children  # noqa: E402
from mlbridge.core.errors import ArgumentError, MLBridgeError
from mlbridge.core.spec import TensorSpec
from mlbridge.benchmark import speed_check as sc
from mlbridge.problems.eviction.policy import first_legal  # the trivial policy: the first candidate whose mask is 1

HAVE = all(shutil.which(t) for t in ("clang-19", "llc-19", "valgrind"))
if not HAVE and not os.environ.get("CI"):
    pytest.skip("clang-19, llc-19 or valgrind not installed", allow_module_level=True)


# 16 live words in a loop (ChaCha20's quarter rounds), argv: rounds and exit status,
# stdin: bytes folded into the state
PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d) a += b; d ^= a; d = ROTL(d, 16); c += d; b ^= c; b = ROTL(b, 12); \
    a += b; d ^= a; d = ROTL(d, 8); c += d; b ^= c; b = ROTL(b, 7)
__attribute__((noinline)) void mix(uint32_t s[16], int rounds) {
    uint32_t x0 = s[0], x1 = s[1], x2 = s[2], x3 = s[3], x4 = s[4], x5 = s[5], x6 = s[6], x7 = s[7];
    uint32_t x8 = s[8], x9 = s[9], x10 = s[10], x11 = s[11], x12 = s[12], x13 = s[13], x14 = s[14], x15 = s[15];
    for (int i = 0; i < rounds; i++) {
        QR(x0, x4, x8, x12); QR(x1, x5, x9, x13); QR(x2, x6, x10, x14); QR(x3, x7, x11, x15);
        QR(x0, x5, x10, x15); QR(x1, x6, x11, x12); QR(x2, x7, x8, x13); QR(x3, x4, x9, x14);
    }
    s[0] += x0; s[1] += x1; s[2] += x2; s[3] += x3; s[4] += x4; s[5] += x5; s[6] += x6; s[7] += x7;
    s[8] += x8; s[9] += x9; s[10] += x10; s[11] += x11; s[12] += x12; s[13] += x13; s[14] += x14; s[15] += x15;
}
int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 10, status = argc > 2 ? atoi(argv[2]) : 0;
    uint32_t s[16];
    for (int i = 0; i < 16; i++) s[i] = 0x9e3779b9u * (uint32_t)(i + 1);
    int c, n = 0;
    while ((c = getchar()) != EOF) { s[n++ % 16] ^= (uint32_t)c; if (n % 64 == 0) mix(s, rounds); }
    for (int r = 0; r < 200; r++) mix(s, rounds);
#ifdef WRONG
    s[0] ^= 1;
#endif
    for (int i = 0; i < 16; i++) printf("%08x", s[i]);
    printf("\n");
    return status;
}
"""


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("speed")
    src = d / "mix.c"
    src.write_text(PROGRAM)
    stdin = d / "in.txt"
    stdin.write_bytes(sc.workload_text(4096, 7))
    # the reference output, from a build that shares nothing with the check's (-O0)
    import subprocess
    subprocess.run(["clang-19", "-O0", str(src), "-o", str(d / "ref")], check=True)
    expected = subprocess.run([str(d / "ref"), "10"], stdin=open(stdin, "rb"), capture_output=True,
                              check=True).stdout
    assert len(expected) == 129
    return sc.Benchmark("mix", (str(src),), expected, args=("10",), stdin=str(stdin), timeout=60)


def with_(bench, **kw):
    d = {f: getattr(bench, f) for f in bench.__dataclass_fields__}
    d.update(kw)
    return sc.Benchmark(**d)


# ---- a real check ------------------------------------------------------------------
def test_default_and_trivial_policy_both_correct_and_deterministic(prog, tmp_path):
    res = sc.speed_check([prog], first_legal, work_dir=str(tmp_path), repeats=3)
    (p,) = res.programs
    assert p.name == "mix" and p.outputs_equal
    assert p.decisions > 20                       # the policy decided, in the mixing loop
    assert p.instructions_default > 300_000 and p.instructions_policy > 300_000
    assert p.data_accesses_default and p.data_accesses_policy
    # the trivial policy spills in the hot loop: more memory accesses than the default
    assert p.data_accesses_policy > p.data_accesses_default
    assert p.cpu_default.runs == 3 and p.cpu_policy.runs == 3 and p.cpu_default.ci95 >= 0
    assert p.llc_seconds_policy > 0 and p.llc_seconds_default > 0
    assert res.instructions_delta == pytest.approx(p.instructions_delta)
    json.loads(json.dumps(res.as_dict()))       # JSON-able
    assert "| mix |" in res.table() and "**total**" in res.table()

    # instruction counts do not depend on the run: count each build again
    for build, exe, ins, data in (("default", tmp_path / "mix/a/prog", p.instructions_default,
                                   p.data_accesses_default),
                                  ("policy", tmp_path / "mix/b/prog", p.instructions_policy,
                                   p.data_accesses_policy)):
        assert sc.count_instructions(prog, str(exe), build) == (ins, data)
        assert sc.count_instructions(prog, str(exe), build, data_accesses=False) == (ins, None)
        # a timed run is the workload's own CPU time, not the compilers' or valgrind's before it
        cpu, cycles = sc.time_runs(prog, str(exe), build, repeats=2)
        assert cpu.runs == 2 and 0 <= cpu.mean < 0.5 and cpu.unit == "s"
        assert (cycles is None) == (not sc.perf_cycles_available())


def test_a_second_check_in_the_same_folder_reuses_the_default_build(prog, tmp_path):
    first = sc.speed_check([prog], first_legal, work_dir=str(tmp_path), repeats=0).programs[0]
    exe = tmp_path / "mix" / "a" / "prog"
    stamp = exe.stat().st_mtime_ns
    last = lambda obs: int(np.flatnonzero(obs["mask"].reshape(-1))[-1])
    again = sc.speed_check([prog], last, work_dir=str(tmp_path), repeats=0).programs[0]
    assert exe.stat().st_mtime_ns == stamp                        # not rebuilt
    assert (again.instructions_default, again.data_accesses_default, again.llc_seconds_default) == \
        (first.instructions_default, first.data_accesses_default, first.llc_seconds_default)
    assert again.decisions > 0
    # what the reuse must not hide: another reference, another workload, another llc
    with pytest.raises(sc.BenchmarkFailed, match="reference output"):
        sc.speed_check([with_(prog, expected=b"x\n")], last, work_dir=str(tmp_path), repeats=0)
    with pytest.raises(sc.BenchmarkFailed, match="failed with exit status 4"):
        sc.speed_check([with_(prog, args=("10", "4"))], last, work_dir=str(tmp_path), repeats=0)
    fewer = sc.speed_check([with_(prog, args=("5",), expected=_reference(prog, "5"))], last,
                           work_dir=str(tmp_path), repeats=0).programs[0]
    assert fewer.instructions_default < first.instructions_default
    wrapper = tmp_path / "llc-wrapper"
    wrapper.write_text('#!/bin/sh\nexec llc-19 "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    sc.speed_check([prog], last, work_dir=str(tmp_path), repeats=0, llc=str(wrapper))
    assert exe.stat().st_mtime_ns != stamp                        # rebuilt with the other llc


def _reference(bench, *args):
    import subprocess
    exe = Path(bench.sources[0]).with_suffix(".ref")
    subprocess.run(["clang-19", "-O0", bench.sources[0], "-o", str(exe)], check=True)
    return subprocess.run([str(exe), *args], stdin=open(bench.stdin, "rb"), capture_output=True, check=True).stdout


def test_a_policy_build_is_the_default_one_when_the_policy_is_the_default(prog, tmp_path):
    # a policy answering what LLVM's default would is not available over the channel,
    # but the default build twice is the same program: same count
    exe1, n1, _ = sc.build_program(prog, None, str(tmp_path / "x"))
    exe2, n2, _ = sc.build_program(prog, None, str(tmp_path / "y"))
    assert n1 == n2 == 0
    assert sc.count_instructions(prog, exe1) == sc.count_instructions(prog, exe2)


# ---- the program fails -------------------------------------------------------------------
def test_wrong_reference_output_is_a_failure(prog, tmp_path):
    bad = with_(prog, expected=b"0" * 128 + b"\n")
    with pytest.raises(sc.BenchmarkFailed) as info:
        sc.speed_check([bad], first_legal, work_dir=str(tmp_path), repeats=0)
    msg = str(info.value)
    assert "\n" not in msg and "mix (default build) printed" in msg and "reference output" in msg, msg
    assert not isinstance(info.value, sc.Miscompile) and info.value.build == "default"
    assert not (tmp_path / "mix" / "b").exists()       # found before the policy's compile


def test_workload_exiting_non_zero_is_a_failure(prog, tmp_path):
    bad = with_(prog, args=("10", "3"))
    with pytest.raises(sc.BenchmarkFailed, match=r"^mix \(default build\) failed with exit status 3$"):
        sc.speed_check([bad], first_legal, work_dir=str(tmp_path), repeats=0)
    # natively too (the timed runs check every output)
    exe, _, _ = sc.build_program(prog, None, str(tmp_path / "n"))
    with pytest.raises(sc.BenchmarkFailed, match="failed with exit status 3"):
        sc.time_runs(bad, exe, repeats=1)
    with pytest.raises(sc.BenchmarkFailed, match="cannot open its stdin"):
        sc.count_instructions(with_(prog, stdin=str(tmp_path / "nope")), exe)


def test_output_differing_under_the_policy_is_a_miscompile(prog, tmp_path):
    # an llc that, asked for the policy's build, compiles the program with a bug
    wrong = tmp_path / "wrong.bc"
    import subprocess
    subprocess.run(["clang-19", "-O2", "-DWRONG", "-c", "-emit-llvm", prog.sources[0], "-o", str(wrong)], check=True)
    llc = tmp_path / "miscompiling-llc"
    llc.write_text("#!/bin/sh\nfor a; do out=$a; done\n"
                   f'case "$*" in *interactive*) exec llc-19 -relocation-model=pic -filetype=obj {wrong} -o "$out";; '
                   'esac\nexec llc-19 "$@"\n')
    llc.chmod(llc.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(sc.Miscompile) as info:
        sc.speed_check([prog], first_legal, work_dir=str(tmp_path), repeats=0, llc=str(llc))
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("mix (policy build) printed") and info.value.build == "policy", msg
    assert isinstance(info.value, sc.BenchmarkFailed)


# ---- the policy is wrong -------------------------------------------------------------------
@pytest.mark.parametrize("policy, match", [
    (lambda obs: np.array([0, 1]), r"answered int64 of shape \[2\]; index_to_evict is one integer"),
    (lambda obs: 0.5, r"answered float64 of shape \[\]"),
    (lambda obs: 33, r"answered index 33, which the mask does not allow"),
    (lambda obs: int(np.flatnonzero(obs["mask"].reshape(-1) == 0)[0]), "which the mask does not allow"),
    (lambda obs: obs["no_such_feature"], "the policy raised"),
])
def test_wrong_answers_are_policy_errors(prog, tmp_path, policy, match):
    with pytest.raises(sc.SpeedCheckPolicyError, match=match) as info:
        sc.speed_check([prog], policy, work_dir=str(tmp_path), repeats=0)
    assert "\n" not in str(info.value) and str(info.value).startswith("mix (policy build): mix.c: ")
    assert isinstance(info.value, MLBridgeError)


class DeclaredPolicy:
    def __init__(self, features):
        self.features = features

    def __call__(self, obs):
        return first_legal(obs)


def test_declared_feature_shapes_are_checked_before_building(prog, tmp_path):
    wrong = DeclaredPolicy((TensorSpec("mask", "int64_t", (1, 32)),))
    with pytest.raises(sc.SpeedCheckPolicyError,
                       match=r"feature 'mask' of shape \[1, 32\]; the eviction advisor sends \[1, 33\]"):
        sc.speed_check([prog], wrong, work_dir=str(tmp_path / "w"), repeats=0)
    assert not (tmp_path / "w" / "mix").exists()          # nothing was built
    with pytest.raises(sc.SpeedCheckPolicyError, match="'callee_users', which the eviction advisor does not send"):
        sc.speed_check([prog], DeclaredPolicy((TensorSpec("callee_users", "int64_t", (1,)),)),
                       work_dir=str(tmp_path), repeats=0)
    with pytest.raises(sc.SpeedCheckPolicyError, match="must be a callable"):
        sc.speed_check([prog], None, repeats=0)
    # a policy declaring the right specs runs
    from mlbridge.problems.eviction.problem import RegallocEviction
    res = sc.speed_check([prog], DeclaredPolicy(RegallocEviction.features), work_dir=str(tmp_path), repeats=0)
    assert res.programs[0].outputs_equal


# ---- the compiler fails or dies, a tool is missing ---------------------------------------------
def test_compiler_failures_are_one_line(prog, tmp_path):
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return nope; }\n")
    with pytest.raises(sc.BuildFailed, match=r"^bad \(default build\): bad.c: clang-19 failed with exit status 1: "
                                             r".*error: use of undeclared identifier 'nope'"):
        sc.speed_check([sc.Benchmark("bad", (str(bad),), b"")], first_legal, work_dir=str(tmp_path), repeats=0)
    with pytest.raises(sc.BuildFailed, match=r"no source"):
        sc.speed_check([with_(prog, sources=(str(tmp_path / "nope.c"),))], first_legal, work_dir=str(tmp_path))
    with pytest.raises(sc.BuildFailed, match=r"^mix \(default build\): link: clang-19 failed with exit status 1: .*cannot find -lno_such_library"):
        sc.speed_check([with_(prog, ldflags=("-lno_such_library",))], first_legal, work_dir=str(tmp_path),
                       repeats=0)


def test_compiler_dying_mid_session_is_a_build_failure(prog, tmp_path):
    if not os.path.exists("/proc/self/task"):
        pytest.skip("needs /proc")

    def killing(obs):
        kill_children("llc")
        return first_legal(obs)

    with pytest.raises(sc.BuildFailed, match=r"^mix \(policy build\): mix.c: llc-19 was killed by signal 9 during "
                                             r"its session, after 1 decision") as info:
        sc.speed_check([prog], killing, work_dir=str(tmp_path), repeats=0)
    assert "\n" not in str(info.value)


def test_missing_tools(prog, tmp_path, monkeypatch):
    with pytest.raises(sc.ToolMissing, match="^llc: no-such-llc-19 is not on PATH$") as info:
        sc.speed_check([prog], first_legal, llc="no-such-llc-19")
    assert isinstance(info.value, ArgumentError) and info.value.worded("--llc").startswith("--llc: ")
    monkeypatch.setenv("MLBRIDGE_LLVM_SUFFIX", "-no-such-version")
    with pytest.raises(sc.ToolMissing, match="^clang: clang-no-such-version is not on PATH"):
        sc.speed_check([prog], first_legal)
    monkeypatch.delenv("MLBRIDGE_LLVM_SUFFIX")
    real_which = shutil.which
    monkeypatch.setattr(sc.shutil, "which", lambda name, *a, **k: None if name == "valgrind" else real_which(name))
    with pytest.raises(sc.ToolMissing, match="valgrind is not on PATH"):
        sc.speed_check([prog], first_legal)


# ---- the workloads ------------------------------------------------------------------------------
def test_workload_text_is_fixed():
    a = sc.workload_text(200_000, 1)
    assert len(a) == 200_000 and a == sc.workload_text(200_000, 1) and a != sc.workload_text(200_000, 2)
    import hashlib
    # the codec benchmarks' reference outputs were taken on exactly this input
    assert hashlib.sha256(a).hexdigest() == WORKLOAD_SHA256


WORKLOAD_SHA256 = "915c01247a6e87ef059e438c7d4f84d1ff1cbbe210a031f53bb5f9fd86880f12"


def test_kernel_benchmarks_are_tests_regalloc():
    ks = sc.kernel_benchmarks()
    assert [k.name for k in ks] == ["chacha20", "sha256", "dgemm"]
    for k in ks:
        assert all(os.path.isfile(s) for s in k.sources) and k.args == (k.name,) and k.expected.endswith(b"\n")


def test_perf_cycles_are_read_where_perf_counts_them(prog, tmp_path, monkeypatch):
    # this VM has no hardware counters: a stand-in perf writes what `perf stat -x,` writes
    fake = tmp_path / "bin" / "perf"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n# perf stat -x , -e cycles -o FILE -- CMD...\nout=$7; shift 8\n"$@"; rc=$?\n'
                    'echo "# started on" > "$out"; echo "123456,,cycles:u,1000,100.00,," >> "$out"; exit $rc\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(sc, "_PERF", True)
    res = sc.speed_check([prog], first_legal, work_dir=str(tmp_path / "w"), repeats=2, data_accesses=False)
    p = res.programs[0]
    assert res.perf_cycles and p.cycles_default.mean == 123456 and p.cycles_default.runs == 2
    assert p.cycles_policy.unit == "cycles" and p.cycles_policy.ci95 == 0
    # and the workload's failure still shows through perf
    exe = tmp_path / "w" / "mix" / "a" / "prog"
    with pytest.raises(sc.BenchmarkFailed, match="failed with exit status 5"):
        sc.time_runs(with_(prog, args=("10", "5")), str(exe), repeats=1)


def _sdist_cached(recipe_name):
    import glob
    from mlbridge.corpus.recipes import recipes
    from mlbridge.corpus.recipes.build import default_cache
    r = recipes()[recipe_name]
    return bool(glob.glob(os.path.join(default_cache(), ".work", f"{r.name}-{r.version}", "download", "*")))


@pytest.mark.skipif(not _sdist_cached("lz4"), reason="lz4's sdist is not in the corpus cache (mlbridge corpus build lz4)")
def test_lz4_benchmark_reference_is_what_lz4_prints(tmp_path):
    import subprocess
    (b,) = sc.codec_benchmarks(["lz4"])
    assert b.split == "eval" and b.stdin and os.path.getsize(b.stdin) == 200_000
    assert any(s.endswith("codec_main.c") for s in b.sources) and "-DCODEC_LZ4" in b.cflags
    exe = tmp_path / "lz4"
    subprocess.run(["clang-19", "-O0", *b.cflags, *b.sources, *b.ldflags, "-o", str(exe)], check=True)
    out = subprocess.run([str(exe), *b.args], stdin=open(b.stdin, "rb"), capture_output=True, check=True).stdout
    assert out == b.expected
    with pytest.raises(ArgumentError, match="no codec benchmark 'gzip'"):
        sc.codec_benchmarks(["gzip"])


@pytest.mark.skipif(not _sdist_cached("pyerfa"),
                    reason="pyerfa's sdist is not in the corpus cache (mlbridge corpus build pyerfa)")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_erfa_benchmark_reference_is_what_liberfa_prints_at_O0_and_O2(tmp_path, opt):
    import subprocess
    b = sc.erfa_benchmark()
    assert b.split == "train" and b.stdin is None and b.sources[0].endswith("erfa_main.c")
    assert not any(os.path.basename(s) in ("t_erfa_c.c", "erfaversion.c") for s in b.sources)
    exe = tmp_path / "erfa"
    subprocess.run(["clang-19", opt, *b.cflags, *b.sources, *b.ldflags, "-o", str(exe)], check=True, timeout=600)
    assert subprocess.run([str(exe)], capture_output=True, check=True, timeout=60).stdout == b.expected


# ---- the CPU time of one run ---------------------------------------------------------------------
def test_a_runs_cpu_time_is_its_own_while_other_threads_reap_children():
    """run_timed reaps its child with wait4: a CPU-heavy child that another thread
    starts and reaps while the run is alive does not count in it (a difference of
    getrusage(RUSAGE_CHILDREN) would add it)."""
    import threading
    r, w = os.pipe()
    try:
        result = {}
        mine = threading.Thread(target=lambda: result.update(
            mine=sc.run_timed(["sh", "-c", "read x; echo done"], stdin=r, timeout=120.0)))
        mine.start()
        busy = sc.run_timed([sys.executable, "-c", "sum(range(60_000_000))"], timeout=120.0)
        os.write(w, b"go\n")      # only now may the first run end: the busy child was reaped during it
        mine.join(timeout=120.0)
    finally:
        os.close(w)
        os.close(r)
    assert busy[0] == 0 and busy[3] > 0.2
    code, out, err, seconds = result["mine"]
    assert (code, out, err) == (0, b"done\n", b"") and seconds < busy[3] / 2


def test_a_run_past_its_timeout_is_killed_and_reported_as_such():
    code, out, err, seconds = sc.run_timed(["sh", "-c", "echo started; exec sleep 60"], timeout=0.5)
    assert code is None and out == b"started\n"
    code, _, _, _ = sc.run_timed(["sh", "-c", "exit 7"], timeout=60.0)
    assert code == 7
