"""The room search's parts that need no compiler (problems/inlining/room.py): the module
cache's reuse rule, the candidate order, traces and damaged states. The search
itself, with the plugin and lld: tests/integrations/llvm/test_room.py."""
from __future__ import annotations

import json
import os

import pytest

from mlbridge.problems.inlining.room import ModuleCache, RoomError, RoomState, candidates_from, read_trace


@pytest.fixture
def cache():
    c = ModuleCache()
    yield c
    c.close()


def test_a_build_is_reused_only_under_the_same_answers_to_its_questions(cache):
    # built with no forces; it asked about f and g
    e = cache.add("m", {}, {"f": (1, 0), "g": (0, 2)}, "m.bc", 10)
    assert cache.find("m", {}) is e
    assert cache.find("m", {"h": 1}) is e          # h was never asked: same build
    assert cache.find("m", {"f": 0}) is None       # f was asked: another answer, another build
    e2 = cache.add("m", {"f": 0, "h": 1}, {"f": (0, 1), "g": (0, 2)}, "m2.bc", 11)
    assert e2.forces == {"f": 0}                   # only what it asked about is kept
    assert cache.find("m", {"f": 0, "h": 0}) is e2
    assert cache.find("m", {"f": 1}) is None
    assert cache.find("other", {}) is None


def test_least_recently_used_goes_first(cache, tmp_path):
    cache.MAX_PER_MODULE = 2
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.bc"
        p.write_bytes(b"x")
        paths.append(p)
    base = cache.add("m", {}, {"f": (1, 0)}, str(paths[0]), 1)
    cache.add("m", {"f": 0}, {"f": (0, 1)}, str(paths[1]), 1)
    assert cache.find("m", {}) is base          # used again: now the most recent
    cache.add("m", {"f": 1, "g": 0}, {"f": (1, 0), "g": (0, 1)}, str(paths[2]), 1)
    assert cache.find("m", {}) is base and cache.find("m", {"f": 0}) is None
    assert not paths[1].exists() and paths[0].exists()


def test_candidates_unexported_inline_all_first():
    calls = {"api": (0, 1), "helper": (1, 2), "tiny": (0, 1), "hot": (5, 0), "done": (0, 3)}
    got = candidates_from(calls, {"done": 1}, exported=lambda n: n == "api")
    assert got[:2] == [("tiny", 1), ("helper", 1)]
    assert ("done", 1) not in got and ("done", 0) not in got
    assert got.index(("api", 1)) > got.index(("helper", 1))
    assert set(got[2:]) == {("api", 1), ("helper", 0), ("hot", 0)}


def test_read_trace_counts_answers(tmp_path):
    p = tmp_path / "t"
    p.write_text("a\tf\t1\nb\tf\t0\nb\tg\t1\nmalformed line\nc\tf\t1\n")
    assert read_trace(str(p)) == {"f": (2, 1), "g": (1, 0)}
    assert read_trace(str(tmp_path / "missing")) == {}


@pytest.mark.parametrize("text", ["", "{", "[]", json.dumps({"format": 99}),
                                  json.dumps({"format": 1, "program": "p", "setting": "lto", "done": False,
                                              "kept": {"f": 2}}),
                                  json.dumps({"format": 1, "program": "p", "setting": "lto", "done": False,
                                              "best": -3})])
def test_damaged_state_is_named_and_left_alone(tmp_path, text):
    p = tmp_path / "p.lto.json"
    p.write_text(text)
    before = p.read_bytes()
    with pytest.raises(RoomError) as err:
        RoomState.load(str(p))
    assert str(p) in str(err.value) and "damaged" in str(err.value)
    assert p.read_bytes() == before


def test_state_round_trip(tmp_path):
    st = RoomState("p", "lto", oz=10, base=10, best=9, kept={"f": 1}, queue=[("g", 0)], tried=[["f", 1, 9, True]])
    path = str(tmp_path / "s.json")
    st.save(path)
    back = RoomState.load(path)
    assert back == st and not os.path.exists(path + ".tmp")


def test_a_default_answer_changes_every_build(cache):
    """'*' answers for every callee not listed: a build made without it (or
    with another default) is never reused under it."""
    e = cache.add("m", {"*": 0}, {"f": (0, 1)}, "m.bc", 1)
    assert e.forces == {"*": 0}
    assert cache.find("m", {"*": 0, "g": 1}) is e       # g never asked
    assert cache.find("m", {}) is None and cache.find("m", {"*": 1}) is None
    plain = cache.add("m", {}, {"f": (1, 0)}, "p.bc", 1)
    assert cache.find("m", {"*": 0}) is e and cache.find("m", {}) is plain


def test_candidates_skip_the_default_line():
    assert candidates_from({"*": (0, 3), "f": (0, 1)}, {"*": 0}) == [("f", 1)]


class FakeSearch:
    """RoomSearch's loop over a made-up program: sizes from a table of what
    each kept callee saves, a callee that fails to build, no compiler."""

    SAVES = {"a": 10, "b": 30, "c": -5, "d": 20}    # bytes saved by inlining all calls of each
    EXPOSES = {"b": {"e": (0, 1)}}                  # keeping b exposes calls of e
    FAILS = "f"

    @staticmethod
    def make(tmp_path, **kw):
        from mlbridge.corpus.layout import Corpus
        from mlbridge.corpus.programs import Program
        from mlbridge.corpus.settings import Setting
        from mlbridge.problems.inlining.room import Measure, RoomSearch

        class Search(RoomSearch):
            def _oz(self, work):
                return 1000

            def measure(self, forces, work):
                if forces.get(FakeSearch.FAILS) == 1:
                    return Measure(False, error="the link failed")
                size = 1000 - sum(FakeSearch.SAVES.get(c, 0) + (7 if c == "e" else 0)
                                  for c, a in forces.items() if a == 1)
                calls = {c: (0, 1) for c in ("a", "b", "c", "d", "f")}
                for c in forces:
                    calls.update(FakeSearch.EXPOSES.get(c, {}))
                return Measure(True, size, calls)

        return Search(Corpus(str(tmp_path), []), Program("p.so", exports=("x",)), Setting("lto"), None,
                      str(tmp_path), **kw)


def test_search_keeps_the_best_of_each_batch_and_tries_the_others_again(tmp_path):
    st = FakeSearch.make(tmp_path, jobs=2).run(budget=100)
    assert (st.oz, st.base) == (1000, 1000)
    assert st.kept == {"a": 1, "b": 1, "d": 1, "e": 1}     # c grows it, f fails to build
    assert st.best == 1000 - 10 - 30 - 20 - 7 and st.done and not st.queue
    failed = [t for t in st.tried if t[0] == "f"]
    assert failed and all(t[2] is None and not t[3] for t in failed)
    assert any(t[0] == "e" and t[3] for t in st.tried)      # exposed by b, then tried and kept
    kept_sizes = [t[2] for t in st.tried if t[3]]
    assert kept_sizes == sorted(kept_sizes, reverse=True)
    assert st.tried[:2] == [["a", 1, 990, False], ["b", 1, 970, True]]   # the batch's best is kept
    assert st.tried[2][:2] == ["a", 1] and st.tried[2][3]                # the other, again on top of it


def test_search_budget_counts_across_runs_and_resumes(tmp_path):
    first = FakeSearch.make(tmp_path, jobs=2).run(budget=3)
    assert len(first.tried) == 3 and not first.done and first.builds == 2 + 3
    again = FakeSearch.make(tmp_path, jobs=2)
    assert again.state.tried == first.tried and again.state.kept == first.kept
    st = again.run(budget=100)
    assert st.done and st.best == 1000 - 67 and st.builds > first.builds


def test_search_stops_at_its_deadline(tmp_path):
    st = FakeSearch.make(tmp_path, jobs=2).run(budget=100, deadline=0.0)   # long past
    assert st.base == 1000 and st.tried == [] and not st.done and st.queue


def test_a_failed_start_is_a_room_error(tmp_path):
    from mlbridge.problems.inlining.room import Measure
    s = FakeSearch.make(tmp_path)
    s.measure = lambda forces, work: Measure(False, error="clang exited with 1")
    with pytest.raises(RoomError, match="clang exited with 1"):
        s.run(budget=5)
