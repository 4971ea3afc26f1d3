"""Labels from search around the exact default eviction advisor
(problems/eviction/search.py): the runner-up and margin of hand-made questions,
the flipping policy (exactly the listed questions, never a masked index), the
greedy combination on a fake scorer, the labels file's round trip, resumption
and damage; then the search on one small real module (ChaCha20, llc-19). The
compiler-free tests take about 2 s; the llc one about 10 s."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from conftest import ROOT

from mlbridge.problems.base import IllegalAnswer
from mlbridge.problems.eviction import search as es
from mlbridge.problems.eviction.default_advisor import SELF, DefaultAdvisor
from mlbridge.problems.eviction.policy import RAW
from mlbridge.problems.eviction.problem import legal_answers

LLC = shutil.which("llc-19")
CLANG = shutil.which("clang-19")
needs_llvm = pytest.mark.skipif(not (LLC and CLANG), reason="clang-19 / llc-19 not installed")
INT = ("is_free", "is_hint", "is_local", "max_stage", "min_stage")


def obs(self_weight=0.5, self_mask=1, **columns):
    """A question: every register masked out, column 32 (weight SELF_WEIGHT)
    legal unless SELF_MASK is 0; ``c3=dict(use_def_density=0.2)`` makes register 3
    legal with that weight."""
    o = {n: np.zeros((1, 33), np.int64 if n in INT else np.float32) for n in RAW}
    o["mask"] = np.zeros((1, 33), np.int64)
    o["progress"] = np.array([0.5], np.float32)
    o["mask"][0, SELF] = self_mask
    o["use_def_density"][0, SELF] = self_weight
    for key, values in columns.items():
        values = dict(values)
        c = int(key[1:])
        o["mask"][0, c] = values.pop("mask", 1)
        for name, v in values.items():
            o[name][0, c] = v
    return o


def random_obs(rng):
    o = obs(self_weight=float(rng.choice([0.2, 0.5, 0.8, np.nan])), self_mask=int(rng.random() < 0.7))
    o["mask"][0, :SELF] = rng.random(SELF) < 0.3
    o["use_def_density"][0, :SELF] = rng.choice([0.0, 0.1, 0.3, 0.6, 1.0, np.nan], SELF)
    o["nr_broken_hints"][0, :SELF] = rng.choice([0.0, 0.0, 0.5, 1.0], SELF)
    o["nr_urgent"][0, :SELF] = rng.choice([0.0, 0.0, 0.0, 1.0], SELF)
    o["is_hint"][0, :SELF] = rng.random(SELF) < 0.1
    o["is_local"][0, :SELF] = rng.random(SELF) < 0.2
    if not o["mask"].any():
        o["mask"][0, int(rng.integers(SELF))] = 1
    return o


# -- runner-up and margin ---------------------------------------------------------------

def test_a_weight_gap_is_the_margin_between_two_lighter_registers():
    choice, alt, margin = es.rank(obs(c1=dict(use_def_density=0.1), c2=dict(use_def_density=0.3)))
    assert (choice, alt) == (1, 2)
    assert margin == pytest.approx(0.2)


def test_a_cost_decided_earlier_is_a_larger_margin():
    # broken hints decide: 1 + the hints' gap, above any weight gap
    choice, alt, margin = es.rank(obs(c1=dict(use_def_density=0.3),
                                      c2=dict(use_def_density=0.1, nr_broken_hints=0.5)))
    assert (choice, alt) == (1, 2) and margin == pytest.approx(1.5)
    # urgent evictions decide before broken hints: 2 + their gap
    choice, alt, margin = es.rank(obs(c1=dict(use_def_density=0.3, nr_broken_hints=1.0),
                                      c2=dict(use_def_density=0.1, nr_urgent=0.5)))
    assert (choice, alt) == (1, 2) and margin == pytest.approx(2.5)


def test_evict_nothing_is_the_runner_up_of_the_only_lighter_register():
    choice, alt, margin = es.rank(obs(c4=dict(use_def_density=0.3), c6=dict(use_def_density=0.9)))
    assert (choice, alt) == (4, SELF)
    assert margin == pytest.approx(0.2)   # the default compares it with the range's weight only


def test_when_the_default_evicts_nothing_the_runner_up_is_the_lightest_heavier_register():
    choice, alt, margin = es.rank(obs(c3=dict(use_def_density=0.9), c4=dict(use_def_density=0.7),
                                      c5=dict(use_def_density=0.7, nr_broken_hints=0.5)))
    assert (choice, alt) == (SELF, 4)
    assert margin == pytest.approx(0.2)


def test_a_cheaper_register_after_a_usable_hint_is_the_runner_up():
    choice, alt, margin = es.rank(obs(c0=dict(use_def_density=0.3, is_hint=1), c1=dict(use_def_density=0.1)))
    assert (choice, alt) == (0, 1)
    assert margin == pytest.approx(0.2)


def test_a_masked_register_is_never_the_runner_up():
    # register 0 would be the cheapest, but its mask is 0
    choice, alt, _ = es.rank(obs(c0=dict(use_def_density=0.0, mask=0), c2=dict(use_def_density=0.1),
                                 c5=dict(use_def_density=0.2)))
    assert (choice, alt) == (2, 5)


def test_a_question_with_one_legal_answer_has_no_runner_up():
    assert es.rank(obs()) == (SELF, es.NO_ALTERNATIVE, float("inf"))
    # must evict (column 32 masked) with one legal register
    assert es.rank(obs(self_mask=0, c7=dict(use_def_density=0.4))) == (7, es.NO_ALTERNATIVE, float("inf"))


def test_on_random_questions_the_runner_up_is_legal_and_not_the_choice():
    rng = np.random.default_rng(0)
    default = DefaultAdvisor()
    for _ in range(2000):
        o = random_obs(rng)
        choice, alt, margin = es.rank(o)
        legal = np.flatnonzero(o["mask"][0])
        assert choice == default(o)
        if len(legal) == 1:
            assert alt == es.NO_ALTERNATIVE and margin == float("inf")
        else:
            assert alt != choice and o["mask"][0, alt] == 1
            assert 0.0 <= margin <= 3.0


# -- the flipping policy ----------------------------------------------------------------

# weights exact in float32, so that equal margins are equal
QUESTIONS = [obs(c1=dict(use_def_density=0.125), c2=dict(use_def_density=0.375)),  # 1, runner-up 2
             obs(c4=dict(use_def_density=0.25)),                                    # 4, runner-up 32
             obs(c3=dict(use_def_density=0.875), c4=dict(use_def_density=0.75)),    # 32, runner-up 4
             obs(c0=dict(use_def_density=0.0, mask=0), c5=dict(use_def_density=0.25),
                 c9=dict(use_def_density=0.3125)),                                  # 5, runner-up 9
             obs(),                                                                 # 32 only
             obs(c8=dict(use_def_density=0.0625), c9=dict(use_def_density=0.125))]  # 8, runner-up 9


def ask_all(policy, questions=QUESTIONS):
    checked = legal_answers(policy)   # the problem's own check: an illegal answer raises
    return [checked(q) for q in questions]


def test_the_flipping_policy_flips_exactly_the_listed_questions():
    assert ask_all(es.FlipPolicy()) == [1, 4, SELF, 5, SELF, 8]
    pol = es.FlipPolicy([1, 3, 4])   # question 4 has no alternative: it keeps the default's answer
    assert ask_all(pol) == [1, SELF, SELF, 9, SELF, 8]
    t = pol.trajectory()
    assert t.default.tolist() == [1, 4, SELF, 5, SELF, 8]
    assert t.runner_up.tolist() == [2, SELF, 4, 9, es.NO_ALTERNATIVE, 9]
    assert np.flatnonzero(t.flipped).tolist() == [1, 3]
    assert t.margin[4] == float("inf")


def test_the_flipping_policy_keeps_copies_of_what_it_was_shown():
    q = obs(c1=dict(use_def_density=0.1), c2=dict(use_def_density=0.3))
    pol = es.FlipPolicy()
    pol(q)
    q["use_def_density"][0, 1] = 0.7   # the channel reuses its buffer for the next question
    q["mask"][0, 2] = 0
    t = pol.trajectory()
    assert t.obs["use_def_density"][0, 1] == np.float32(0.1)
    assert t.obs["mask"][0, 2] == 1
    assert t.obs["mask"].dtype == np.int64 and t.obs["use_def_density"].dtype == np.float32


def test_flipping_every_random_question_never_answers_a_masked_index():
    rng = np.random.default_rng(1)
    questions = [random_obs(rng) for _ in range(500)]
    answers = ask_all(es.FlipPolicy(range(500)), questions)   # legal_answers raises on a masked index
    for q, a in zip(questions, answers):
        assert q["mask"][0, a] == 1


def test_the_problems_check_still_refuses_a_masked_answer():
    # the check the search relies on: a policy answering a masked index is an error
    with pytest.raises(IllegalAnswer):
        legal_answers(lambda o: 0)(obs(c0=dict(mask=0), c1=dict(use_def_density=0.1)))


def test_candidates_are_the_smallest_margins_with_a_runner_up():
    pol = es.FlipPolicy()
    ask_all(pol)
    t = pol.trajectory()
    # margins: 0.25, 0.25, 0.25, 0.0625, inf, 0.0625; ties go to the earlier question
    assert es.candidates(t, 3) == [3, 5, 0]
    assert es.candidates(t, 99) == [3, 5, 0, 1, 2]
    assert es.candidates(t, 0) == []


# -- the greedy search on a fake scorer -----------------------------------------------------

class FakeScores:
    """flips -> score from a table (missing: failed compile), calls recorded."""

    def __init__(self, table):
        self.table = {tuple(sorted(k)): v for k, v in table.items()}
        self.calls = []

    def __call__(self, flips):
        self.calls.append(flips)
        v = self.table.get(tuple(flips))
        return None if v is None else (v, f"record{flips}")


def test_greedy_keeps_improving_flips_and_combines_them_best_first():
    fake = FakeScores({(3,): 95.0, (7,): 97.0, (9,): 101.0, (5,): 99.0,
                       (3, 7): 93.0, (3, 5, 7): 94.0})
    g = es.greedy_flips([3, 7, 9, 12, 5], fake, 100.0, "start", max_compiles=20)
    assert fake.calls == [(3,), (7,), (9,), (12,), (5,), (3, 7), (3, 5, 7)]
    assert g.flips == [3, 7] and g.best == 93.0 and g.best_record == "record(3, 7)"
    assert g.failed == 1 and g.compiles == 7
    assert g.singles == {3: 95.0, 7: 97.0, 9: 101.0, 12: None, 5: 99.0}


def test_a_combination_only_lower_than_the_start_is_not_kept():
    fake = FakeScores({(3,): 95.0, (7,): 97.0, (3, 7): 96.0})
    g = es.greedy_flips([7, 3], fake, 100.0, "start", max_compiles=20)
    assert g.flips == [3] and g.best == 95.0 and g.best_record == "record(3,)"


def test_greedy_never_returns_more_than_the_start():
    fake = FakeScores({(1,): 100.0, (2,): 130.0})
    g = es.greedy_flips([1, 2, 4], fake, 100.0, "start", max_compiles=20)
    assert g.flips == [] and g.best == 100.0 and g.best_record == "start"


def test_greedy_stops_at_its_compile_bound():
    fake = FakeScores({(i,): 90.0 - i for i in range(10)})
    g = es.greedy_flips(list(range(10)), fake, 100.0, "start", max_compiles=4)
    assert len(fake.calls) == 4 and g.compiles == 4
    assert g.flips == [3] and g.best == 87.0   # the best single of the four tried; no compile left to combine
    fake = FakeScores({(i,): 90.0 - i for i in range(10)})
    g = es.greedy_flips([0, 1], fake, 100.0, "start", max_compiles=3)
    assert fake.calls == [(0,), (1,), (0, 1)]


def test_equal_singles_go_in_the_order_tried():
    fake = FakeScores({(8,): 90.0, (2,): 90.0, (2, 8): 89.0})
    g = es.greedy_flips([8, 2], fake, 100.0, "start", max_compiles=10)
    assert fake.calls == [(8,), (2,), (2, 8)] and g.flips == [2, 8]
    assert es.greedy_flips([8, 2], FakeScores({(8,): 90.0, (2,): 90.0}), 100.0, "s", max_compiles=10).flips == [8]


# -- labels on disk -------------------------------------------------------------------------

def _labels():
    pol = es.FlipPolicy([1, 3])
    ask_all(pol)
    t = pol.trajectory()
    t.tested[0] = True
    res = es.EvictionModuleSearch("dir/m.c", ok=True, stock=100.0, start=100.0, best=90.5, flips=[1, 3],
                                  singles=[[3, 95.0], [1, 90.5], [0, None]], compiles=6, questions=len(t),
                                  seconds=1.5)
    return res, t


def test_labels_round_trip(tmp_path):
    res, t = _labels()
    path = es.labels_path(str(tmp_path), res.module)
    es.save_labels(path, res, t)
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]   # no temporary file left
    got, u = es.load_labels(path)
    assert got == res and got.gain == pytest.approx(0.095)
    for n in es.OBS:
        assert np.array_equal(u.obs[n], t.obs[n]) and u.obs[n].dtype == t.obs[n].dtype
    for n in ("progress", "context", "default", "runner_up", "margin", "answer", "tested"):
        assert np.array_equal(getattr(u, n), getattr(t, n)), n
    # an empty trajectory (a module without questions, or a failed one) too
    failed = es.EvictionModuleSearch("dir/m.c", ok=False, error="llc failed")
    es.save_labels(path, failed, es.EvictionTrajectory.empty())
    got, u = es.load_labels(path)
    assert got.error == "llc failed" and len(u) == 0 and u.obs["mask"].shape == (0, 33)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "illegal"])
def test_a_damaged_labels_file_is_named_in_one_line(tmp_path, damage):
    res, t = _labels()
    path = es.labels_path(str(tmp_path), res.module)
    if damage == "garbage":
        os.makedirs(os.path.dirname(path))
        with open(path, "wb") as f:
            f.write(b"not a zip file")
    else:
        if damage == "illegal":
            t.answer[2] = 0   # question 2's register 0 is masked
        es.save_labels(path, res, t)
        if damage == "truncated":
            data = open(path, "rb").read()
            with open(path, "wb") as f:
                f.write(data[:len(data) // 2])
    with pytest.raises(es.EvictionSearchError) as info:
        es.load_labels(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(path + ": damaged search labels")
    # a run over the same folder stops on it too, before searching anything
    with pytest.raises(es.EvictionSearchError):
        es.run_search(str(tmp_path), [{"module": res.module, "ir": "x.bc", "recorded": []}], llc="llc-19")


def test_a_module_with_labels_is_not_searched_again(tmp_path, monkeypatch):
    searched = []

    def fake_search(module, ir, recorded, *, llc, cfg, base=None):
        searched.append(module)
        res = es.EvictionModuleSearch(module, ok=True, stock=10.0, start=10.0, best=9.0, flips=[0])
        return res, es.EvictionTrajectory.empty()

    monkeypatch.setattr(es, "search_module", fake_search)
    rows = [{"module": m, "ir": f"{m}.bc", "recorded": ["-O2"]} for m in ("a.c", "b.c")]
    first = es.run_search(str(tmp_path), rows[:1], llc="llc-19")
    assert searched == ["a.c"] and [r.module for r in first] == ["a.c"]
    both = es.run_search(str(tmp_path), rows, llc="llc-19")
    assert searched == ["a.c", "b.c"]
    assert [(r.module, r.best) for r in both] == [("a.c", 9.0), ("b.c", 9.0)]


# -- one real module ------------------------------------------------------------------------

@needs_llvm
def test_the_search_on_a_real_module_never_ends_above_the_default(tmp_path):
    from mlbridge.llvm.interactive import make_optimized_ir
    # ChaCha20 at -O2: 36 questions, where DefaultAdvisor reproduces stock llc-19 byte for byte
    ir = make_optimized_ir(os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs", "chacha20.c"),
                           str(tmp_path / "c.ll"))
    none, plain = es.search_module("chacha20.c", ir, ["-O2"], llc=LLC, cfg=es.EvictionSearchConfig(k=0, timeout=120))
    assert none.ok and none.questions > 0 and none.compiles == 2
    assert none.start == none.stock and none.best == none.start and none.flips == []
    assert np.array_equal(plain.answer, plain.default)   # no flip: the default's answers throughout

    res, start = es.search_module("chacha20.c", ir, ["-O2"], llc=LLC,
                                  cfg=es.EvictionSearchConfig(k=4, max_compiles=6, timeout=120))
    assert res.ok and res.start == none.start and res.best <= res.start
    assert len(res.tried) == 4 and res.compiles <= 2 + 6
    # the labels are the start trajectory: the default's answers, each single flip's score beside it
    assert np.array_equal(start.answer, plain.answer) and [i for i, _ in res.singles] == res.tried
    rejected = [i for i, s in res.singles if s is None or s >= res.start]
    assert np.flatnonzero(start.tested).tolist() == sorted(rejected)
    if not res.flips:
        assert res.best == res.start
    else:
        assert res.best < res.start
        # compiles are deterministic: the kept flips give the best score again
        score, _ = es.compile_with_flips(ir, ["-O2"], res.flips, llc=LLC, timeout=120)
        assert score == res.best
    for i, s in res.singles:   # each single's score is that flip's compile
        if s is not None:
            assert es.compile_with_flips(ir, ["-O2"], [i], llc=LLC, timeout=120)[0] == s
            break
    # one flip: the same questions up to it (a deterministic order), the runner-up answered there
    i = res.tried[0]
    _, one = es.compile_with_flips(ir, ["-O2"], [i], llc=LLC, timeout=120)
    assert one.same_question(plain, i) and np.array_equal(one.answer[:i], plain.answer[:i])
    assert np.flatnonzero(one.flipped).tolist() == [i] and one.answer[i] == plain.runner_up[i]
