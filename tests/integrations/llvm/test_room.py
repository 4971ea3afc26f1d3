"""The plugin's joint decisions and trace (-mlbridge-inline-callees / -trace) and
the room search built on them (problems/inlining/room.py), with clang and ld.lld: the
search starts from exactly -Oz, finds room on the small corpus (a search that
makes no progress fails here), reuses unchanged modules, and resumes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import PLUGIN, ROOT, demo_lib

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import CompileOptions, Policy, compile_module  # noqa: E402
from mlbridge.corpus.settings import Setting  # noqa: E402
from mlbridge.problems.inlining.room import RoomSearch, read_trace  # noqa: E402

LIB = demo_lib()


@pytest.fixture(scope="module")
def corpus(lib_corpus) -> str:
    return lib_corpus


def compile_with(corpus, toolchain, tmp_path, lines: str):
    """strhash.c under a callee file, traced."""
    callees = tmp_path / "callees.txt"
    callees.write_text(lines)
    trace = tmp_path / "trace.txt"
    c = layout.load(corpus)
    (m,) = [m for m in c.modules if m.name.startswith("strhash")]
    opts = CompileOptions(environ=dict(os.environ, MLBRIDGE_INLINE_TRACE=str(trace)))
    r = compile_module(m, Policy.callees(str(callees)), str(tmp_path), toolchain, opts)
    return r, read_trace(str(trace)) if trace.exists() else {}


def test_callee_file_sets_every_call_and_the_trace_shows_it(corpus, toolchain, tmp_path):
    (tmp_path / "a").mkdir()
    base, calls = compile_with(corpus, toolchain, tmp_path / "a", "")
    assert base.ok, base.error
    oz = compile_module([m for m in layout.load(corpus).modules if m.name.startswith("strhash")][0],
                        Policy.parse("oz"), str(tmp_path), toolchain)
    assert base.text_bytes == oz.text_bytes          # no callee listed: exactly -Oz
    assert base.decisions == sum(y + n for y, n in calls.values()) > 0
    inlined = [c for c, (y, n) in calls.items() if y]
    assert inlined
    lines = "".join(f"{c}\t0\n" for c in inlined)
    (tmp_path / "b").mkdir()
    forced, calls2 = compile_with(corpus, toolchain, tmp_path / "b", lines)
    assert forced.ok, forced.error
    assert all(calls2.get(c, (0, 0))[0] == 0 for c in inlined)   # every call of them declined
    assert forced.text_bytes != base.text_bytes


@pytest.mark.parametrize("lines", ["f\t2\n", "no tab\n", "\tf\n1\n"])
def test_malformed_callee_file_is_a_warning_and_a_failure(corpus, toolchain, tmp_path, lines):
    r, _ = compile_with(corpus, toolchain, tmp_path, lines)
    assert not r.ok and "the policy was not used" in r.error and "-mlbridge-inline-callees" in r.error


def test_room_search_finds_room_and_resumes(corpus, toolchain, tmp_path):
    c = layout.load(corpus)
    out = str(tmp_path / "room")
    os.makedirs(out)
    first = RoomSearch(c, LIB, Setting("lto"), toolchain, out, jobs=2)
    st = first.run(budget=4)
    assert st.base == st.oz and len(st.tried) == 4        # the plugin without forces is -Oz
    builds = st.builds
    again = RoomSearch(c, LIB, Setting("lto"), toolchain, out, jobs=2)
    assert again.state.tried == st.tried                 # resumed, not restarted
    st = again.run(budget=40)
    assert len(st.tried) > 4 and st.builds == builds + len(st.tried) - 4
    assert st.best < st.oz and st.kept, st.tried          # the search made progress
    assert again.cache.hits > 0                          # unchanged modules were not rebuilt
    kept_sizes = [t[2] for t in st.tried if t[3]]
    assert kept_sizes == sorted(kept_sizes, reverse=True) and kept_sizes[-1] == st.best


def test_cli_room_table_and_damaged_state(corpus, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = tmp_path / "r"

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "mlbridge", "train", "room", corpus, "-o", str(out),
                               "--setting", "linked", "--budget", "2", "--start", "oz", "--plugin", PLUGIN,
                               "--quiet", *extra],
                              capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    p = run("--json")
    assert p.returncode == 0, p.stderr
    (row,) = json.loads(p.stdout)["programs"]
    assert row["program"] == "libdemo.so" and row["tried"] == 2 and row["oz"] > 0
    assert json.load(open(out / "room.json"))["programs"][0]["tried"] == 2
    state = out / "libdemo.so.linked.oz.json"
    state.write_text("{ truncated")
    p = run()
    assert p.returncode == 1 and "damaged" in p.stderr and str(state) in p.stderr and "Traceback" not in p.stderr
    assert state.read_text() == "{ truncated"


def test_learning_from_the_search_reproduces_its_gain(corpus, tmp_path):
    """train room --fit: the best build's decisions, logged in every pre-link
    compile and in the linker, fitted by one policy; that policy, deployed
    in-process under LTO, is smaller than -Oz (fails when nothing was learned)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = tmp_path / "fit"
    p = subprocess.run([sys.executable, "-m", "mlbridge", "train", "room", corpus, "-o", str(out), "--setting", "lto",
                        "--budget", "12", "--start", "oz", "never", "--fit", "--plugin", PLUGIN, "--quiet", "--json"],
                       capture_output=True, text=True, timeout=900, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert {r["start"] for r in data["programs"]} == {"oz", "never"}
    assert data["fit"]["decisions"] > 0 and os.path.exists(out / "policy.onnx")
    best = min(r["best"] for r in data["programs"])
    p = subprocess.run([sys.executable, "-m", "mlbridge.cli.corpus_evaluate", corpus, "--policy", str(out / "policy.onnx"),
                        "--setting", "lto", "--plugin", PLUGIN, "--no-cache", "-q", "--json"], capture_output=True,
                       text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    (prog,) = json.loads(p.stdout)["modules"]
    assert prog["policy_text"] < prog["oz_text"] and best < prog["oz_text"], (prog, best)


def test_room_search_in_thinlto(corpus, toolchain, tmp_path):
    """ThinLTO: the callee file reaches every backend thread and the trace
    collects their questions; the search runs and keeps only improvements."""
    c = layout.load(corpus)
    search = RoomSearch(c, LIB, Setting("thinlto"), toolchain, str(tmp_path), jobs=2)
    st = search.run(budget=12)
    assert st.base == st.oz and len(st.tried) == 12
    assert st.best <= st.oz and all(t[2] < st.oz for t in st.tried if t[3])
