"""``mlbridge corpus evaluate --problem regalloc-eviction`` (issue 23 part 2): each
module optimized to IR by its recorded clang-19 command, then llc-19 at its -O
level and relocation model, scored by regalloc_score with the default advisor
(cached) and with a Python policy deciding every eviction over llc's channel; a
report in score units, refusals in one line, and every failure (a policy's
wrong answers, a compiler that dies, a module llc cannot compile) a per-module
error with its command, never a traceback. (The inliner's reports: the other
test_corpus_evaluate tests, unchanged.)"""
from __future__ import annotations

import csv
import json
import os
import shutil
import shlex
import subprocess
import sys
import textwrap
import time
import types

import pytest

from conftest import HELPERS, ROOT, child_env

sys.path.insert(0, HELPERS)
import mini_corpus  # noqa: E402

from mlbridge import problems  # noqa: E402
from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import Policy, Toolchain, cc1_args  # noqa: E402
from mlbridge.corpus.evaluate import BaselineCache, default_cache_dir, evaluate  # noqa: E402
from mlbridge.problems import ProblemError  # noqa: E402
from mlbridge.problems import IllegalAnswer  # noqa: E402
from mlbridge.problems.eviction.problem import PolicyRefused, legal_answers  # noqa: E402

EVICTION = problems.get("regalloc-eviction")
LLC = shutil.which("llc-19")
needs_llvm = pytest.mark.skipif(not (mini_corpus.have_tools() and LLC), reason="clang-19 / llc-19 not installed")

#: a register-pressure module (ChaCha20's 16-word state) and an ordinary one
SOURCES = [os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs", "chacha20.c"), os.path.join(ROOT, "tests", "corpus", "strhash.c")]

POLICIES = textwrap.dedent('''
    import os, signal
    import numpy as np
    from mlbridge.core.session import Model

    class Strict(Model):         # a model trained on 32 candidates refuses LLVM 19's 33
        def on_session_start(self, session):
            mask = next(tuple(f.shape) for f in session.features if f.name == "mask")
            if mask != (1, 32):
                raise ValueError(f"trained on mask (1, 32), the compiler sends {mask}")

        def __call__(self, obs):
            return 0

    def first_legal(obs):
        return int(np.flatnonzero(obs["mask"].reshape(-1))[0])

    def scores(obs):             # 33 numbers, not one index
        return obs["weighed_reads_by_max"].reshape(-1)

    def inliner(obs):            # an inliner's policy: its features are not there
        return int(obs["callee_basic_block_count"][0] <= 3)

    def illegal(obs):            # a candidate whose mask is 0
        return int(np.flatnonzero(obs["mask"].reshape(-1) == 0)[0])

    def killer(obs):             # kills its llc at the third question
        killer.n = getattr(killer, "n", 0) + 1
        if killer.n == 3:
            me = str(os.getpid())
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        ppid = f.read().rsplit(")", 1)[1].split()[1]
                    with open(f"/proc/{pid}/comm") as f:
                        comm = f.read()
                except (OSError, IndexError):
                    continue
                if ppid == me and "llc" in comm:
                    os.kill(int(pid), signal.SIGKILL)
        return first_legal(obs)
''')

#: inline assembly that needs more registers than x86-64 has: clang makes its IR, llc cannot compile it
ASM_C = textwrap.dedent('''
    int f(int a) {
      int r;
      __asm__("" : "=r"(r) : "r"(a), "r"(a+1), "r"(a+2), "r"(a+3), "r"(a+4), "r"(a+5), "r"(a+6), "r"(a+7),
              "r"(a+8), "r"(a+9), "r"(a+10), "r"(a+11), "r"(a+12), "r"(a+13), "r"(a+14), "r"(a+15), "r"(a+16));
      return r;
    }
''')

MODULE_KEYS = {"module", "ok", "baseline_score", "policy_score", "delta", "delta_pct", "reward", "decisions",
               "baseline_spills", "policy_spills", "baseline_reloads", "policy_reloads",
               "baseline_spill_reload_cost", "policy_spill_reload_cost", "baseline_seconds", "policy_seconds",
               "baseline_cached"}
TOTAL_KEYS = {"modules", "ok", "failed", "baseline_score", "policy_score", "delta", "delta_pct", "reward",
              "better", "worse", "decisions", "baseline_spills", "policy_spills", "baseline_reloads",
              "policy_reloads", "baseline_spill_reload_cost", "policy_spill_reload_cost"}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    if not (mini_corpus.have_tools() and LLC):
        pytest.skip("clang-19 / llvm-objcopy-19 / llc-19 not installed")
    d = tmp_path_factory.mktemp("eviction")
    (d / "evict_policies.py").write_text(POLICIES)
    return d


@pytest.fixture(scope="module")
def corpus(work) -> str:
    """chacha20 and strhash, built with clang-19 -O2 as a real build makes a corpus."""
    return mini_corpus.make_corpus(str(work / "corpus"), SOURCES, flags=("-O2",))


@pytest.fixture(scope="module")
def bad_corpus(work, corpus) -> str:
    """The same, plus asm.o: pre-optimization IR (what -fembed-bitcode=all keeps)
    with strhash's command, which clang optimizes and llc cannot compile."""
    out = work / "bad"
    shutil.copytree(corpus, out)
    (work / "asm.c").write_text(ASM_C)
    subprocess.run([mini_corpus.llvm_tool("clang"), "-O2", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-c",
                    str(work / "asm.c"), "-o", str(out / "asm.o.bc")], check=True, timeout=120)
    shutil.copy(out / "strhash.o.cmd", out / "asm.o.cmd")
    layout.write_description(str(out), ["chacha20.o", "strhash.o", "asm.o"])
    return str(out)


@pytest.fixture(scope="module")
def cache_dir(work) -> str:
    return str(work / "cache")


@pytest.fixture(scope="module")
def cli(work, cache_dir):
    memo = {}

    def run(*args: str, env=None) -> subprocess.CompletedProcess:
        key = (args, tuple(sorted((env or {}).items())))
        if key not in memo:
            memo[key] = subprocess.run(
                [sys.executable, "-m", "mlbridge.cli.corpus_evaluate", *args, "--problem", "regalloc-eviction",
                 "-q"] + ([] if "--no-cache" in args or "--cache-dir" in args else ["--cache-dir", cache_dir]),
                capture_output=True, text=True, timeout=600, cwd=str(work), env=child_env(**(env or {})),
                stdin=subprocess.DEVNULL)
        return memo[key]
    return run


def rows(data):
    return {m["module"]: m for m in data["modules"]}


def reference_score(corpus: str, module: str, tmp_path, policy=None):
    """The pipeline by hand: the recorded cc1 command to optimized bitcode, then
    score_module with llc at the recorded -O2 and relocation model."""
    from mlbridge.llvm.regalloc_score import score_module
    m = next(m for m in layout.load(corpus).modules if m.name == module)
    ir = str(tmp_path / f"{module}.opt.bc")
    subprocess.run([mini_corpus.llvm_tool("clang"), *cc1_args(m.command(), emit=("-emit-llvm-bc",)), "-x", "ir",
                    m.bc, "-o", ir], check=True, timeout=120, capture_output=True)
    return score_module(ir, llc=LLC, extra_args=["-O2", "-relocation-model=pic"], policy=policy)


# -- the default advisor against itself: every delta exactly 0 -------------------------------

@needs_llvm
@pytest.mark.parametrize("spec", ["default", "oz"])
def test_the_default_advisor_against_itself_is_zero_exactly(cli, corpus, tmp_path, spec):
    p = cli(corpus, "--policy", spec, "--json", "--no-cache")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["problem"] == "regalloc-eviction" and data["unit"] == "register-allocation score"
    assert data["policy"] == spec and data["llc"].startswith(("Debian LLVM version 19", "LLVM version 19"))
    for m in data["modules"]:
        assert m["ok"] and m["delta"] == 0 and m["delta_pct"] == 0 and m["reward"] == 0, m
        assert m["baseline_score"] == m["policy_score"] > 0 and m["decisions"] == 0
        assert m["baseline_spills"] == m["policy_spills"] and m["baseline_reloads"] == m["policy_reloads"]
    t = data["total"]
    assert t["delta"] == 0 and t["better"] == t["worse"] == t["failed"] == 0 and t["ok"] == 2
    # the pipeline: the recorded command to IR, llc at the module's -O level and relocation model
    ref = reference_score(corpus, "chacha20.o", tmp_path)
    assert rows(data)["chacha20.o"]["baseline_score"] == pytest.approx(ref.total, abs=1e-6)
    assert rows(data)["chacha20.o"]["baseline_spills"] == ref.spills


@needs_llvm
def test_scores_are_deterministic_and_the_baseline_is_cached(cli, corpus):
    first, again = (json.loads(cli(corpus, "--policy", "default", "--json", "--no-cache", tag).stdout)
                    for tag in ("-j1", "-j2"))
    assert [m["baseline_score"] for m in first["modules"]] == [m["baseline_score"] for m in again["modules"]]
    cold = json.loads(cli(corpus, "--policy", "default", "--json").stdout)      # fills the cache
    warm = json.loads(cli(corpus, "--policy", "oz", "--json").stdout)
    assert not any(m["baseline_cached"] for m in cold["modules"])
    assert all(m["baseline_cached"] and m["baseline_seconds"] is None for m in warm["modules"])
    assert [m["baseline_score"] for m in warm["modules"]] == [m["baseline_score"] for m in first["modules"]]
    assert warm["total"] == first["total"]


# -- a trivial policy: first legal candidate ---------------------------------------------------

@needs_llvm
def test_first_legal_scores_worse_on_register_pressure(cli, corpus, tmp_path):
    p = cli(corpus, "--policy", "python:evict_policies:first_legal", "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    default = rows(json.loads(cli(corpus, "--policy", "default", "--json", "--no-cache").stdout))
    cha = rows(data)["chacha20.o"]
    assert cha["baseline_score"] == default["chacha20.o"]["baseline_score"]
    assert cha["policy_score"] > cha["baseline_score"] * 1.1           # ChaCha20: +27 % with LLVM 19.1.7
    assert cha["policy_spills"] > cha["baseline_spills"] and cha["decisions"] > 100
    assert cha["delta"] == pytest.approx(cha["policy_score"] - cha["baseline_score"], abs=1e-5)
    assert cha["reward"] == pytest.approx(EVICTION.reward(cha["baseline_score"], cha["policy_score"]), abs=1e-6)
    assert cha["reward"] < 0
    # the same policy over score_module by hand gives the same score
    first_legal = lambda obs: int(__import__("numpy").flatnonzero(obs["mask"].reshape(-1))[0])  # noqa: E731
    ref = reference_score(corpus, "chacha20.o", tmp_path, policy=first_legal)
    assert cha["policy_score"] == pytest.approx(ref.total, abs=1e-6) and cha["decisions"] == ref.decisions
    t = data["total"]
    assert set(t) == TOTAL_KEYS and set(cha) == MODULE_KEYS
    assert t["baseline_score"] == pytest.approx(sum(m["baseline_score"] for m in data["modules"]), abs=1e-5)
    assert t["policy_score"] == pytest.approx(sum(m["policy_score"] for m in data["modules"]), abs=1e-5)
    assert t["decisions"] == sum(m["decisions"] for m in data["modules"]) and t["worse"] >= 1
    assert t["policy_spills"] == sum(m["policy_spills"] for m in data["modules"])
    assert "oz_text" not in cha and "oz_text" not in t


@needs_llvm
def test_the_table_and_csv_are_in_score_units(cli, corpus, work):
    out = str(work / "scores.csv")
    p = cli(corpus, "--policy", "python:evict_policies:first_legal", "--csv", out)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "vs LLVM's default eviction advisor" in lines[0] and "register-allocation score, lower is better" \
        in lines[0] and "0 failed" in lines[0]
    assert lines[1].split() == ["module", "default", "score", "policy", "score", "delta", "delta", "%",
                                "decisions", "spills", "reloads"]
    assert lines[-1].startswith("total (2 modules)") and ".text" not in p.stdout
    cha = next(ln for ln in lines if ln.startswith("chacha20.o"))
    assert "->" in cha and "+" in cha
    with open(out, newline="") as f:
        got = list(csv.DictReader(f))
    assert [r["module"] for r in got] == ["chacha20.o", "strhash.o"] and float(got[0]["policy_score"]) > 0


@needs_llvm
def test_a_module_without_functions_scores_zero_at_once(cli, work):
    """llc never opens the channel for it: no wait for the timeout, no decision, a 0 score."""
    (work / "data.c").write_text("const int table[4] = {1, 2, 3, 4};\n")
    c = mini_corpus.make_corpus(str(work / "data-corpus"), [str(work / "data.c")], flags=("-O2",))
    p = cli(c, "--policy", "python:evict_policies:first_legal", "--json", "--timeout", "60")
    assert p.returncode == 0, p.stderr
    (m,) = json.loads(p.stdout)["modules"]
    assert m["ok"] and m["baseline_score"] == m["policy_score"] == 0 and m["decisions"] == 0
    assert m["delta_pct"] is None and m["reward"] == 0 and m["policy_seconds"] < 30


# -- refusals: one line, exit 2, nothing compiled or written --------------------------------------

@needs_llvm
@pytest.mark.parametrize("args,want", [
    (["--policy", "M.onnx"], "--policy M.onnx: the regalloc-eviction problem is answered over stock LLVM's "
                             "interactive channel: give a python:MODULE:FN policy"),
    (["--policy", "callees:evict_policies.py"], "give a python:MODULE:FN policy"),
    (["--policy", "oz", "--where"], "--where: "),
    (["--policy", "oz", "--plot", "x.png"], "--plot: "),
    (["--policy", "oz", "--log", "logs"], "--log: training logs are written for the inlining-size problem only"),
    (["--policy", "oz", "--setting", "linked"], "--setting linked: the regalloc-eviction problem is scored in "
                                                "objects only"),
    (["--policy", "oz", "--setting", "lto"], "--setting lto: "),
    (["--policy", "oz", "--llc", "/nope/llc"], "--llc: "),
])
def test_what_it_cannot_do_is_one_line(cli, corpus, work, args, want):
    (work / "M.onnx").write_bytes(b"x")
    before = set(os.listdir(work))
    p = cli(corpus, *args)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("mlbridge: error: " + want) or (want in line and line.startswith("mlbridge: error: "))
    assert set(os.listdir(work)) == before and not p.stdout


@needs_llvm
def test_no_plugin_is_looked_for(cli, corpus):
    """Eviction runs in stock llc: a plugin that does not exist is never asked for."""
    p = cli(corpus, "--policy", "python:evict_policies:first_legal", "--json", "--no-cache",
            env={"MLBRIDGE_LLVM_PLUGIN": "/nope/libMLBridgeLLVM.so"})
    assert p.returncode == 0, p.stderr
    assert "libMLBridgeLLVM" not in p.stdout


def test_the_library_refuses_before_any_compile():
    with pytest.raises(ProblemError, match="give a python:MODULE:FN policy"):
        evaluate(types.SimpleNamespace(has_thinlto=False), Policy("onnx", "p.onnx", model="/p.onnx"),  # type: ignore
                 None, problem="regalloc-eviction")  # type: ignore[arg-type]
    with pytest.raises(ProblemError) as e:
        evaluate(types.SimpleNamespace(has_thinlto=False), Policy("oz", "oz"), None,  # type: ignore
                 problem="regalloc-eviction", where=True)  # type: ignore[arg-type]
    assert e.value.argument == "where"
    with pytest.raises(ProblemError, match="ThinLTO"):
        evaluate(types.SimpleNamespace(has_thinlto=True), Policy("oz", "oz"), None,  # type: ignore
                 problem="regalloc-eviction")  # type: ignore[arg-type]


# -- failures: per module, with the command; exit 1 ------------------------------------------------

def failures(p: subprocess.CompletedProcess):
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    data = json.loads(p.stdout)
    return data, {m["module"]: m["errors"] for m in data["modules"] if not m["ok"]}


@needs_llvm
@pytest.mark.parametrize("policy,error", [
    ("scores", "the Python policy's answer cannot be used: the policy answered 33 values (shape (33,), float32): "
               "index_to_evict is one integer"),
    ("inliner", "the Python policy failed: KeyError: 'callee_basic_block_count'"),
    ("illegal", "the Python policy's answer cannot be used: the policy answered index"),
    ("Strict", "the Python policy refused llc's session: ValueError: trained on mask (1, 32), the compiler sends "
               "(1, 33)"),
])
def test_a_policy_that_does_not_fit_is_a_failure_per_module(cli, corpus, policy, error):
    data, errs = failures(cli(corpus, "--policy", f"python:evict_policies:{policy}", "--json"))
    assert set(errs) == {"chacha20.o", "strhash.o"} and data["total"]["failed"] == 2
    for e in errs.values():
        (only,) = e
        assert only["run"] == "policy" and only["error"].startswith(error), only
        assert "-emit-llvm-bc" in only["command"] and "-regalloc-evict-interactive-channel-base={base}" \
            in only["command"]
    for m in data["modules"]:   # the default advisor's score stands beside the failure
        assert m["baseline_score"] > 0 and m["policy_score"] is None and m["delta"] is None


@needs_llvm
def test_a_module_llc_cannot_compile_is_a_failure_the_others_stand(cli, bad_corpus):
    p = cli(bad_corpus, "--policy", "python:evict_policies:first_legal", "--json")
    data, errs = failures(p)
    assert set(errs) == {"asm.o"} and data["total"]["ok"] == 2
    runs = {e["run"]: e for e in errs["asm.o"]}
    assert set(runs) == {"baseline", "policy"}
    assert runs["baseline"]["error"].startswith("llc-19 on asm.o.opt.bc failed with exit status 1: error: inline "
                                                "assembly requires more registers than available")
    cmd = runs["baseline"]["command"]
    assert cmd.split(" && ")[1].startswith(LLC) and cmd.endswith("asm.o.opt.bc -o OUT.mir")
    # llc at the recorded command's codegen level and relocation model (-O2, -mrelocation-model pic)
    assert " -print-machine-bfi -O2 -relocation-model=pic asm.o.opt.bc " in cmd
    assert "mlbridge: module asm.o failed (baseline): llc-19 on asm.o.opt.bc failed with exit status 1" in p.stderr
    assert "mlbridge: 1 of 3 modules failed" in p.stderr
    table = cli(bad_corpus, "--policy", "python:evict_policies:first_legal")
    assert table.returncode == 1 and any(ln.startswith("asm.o") and "FAILED" in ln for ln in table.stdout.splitlines())


@needs_llvm
def test_a_compiler_that_dies_is_a_failure(cli, corpus, work):
    # llc killed mid-session by the policy's side (one job: one llc at a time)
    data, errs = failures(cli(corpus, "--policy", "python:evict_policies:killer", "--json", "-j1"))
    (killed,) = [e for e in errs.values()]
    (e,) = killed
    assert e["run"] == "policy" and e["error"].startswith("llc-19 on ") and " was killed by signal 9 after 3 eviction decision(s)" in e["error"]
    # clang killed while it optimizes the module to IR: one failure per module, named clang
    fake = work / "dying-clang"
    fake.write_text("#!/bin/sh\ncase \"$*\" in *-emit-llvm-bc*) kill -9 $$ ;; esac\n"
                    f"exec {mini_corpus.llvm_tool('clang')} \"$@\"\n")
    fake.chmod(0o755)
    data, errs = failures(cli(corpus, "--policy", "python:evict_policies:first_legal", "--json", "--clang",
                              str(fake)))
    assert set(errs) == {"chacha20.o", "strhash.o"}
    for e in errs.values():
        (only,) = e
        assert only["run"] == "clang" and only["error"] == "clang was killed by signal 9 (optimizing the module to IR)"
        assert only["command"].startswith(str(fake)) and " && " not in only["command"]
    # an llc that dies at once: the baseline fails too, and nothing is cached
    fake_llc = work / "dying-llc"
    fake_llc.write_text(f"#!/bin/sh\ncase \"$1\" in --version) exec {LLC} --version ;; esac\nkill -9 $$\n")
    fake_llc.chmod(0o755)
    cache = str(work / "llc-cache")
    data, errs = failures(cli(corpus, "--policy", "python:evict_policies:first_legal", "--json", "--llc",
                              str(fake_llc), "--cache-dir", cache))
    assert all({e["run"] for e in v} == {"baseline", "policy"} for v in errs.values()) and len(errs) == 2
    assert all(e["error"].startswith("dying-llc on ") and " was killed by signal 9" in e["error"] for v in errs.values() for e in v)
    assert not os.path.isdir(cache) or not any(files for _, _, files in os.walk(cache))


# -- the pieces ---------------------------------------------------------------------------------

@pytest.mark.parametrize("recorded,want", [
    (["-cc1", "-triple", "x86_64-pc-linux-gnu", "-Oz", "-mrelocation-model", "pic"], ["-O2", "-relocation-model=pic"]),
    (["-cc1", "-O3", "-mcmodel=large", "-mllvm", "-x86-asm-syntax=intel"],
     ["-O3", "-code-model=large", "-x86-asm-syntax=intel"]),
    (["-cc1", "-Os"], ["-O2"]),
    (["-cc1", "-O1"], ["-O1"]),
    (["-cc1", "-O4"], ["-O3"]),
    (["-cc1", "-mrelocation-model", "static"], ["-O0", "-relocation-model=static"]),   # cc1 without -O is -O0
    (["-cc1", "-O2", "-mrelocation-model"], ["-O2", "-relocation-model=pic"]),   # a dangling flag: clang's default
])
def test_llc_runs_at_the_modules_own_level_and_models(recorded, want):
    assert EVICTION.codegen_args(recorded) == want


def test_the_command_shown_for_a_policy_is_the_baselines_plus_the_channel():
    args = ["-O2", "-relocation-model=pic"]
    base = shlex.split(EVICTION.codegen_command("m.ll", args, llc="llc-19", policy=False))
    pol = shlex.split(EVICTION.codegen_command("m.ll", args, llc="llc-19", policy=True))
    channel = ["-regalloc-enable-advisor=release", "-regalloc-evict-interactive-channel-base={base}"]
    assert pol[-3:] == base[-3:] == ["m.ll", "-o", "OUT.mir"]
    assert [a for a in pol if a not in channel] == base and set(channel) <= set(pol)


def test_an_objects_only_problem_passes_its_check_by_default():
    EVICTION.check("corpus evaluate")   # the default setting is objects
    with pytest.raises(ProblemError, match="objects only"):
        EVICTION.check("corpus evaluate", "lto")


def test_answers_are_checked_before_llvm_sees_them():
    import numpy as np
    obs = {"mask": np.array([[0, 1, 1] + [0] * 30], dtype=np.int64)}
    assert legal_answers(lambda o: 2)(obs) == 2
    assert legal_answers(lambda o: np.array([1], dtype=np.int64))(obs) == 1
    assert legal_answers(lambda o: 1.0)(obs) == 1
    for scalar in (np.int64(2), np.int32(1), np.argmax([0, 0, 1])):   # numpy scalars: a plain int for LLVM
        got = legal_answers(lambda o, s=scalar: s)(obs)
        assert type(got) is int and got == int(scalar)
    with pytest.raises(IllegalAnswer, match="index 0, not a legal"):
        legal_answers(lambda o: np.int64(0))(obs)
    for bad, text in ((0, "index 0, not a legal candidate (legal: [1, 2])"), (33, "index 33"), (-1, "index -1"),
                      (np.zeros(33), "33 values"), (1.5, "1.5"), ("x", "'x'")):
        with pytest.raises(IllegalAnswer, match=text.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                           .replace("]", r"\]")):
            legal_answers(lambda o, b=bad: b)(obs)

    class WithHooks:
        started = []

        def on_session_start(self, s):
            self.started.append(s)

        def __call__(self, o):
            return 1
    session = types.SimpleNamespace(features=list(EVICTION.features))
    wrapped = legal_answers(WithHooks())
    wrapped.on_session_start(session)
    assert WithHooks.started == [session] and not hasattr(wrapped, "on_context") and wrapped.refused is None
    # a compiler whose features are not the problem's (another LLVM): refused before the policy is asked
    other = types.SimpleNamespace(features=[types.SimpleNamespace(name=f.name, shape=(1, 32) if f.shape == (1, 33)
                                                                  else f.shape) for f in EVICTION.features])
    wrapped = legal_answers(WithHooks())
    with pytest.raises(PolicyRefused, match=r"not the problem's \(LLVM 19's\): \('mask', \(1, 32\)\) where the "
                                            r"problem has \('mask', \(1, 33\)\)"):
        wrapped.on_session_start(other)
    assert WithHooks.started == [session] and "not the problem's" in wrapped.refused
    with pytest.raises(PolicyRefused, match="20 features where the problem has 21"):
        legal_answers(WithHooks()).on_session_start(types.SimpleNamespace(features=list(EVICTION.features)[:20]))


@needs_llvm
def test_the_cache_key_follows_llc_its_options_and_the_scorer(corpus, tmp_path):
    m = layout.load(corpus).modules[0]
    tc = Toolchain.find(need_llc=True)
    args = cc1_args(m.command(), emit=("-emit-llvm-bc",))
    key = BaselineCache.ir_key(m, tc, args, EVICTION, ["-O2"])
    assert key == BaselineCache.ir_key(m, tc, args, EVICTION, ["-O2"])
    import dataclasses
    assert key != BaselineCache.ir_key(m, tc, args, EVICTION, ["-O3"])
    assert key != BaselineCache.ir_key(m, dataclasses.replace(tc, llc_version="LLVM version 20"), args, EVICTION,
                                       ["-O2"])
    assert key != BaselineCache.ir_key(m, dataclasses.replace(tc, llc="/usr/lib/llvm-20/bin/llc"), args, EVICTION,
                                       ["-O2"])
    assert key != BaselineCache.ir_key(m, tc, args + ["-mllvm", "-x"], EVICTION, ["-O2"])
    other = types.SimpleNamespace(name=EVICTION.name, fingerprint=lambda: "another scorer")
    assert key != BaselineCache.ir_key(m, tc, args, other, ["-O2"])  # type: ignore[arg-type]
    cache = BaselineCache(str(tmp_path))
    assert cache.get_measured(key) is None
    cache.put_measured(key, 12.5, {"spills": 3})
    assert cache.get_measured(key) == {"value": 12.5, "details": {"spills": 3}}
    path = cache._path(key)
    with open(path, "w") as f:
        f.write("{damaged")
    assert cache.get_measured(key) is None
    assert cache.get(key) is None   # an entry of the other kind is a miss for the .text cache, too
    assert default_cache_dir("regalloc-eviction").endswith(os.path.join("mlbridge", "regalloc-eviction-baseline"))
    assert default_cache_dir().endswith(os.path.join("mlbridge", "oz-text"))


@needs_llvm
def test_an_llc_that_hangs_is_a_timed_out_failure(cli, corpus, work):
    # llc past --timeout: killed, each run a failure marked timed out, nothing cached
    hang = work / "hanging-llc"
    hang.write_text(f"#!/bin/sh\ncase \"$1\" in --version) exec {LLC} --version ;; esac\nexec sleep 60\n")
    hang.chmod(0o755)
    cache = str(work / "hang-cache")
    t0 = time.monotonic()
    data, errs = failures(cli(corpus, "--policy", "python:evict_policies:first_legal", "--json", "--llc", str(hang),
                              "--cache-dir", cache, "--timeout", "2"))
    assert time.monotonic() - t0 < 50
    assert set(errs) == {"chacha20.o", "strhash.o"}
    for v in errs.values():
        assert {e["run"] for e in v} == {"baseline", "policy"}
        for e in v:
            assert e["timed_out"] is True and "did not finish within 2 s and was killed" in e["error"]
    assert not os.path.isdir(cache) or not any(files for _, _, files in os.walk(cache))
