"""`mlbridge tune` and the plugin's pipeline override (integrations/llvm/pipeline_override.cc,
python/mlbridge/tune/, docs/tuning.md), with stock clang-19 and ld.lld-19.

The plugin: loaded and idle it changes nothing; a pipeline replaces clang's -O
pipeline (``default<Oz>`` as the pipeline gives -Oz's bytes on code without SLP
vectorization, a one-pass pipeline gives far larger code); a tuning file applies per source file by path suffix,
from another folder too; damaged, foreign or unparseable files stop the build
with one line. The tuner, on a real program with a workload (sha256 of the speed
check): the tuned build prints the reference output, the tuning file applied to a
plain build gives the same bytes twice and the reference output, nothing kept is
larger than -Oz, a stop resumes, a damaged checkpoint is named and left, a
changed output is a miscompile that sends modules back to -Oz, and candidates
that time out are never kept.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

import plugin_driver
from conftest import PLUGIN, ROOT

from mlbridge.corpus.compile import Toolchain
from mlbridge.benchmark.speed_check import kernel_benchmarks
from mlbridge.tune import TuneError, TuneOptions, flags, read, tune
from mlbridge.tune import run as tune_run
from mlbridge.tune.tuning_file import link_flags as flags_of
from mlbridge.corpus.compile import CompiledModule
from mlbridge.tune.workloads import benchmark_corpus, build_with, check_command

# the LLVM the plugin was built against (ctest sets the tools folder: LLVM 19, or 22)
CLANG = plugin_driver.tool("clang")
MAJOR = int(subprocess.run([CLANG, "--version"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL).stdout.split("version ")[1].split(".")[0])
INTERP = os.path.join(ROOT, "tests", "corpus", "interp.c")


def _cc(tmp_path, name, *extra, env=None, src=INTERP, cwd=None):
    out = str(tmp_path / name)
    r = subprocess.run([CLANG, "-Oz", "-c", src, "-o", out, *extra], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120, cwd=cwd or str(tmp_path),
                       env={k: v for k, v in dict(os.environ, **(env or {})).items()
                            if not k.startswith(("MLBRIDGE_PO_", "MLBRIDGE_TUNING")) or k in (env or {})})
    return r, out


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


LOAD = [f"-fplugin={PLUGIN}", f"-fpass-plugin={PLUGIN}"]


def test_the_plugin_loaded_and_idle_changes_nothing(tmp_path):
    (r0, oz), (r1, with_plugin) = _cc(tmp_path, "oz.o"), _cc(tmp_path, "p.o", *LOAD)
    assert r0.returncode == r1.returncode == 0, r1.stderr
    assert _bytes(oz) == _bytes(with_plugin)


def test_a_pipeline_replaces_the_default_one(tmp_path):
    _, oz = _cc(tmp_path, "oz.o")
    r, same = _cc(tmp_path, "same.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=default<Oz>")
    assert r.returncode == 0, r.stderr
    assert _bytes(same) == _bytes(oz)          # -Oz's pipeline as the pipeline: -Oz's bytes
    r, small = _cc(tmp_path, "one.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=function(instsimplify)",
                   "-mllvm", "-mlbridge-tuning-trace")
    assert r.returncode == 0, r.stderr
    assert f"mlbridge-tuning: source {INTERP}: applied the pipeline given" in r.stderr
    # one pass and no more: the rest of -Oz's pipeline was skipped
    assert os.path.getsize(small) > os.path.getsize(oz) * 1.2


def _tuning(tmp_path, modules, **top):
    d = {"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR, "modules": modules}
    d.update(top)
    p = tmp_path / "t.json"
    p.write_text(json.dumps(d))
    return str(p)


def test_a_tuning_file_applies_by_path_suffix_from_another_folder(tmp_path):
    src = tmp_path / "proj" / "src" / "interp.c"
    src.parent.mkdir(parents=True)
    shutil.copy(INTERP, src)
    tf = _tuning(tmp_path, {"src/interp.c": {"pipeline": "function(instsimplify)"},
                            "other/interp.c": {"pipeline": "function(sroa)"}})
    _, want = _cc(tmp_path, "want.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=function(instsimplify)",
                  src="src/interp.c", cwd=str(tmp_path / "proj"))
    # relative to the build folder, and through the environment (drivers that pass no -mllvm)
    r, got = _cc(tmp_path, "got.o", f"-fpass-plugin={PLUGIN}", src="../src/interp.c",
                 cwd=str(tmp_path / "proj" / "src"), env={"MLBRIDGE_TUNING": tf, "MLBRIDGE_TUNING_TRACE": "1"})
    assert r.returncode == 0, r.stderr
    assert "applied entry 'src/interp.c'" in r.stderr
    assert _bytes(got) == _bytes(want)
    # a file the tuning file does not name compiles as -Oz
    shutil.copy(INTERP, tmp_path / "elsewhere.c")
    _, oz = _cc(tmp_path, "oz.o", src="elsewhere.c")
    r, other = _cc(tmp_path, "other.o", *LOAD, "-mllvm", f"-mlbridge-tuning={tf}", "-mllvm", "-mlbridge-tuning-trace",
                   src="elsewhere.c")
    assert "not in the file, default pipeline" in r.stderr and _bytes(other) == _bytes(oz)


@pytest.mark.parametrize("content,says", [
    ("{\"format\": \"mlbri", "damaged (not JSON"),
    (json.dumps({"format": "other", "version": 1}), "not a tuning file"),
    (json.dumps({"format": "mlbridge-tuning", "version": 2, "llvm_major": MAJOR, "modules": {}}), "version 2"),
    (json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR - 1, "modules": {}}),
     f"written for LLVM {MAJOR - 1}, this is LLVM {MAJOR}"),
    (json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR,
                 "modules": {"x.c": {"pipeline": "function(no-such-pass)"}}}), "does not parse with this LLVM"),
    (json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR,
                 "modules": {"/abs/x.c": {"pipeline": "function(sroa)"}}}), "is not a relative path"),
    (json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR, "modules": {"x.c": {}}}),
     "has no \"pipeline\" string"),
    (json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR,
                 "modules": {"x.c": {"pipeline": "function(sroa)", "callees": {"f": 2}}}}),
     "callee 'f' needs the answer 0 or 1"),
    (json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": MAJOR,
                 "modules": {"x.c": {"pipeline": "function(sroa)", "callees": ["f"]}}}),
     "\"callees\" is not an object"),
])
def test_a_bad_tuning_file_stops_the_build_in_one_line(tmp_path, content, says):
    """Never half-applied: every compile that loads it refuses, even of a file it does not name."""
    p = tmp_path / "bad.json"
    p.write_text(content)
    r, out = _cc(tmp_path, "x.o", *LOAD, "-mllvm", f"-mlbridge-tuning={p}")
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert len(errors) == 1 and "mlbridge-tuning: " in errors[0] and says in errors[0], r.stderr
    assert not os.path.exists(out)


def _symbols(obj):
    r = subprocess.run([plugin_driver.tool("llvm-nm"), "--defined-only", obj], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    return {ln.split()[-1] for ln in r.stdout.splitlines() if ln.strip()}


def test_callee_answers_decide_inlining_inside_the_order_and_leave_no_attribute(tmp_path):
    """A tuning entry's "callees" (and -mlbridge-po-callees beside a pipeline, what the
    tuner's candidates use) keep every call of a callee out of line (0) or inline it
    (1) whichever inliner the order runs; the same answers both ways give the same
    bytes, and the attributes that carry them do not reach the output."""
    _, oz = _cc(tmp_path, "oz.o")
    assert not {"run", "pop"} & _symbols(oz)                 # -Oz inlines both
    answers = {"run": 0, "pop": 0, "no_such_function": 1}
    tf = _tuning(tmp_path, {"corpus/interp.c": {"pipeline": "default<Oz>", "callees": answers}})
    r, kept = _cc(tmp_path, "kept.o", *LOAD, "-mllvm", f"-mlbridge-tuning={tf}", "-mllvm", "-mlbridge-tuning-trace")
    assert r.returncode == 0, r.stderr
    assert "applied entry 'corpus/interp.c', 2 of 3 callee answers" in r.stderr
    assert {"run", "pop"} <= _symbols(kept)
    listed = tmp_path / "callees.txt"
    listed.write_text("".join(f"{k}\t{v}\n" for k, v in answers.items()))
    r, given = _cc(tmp_path, "given.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=default<Oz>", "-mllvm",
                   f"-mlbridge-po-callees={listed}")
    assert r.returncode == 0, r.stderr
    assert _bytes(given) == _bytes(kept)
    # a bare cgscc(inline), which asks no advisor, honours them too: 1 inlines every call of fetch
    step = "cgscc(inline)"
    _, plain = _cc(tmp_path, "plain.o", *LOAD, "-mllvm", f"-mlbridge-po-pipeline={step}")
    listed.write_text("fetch\t1\n")
    _, forced = _cc(tmp_path, "forced.o", *LOAD, "-mllvm", f"-mlbridge-po-pipeline={step}", "-mllvm",
                    f"-mlbridge-po-callees={listed}")
    assert "fetch" in _symbols(plain) and "fetch" not in _symbols(forced)
    # the source's noinline decides over an answer (trace is noinline in interp.c)
    listed.write_text("trace\t1\n")
    _, source_says = _cc(tmp_path, "source.o", *LOAD, "-mllvm", f"-mlbridge-po-pipeline={step}", "-mllvm",
                         f"-mlbridge-po-callees={listed}")
    assert "trace" in _symbols(source_says)
    # the attributes were taken back: run and pop carry no noinline after the order
    r, ir = _cc(tmp_path, "kept.ll", *LOAD, "-mllvm", f"-mlbridge-tuning={tf}", "-S", "-emit-llvm")
    text = open(ir).read()
    assert r.returncode == 0
    groups = dict(re.findall(r"^attributes (#\d+) = (.*)$", text, re.M))
    for name in ("run", "pop"):
        group = re.search(rf"^define internal .*@{name}\(.* (#\d+) \{{$", text, re.M).group(1)
        assert "noinline" not in groups[group] and "alwaysinline" not in groups[group], (name, groups[group])


def test_a_bad_callee_file_stops_the_build_in_one_line(tmp_path):
    listed = tmp_path / "callees.txt"
    listed.write_text("pop\t2\n")
    r, out = _cc(tmp_path, "x.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=default<Oz>", "-mllvm",
                 f"-mlbridge-po-callees={listed}")
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert r.returncode != 0 and not os.path.exists(out)
    assert len(errors) == 1 and "-mlbridge-po-callees: " in errors[0] and "line 1: expected NAME<TAB>0|1" in errors[0]
    r, out = _cc(tmp_path, "y.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=default<Oz>", "-mllvm",
                 f"-mlbridge-po-callees={tmp_path / 'missing.txt'}")
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert r.returncode != 0 and not os.path.exists(out)
    assert len(errors) == 1 and "-mlbridge-po-callees: cannot open " in errors[0]


def test_a_missing_tuning_file_stops_the_build(tmp_path):
    r, out = _cc(tmp_path, "x.o", *LOAD, "-mllvm", f"-mlbridge-tuning={tmp_path / 'nope.json'}")
    assert r.returncode != 0 and "cannot read it" in r.stderr and not os.path.exists(out)


# -- the tuner, on a program with a workload -------------------------------------------------

@pytest.fixture(scope="module")
def sha256():
    return next(b for b in kernel_benchmarks() if b.name == "sha256")


@pytest.fixture(scope="module")
def workload_corpus(sha256, tmp_path_factory):
    return benchmark_corpus(sha256, str(tmp_path_factory.mktemp("wl")), CLANG)


@pytest.fixture(scope="module")
def toolchain():
    return Toolchain.find(CLANG, plugin=PLUGIN, need_plugin=True)


@pytest.fixture(scope="module")
def tuned(workload_corpus, sha256, toolchain, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("tune") / "out")
    report = tune(workload_corpus, out, toolchain, TuneOptions(budget_minutes=0.25, jobs=2,
                                                                check=check_command(sha256)))
    return out, report


def test_the_tuned_program_prints_what_oz_prints_and_is_not_larger(tuned):
    out, report = tuned
    (prog,) = report["programs"]
    assert prog["check"] == "same output"
    assert prog["stored"] <= prog["oz_stored"] and report["total"]["programs_larger"] == 0
    for m in report["modules"]:
        assert m["ok"] and m["stored"] <= m["oz_stored"], m
        if m["kept"]:
            assert m["stored"] < m["oz_stored"] and m["order"]
    assert report["total"]["candidates"] > 4 * 3          # every module got its seed orders at least
    for name in ("tuning.json", "report.json", "report.md", "checkpoint.json"):
        assert os.path.isfile(os.path.join(out, name))
    assert not os.path.exists(os.path.join(out, "work"))   # scratch removed


def test_the_tuning_file_applied_to_a_plain_build(tuned, sha256, toolchain, tmp_path):
    """What users do: their own compile commands plus the flags; same bytes twice, right output."""
    out, report = tuned
    tf = read(os.path.join(out, "tuning.json"))
    assert tf.llvm_major == MAJOR and all(k.endswith(".c") and not k.startswith("/") for k in tf.modules)
    fl = flags(toolchain.plugin, os.path.join(out, "tuning.json"))
    exe1, got1 = build_with(sha256, str(tmp_path / "a"), CLANG, fl)
    exe2, got2 = build_with(sha256, str(tmp_path / "b"), CLANG, fl)
    assert got1 == got2 == sha256.expected
    for o in sorted(os.listdir(tmp_path / "a")):
        if o.endswith(".o"):
            assert _bytes(str(tmp_path / "a" / o)) == _bytes(str(tmp_path / "b" / o)), o   # deterministic


@pytest.fixture(scope="module")
def tuned_lto(workload_corpus, sha256, toolchain, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("tune-lto") / "out")
    report = tune(workload_corpus, out, toolchain, TuneOptions(setting="lto", budget_minutes=0.2, jobs=2,
                                                                check=check_command(sha256)))
    return out, report


def test_under_lto_each_programs_link_pipeline_is_searched(tuned_lto):
    """--setting lto: a unit of the search is a program, a candidate one full-LTO link;
    the seeds start from the link's own pipeline, so -Oz's link is among them."""
    out, report = tuned_lto
    (prog,) = report["programs"]
    (unit,) = report["modules"]
    assert unit["module"] == prog["program"] and unit["ok"]
    assert prog["check"] == "same output" and prog["stored"] <= prog["oz_stored"]
    assert unit["tried"] > 3 and unit["best_found"] <= unit["oz_stored"]
    cp = json.load(open(os.path.join(out, "checkpoint.json")))
    seen = cp["modules"][prog["program"]]["search"]["seen"]
    assert [24, 15] in seen                              # lto<O2>, then mergefunc: a seed
    tf = read(os.path.join(out, "tuning.json"))
    assert tf.modules == {} and set(tf.link) == ({prog["program"]} if unit["kept"] else set())


def test_a_link_pipeline_applies_by_link_flags(sha256, tmp_path):
    """What a user of an LTO tuning file adds to the link line: the program is built
    with that pipeline (a one-pass pipeline makes it larger; the link's own with
    mergefunc prints the same), and `tune flags --program` prints the flags."""
    tf = _tuning(tmp_path, {}, link={"sha256": {"pipeline": "lto<O2>,mergefunc"},
                                     "other": {"pipeline": "function(instsimplify)"}})
    env = dict(os.environ, MLBRIDGE_LLVM_PLUGIN=PLUGIN)
    r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", "flags", tf, "--program", "sha256"],
                       capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    ldflags = r.stdout.split()
    assert ldflags == ["-Xlinker", "'--lto-newpm-passes=lto<O2>,mergefunc'"] or \
        ldflags == ["-Xlinker", "--lto-newpm-passes=lto<O2>,mergefunc"]
    ldflags = flags_of(read(tf), "sha256")
    lto = ["-flto=full", "-Oz"]
    exe_plain, plain = build_with(sha256, str(tmp_path / "plain"), CLANG, lto, lto)
    exe_tuned, tuned = build_with(sha256, str(tmp_path / "tuned"), CLANG, lto, lto + ldflags)
    exe_one, one = build_with(sha256, str(tmp_path / "one"), CLANG, lto, lto + flags_of(read(tf), "other"))
    assert plain == tuned == one == sha256.expected
    # no cross-module optimization at the link (the modules are -Oz's already): larger
    assert os.path.getsize(exe_one) > os.path.getsize(exe_plain)
    r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", "flags", tf], capture_output=True, text=True,
                       timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "name one with --program" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_stopped_tune_resumes_and_a_damaged_checkpoint_is_left_as_it_is(tuned, workload_corpus, toolchain,
                                                                          tmp_path):
    out, report = tuned
    copy = str(tmp_path / "out")
    shutil.copytree(out, copy)
    before = json.load(open(os.path.join(copy, "checkpoint.json")))
    again = tune(workload_corpus, copy, toolchain, TuneOptions(budget_minutes=0.35, jobs=2))
    after = json.load(open(os.path.join(copy, "checkpoint.json")))
    assert after["elapsed"] > before["elapsed"] and again["total"]["candidates"] > report["total"]["candidates"]
    assert again["total"]["objects_stored"] <= report["total"]["objects_stored"]   # the best found is kept
    # spent budget: nothing more is searched
    done = tune(workload_corpus, copy, toolchain, TuneOptions(budget_minutes=0.35, jobs=2))
    assert done["total"]["candidates"] == again["total"]["candidates"]
    cp = os.path.join(copy, "checkpoint.json")
    with open(cp, "w") as f:
        f.write("{\"format\": \"mlbridge-tune-checkpoint\", \"vers")
    digest = hashlib.sha256(_bytes(cp)).hexdigest()
    with pytest.raises(TuneError, match="damaged checkpoint") as e:
        tune(workload_corpus, copy, toolchain, TuneOptions(budget_minutes=1, jobs=2))
    assert cp in str(e.value) and "\n" not in str(e.value)
    assert hashlib.sha256(_bytes(cp)).hexdigest() == digest


def test_a_changed_output_is_a_miscompile_and_goes_back_to_oz(workload_corpus, toolchain, tmp_path):
    """Fault injection: a check whose output is the linked file's checksum changes under
    any tuned module, as a miscompile's would: bisection sends every one back to -Oz."""
    report = tune(workload_corpus, str(tmp_path / "out"), toolchain,
                  TuneOptions(budget_minutes=0.1, jobs=2, check="cksum < {program}"))
    (prog,) = report["programs"]
    assert prog["check"].startswith("miscompile in ") and prog["stored"] == prog["oz_stored"]
    assert report["total"]["tuned"] == 0
    assert all(m["reverted"] is None or m["reverted"].startswith("miscompile") or not m["kept"]
               for m in report["modules"])
    assert read(str(tmp_path / "out" / "tuning.json")).modules == {}


def test_candidates_that_time_out_are_recorded_and_never_kept(workload_corpus, toolchain, tmp_path):
    report = tune(workload_corpus, str(tmp_path / "out"), toolchain,
                  TuneOptions(budget_minutes=0.05, jobs=2, timeout=0.001, setting="objects"))
    t = report["total"]
    assert t["candidates"] > 0 and t["failed_candidates"] == t["candidates"]
    assert t["tuned"] == 0 and t["objects_stored"] == t["objects_oz_stored"]


def test_a_trace_compile_that_fails_means_no_callee_search(workload_corpus, toolchain, tmp_path, monkeypatch):
    """The callees come from one traced -Oz compile: on chacha20 it names chacha20_block;
    when that compile fails (fault injected), the module gets no callee search and the
    trace file is gone."""
    t = tune_run.Tuner(workload_corpus, str(tmp_path / "o"), toolchain, TuneOptions(setting="objects", jobs=1))
    os.makedirs(t.work)
    os.makedirs(t.objects)
    u = next(x for x in t.units if "chacha20" in x.name)
    t._baseline(u)
    assert "chacha20_block" in dict(t._questions(u))
    monkeypatch.setattr(tune_run, "compile_module", lambda *a, **k: CompiledModule(u.name, ok=False, error="crashed"))
    assert t._questions(u) == []
    assert not [f for f in os.listdir(t.work) if f.startswith("trace-")]


def test_lto_links_that_fail_are_recorded_and_never_kept(workload_corpus, toolchain, tmp_path, monkeypatch):
    """Fault injection under --setting lto: every candidate link fails (the -Oz link
    does not): each is a failed candidate, nothing is kept, the program is -Oz's."""
    real = tune_run.link_program

    def failing(*a, link_args=(), **k):
        if link_args:
            return CompiledModule("sha256", ok=False, error="the link crashed")
        return real(*a, link_args=link_args, **k)
    monkeypatch.setattr(tune_run, "link_program", failing)
    report = tune(workload_corpus, str(tmp_path / "out"), toolchain,
                  TuneOptions(setting="lto", budget_minutes=0.05, jobs=1))
    t = report["total"]
    assert t["candidates"] > 0 and t["failed_candidates"] == t["candidates"] and t["tuned"] == 0
    (prog,) = report["programs"]
    assert prog["stored"] == prog["oz_stored"] and read(str(tmp_path / "out" / "tuning.json")).link == {}


def test_the_command_line(workload_corpus, tmp_path):
    env = dict(os.environ, MLBRIDGE_LLVM_PLUGIN=PLUGIN)
    r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", workload_corpus, "-o", str(tmp_path / "o"),
                        "--budget-minutes", "0.05", "--setting", "objects", "--quiet"], capture_output=True,
                       text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "Objects: stored" in r.stdout and "tuning file:" in r.stdout
    r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", "flags", str(tmp_path / "o" / "tuning.json")],
                       capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "-mlbridge-tuning=" in r.stdout and f"-fpass-plugin={PLUGIN}" in r.stdout
    r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", workload_corpus, "-o", str(tmp_path / "p"),
                        "--check", "true"], capture_output=True, text=True, timeout=60, env=env,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stderr.strip() == "mlbridge: error: --check must name the linked program as " \
                                                    "{program}"
    assert not os.path.exists(tmp_path / "p")


def test_corpus_evaluate_scores_a_tuning_file_as_the_tuner_did(tuned, workload_corpus):
    """Phase ordering in the workflow: `corpus evaluate --problem phase-ordering` in
    stored bytes, per module and linked, agrees with the tune's own report."""
    out, report = tuned
    env = dict(os.environ, MLBRIDGE_LLVM_PLUGIN=PLUGIN)

    def evaluate(*argv):
        r = subprocess.run([sys.executable, "-m", "mlbridge", "corpus", "evaluate", workload_corpus, "--problem",
                            "phase-ordering", "--json", "-q", *argv], capture_output=True, text=True, timeout=600,
                           env=env, stdin=subprocess.DEVNULL)
        return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr
    tf = "tuning:" + os.path.join(out, "tuning.json")
    rc, d, err = evaluate("--policy", tf)
    assert rc == 0, err
    assert d["unit"] == "stored bytes"
    assert d["total"]["baseline_score"] == report["total"]["objects_oz_stored"]
    assert d["total"]["policy_score"] == report["total"]["objects_stored"]
    rc, d, err = evaluate("--policy", tf, "--setting", "linked")
    assert rc == 0, err
    (prog,) = report["programs"]
    assert (d["total"]["baseline_score"], d["total"]["policy_score"]) == (prog["oz_stored"], prog["stored"])
    # what phase ordering does not have is refused before any compile, in one line
    for argv, says in ((["--log", "L"], "--log: the phase-ordering problem writes no training logs"),
                       (["--setting", "lto"], "--setting lto: the phase-ordering problem is scored in objects, "
                                              "linked only")):
        rc, d, err = evaluate("--policy", tf, *argv)
        assert rc == 2 and d is None and err.strip().startswith("mlbridge: error: " + says), err
    # a pipeline this LLVM cannot parse fails every module: never an -Oz size
    rc, d, err = evaluate("--policy", "pipeline:function(no-such-pass)")
    assert rc == 1 and d["total"]["ok"] == 0 and d["total"]["failed"] == len(report["modules"])
    assert all(m["policy_score"] is None for m in d["modules"])


def test_a_check_that_hangs_is_bounded_and_named(workload_corpus, toolchain, tmp_path):
    """A --check command past its bound on -Oz's own build stops the tune in one
    line (nothing is judged by a check that gave no answer); no tuning file."""
    with pytest.raises(TuneError) as e:
        tune(workload_corpus, str(tmp_path / "out"), toolchain,
             TuneOptions(budget_minutes=0.02, jobs=2, check="sleep 61 & wait # {program}", check_timeout=0.5))
    assert "the check of -Oz's build failed" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "out" / "tuning.json").exists()
    # the check's own children were killed with it, not only its shell: no `sleep 61` left behind
    left = subprocess.run(["pgrep", "-fx", "sleep 61"], capture_output=True, text=True, timeout=30)
    assert left.stdout.strip() == "", left.stdout
