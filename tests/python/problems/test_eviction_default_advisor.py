"""LLVM 19's default eviction rule answered over the channel
(problems/eviction/default_advisor.py): the rule on hand-made observations,
and stock llc-19 reproduced byte for byte on one small module. About 2 s."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import ROOT

from mlbridge.problems.eviction.default_advisor import SELF, DefaultAdvisor
from mlbridge.problems.eviction.policy import RAW

LLC = shutil.which("llc-19")
CLANG = shutil.which("clang-19")
needs_llvm = pytest.mark.skipif(not (LLC and CLANG), reason="clang-19 / llc-19 not installed")

ADVISOR = DefaultAdvisor()


def obs(self_weight=0.5, **columns):
    """An observation: every candidate masked out but the allocated range
    (column 32, weight SELF_WEIGHT); COLUMNS sets candidates, e.g.
    ``c3=dict(use_def_density=0.2)`` makes candidate 3 legal with that weight."""
    o = {n: np.zeros((1, 33), np.int64 if n in ("is_free", "is_hint", "is_local", "max_stage", "min_stage")
                     else np.float32) for n in RAW}
    o["mask"] = np.zeros((1, 33), np.int64)
    o["progress"] = np.array([0.5], np.float32)
    o["mask"][0, SELF] = 1
    o["use_def_density"][0, SELF] = self_weight
    for key, values in columns.items():
        c = int(key[1:])
        o["mask"][0, c] = values.pop("mask", 1)
        for name, v in values.items():
            o[name][0, c] = v
    return o


def test_a_lighter_interference_is_evicted_a_heavier_one_is_not():
    assert ADVISOR(obs(c4=dict(use_def_density=0.3))) == 4
    assert ADVISOR(obs(c4=dict(use_def_density=0.7))) == SELF
    assert ADVISOR(obs(c4=dict(use_def_density=0.5))) == SELF   # shouldEvict: strictly heavier


def test_fewer_broken_hints_win_over_a_lighter_weight():
    o = obs(c1=dict(use_def_density=0.1, nr_broken_hints=1.0), c2=dict(use_def_density=0.4))
    assert ADVISOR(o) == 2
    o = obs(c1=dict(use_def_density=0.4), c2=dict(use_def_density=0.1))
    assert ADVISOR(o) == 2   # then the lighter largest weight


def test_ties_go_to_the_first_in_order():
    assert ADVISOR(obs(c7=dict(use_def_density=0.2), c3=dict(use_def_density=0.2))) == 3


def test_a_usable_hint_ends_the_search():
    assert ADVISOR(obs(c0=dict(use_def_density=0.3, is_hint=1), c1=dict(use_def_density=0.1))) == 0
    # a hint that is not better than what was found does not stop it
    assert ADVISOR(obs(c0=dict(use_def_density=0.1), c1=dict(use_def_density=0.3, is_hint=1),
                       c2=dict(use_def_density=0.05))) == 2


def test_a_masked_candidate_is_never_chosen_and_no_legal_one_evicts_nothing():
    assert ADVISOR(obs(c0=dict(use_def_density=0.0, is_free=1, mask=0), c5=dict(use_def_density=0.4))) == 5
    assert ADVISOR(obs()) == SELF
    assert ADVISOR(obs(c9=dict(use_def_density=0.1, mask=0))) == SELF


def test_local_interference_is_refused_once_a_register_was_found():
    o = obs(c1=dict(use_def_density=0.3), c2=dict(use_def_density=0.1, is_local=1))
    assert ADVISOR(o) == 1
    assert ADVISOR(obs(c2=dict(use_def_density=0.1, is_local=1))) == 2   # the first one found may be local


def test_an_unspillable_range_must_evict():
    # column 32 masked (MustFindEviction): urgent, every spillable interference may go, the cheapest
    o = obs(c0=dict(use_def_density=0.9, nr_broken_hints=1.0), c1=dict(use_def_density=1.0))
    o["mask"][0, SELF] = 0
    assert ADVISOR(o) == 1
    # an unspillable interference (NaN after normalization) only when nothing else is legal
    o = obs(c0=dict(use_def_density=np.nan))
    o["mask"][0, SELF] = 0
    assert ADVISOR(o) == 0


@needs_llvm
def test_stock_llc_is_reproduced_byte_for_byte(tmp_path):
    from mlbridge.llvm.interactive import make_optimized_ir, regalloc_evict
    # ChaCha20 at -O2: 36 questions, none about an unspillable range (whose weights the channel loses)
    ir = make_optimized_ir(os.path.join(ROOT, "python", "mlbridge", "benchmark", "programs", "chacha20.c"),
                           str(tmp_path / "c.ll"))
    stock, ours = tmp_path / "stock.o", tmp_path / "ours.o"
    subprocess.run([LLC, "-regalloc=greedy", "-filetype=obj", "-O2", ir, "-o", str(stock)], check=True,
                   timeout=120, stdin=subprocess.DEVNULL)
    result, answers = regalloc_evict(ir, ADVISOR, out_path=str(ours), extra_args=["-filetype=obj", "-O2"],
                                     timeout=120, llc=LLC)
    assert result.ok and answers, "llc asked no eviction question: the module no longer tests the rule"
    assert stock.read_bytes() == ours.read_bytes()
