"""The tuner's parts that need no compiler (python/mlbridge/tune/): the step table
against the plugin's, the search's proposals and checkpoint, the tuning file's
keys and checks, the report. The compiles are tested in
tests/integrations/llvm/test_tune.py (ctest llvm.tune)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from mlbridge.tune import actions, search, tuning_file
from mlbridge.tune.actions import OZ, STEPS, order_names, pipeline_text
from mlbridge.tune.report import markdown
from mlbridge.tune.search import LIMIT_LEN, OrderSearch, seeds
from mlbridge.tune.tuning_file import TuningFile, TuningFileError, key_names, source_keys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_the_first_steps_are_the_phase_ordering_pass_table():
    """Entries 0-14 must be the plugin's action table, in order (one table, two readers)."""
    with open(os.path.join(ROOT, "integrations", "llvm", "phase_ordering_actions.cc")) as f:
        src = f.read()
    body = src[src.index("kActions[kNumPhaseOrderActions] = {"):src.index("};")]
    body = re.sub(r"//[^\n]*", "", body)
    strings = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    # adjacent C string literals join: regroup by the {name, pipeline} braces
    entries = []
    for item in re.findall(r"\{(.*?)\},", body, flags=re.S):
        parts = re.findall(r'"((?:[^"\\]|\\.)*)"', item)
        entries.append((parts[0], "".join(parts[1:])))
    assert strings and len(entries) == actions.PHASE_ORDER_ACTIONS
    assert [(s.name, s.pipeline) for s in STEPS[:actions.PHASE_ORDER_ACTIONS]] == entries


def test_steps_are_named_once_and_keep_their_indices():
    """Append only: checkpoints and tuning files of earlier tunes hold these indices."""
    names = [s.name for s in STEPS]
    assert len(set(names)) == len(names)
    assert STEPS[OZ].pipeline == "default<Oz>" and OZ == 23
    assert STEPS[actions.LTO].pipeline == "lto<O2>" and actions.LTO == 24
    assert STEPS[actions.INLINE].name == "inline-simplify"
    # whole pipelines are never drawn at random; the link's never in a module's order
    assert not actions.WHOLE & set(actions.RANDOM_STEPS) and actions.LTO not in actions.STABLE_STEPS


def test_pipeline_text_joins_steps_and_refuses_what_is_not_one():
    assert pipeline_text([0, 0]) == STEPS[0].pipeline + "," + STEPS[0].pipeline
    assert order_names([OZ, 15]) == "oz mergefunc"
    for bad in ([], [len(STEPS)], [-1]):
        with pytest.raises(ValueError):
            pipeline_text(bad)


def test_a_search_tries_seeds_first_and_never_an_order_twice():
    s = OrderSearch("m.c.o", oz_bytes=1000, seed=3)
    tried = []
    for i in range(300):
        o = s.propose()
        assert o not in tried and 0 < len(o) <= LIMIT_LEN and all(0 <= x < len(STEPS) for x in o)
        if i < len(seeds()):
            assert o == seeds()[i]
        tried.append(o)
        s.record(o, 1000 - (i % 7) if i % 5 else None, 0.01)
    assert s.tried == 300 and s.failed == 60
    assert s.best_bytes == 994 and s.gain == 6
    assert [b for _, b in s.curve] == sorted((b for _, b in s.curve), reverse=True)


def test_a_search_prefers_the_shorter_of_equal_orders_and_keeps_failures_out():
    s = OrderSearch("m", 100)
    assert not s.record((1, 2, 3), None)
    assert s.best_order is None and s.gain == 0
    assert s.record((1, 2, 3), 90) and s.record((1,), 90) and not s.record((1, 2), 90)
    assert s.best_order == (1,) and s.gain == 10
    assert not s.record((4,), 200) and s.gain == 10


def test_the_pool_of_winning_orders_is_tried_on_other_modules():
    s = OrderSearch("m", 100, seed=1)
    for o in seeds():
        s.record(s.propose(), 100)
    pool = [(5, 6, 7, 8), (8, 7, 6, 5)]
    proposed = [s.propose(pool) for _ in range(40)]
    assert set(pool) <= set(proposed)
    assert len(set(proposed)) == len(proposed)


def test_a_search_checkpoint_round_trips_and_refuses_foreign_steps():
    s = OrderSearch("m", 100, seed=2)
    for _ in range(20):
        o = s.propose()
        s.record(o, 100 - len(o), 0.5)
    d = json.loads(json.dumps(s.as_dict()))
    t = OrderSearch.from_dict(d)
    assert (t.best_order, t.best_bytes, t.tried, t.seen, t.curve) == (s.best_order, s.best_bytes, s.tried, s.seen,
                                                                      s.curve)
    assert t.propose() not in s.seen
    d["seen"].append([len(STEPS)])
    with pytest.raises(ValueError, match="out of range"):
        OrderSearch.from_dict(d)


def test_keys_are_the_shortest_unique_trailing_paths():
    keys = source_keys(["/b/lib/x.c", "/b/src/x.c", "/b/lib/y.c", "/b/a/lib/z.c", "/c/a/lib/z.c", "/t.c"])
    assert keys == {"/b/lib/x.c": "lib/x.c", "/b/src/x.c": "src/x.c", "/b/lib/y.c": "lib/y.c",
                    "/b/a/lib/z.c": "b/a/lib/z.c", "/c/a/lib/z.c": "c/a/lib/z.c", "/t.c": "t.c"}
    for path, key in keys.items():
        assert key_names(path, key) and sum(key_names(p, key) for p in keys) == 1


def test_key_names_matches_whole_components_only():
    assert key_names("/b/lib/x.c", "lib/x.c") and key_names("lib/x.c", "lib/x.c")
    assert not key_names("/b/mylib/x.c", "lib/x.c") and not key_names("/b/lib/x.c", "")


def test_find_takes_the_longest_key_as_the_plugin_does():
    tf = TuningFile(19, {"x.c": {"pipeline": "a"}, "lib/x.c": {"pipeline": "b"}})
    assert tf.find("/b/lib/x.c") == "lib/x.c" and tf.find("/b/src/x.c") == "x.c" and tf.find("/b/y.c") is None


def _write(tmp_path, obj):
    p = tmp_path / "t.json"
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(p)


GOOD = {"format": "mlbridge-tuning", "version": 1, "llvm_major": 19, "modules": {"lib/x.c": {"pipeline": "p"}}}


@pytest.mark.parametrize("change,says", [
    ("{", "damaged (not JSON"),
    ({"format": "x"}, "not a tuning file"),
    ({"version": 2}, "version 2"),
    ({"llvm_major": "19"}, "no \"llvm_major\" number"),
    ({"modules": []}, "no \"modules\" object"),
    ({"modules": {"/abs/x.c": {"pipeline": "p"}}}, "is not a relative path"),
    ({"modules": {"x.c": {"order": []}}}, "has no \"pipeline\" string"),
])
def test_a_damaged_tuning_file_is_named_in_one_line(tmp_path, change, says):
    obj = change if isinstance(change, str) else dict(GOOD, **change)
    path = _write(tmp_path, obj)
    with pytest.raises(TuningFileError) as e:
        tuning_file.read(path)
    assert path in str(e.value) and says in str(e.value) and "\n" not in str(e.value)


def test_a_tuning_file_round_trips(tmp_path):
    tf = TuningFile(19, {"lib/x.c": {"pipeline": "function(sroa)", "oz_bytes": 10, "bytes": 8}}, about={"a": 1})
    path = tf.write(str(tmp_path / "t.json"))
    back = tuning_file.read(path)
    assert (back.llvm_major, back.modules, back.about) == (19, tf.modules, {"a": 1})
    assert not os.path.exists(path + ".tmp")
    assert tuning_file.flags("/p/lib.so", path) == ["-fplugin=/p/lib.so", "-fpass-plugin=/p/lib.so", "-mllvm",
                                                    f"-mlbridge-tuning={path}"]


def test_the_report_tables_say_where_the_bytes_went():
    report = {"corpus": "/c/brotli", "setting": "linked", "clang": "clang version 19.1.7", "curve": [],
              "total": {"candidates": 1234, "failed_candidates": 2, "minutes": 5.0, "jobs": 2, "tuned": 1,
                        "modules": 2, "objects_oz_stored": 300, "objects_stored": 290, "objects_stored_pct": -3.333,
                        "objects_oz_text": 200, "objects_text": 185, "objects_text_pct": -7.5,
                        "linked_oz_stored": 1000, "linked_stored": 990, "linked_stored_pct": -1.0,
                        "linked_oz_text": 500, "linked_text": 485, "linked_text_pct": -3.0},
              "programs": [{"program": "p", "oz_stored": 1000, "stored": 990, "stored_pct": -1.0, "oz_text": 500,
                            "text": 485, "text_pct": -3.0, "check": "same output"}],
              "modules": [{"module": "a.c.o", "ok": True, "oz_stored": 200, "stored": 190, "delta_pct": -5.0,
                           "text_delta": -15, "other_delta": 5, "tried": 9, "order": "oz mergefunc",
                           "reverted": None},
                          {"module": "b.c.o", "ok": True, "oz_stored": 100, "stored": 100, "delta_pct": 0.0,
                           "text_delta": 0, "other_delta": 0, "tried": 3, "order": None,
                           "reverted": "no smaller linked program"},
                          {"module": "c.c.o", "ok": False, "error": "clang exited with status 1"}]}
    md = markdown(report)
    assert "| p | 1,000 | 990 | -1.00 % | 500 | 485 | -3.00 % | same output |" in md
    assert "| **linked total** | 1,000 | 990 | **-1.00 %** |" in md
    assert "| a.c.o | 200 | 190 | -5.00 % | -15 | +5 | 9 | oz mergefunc |" in md
    assert "| b.c.o | 100 | 100 | +0.00 % | +0 | +0 | 3 | -Oz (no smaller linked program) |" in md
    assert "| c.c.o | FAILED: clang exited with status 1 |" in md


def test_the_command_refuses_mistakes_in_one_line(tmp_path):
    def cli(*argv):
        r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", *argv], capture_output=True, text=True,
                           timeout=120, stdin=subprocess.DEVNULL, cwd=tmp_path,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        (line,) = r.stderr.strip().splitlines()
        return line
    assert cli(str(tmp_path)) == "mlbridge: error: -o/--out is required"
    assert cli(str(tmp_path), "-o", "o", "--budget-minutes", "0") == "mlbridge: error: --budget-minutes must be positive"
    assert cli("flags") == "mlbridge: error: usage: mlbridge tune flags TUNING_FILE"
    bad = _write(tmp_path, "{")
    assert cli("show", bad).startswith(f"mlbridge: error: {bad}: damaged (not JSON")
    assert os.listdir(tmp_path) == ["t.json"]   # nothing written



def test_show_says_how_much_of_a_build_the_file_covers(tmp_path):
    tf = TuningFile(19, {"enc/encode.c": {"pipeline": "p", "oz_bytes": 10, "bytes": 8, "order": ["oz"]}}).write(
        str(tmp_path / "t.json"))
    cc = tmp_path / "compile_commands.json"
    cc.write_text(json.dumps([{"directory": "/b/brotli", "file": "c/enc/encode.c"},
                              {"directory": "/b", "file": "foo.c"}]))
    r = subprocess.run([sys.executable, "-m", "mlbridge", "tune", "show", tf, "--compile-commands", str(cc)],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == ("mlbridge: note: the tuning file covers 1 of 2 source files; the other 1 "
                                         "compile as -Oz (foo.c)")


def test_the_search_never_proposes_an_unstable_step():
    # gvn-sink makes LLVM 19 give other bytes on every run: a tuning file must not hold it
    assert actions.UNSTABLE and all(STEPS[i].name == "gvn-sink" for i in actions.UNSTABLE)
    unstable = next(iter(actions.UNSTABLE))
    s = OrderSearch("m.o", 1000)
    pool = [(3, unstable, 1)]
    for k in range(400):
        o = s.propose(pool)
        assert actions.stable(o), o
        s.record(o, 1000 - (k % 7))
    # an older tune's best order that holds one: its changes drop it
    s.best_order = (3, unstable, 1, 9)
    for _ in range(50):
        assert actions.stable(s._mutate(s.best_order))


def test_the_trace_becomes_questions_with_the_majority_answer_in_the_order_worth_trying():
    """Kept out of line by -Oz: smallest body first; inlined: a body still in the
    object and the most calls first; the two kinds alternate."""
    trace = ("a\tf\t1\nb\tf\t1\nc\tf\t0\na\tg\t0\nd\tg\t0\nbroken line\nx\th\t2\nb\tg\t0\nc\tg\t0\n"
             "d\tk\t1\na\tm\t0\na\tn\t1\n")
    assert search.parse_trace(trace) == [("g", 0), ("f", 1), ("m", 0), ("k", 1), ("n", 1)]
    sizes = {"g": 90, "m": 12, "n": 40}
    assert search.parse_trace(trace, sizes) == [("m", 0), ("n", 1), ("g", 0), ("f", 1), ("k", 1)]
    assert search.parse_trace(trace, sizes, limit=1) == [("m", 0)]


def test_callee_answers_are_searched_on_the_best_order_once_due():
    """Before CALLEES_AFTER candidates, or without questions, only orders; then a share of
    the proposals changes one callee to the answer -Oz did not give, each change once."""
    s = OrderSearch("m", 1000, seed=3)
    for k in range(search.CALLEES_AFTER):
        assert not s.wants_questions
        c = s.propose_candidate()
        assert not c.flip and c.callees == ()
        s.record(c.order, 900 + k, 0.1, c.callees, c.flip)
    assert s.wants_questions and s.best_bytes == 900
    s.questions = [("f", 1), ("g", 0)]
    flips = []
    for _ in range(200):
        c = s.propose_candidate()
        if c.flip:
            assert c.order == s.best_order
            flips.append(c.callees)
            s.record(c.order, 950, 0.1, c.callees, True)      # no gain: the best stays
        else:
            s.record(c.order, 990, 0.1, c.callees, False)
    assert flips == [(("f", 0),), (("g", 1),)]                # each change once, against -Oz's answer
    assert s.best_callees == () and s.callee_saved == 0
    # a change that wins becomes the best, and the next ones build on it
    s.seen_callees.clear()
    while True:
        c = s.propose_candidate()
        if c.flip:
            break
        s.record(c.order, 990, 0.1, c.callees, False)
    assert s.record(c.order, 880, 0.1, c.callees, True)
    assert s.best_callees == (("f", 0),) and s.callee_saved == 20
    nxt = next(c for c in iter(s.propose_candidate, None) if c.flip)
    assert nxt.callees == (("f", 0), ("g", 1))
    # an order proposed now carries the best callee answers
    order = next(c for c in iter(s.propose_candidate, None) if not c.flip)
    assert order.callees == (("f", 0),)


def test_callee_answers_round_trip_through_the_checkpoint_and_are_checked():
    s = OrderSearch("m", 100)
    s.record((OZ, 15), 90)
    s.questions = [("f", 1)]
    s.record((OZ, 15), 80, 0.1, (("f", 0),), True)
    d = json.loads(json.dumps(s.as_dict()))
    t = OrderSearch.from_dict(d)
    assert (t.best_callees, t.questions, t.seen_callees, t.callee_saved) == \
        (s.best_callees, s.questions, s.seen_callees, s.callee_saved) == ((("f", 0),), [("f", 1)],
                                                                           {((OZ, 15), (("f", 0),))}, 10)
    d["best_callees"] = [["f", 2]]
    with pytest.raises(ValueError, match="not 0 or 1"):
        OrderSearch.from_dict(d)
    # a checkpoint of an older tune, without callee answers, still reads
    old = {k: v for k, v in s.as_dict().items() if k not in ("best_callees", "questions", "seen_callees",
                                                              "callee_saved")}
    u = OrderSearch.from_dict(old)
    assert u.best_callees == () and u.questions is None and u.best_order == (OZ, 15)


@pytest.mark.parametrize("callees", [{"f": 2}, {"f": True}, {"": 1}, ["f"]])
def test_a_tuning_file_with_bad_callee_answers_is_damaged(tmp_path, callees):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"format": "mlbridge-tuning", "version": 1, "llvm_major": 19,
                             "modules": {"a/x.c": {"pipeline": "function(sroa)", "callees": callees}}}))
    with pytest.raises(TuningFileError, match="callees"):
        tuning_file.read(str(p))


def test_an_lto_tuning_file_gives_link_flags_per_program(tmp_path):
    tf = TuningFile(19, link={"a": {"pipeline": "lto<O2>,mergefunc"}, "b": {"pipeline": "lto<O2>"}})
    p = str(tmp_path / "t.json")
    tf.write(p)
    back = tuning_file.read(p)
    assert back.link == tf.link and back.modules == {}
    assert tuning_file.link_flags(back, "a") == ["-Xlinker", "--lto-newpm-passes=lto<O2>,mergefunc"]
    with pytest.raises(TuningFileError, match="name one with --program"):
        tuning_file.link_flags(back, None)
    with pytest.raises(TuningFileError, match="no link pipeline for program 'c'"):
        tuning_file.link_flags(back, "c")
    with pytest.raises(TuningFileError, match="not tuned with --setting lto"):
        tuning_file.link_flags(TuningFile(19), None)
    d = back.as_dict()
    d["link"]["a"] = {"pipeline": ""}
    with pytest.raises(TuningFileError, match="\"link\" entry needs a \"pipeline\""):
        tuning_file.from_dict(d)
