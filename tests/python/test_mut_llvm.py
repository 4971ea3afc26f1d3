"""Issue 26, mutation testing of llvm/ (docs/testing.md, "Mutation testing"):
interactive.py, log_export.py, log_summary.py and regalloc_score.py in the
test process, without a real LLVM: the commands each helper builds (run
against small stand-in tools written here), the IR readers, the one-line
failure messages, the policy recorder; the log export's pieces (reward modes,
sinks, what a failed export leaves behind) and `log show`'s summary; the
register-allocation score's MIR, MBFI and assembly readers, and score_module
driven by a stand-in llc."""
from __future__ import annotations

import json
import os
import stat
import sys
import textwrap

import numpy as np
import pytest

from mlbridge.core.errors import ArgumentError, MLBridgeError, ProtocolError
from mlbridge.core.spec import TensorSpec
from mlbridge.formats import tf_example, tfrecord
from mlbridge.llvm import interactive as ia
from mlbridge.llvm import log_export as le
from mlbridge.llvm import regalloc_score as rs
from mlbridge.llvm.log_summary import summarize
from mlbridge.llvm.training_log import read_training_log, relative_reward, set_log_reward
from mlbridge.transport.supervise import CompileResult
from test_training_log import SMALL, small_row, spec, write_log


def script(path, body):
    """An executable stand-in for an LLVM tool: a Python script."""
    path.write_text(f"#!{sys.executable}\nimport sys, os\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


# ---- interactive: failure messages -------------------------------------------------

def test_the_error_line_wins_then_the_last_line_that_is_not_a_stack_dump():
    assert ia._last_stderr_line(b"warning: a\nLLVM ERROR: broken\nlater\n") == "LLVM ERROR: broken"
    assert ia._last_stderr_line(b"warning: a\nopt-19: Error reading\n") == "opt-19: Error reading"
    # "errors" is not the word "error"
    assert ia._last_stderr_line(b"no errors here\nlast\n") == "last"
    dump = (b"first\nsecond\nStack dump:\n0.\tProgram arguments: llc\n#0 0x1 in foo\n"
            b"1.\tRunning pass\nPLEASE submit a bug report\n")
    assert ia._last_stderr_line(dump) == "second"
    assert ia._last_stderr_line(b"  padded  \n\n   \n") == "padded"
    assert ia._last_stderr_line(b"") == "" and ia._last_stderr_line(b"Stack dump:\n") == ""
    assert ia._last_stderr_line(b"x" * 400 + b"\n") == "x" * 300
    assert ia._last_stderr_line(b"error: " + b"y" * 400) == "error: " + "y" * 293
    assert ia._last_stderr_line(b"\xff bad bytes\n") == "\ufffd bad bytes"


def test_check_result_says_how_the_compiler_ended_in_one_line():
    ok = CompileResult(0, b"", b"")
    assert ia.check_result(ok, ["opt-19"], 5.0) is ok
    failed = CompileResult(1, b"", b"warning: w\nLLVM ERROR: bad IR\n")
    with pytest.raises(ia.CompilerFailed) as e:
        ia.check_result(failed, ["/usr/bin/opt-19", "-S"], 5.0, 3)
    assert str(e.value) == "opt-19 failed with exit status 1: LLVM ERROR: bad IR"
    assert e.value.returncode == 1 and e.value.stderr == failed.stderr and e.value.result is failed
    assert e.value.timed_out is False and isinstance(e.value, MLBridgeError)
    # a session ran: the decisions answered are said; no stderr: no colon
    failed = CompileResult(-9, b"", b"", sessions=[object()])
    with pytest.raises(ia.CompilerFailed) as e:
        ia.check_result(failed, ["llc"], 5.0, 3)
    assert str(e.value) == "llc was killed by signal 9 during its session, after 3 decision(s)"
    timed = CompileResult(-9, b"", b"", timed_out=True)
    with pytest.raises(ia.CompilerFailed) as e:
        ia.check_result(timed, [], 2.5)
    assert str(e.value) == "compiler did not finish within 2.5 s and was killed" and e.value.timed_out
    # a result timed out while exiting 0 is no success either
    with pytest.raises(ia.CompilerFailed, match="within 1 s"):
        ia.check_result(CompileResult(0, b"", b"", timed_out=True), ["opt"], 1)


def test_compiler_failed_takes_timed_out_from_its_result():
    assert ia.CompilerFailed("x").timed_out is False
    assert ia.CompilerFailed("x", timed_out=True).timed_out is True
    r = CompileResult(None, b"", b"", timed_out=True)
    assert ia.CompilerFailed("x", result=r).timed_out is True
    e = ia.CompilerFailed("x", result=CompileResult(1, b"", b""))
    assert e.timed_out is False and e.returncode is None and e.stderr == b""


# ---- interactive: finding tools --------------------------------------------------------

def test_find_tool_the_given_path_the_tools_folder_and_the_suffix(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script(bindir / "opt-7", "")
    script(bindir / "opt", "")
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv(ia.TOOLS_DIR_ENV, raising=False)
    monkeypatch.setenv(ia.SUFFIX_ENV, "-7")
    assert ia.find_tool("opt") == str(bindir / "opt-7")
    monkeypatch.setenv(ia.SUFFIX_ENV, "")
    assert ia.find_tool("opt") == str(bindir / "opt")
    monkeypatch.delenv(ia.SUFFIX_ENV)
    with pytest.raises(ia.LLVMNotFound) as e:
        ia.find_tool("opt")
    assert str(e.value) == ("opt-19 is not on PATH (set MLBRIDGE_LLVM_TOOLS_DIR or MLBRIDGE_LLVM_SUFFIX, "
                            "or give the tool's path)")
    assert not ia.have_tool("opt") and isinstance(e.value, FileNotFoundError)
    script(bindir / "opt-19", "")
    assert ia.have_tool("opt") and ia.tool("opt") == str(bindir / "opt-19")
    # a tools folder: its unsuffixed tool first, when it is executable
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "opt").write_text("not executable")
    monkeypatch.setenv(ia.TOOLS_DIR_ENV, str(tools))
    assert ia.find_tool("opt") == str(bindir / "opt-19")
    script(tools / "opt", "")
    assert ia.find_tool("opt") == str(tools / "opt")
    # a given tool: as an absolute path, or not found (in one line)
    monkeypatch.chdir(tmp_path)
    assert ia.find_tool("opt", "bin/opt-7") == str(bindir / "opt-7")
    assert ia.find_tool("x", "opt-7") == str(bindir / "opt-7")
    with pytest.raises(ia.LLVMNotFound, match="^nope-1 is not on PATH$"):
        ia.find_tool("opt", "nope-1")
    # tool(): an explicit path as it is, unchecked
    assert ia.tool("opt", "rel/opt") == "rel/opt"


# ---- interactive: command lines ----------------------------------------------------------

def test_command_lines_put_the_flags_the_channel_and_the_files_in_order():
    assert ia.inline_command("in.ll", "out.ll", opt="/o/opt") == [
        "/o/opt", "-passes=scc-oz-module-inliner", "-enable-ml-inliner=release",
        "-inliner-interactive-channel-base={base}", "in.ll", "-S", "-o", "out.ll"]
    assert ia.inline_command("in.ll", "out.ll", opt="opt", include_default=True, extra_args=["-x"]) == [
        "opt", "-passes=scc-oz-module-inliner", "-enable-ml-inliner=release",
        "-inliner-interactive-channel-base={base}", "-inliner-interactive-include-default", "-x",
        "in.ll", "-S", "-o", "out.ll"]
    assert ia.evict_command("in.ll", llc="llc", extra_args=("-O3",)) == [
        "llc", "-regalloc=greedy", "-regalloc-enable-advisor=release",
        "-regalloc-evict-interactive-channel-base={base}", "-O3", "in.ll", "-o", os.devnull]
    assert ia.priority_command("in.ll", "o.s", llc="llc") == [
        "llc", "-regalloc=greedy", "-regalloc-enable-priority-advisor=release",
        "-regalloc-priority-interactive-channel-base={base}", "in.ll", "-o", "o.s"]


def test_ir_is_made_with_the_flags_that_keep_the_inliner_asking(tmp_path):
    # a stand-in clang writes its arguments into the output file
    clang = script(tmp_path / "clang", """
        args = sys.argv[1:]
        open(args[args.index("-o") + 1], "w").write(" ".join(args))
    """)
    out = ia.make_inlinable_ir(tmp_path / "a.c", tmp_path / "a.ll", clang=clang, extra_args=["-DX"])
    assert out == str(tmp_path / "a.ll")
    assert open(out).read() == f"-O1 -Xclang -disable-llvm-passes -emit-llvm -S -DX {tmp_path / 'a.c'} -o {out}"
    out = ia.make_optimized_ir(str(tmp_path / "a.c"), str(tmp_path / "b.ll"), clang=clang)
    assert open(out).read() == f"-O2 -emit-llvm -S {tmp_path / 'a.c'} -o {out}"
    out = ia.make_optimized_ir(str(tmp_path / "a.c"), str(tmp_path / "c.ll"), clang=clang, level="-O3")
    assert open(out).read().startswith("-O3 -emit-llvm")
    failing = script(tmp_path / "bad-clang", "sys.exit(1)")
    with pytest.raises(Exception) as e:
        ia.make_inlinable_ir(tmp_path / "a.c", tmp_path / "d.ll", clang=failing)
    assert e.value.returncode == 1


def test_text_size_sums_every_text_section(tmp_path):
    llc = script(tmp_path / "llc", """
        args = sys.argv[1:]
        assert args[0] == "-filetype=obj" and args[2] == "-o", args
        open(args[3], "w").write("obj of " + args[1])
    """)
    size = script(tmp_path / "llvm-size", """
        assert sys.argv[1] == "-A", sys.argv
        assert open(sys.argv[2]).read().startswith("obj of "), sys.argv
        print(sys.argv[2] + "  :\\nsection  size  addr\\n.text  100  0\\n.data 7 0\\n"
              ".text.startup 20 0\\n.rodata.text 5 0\\nTotal 132\\n")
    """)
    assert ia.text_size(str(tmp_path / "m.ll"), llc=llc, llvm_size=size) == 120
    assert os.path.exists(tmp_path / "m.ll.o")
    assert ia.text_size(str(tmp_path / "m.ll"), obj_path=str(tmp_path / "x.o"), llc=llc, llvm_size=size) == 120
    assert os.path.exists(tmp_path / "x.o")


# ---- interactive: reading textual IR ---------------------------------------------------------

IR = """\
define internal i32 @leaf(i32 %x) #0 {
entry:
  %a = add i32 %x, 1
  ret i32 %a
}

define dso_local i32 @"quoted name"(i32 %x) {
  %r = call i32 @leaf(i32 %x)
  call void @llvm.lifetime.start.p0(i64 4, ptr null)
  %s = tail call i32 @ext(i32 %r)
  ret i32 %s
}

declare i32 @ext(i32)

define i32 @rec(i32 %n) noinline {
  %c = call i32 @rec(i32 %n) ; a comment
  %d = invoke i32 @"quoted name"(i32 %c) to label %ok unwind label %bad
ok:
  switch i32 %d, label %ok [
    i32 0, label %ok
    i32 1, label %ok
  ]
bad:
  ret i32 %d
}

define i32 @a(i32 %n) {
  %x = call i32 @b(i32 %n)
  ret i32 %x
}
define i32 @b(i32 %n) {
  %x = call i32 @a(i32 %n)
  %y = call i32 @leaf(i32 %x)
  ret i32 %y
}

attributes #0 = { noinline nounwind }
"""


def test_ir_readers_find_definitions_calls_and_recursion():
    d = ia.defined_functions(IR)
    assert d == {"leaf": {"noinline": True}, "quoted name": {"noinline": False}, "rec": {"noinline": True},
                 "a": {"noinline": False}, "b": {"noinline": False}}
    assert ia.call_sites(IR) == [("quoted name", "leaf"), ("quoted name", "llvm.lifetime.start.p0"),
                                 ("quoted name", "ext"), ("rec", "rec"), ("rec", "quoted name"),
                                 ("a", "b"), ("b", "a"), ("b", "leaf")]
    assert ia.recursive_functions(IR) == {"rec", "a", "b"}
    # defined callees only: leaf twice, rec, quoted name, b, a
    assert ia.count_calls(IR) == 6
    # inlinable: not to a noinline function (leaf, rec) nor a recursive one (rec, a, b)
    assert ia.count_calls(IR, inlinable=True) == 1
    # instructions: 2 + 4 + (call, invoke, switch, ret) + 2 + 3; a switch's cases are not
    assert ia.count_instructions(IR) == 15
    assert ia.count_instructions("declare void @f()\n") == 0 and ia.defined_functions("") == {}


def test_a_group_attribute_other_than_noinline_does_not_mark_it():
    ir = ("define void @f() #1 {\n  ret void\n}\ndefine void @g() #2 {\n  ret void\n}\n"
          "attributes #1 = { nounwind }\nattributes #2 = { alwaysinline noinline }\n")
    assert ia.defined_functions(ir) == {"f": {"noinline": False}, "g": {"noinline": True}}
    # a call outside any body is not a call site
    assert ia.call_sites("@g = global ptr @f\n  call void @f()\n") == []


def test_recursion_through_a_longer_cycle_and_a_self_loop_beside_it():
    ir = "".join(f"define void @{a}() {{\n  call void @{b}()\n  call void @{c}()\n}}\n"
                 for a, b, c in [("p", "q", "z"), ("q", "r", "z"), ("r", "p", "z"), ("z", "z", "ext"),
                                 ("s", "p", "p")])
    assert ia.recursive_functions(ir) == {"p", "q", "r", "z"}


# ---- interactive: the recorder ---------------------------------------------------------------

class _Session:
    def __init__(self, *advice):
        self.advice = list(advice)


class _Obs:
    def __init__(self, session):
        self.session = session


def test_recorder_keeps_each_answer_as_a_python_scalar():
    seen = []

    class Policy:
        def __init__(self):
            self.answers = iter([1, np.int64(0), np.float32(2.0), True, 5])

        def __call__(self, obs):
            return next(self.answers)

        def on_session_start(self, s):
            seen.append(("start", s))

        def on_context(self, c):
            seen.append(("context", c))

    rec = ia._Recorder(Policy())
    s = _Session(TensorSpec("inlining_decision", "int64_t", (1,)))
    rec.on_session_start(s)
    assert seen == [("start", s)]
    rec.on_context("ctx")
    assert seen[-1] == ("context", "ctx") and not hasattr(rec, "on_session_end")
    outs = [rec(_Obs(s)) for _ in range(5)]
    assert rec.decisions == [1, 0, 2, 1, 5]
    assert [type(d) for d in rec.decisions] == [int] * 5
    assert outs[0] == 1 and outs[1] == 0 and outs[2] == 2.0


def test_recorder_on_float_bool_and_several_advice_tensors():
    rec = ia._Recorder(lambda obs: obs.answer)
    f = _Session(TensorSpec("priority", "float", (1,)))
    rec.on_session_start(f)
    for a in (1.5, 2, np.float64(0.25)):
        o = _Obs(f)
        o.answer = a
        rec(o)
    assert rec.decisions == [1.5, 2.0, 0.25] and [type(d) for d in rec.decisions] == [float] * 3
    # bool advice goes the general path: a Python bool
    b = _Session(TensorSpec("yes", "bool", (1,)))
    o = _Obs(b)
    o.answer = True
    got = rec(o)      # a session the server never announced: taken up here
    assert rec.decisions[-1] is True and got.dtype == np.bool_
    # two advice tensors: a tuple of copies
    two = _Session(TensorSpec("x", "int64_t", (2,)), TensorSpec("y", "float", (1,)))
    rec.on_session_start(two)
    o = _Obs(two)
    o.answer = ([1, 2], [0.5])
    got = rec(o)
    d = rec.decisions[-1]
    assert isinstance(d, tuple) and d[0].tolist() == [1, 2] and d[1].tolist() == [0.5]
    assert isinstance(got, tuple) and got[0] is not d[0]
    # one tensor of two elements: its array
    vec = _Session(TensorSpec("v", "int64_t", (2,)))
    rec.on_session_start(vec)
    o = _Obs(vec)
    o.answer = [3, 4]
    got = rec(o)
    assert rec.decisions[-1][0].tolist() == [3, 4] and got.tolist() == [3, 4]


def test_recorder_takes_up_a_new_session_even_for_an_exact_answer():
    rec = ia._Recorder(lambda obs: obs.answer)
    i = _Session(TensorSpec("a", "int64_t", (1,)))
    f = _Session(TensorSpec("b", "double", (1,)))
    rec.on_session_start(i)
    o = _Obs(f)
    o.answer = 0.5
    assert rec(o) == 0.5 and rec.decisions == [0.5]
    o = _Obs(f)
    o.answer = 3         # an int for a double: recorded as the float it is
    rec(o)
    assert rec.decisions == [0.5, 3.0] and type(rec.decisions[-1]) is float


def test_a_compiler_that_fails_without_a_session_is_one_line_with_no_decisions(tmp_path):
    false = script(tmp_path / "opt", "sys.stderr.write('opt: error: no such file\\n'); sys.exit(3)")
    result, decisions = ia.inline(str(tmp_path / "in.ll"), lambda o: 0, out_path=str(tmp_path / "o.ll"),
                                  opt=false, timeout=30)
    assert result.returncode == 3 and not result.ok and decisions == []
    with pytest.raises(ia.CompilerFailed) as e:
        ia.regalloc_evict(str(tmp_path / "in.ll"), lambda o: 0, llc=false, check=True, timeout=30)
    assert str(e.value) == "opt failed with exit status 3: opt: error: no such file"
    assert e.value.decisions == []
    with pytest.raises(ia.CompilerFailed):
        ia.regalloc_priority(str(tmp_path / "in.ll"), lambda o: 0, llc=false, check=True, timeout=30)
    with pytest.raises(ia.CompilerFailed):
        ia.inline(str(tmp_path / "in.ll"), lambda o: 0, out_path=str(tmp_path / "o.ll"), opt=false,
                  check=True, timeout=30)
    ok = script(tmp_path / "llc", "")
    result, decisions = ia.regalloc_priority(str(tmp_path / "in.ll"), lambda o: 0, llc=ok, check=True,
                                             timeout=30)
    assert result.ok and decisions == []


def test_an_error_of_the_run_itself_carries_the_decisions(tmp_path):
    with pytest.raises(OSError) as e:
        ia.regalloc_evict(str(tmp_path / "in.ll"), lambda o: 0, llc=str(tmp_path / "missing"), timeout=30)
    assert e.value.decisions == []


# ---- log_summary ---------------------------------------------------------------------------

def test_summary_of_a_log_with_two_contexts_and_sizes(tmp_path):
    p = write_log(str(tmp_path / "x.log"), SMALL, [("f", [small_row(0), small_row(1), small_row(3)]),
                                                   ("g", [small_row(2)]), ("h", [])])
    set_log_reward(p, 90, 100)
    s = summarize(p)
    assert s["log"] == p
    assert s["features"][1] == {"name": "b", "type": "float", "shape": [2]}
    assert [f["name"] for f in s["features"]] == ["a", "b", "inlining_default", "inlining_decision"]
    assert s["score"] == spec("delta_size") and s["advice"] == spec("inlining_decision")
    assert s["contexts"] == [{"name": "f", "observations": 3}, {"name": "g", "observations": 1},
                             {"name": "h", "observations": 0}]
    assert s["observations"] == 4
    # decisions i % 2 over i = 0, 1, 3, 2; the default is always 1
    assert s["decisions"] == {"inlining_decision": {"0": 2, "1": 2}, "inlining_default": {"1": 4},
                              "agree_with_default": 2}
    assert s["reward"] == {"delta_size": -10, "policy_size": 90, "baseline_size": 100,
                           "relative": relative_reward(90, 100)}
    assert s["ml_compiler_opt_usable"] is False
    json.dumps(s)


def test_summary_of_a_log_without_score_advice_or_decisions(tmp_path):
    feats = [spec("a"), spec("inlining_decision", shape=(2,))]
    p = write_log(str(tmp_path / "x.log"), feats, [("", [np.arange(3, dtype=np.int64).tobytes()])],
                  score=False, advice=False)
    s = summarize(p)
    assert s["score"] is None and s["advice"] is None
    assert s["decisions"] == {"inlining_decision": {"1": 1, "2": 1}}       # no default: nothing to agree with
    assert s["reward"] == {"delta_size": None} and s["ml_compiler_opt_usable"] is True
    # a default of another shape than the decision's: no agreement count either
    feats = [spec("inlining_default", shape=(2,)), spec("inlining_decision")]
    p = write_log(str(tmp_path / "y.log"), feats, [("", [np.arange(3, dtype=np.int64).tobytes()])])
    s = summarize(p)
    assert s["decisions"] == {"inlining_default": {"0": 1, "1": 1}, "inlining_decision": {"2": 1}}
    # one context without steps: not usable
    p = write_log(str(tmp_path / "z.log"), SMALL, [("", [])])
    s = summarize(p)
    assert s["ml_compiler_opt_usable"] is False and s["reward"] == {"delta_size": 0}
    assert s["decisions"] == {"inlining_decision": {}, "inlining_default": {}, "agree_with_default": 0}


# ---- log_export ------------------------------------------------------------------------------

def small_log(tmp_path, name="x.log", contexts=None, sizes=None):
    p = write_log(str(tmp_path / name), SMALL, contexts or [("f", [small_row(0), small_row(1)]),
                                                            ("g", [small_row(2)])])
    if sizes:
        set_log_reward(p, *sizes)
    return p


def test_module_reward_in_each_mode(tmp_path):
    p = small_log(tmp_path)
    log = read_training_log(p)
    with pytest.raises(ProtocolError) as e:
        le.module_reward(log, "relative")
    assert str(e.value).startswith(f"{p}: no sizes for a relative reward (x.log.reward.json is written")
    assert le.module_reward(log, "bytes") == 0.0
    set_log_reward(p, 80, 100)
    log = read_training_log(p)
    assert le.module_reward(log, "relative") == relative_reward(80, 100)
    assert le.module_reward(log, "bytes") == 20.0 and type(le.module_reward(log, "bytes")) is float
    with pytest.raises(ValueError, match="reward mode must be relative or bytes, got 'auto'"):
        le.module_reward(log, "auto")
    q = write_log(str(tmp_path / "n.log"), SMALL, [("", [small_row(0)])], score=False)
    assert le.module_reward(read_training_log(q), "bytes") == 0.0


def test_auto_reward_is_relative_only_when_every_log_has_sizes(tmp_path):
    a = small_log(tmp_path, "a.log", sizes=(1, 2))
    b = small_log(tmp_path, "b.log")
    assert le.choose_reward_mode([a], "auto") == "relative"
    assert le.choose_reward_mode([a, b], "auto") == "bytes"
    assert le.choose_reward_mode([b], "relative") == "relative"
    assert le.choose_reward_mode([a], "bytes") == "bytes"


def test_feature_lists_and_trajectories(tmp_path):
    p = small_log(tmp_path, contexts=[("f", [small_row(0), small_row(1)]), ("e", []), ("g", [small_row(2)])],
                  sizes=(5, 3))
    log = read_training_log(p)
    ts = le.trajectories(log, "bytes")
    assert [(t.log, t.context, t.steps, t.reward) for t in ts] == [(p, "f", 2, -2.0), (p, "g", 1, -2.0)]
    lists = ts[0].lists
    assert list(lists) == ["delta_size", "a", "b", "inlining_default", "inlining_decision", "reward"]
    assert lists["reward"].dtype == np.float32 and lists["reward"].tolist() == [-2.0, -2.0]
    assert lists["b"].tolist() == [[0.0, 0.5], [1.0, 0.5]]
    assert ts[1].lists["delta_size"].reshape(-1).tolist() == [2]
    # no score: no score list
    q = write_log(str(tmp_path / "n.log"), SMALL, [("", [small_row(0)])], score=False)
    assert "delta_size" not in le.trajectories(read_training_log(q), "bytes")[0].lists
    r = write_log(str(tmp_path / "r.log"), [spec("reward")], [("", [np.int64(1).tobytes()])])
    with pytest.raises(ProtocolError, match="r.log: a feature is named 'reward', which the export adds"):
        le.trajectories(read_training_log(r), "bytes")


def test_column_sinks_refuse_logs_with_other_features(tmp_path):
    a = le.trajectories(read_training_log(small_log(tmp_path, "a.log")), "bytes")
    other = write_log(str(tmp_path / "o.log"), [spec("a")], [("", [np.int64(1).tobytes()])])
    b = le.trajectories(read_training_log(other), "bytes")
    sink = le.NpzSink(str(tmp_path))
    for t in a + b:
        sink.add(t)
    assert sink.records == 3
    with pytest.raises(ProtocolError, match="o.log: its features differ from the other logs'"):
        sink.columns()
    steps, per_traj = le.NpzSink(str(tmp_path)).columns()
    assert {k: v.tolist() for k, v in steps.items()} == {"trajectory": [], "step": []}
    assert {k: v.tolist() for k, v in per_traj.items()} == {
        "trajectory_log": [], "trajectory_context": [], "trajectory_steps": [], "trajectory_reward": []}


def test_npz_sink_in_process(tmp_path):
    p = small_log(tmp_path, sizes=(3, 4))
    q = small_log(tmp_path, "y.log", contexts=[("h", [small_row(5), small_row(6), small_row(7)])])
    sink = le.NpzSink(str(tmp_path))
    for path in (p, q):
        for t in le.trajectories(read_training_log(path), "bytes"):
            sink.add(t)
    assert sink.close() == [str(tmp_path / "training.npz")]
    assert not os.path.exists(tmp_path / "training.npz.tmp.npz")
    z = np.load(tmp_path / "training.npz")
    assert z["trajectory"].tolist() == [0, 0, 1, 2, 2, 2] and z["trajectory"].dtype == np.int32
    assert z["step"].tolist() == [0, 1, 0, 0, 1, 2] and z["step"].dtype == np.int32
    assert z["a"].reshape(-1).tolist() == [0, 10, 20, 50, 60, 70]
    assert z["trajectory_log"].tolist() == [p, p, q] and z["trajectory_context"].tolist() == ["f", "g", "h"]
    assert z["trajectory_steps"].tolist() == [2, 1, 3] and z["trajectory_steps"].dtype == np.int64
    assert z["trajectory_reward"].tolist() == [1.0, 1.0, 0.0] and z["trajectory_reward"].dtype == np.float32
    assert z["reward"].tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]


def test_parquet_sink_in_process(tmp_path):
    import pyarrow.parquet as pq
    p = small_log(tmp_path)
    sink = le.ParquetSink(str(tmp_path))
    for t in le.trajectories(read_training_log(p), "bytes"):
        sink.add(t)
    assert sink.close() == [str(tmp_path / "training.parquet")]
    assert sorted(os.listdir(tmp_path)) == ["training.parquet", "x.log"]
    t = pq.read_table(tmp_path / "training.parquet").to_pydict()
    assert t["a"] == [0, 10, 20] and t["b"] == [[0.0, 0.5], [1.0, 0.5], [2.0, 0.5]]
    assert t["log"] == [p] * 3 and t["context"] == ["f", "f", "g"]
    assert t["trajectory"] == [0, 0, 1] and t["step"] == [0, 1, 0] and t["reward"] == [0.0] * 3


def test_parquet_export_of_a_feature_without_elements(tmp_path):
    """A bug, fixed: a feature of shape [0] (legal in a log) crashed the
    parquet export ("cannot reshape array of size 0 into shape (2,1)", a
    traceback from `log export --format parquet`); it is a list column of
    empty lists, as npz keeps it as a (steps, 0) array."""
    import pyarrow.parquet as pq
    z = write_log(str(tmp_path / "z.log"), [spec("a"), spec("none", shape=(0,))],
                  [("", [np.int64(4).tobytes()] * 2)])
    r = le.export_logs([z], str(tmp_path / "o"), format="parquet")
    assert r["records"] == 1 and r["steps"] == 2
    t = pq.read_table(r["outputs"][0]).to_pydict()
    assert t["a"] == [4, 4] and t["none"] == [[], []] and t["step"] == [0, 1]
    # no step at all: an empty output (no trajectory, so no feature column)
    e = write_log(str(tmp_path / "e.log"), [spec("a"), spec("none", shape=(0,))], [("", [])])
    r = le.export_logs([e], str(tmp_path / "p"), format="parquet")
    assert r["records"] == 0 and r["without_steps"] == [e]
    t = pq.read_table(r["outputs"][0]).to_pydict()
    assert t == {"trajectory": [], "step": [], "log": [], "context": []}


def test_tfrecord_sink_writes_under_a_temporary_name_and_abort_keeps_the_earlier_export(tmp_path):
    p = small_log(tmp_path)
    ts = le.trajectories(read_training_log(p), "bytes")
    sink = le.TFRecordSink(str(tmp_path))
    for t in ts:
        sink.add(t)
    assert sink.records == 2 and os.path.exists(tmp_path / "training.tfrecord.tmp")
    assert sink.close() == [str(tmp_path / "training.tfrecord")]
    with open(tmp_path / "training.tfrecord", "rb") as f:
        recs = list(tfrecord.read_records(f))
    assert recs == [tf_example.serialize_sequence_example(t.lists) for t in ts]
    again = le.TFRecordSink(str(tmp_path))
    again.add(ts[0])
    again.abort()
    assert sorted(os.listdir(tmp_path)) == ["training.tfrecord", "x.log"]
    with open(tmp_path / "training.tfrecord", "rb") as f:
        assert len(list(tfrecord.read_records(f))) == 2
    npz = le.NpzSink(str(tmp_path))
    npz.add(ts[0])
    npz.abort()
    assert npz.parts == [] and sorted(os.listdir(tmp_path)) == ["training.tfrecord", "x.log"]
    assert le.SINKS == {"tfrecord": le.TFRecordSink, "npz": le.NpzSink, "parquet": le.ParquetSink}


def test_export_result_and_its_callbacks(tmp_path):
    a = small_log(tmp_path, "a.log", sizes=(1, 3))
    b = small_log(tmp_path, "b.log", contexts=[("", [])], sizes=(2, 2))
    out = tmp_path / "new" / "deeper"
    r = le.export_logs([a, b], str(out), format="npz")
    assert r == {"logs": 2, "records": 2, "steps": 3, "reward": "relative", "format": "npz",
                 "outputs": [str(out / "training.npz")], "without_steps": [b], "failed": []}
    r = le.export_logs([a, b], str(out), reward="bytes")
    assert r["reward"] == "bytes" and r["outputs"] == [str(out / "training.tfrecord")] and r["records"] == 2


def test_an_export_that_reads_nothing_writes_nothing_and_removes_its_new_folders(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"not a log\n")
    out = tmp_path / "a" / "b" / "c"
    skipped, seen = [], []
    r = le.export_logs([str(bad)], str(out), on_skip=skipped.append, on_log=lambda p, ok: seen.append((p, ok)))
    assert r["records"] == 0 and r["steps"] == 0 and r["outputs"] == [] and r["logs"] == 1
    assert [f["log"] for f in r["failed"]] == [str(bad)] and r["failed"][0]["error"].startswith(f"{bad}: ")
    assert skipped == [r["failed"][0]["error"]] and seen == [(str(bad), False)]
    assert sorted(os.listdir(tmp_path)) == ["bad.log"]
    # an existing output folder stays, empty
    (tmp_path / "kept").mkdir()
    le.export_logs([str(bad)], str(tmp_path / "kept"), format="npz")
    assert os.listdir(tmp_path / "kept") == []
    # a missing file is skipped with the error's own text when it names the path
    r = le.export_logs([str(tmp_path / "gone.log"), small_log(tmp_path)], str(tmp_path / "o"), format="npz")
    assert r["records"] == 2 and r["failed"][0]["log"] == str(tmp_path / "gone.log")
    assert r["failed"][0]["error"].count(str(tmp_path / "gone.log")) == 1


def test_an_export_that_fails_midway_leaves_no_output_and_no_new_folder(tmp_path):
    good = small_log(tmp_path)
    bad = write_log(str(tmp_path / "other.log"), [spec("a")], [("", [np.int64(1).tobytes()])])
    out = tmp_path / "n1" / "n2"
    with pytest.raises(ProtocolError, match="features differ"):
        le.export_logs([good, bad], str(out), format="npz")
    assert not os.path.exists(tmp_path / "n1")
    # a callback's exception: the tfrecord's temporary file goes too
    (tmp_path / "o").mkdir()

    def boom(path, ok):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        le.export_logs([good], str(tmp_path / "o"), on_log=boom)
    assert os.listdir(tmp_path / "o") == []


def test_parquet_without_pyarrow_is_an_argument_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(le.LogExportArgumentError) as e:
        le.export_logs([small_log(tmp_path)], str(tmp_path / "o"), format="parquet")
    assert isinstance(e.value, ArgumentError) and isinstance(e.value, le.LogExportError)
    assert "parquet needs pyarrow" in str(e.value) and not os.path.exists(tmp_path / "o")


def test_find_logs_walks_folders_for_dot_log_files_only(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for n in ("d/z.log", "d/sub/a.log", "d/a.log.reward.json", "d/notes.txt", "one.bin"):
        (tmp_path / n).write_text("")
    got = le.find_logs([str(tmp_path / "d"), str(tmp_path / "one.bin")])
    assert got == [str(tmp_path / "d" / "sub" / "a.log"), str(tmp_path / "d" / "z.log"), str(tmp_path / "one.bin")]
    with pytest.raises(le.LogExportError, match="^" + str(tmp_path / "nope") + ": no such file$"):
        le.find_logs([str(tmp_path / "one.bin"), str(tmp_path / "nope")])


def test_new_folders_are_the_ones_makedirs_would_make(tmp_path):
    assert le._new_folders(str(tmp_path)) == []
    got = le._new_folders(str(tmp_path / "a" / "b"))
    assert got == [str(tmp_path / "a" / "b"), str(tmp_path / "a")]
    os.makedirs(tmp_path / "a" / "b")
    (tmp_path / "a" / "keep").write_text("")
    le._remove_new_folders(got)
    assert os.listdir(tmp_path / "a") == ["keep"]
    assert le._new_folders("/") == []
