"""`mlbridge train orders`' parts that need no compiler (python/mlbridge/problems/phase_ordering/orders/):
the plugin's measure lines, the coreset's arithmetic and greedy choice, the ranker's
fit and its ONNX graph (against ONNX Runtime; the plugin's built-in engine runs it in
test_order_policy.py), the order policy file's checks, the candidates from tunes.
The compiles are tested in tests/integrations/llvm/test_order_policy.py (ctest
llvm.order_policy)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mlbridge.problems.phase_ordering.order_policy import OrderPolicyError, OrderPolicyFile
from mlbridge.problems.phase_ordering.orders.candidates import CandidateError, from_tunes
from mlbridge.problems.phase_ordering.orders.coreset import greedy, kept, oracle, project_weights, ratio_matrix, score
from mlbridge.problems.phase_ordering.orders.labels import ModuleLabels, parse_measure
from mlbridge.problems.phase_ordering.orders.ranker import Ranker
from mlbridge.tune.search import seeds

LINES = """\
warning: something unrelated
mlbridge-po-policy: features /src/a b.c: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 -32
mlbridge-po-policy: measure /src/a b.c: oz 1000 600 48
mlbridge-po-policy: measure /src/a b.c: order 1 990 590 0
mlbridge-po-policy: measure /src/a b.c: order 0 failed
"""


def test_measure_lines_parse_with_spaces_in_paths_and_failures():
    features, oz, orders = parse_measure(LINES, 2)
    assert features[0] == 1 and features[-1] == -32 and len(features) == 32
    assert oz == [1000, 600, 48]
    assert orders == [None, [990, 590, 0]]


@pytest.mark.parametrize("drop", ["features", "oz", "order 1"])
def test_incomplete_measure_lines_are_an_error(drop):
    text = "\n".join(ln for ln in LINES.splitlines() if drop not in ln)
    with pytest.raises(ValueError):
        parse_measure(text, 2)


def test_an_order_index_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="out of range"):
        parse_measure(LINES.replace("order 1 990", "order 7 990"), 2)


def _row(corpus, oz, *sizes):
    return ModuleLabels(corpus, "m", [0] * 32, [oz, oz], [None if s is None else [s, s] for s in sizes])


def test_ratios_and_kept():
    rows = [_row("a", 100, 90, 110), _row("a", 200, None, 180)]
    r = ratio_matrix(rows)
    assert r[0].tolist() == [0.9, 1.1] and math.isinf(r[1, 0]) and r[1, 1] == pytest.approx(0.9)
    # -Oz is always a candidate: a larger or failed order keeps 1.0
    assert kept(r, np.array([1])).tolist() == pytest.approx([1.0, 0.9])
    assert kept(r, np.array([0])).tolist() == pytest.approx([0.9, 1.0])
    assert kept(r, np.array([], int)).tolist() == [1.0, 1.0]
    # per-module choices
    assert kept(r, np.array([[0], [1]])).tolist() == pytest.approx([0.9, 0.9])


def test_projects_weigh_the_same_whatever_their_size():
    rows = [_row("big", 100, 90)] * 3 + [_row("small", 100, 90)]
    w = project_weights(rows)
    assert w[:3].sum() == pytest.approx(0.5) and w[3] == pytest.approx(0.5)


def test_greedy_takes_the_best_then_the_best_complement():
    # order 0 helps module 0 a lot; order 1 helps both a little; order 2 helps module 1 a lot
    r = np.array([[0.80, 0.95, 1.00],
                  [1.00, 0.95, 0.85]])
    w = np.array([0.5, 0.5])
    g = greedy(r, w, 3)
    assert g[0] == 0 and g[1] == 2            # the pair beats anything with order 1
    assert score(r, np.array(g[:2]), w) == pytest.approx(math.sqrt(0.80 * 0.85))
    assert oracle(r, w) == pytest.approx(math.sqrt(0.80 * 0.85))


def test_greedy_stops_when_nothing_helps():
    r = np.array([[0.9, 1.2], [1.0, 1.1]])
    assert greedy(r, np.array([0.5, 0.5]), 2) == [0]


def test_ranker_learns_which_order_fits_which_module(tmp_path):
    rng = np.random.default_rng(0)
    feats = rng.integers(0, 1000, (200, 32)).astype(float)
    small = feats[:, 4] < 500                   # "instructions": small modules like order 0, large ones order 1
    ratios = np.where(small[:, None], [[0.9, 1.05]], [[1.05, 0.9]])
    rk = Ranker(2, hidden=8, seed=1)
    rk.fit(feats, ratios, np.full(200, 1 / 200))
    top = rk.top(feats, 1)[:, 0]
    assert (top == np.where(small, 0, 1)).mean() > 0.9
    # the exported graph scores as numpy does (higher score = lower predicted ratio)
    path = rk.export_onnx(str(tmp_path / "r.onnx"))
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(path)
    for row in feats[:10]:
        got = sess.run(None, {"module_features": row.astype(np.int64)})[0]
        assert got.shape == (2,)
        np.testing.assert_allclose(got, -rk.predict(row[None, :])[0], rtol=1e-4, atol=1e-5)


def test_policy_file_roundtrip_and_checks(tmp_path):
    p = OrderPolicyFile(19, ["a", "b"], 1, model="r.onnx", names=["x", "y"])
    path = p.write(str(tmp_path / "p.json"))
    q = OrderPolicyFile.load(path)
    assert (q.orders, q.tries, q.model, q.llvm_major) == (["a", "b"], 1, "r.onnx", 19)
    with pytest.raises(OrderPolicyError):
        OrderPolicyFile(19, ["a"], 2).write(str(tmp_path / "bad.json"))
    assert not (tmp_path / "bad.json").exists()
    (tmp_path / "d.json").write_text('{"format": "mlbridge-order-policy"')
    with pytest.raises(OrderPolicyError, match="damaged"):
        OrderPolicyFile.load(str(tmp_path / "d.json"))
    (tmp_path / "v.json").write_text(json.dumps({**p.as_dict(), "version": 9}))
    with pytest.raises(OrderPolicyError, match="version 9"):
        OrderPolicyFile.load(str(tmp_path / "v.json"))


def _tune(tmp_path, name, corpus, modules):
    d = tmp_path / name
    d.mkdir()
    (d / "checkpoint.json").write_text(json.dumps({"corpus": corpus, "modules": modules}))
    return str(d)


def test_candidates_from_tunes_take_turns_by_bytes_saved(tmp_path):
    mods = {"a.o": {"search": {"best_order": [3, 1], "best_bytes": 9500, "oz_bytes": 10000}},   # 500 bytes
            "b.o": {"search": {"best_order": [3, 7], "best_bytes": 80, "oz_bytes": 100}},       # 20 %, 20 bytes
            "c.o": {"search": {"best_order": [9], "best_bytes": 100, "oz_bytes": 100}},         # no gain
            "d.o": {"search": {"best_order": None, "best_bytes": None, "oz_bytes": 10}}}
    other = {"e.o": {"search": {"best_order": [5, 5], "best_bytes": 900, "oz_bytes": 1000}},
             "f.o": {"search": {"best_order": [3, 1], "best_bytes": 10, "oz_bytes": 1000}}}     # a repeat
    c = from_tunes([_tune(tmp_path, "t", "/x/brotli", mods), _tune(tmp_path, "u", "/x/pymunk", other)], 10)
    n = len(seeds())
    assert [x.order for x in c[:n]] == [tuple(s) for s in seeds()]
    # one project after another, each by bytes saved; an order is taken once
    assert [x.order for x in c[n:]] == [(3, 1), (5, 5), (3, 7)]
    assert c[n].saved == 500 and c[n].origin == "brotli:a.o"
    assert c[n + 2].gain == pytest.approx(0.2)
    assert len(from_tunes([str(tmp_path / "t")], n + 1)) == n + 1
    # an order with an unstable step (gvn-sink) is never a candidate
    from mlbridge.tune.actions import UNSTABLE
    bad = {"g.o": {"search": {"best_order": [3, next(iter(UNSTABLE))], "best_bytes": 1, "oz_bytes": 10000}}}
    c = from_tunes([_tune(tmp_path, "w", "/x/marisa", bad)], 10)
    assert len(c) == n


def test_candidates_refuse_damaged_or_foreign_tunes(tmp_path):
    with pytest.raises(CandidateError, match="no tune checkpoint"):
        from_tunes([str(tmp_path)], 4)
    d = tmp_path / "bad"
    d.mkdir()
    (d / "checkpoint.json").write_text("{")
    with pytest.raises(CandidateError, match="damaged"):
        from_tunes([str(d)], 4)
    e = _tune(tmp_path, "e", "/x/lz4", {})
    with pytest.raises(CandidateError, match="evaluation-split"):
        from_tunes([e], 4)
    # the speed check's codec corpora (OUT/NAME/corpus), zstd named as its codec
    for corpus in ("/goal/lz4/corpus", "/goal/zstd/corpus"):
        with pytest.raises(CandidateError, match="evaluation-split"):
            from_tunes([_tune(tmp_path, corpus.split("/")[2], corpus, {})], 4)
    s = _tune(tmp_path, "s", "/x/brotli", {"a.o": {"search": {"best_order": [99], "best_bytes": 1, "oz_bytes": 2}}})
    with pytest.raises(CandidateError, match="outside"):
        from_tunes([s], 4)
    # a tune under LTO searched programs' link pipelines: no module order comes from it
    lto = tmp_path / "lto"
    lto.mkdir()
    (lto / "checkpoint.json").write_text(json.dumps({"corpus": "/x/brotli", "setting": "lto", "modules": {
        "libbrotli.so": {"search": {"best_order": [24, 15], "best_bytes": 90, "oz_bytes": 100}}}}))
    with pytest.raises(CandidateError, match="lto setting"):
        from_tunes([str(lto)], 4)


def test_the_shipped_policy_is_whole_and_stable():
    # what the README's main job and docs apply: a valid file for LLVM 19, no
    # pass that gives other bytes on another run, the ranker file if it names one
    import os
    from mlbridge.tune.actions import stable_pipeline
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    path = os.path.join(root, "policies", "phase_ordering", "order_policy.json")
    pol = OrderPolicyFile.load(path)
    assert pol.llvm_major == 19 and 1 <= pol.tries <= len(pol.orders)
    assert all(stable_pipeline(o) for o in pol.orders)
    assert pol.model is None or os.path.isfile(os.path.join(os.path.dirname(path), pol.model))
    assert set(pol.about["trained_on"]).isdisjoint({"lz4", "zstandard", "deflate", "pyroaring", "pyclipper",
                                                    "ninja", "simdjson"})


def test_ratios_count_the_dynamic_relocations_pic_code_will_cost():
    # -Oz: 1000 stored bytes, no relocations; the order: 950 stored + 96 bytes of dynamic relocations
    row = ModuleLabels("a", "m", [0] * 32, [1000, 600, 0], [[950, 550, 96], [990, 590]])
    r = ratio_matrix([row])
    assert r[0, 0] == pytest.approx(1.046) and r[0, 1] == pytest.approx(0.99)   # old labels: none counted


def test_a_torn_labels_file_resumes_without_its_last_line(tmp_path):
    # a run killed mid-write leaves half a line: that module is measured again, the rest kept
    from dataclasses import asdict
    from mlbridge.problems.phase_ordering.orders.labels import read_rows
    path = tmp_path / "labels.jsonl"
    good = json.dumps(asdict(_row("a", 100, 90)))
    path.write_text(good + "\n" + good[: len(good) // 2])
    rows = read_rows(str(path))
    assert len(rows) == 1 and rows[0].oz == [100, 100]
    assert read_rows(str(tmp_path / "none.jsonl")) == []


def test_a_damaged_candidates_file_is_named_and_left(tmp_path):
    from mlbridge.core.errors import MLBridgeError
    from mlbridge.problems.phase_ordering.orders.run import OrdersConfig, _candidates
    path = tmp_path / "candidates.json"
    path.write_text('{"format": "mlbridge-order-policy", "orders": [')
    with pytest.raises(MLBridgeError, match="candidates.json: damaged.*remove it to start again"):
        _candidates(str(tmp_path), [], OrdersConfig(), 19)
    assert path.read_text() == '{"format": "mlbridge-order-policy", "orders": ['
