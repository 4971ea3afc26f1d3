"""The order policy inside clang (integrations/llvm/order_policy.cc, the policy
branch of pipeline_override.cc; docs/phase-ordering-policy.md) and
`mlbridge train orders` (python/mlbridge/problems/phase_ordering/orders/).

In clang: -Oz as the plugin measures it is clang's own -Oz, byte for byte
(with the SLP vectorizer that opt's default<Oz> leaves out); the object clang
writes is the one the plugin measured and kept, never larger than -Oz's, the
same twice; an order that only loses leaves -Oz's object unchanged; a ranker
model decides which orders are tried; every bad policy is one warning line and
-Oz's object, and the tools report that module as failed, not as an -Oz size.
The workflow: labels from measure mode, a fixed coreset or ranker chosen on
held-out projects, the policy file written whole and applied by corpus evaluate;
evaluation-split projects refused.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import plugin_driver
from conftest import PLUGIN, ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
import mini_corpus  # noqa: E402

from mlbridge.corpus.compile import Policy, Toolchain  # noqa: E402
from mlbridge.corpus.elf import stored_sizes  # noqa: E402
from mlbridge.corpus.evaluate import evaluate  # noqa: E402
from mlbridge.corpus.layout import load  # noqa: E402
from mlbridge.problems.phase_ordering.order_policy import OrderPolicyFile  # noqa: E402
from mlbridge.problems.phase_ordering.orders.labels import parse_measure  # noqa: E402
from mlbridge.problems.phase_ordering.orders.ranker import Ranker  # noqa: E402
from mlbridge.problems.phase_ordering.orders.run import OrdersConfig, OrdersSetupError, train_orders  # noqa: E402
from mlbridge.tune.actions import OZ, pipeline_text  # noqa: E402

CLANG = plugin_driver.tool("clang")
MAJOR = int(subprocess.run([CLANG, "--version"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL).stdout.split("version ")[1].split(".")[0])
INTERP = os.path.join(ROOT, "tests", "corpus", "interp.c")
LOAD = [f"-fplugin={PLUGIN}", f"-fpass-plugin={PLUGIN}"]
# stores of neighbouring doubles: clang -Oz vectorizes them (SLP), opt's default<Oz> does not
SLP_SOURCE = """
struct S { double a, b; int c; long d; double e, f; };
void init(struct S *s) { s->a = 0.1; s->b = 0.2; s->c = 3; s->d = 0; s->e = 1.5; s->f = 2.5; }
void scale(struct S *s, double k) { s->a *= k; s->b *= k; s->e *= k; s->f *= k; }
"""
# orders of the tuner's steps: a plausible one, and a lone cheap pass (large code)
GOOD = pipeline_text((0, 10, 11, 3, 12, 1, 7, 9, 4, 5, 6, 8, 13, 2, 14, 15))
BAD = "function(instsimplify)"
TRACE = re.compile(r"policy tried (\d+) orders \[([\d ]*)\], kept (-Oz|order (\d+)) \((\d+) stored bytes, -Oz (\d+); "
                   r"dynamic relocations (\d+), -Oz (\d+)\)")


def _policy(tmp_path, orders, tries, name="p.json", **extra):
    d = {"format": "mlbridge-order-policy", "version": 1, "llvm_major": MAJOR, "tries": tries, "orders": orders}
    d.update(extra)
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return str(p)


def _cc(tmp_path, name, *extra, src=INTERP):
    out = str(tmp_path / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLBRIDGE_PO_", "MLBRIDGE_TUNING"))}
    r = subprocess.run([CLANG, "-Oz", "-c", src, "-o", out, *extra], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=300, cwd=str(tmp_path), env=env)
    return r, out


def _with_policy(tmp_path, name, policy, *extra, src=INTERP):
    return _cc(tmp_path, name, *LOAD, "-mllvm", f"-mlbridge-po-policy={policy}", "-mllvm", "-mlbridge-tuning-trace",
               *extra, src=src)


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def slp_c(tmp_path_factory):
    p = tmp_path_factory.mktemp("slp") / "slp.c"
    p.write_text(SLP_SOURCE)
    return str(p)


@pytest.mark.parametrize("which", ["interp", "slp"])
def test_measured_oz_is_clangs_own_oz(tmp_path, slp_c, which):
    src = INTERP if which == "interp" else slp_c
    _, oz = _cc(tmp_path, "oz.o", src=src)
    pol = _policy(tmp_path, [GOOD, BAD], 0)
    r, _ = _with_policy(tmp_path, "m.o", pol, "-mllvm", "-mlbridge-po-measure", src=src)
    assert r.returncode == 0, r.stderr
    features, oz_measured, orders = parse_measure(r.stderr, 2)
    assert oz_measured[:2] == [stored_sizes(oz)[1], stored_sizes(oz)[0]]
    assert len(features) == 32 and features[4] > 0           # instructions, before any pass
    assert orders[1][0] > oz_measured[0]                     # one cheap pass: larger


def test_opt_default_oz_is_not_clang_oz_here(tmp_path, slp_c):
    # why the plugin builds clang's pipeline for -Oz instead of parsing default<Oz>
    _, oz = _cc(tmp_path, "oz.o", src=slp_c)
    r, opt_oz = _cc(tmp_path, "o.o", *LOAD, "-mllvm", "-mlbridge-po-pipeline=default<Oz>", src=slp_c)
    assert r.returncode == 0, r.stderr
    assert _bytes(opt_oz) != _bytes(oz)


def test_the_kept_object_is_the_measured_one_and_never_larger(tmp_path):
    _, oz = _cc(tmp_path, "oz.o")
    pol = _policy(tmp_path, [BAD, GOOD, pipeline_text((OZ, 15))], 3)
    r, out = _with_policy(tmp_path, "p.o", pol)
    assert r.returncode == 0, r.stderr
    m = TRACE.search(r.stderr)
    assert m, r.stderr
    assert m.group(1) == "3" and m.group(2) == "0 1 2"
    kept, oz_stored = int(m.group(5)), int(m.group(6))
    assert oz_stored == stored_sizes(oz)[1]
    assert stored_sizes(out)[1] == kept <= oz_stored
    if m.group(3) == "-Oz":
        assert _bytes(out) == _bytes(oz)
    r2, again = _with_policy(tmp_path, "p2.o", pol)
    assert _bytes(again) == _bytes(out)                      # deterministic


# always_inline callees: clang's pipeline inlines them after any order (a required pass)
FORCED_SOURCE = """
static inline __attribute__((always_inline)) int mix(int a, int b) {
  for (int i = 0; i < 8; i++) { a = a * 31 + (b ^ i); b = b * 17 + a; }
  return a ^ b;
}
int f(int x) { return mix(x, 1) + mix(x, 2); }
int g(int x) { return mix(x, 3) * mix(x, 4) - mix(x, 5); }
"""


def test_what_is_measured_includes_clangs_required_passes(tmp_path):
    # an order without the inliner: the always-inliner still runs after it in
    # clang; the size measured (and kept) must be that of the object clang writes
    src = tmp_path / "forced.c"
    src.write_text(FORCED_SOURCE)
    _, oz = _cc(tmp_path, "oz.o", src=str(src))
    light = "function(sroa<modify-cfg>,early-cse<memssa>,simplifycfg)"
    pol = _policy(tmp_path, [light], 1)
    r, _ = _with_policy(tmp_path, "m.o", pol, "-mllvm", "-mlbridge-po-measure", src=str(src))
    _, oz_measured, (order,) = parse_measure(r.stderr, 1)
    r, out = _with_policy(tmp_path, "p.o", pol, "-mllvm", "-mlbridge-po-pipeline=" + light, src=str(src))
    assert r.returncode == 0, r.stderr
    # the order applied alone: the sizes measured for it (stored bytes and .text)
    assert stored_sizes(out) == (order[1], order[0])
    assert order[2] == 0                             # no table of addresses here
    r, out = _with_policy(tmp_path, "q.o", pol, src=str(src))
    m = TRACE.search(r.stderr)
    assert m and stored_sizes(out)[1] == int(m.group(5)) <= stored_sizes(oz)[1]


SWITCH_SOURCE = """
const char *name(int i) {
  switch (i) {
    case 0: return "zero"; case 1: return "one"; case 2: return "two"; case 3: return "three";
    case 4: return "four"; case 5: return "five"; case 6: return "six"; default: return "many";
  }
}
"""


@pytest.mark.parametrize("pic", ["-fPIC", "-fno-pic"])
def test_a_table_of_addresses_costs_its_dynamic_relocations_under_pic(tmp_path, pic):
    # a switch made a lookup table of string addresses and not converted to relative
    # offsets (-Oz converts it): under PIC each entry is a dynamic relocation in the program
    src = tmp_path / "sw.c"
    src.write_text(SWITCH_SOURCE)
    table = pipeline_text((0, 14))                      # sroa-cse-cfg, late-cfg (switch to lookup)
    pol = _policy(tmp_path, [table], 1)
    r, _ = _with_policy(tmp_path, "m.o", pol, "-mllvm", "-mlbridge-po-measure", pic, src=str(src))
    assert r.returncode == 0, r.stderr
    _, oz, (order,) = parse_measure(r.stderr, 1)
    assert oz[2] == 0
    if pic == "-fPIC":
        assert order[2] == 7 * 24                       # seven entries, one Elf64_Rela each
        r, _ = _with_policy(tmp_path, "p.o", pol, pic, src=str(src))
        m = TRACE.search(r.stderr)
        assert m and m.group(3) == "-Oz" and int(m.group(7)) == 0
    else:
        assert order[2] == 0                            # resolved by the static link


def test_an_order_that_only_loses_leaves_oz_untouched(tmp_path):
    _, oz = _cc(tmp_path, "oz.o")
    r, out = _with_policy(tmp_path, "p.o", _policy(tmp_path, [BAD], 1))
    assert r.returncode == 0, r.stderr
    assert "kept -Oz" in r.stderr
    assert _bytes(out) == _bytes(oz)


def _ranker(tmp_path, n, best, name):
    rk = Ranker(n, hidden=4)
    rk.b1 = np.full(n, 0.1, np.float32)
    rk.b1[best] = -0.1                                       # lowest predicted ratio: ranked first
    return rk.export_onnx(str(tmp_path / name))


@pytest.mark.parametrize("best", [0, 2])
def test_a_ranker_chooses_the_orders_tried(tmp_path, best):
    _ranker(tmp_path, 3, best, "r.onnx")
    pol = _policy(tmp_path, [BAD, GOOD, pipeline_text((OZ, 15))], 1, model="r.onnx")
    r, _ = _with_policy(tmp_path, "p.o", pol)
    assert r.returncode == 0, r.stderr
    m = TRACE.search(r.stderr)
    assert m and m.group(2) == str(best), r.stderr


@pytest.mark.parametrize("case", ["damaged", "format", "version", "major", "unparsable", "tries", "no-model",
                                  "model-shape", "model-nan", "not-a-file"])
def test_a_bad_policy_is_one_warning_and_oz(tmp_path, case):
    _, oz = _cc(tmp_path, "oz.o")
    orders = [GOOD, BAD]
    if case == "damaged":
        pol = str(tmp_path / "p.json")
        (tmp_path / "p.json").write_text('{"format": "mlbridge-order-policy", "vers')
    elif case == "format":
        pol = _policy(tmp_path, orders, 1, format="mlbridge-tuning")
    elif case == "version":
        pol = _policy(tmp_path, orders, 1, version=2)
    elif case == "major":
        pol = _policy(tmp_path, orders, 1, llvm_major=MAJOR - 1)
    elif case == "unparsable":
        pol = _policy(tmp_path, [GOOD, "function(no-such-pass)"], 1)
    elif case == "tries":
        pol = _policy(tmp_path, orders, 3)
    elif case == "no-model":
        pol = _policy(tmp_path, orders, 1, model="missing.onnx")
    elif case == "model-shape":
        _ranker(tmp_path, 5, 0, "r5.onnx")                  # 5 scores for 2 orders
        pol = _policy(tmp_path, orders, 1, model="r5.onnx")
    elif case == "model-nan":
        rk = Ranker(2, hidden=4)
        rk.b1 = np.array([np.nan, 0.0], np.float32)         # a score that is not a number
        rk.export_onnx(str(tmp_path / "nan.onnx"))
        pol = _policy(tmp_path, orders, 1, model="nan.onnx")
    else:
        pol = str(tmp_path)
    r, out = _with_policy(tmp_path, "p.o", pol)
    assert r.returncode == 0, r.stderr                       # the compiler never fails for a policy
    warnings = [ln for ln in r.stderr.splitlines() if "mlbridge-po-policy:" in ln]
    assert len(warnings) == 1 and "compiled as -Oz" in warnings[0], r.stderr
    assert _bytes(out) == _bytes(oz)


# ---- the workflow -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def projects(tmp_path_factory):
    """Two small training projects (their folder names are the project names)."""
    root = tmp_path_factory.mktemp("projects")
    c = mini_corpus.C_FILES
    return [mini_corpus.make_corpus(str(root / "alpha"), c[: len(c) // 2]),
            mini_corpus.make_corpus(str(root / "beta"), c[len(c) // 2:])]


def _tune_dir(tmp_path, corpus, orders):
    d = tmp_path / f"tune-{os.path.basename(corpus)}"
    d.mkdir()
    mods = {f"m{i}.o": {"search": {"best_order": list(o), "best_bytes": 90, "oz_bytes": 100}}
            for i, o in enumerate(orders)}
    (d / "checkpoint.json").write_text(json.dumps({"corpus": corpus, "modules": mods}))
    return str(d)


@pytest.fixture(scope="module")
def toolchain():
    return Toolchain.find(clang=CLANG, plugin=PLUGIN, need_plugin=True)


def test_train_orders_end_to_end(tmp_path, projects, toolchain):
    tunes = [_tune_dir(tmp_path, projects[0], [(3, 1, 9), (0, 3, 12, 1, 14)]),
             _tune_dir(tmp_path, projects[1], [(3, 7, 8, 1), (OZ, 18, 16)])]
    out = str(tmp_path / "out")
    s = train_orders(out, projects, tunes, toolchain, OrdersConfig(tries=2, coreset=4, max_orders=7, jobs=2),
                     llvm_major=MAJOR)
    # the 3 seeds every tune starts from, then the 3 winners that are not seeds
    assert s["candidates"] == 6 and s["failed_modules"] == 0
    assert set(s["cv"]["per_project"]) == {"alpha", "beta"}
    cv = s["cv"]
    # a kept ratio is never above -Oz (-Oz is always a candidate)
    assert all(cv[k] <= 1.0 for k in ("fixed", "ranker", "coreset_oracle", "oracle"))
    assert cv["oracle"] <= cv["coreset_oracle"] + 1e-12
    pol = OrderPolicyFile.load(s["policy"])
    assert pol.llvm_major == MAJOR and pol.tries == 2 and pol.about["trained_on"] == ["alpha", "beta"]
    with open(os.path.join(out, "labels.jsonl")) as f:
        assert sum(1 for _ in f) == s["modules"]
    # applied by corpus evaluate: every module compiled, none larger than -Oz
    for c in projects:
        ev = evaluate(load(c), Policy.parse(f"orders:{s['policy']}"), toolchain, jobs=2, problem="phase-ordering")
        assert ev.scores and all(sc.ok for sc in ev.scores), [sc.policy.error for sc in ev.scores]
        assert all(sc.policy.stored_bytes <= sc.baseline.stored_bytes for sc in ev.scores)
        # a module where -Oz was kept (no decision) is -Oz's size; one where an order was kept, no larger
        assert all(sc.policy.decisions in (0, 1) for sc in ev.scores)
        assert all(sc.policy.stored_bytes == sc.baseline.stored_bytes for sc in ev.scores if not sc.policy.decisions)
    # a rerun resumes: nothing is measured again, and the progress counts what was
    mtime = os.path.getmtime(os.path.join(out, "labels.jsonl"))
    counted = []

    class Bar:
        def update(self, k, postfix=None):
            counted.append(k)

        def close(self):
            pass
    again = train_orders(out, projects, [], toolchain, OrdersConfig(tries=2, coreset=4, max_orders=7, jobs=2),
                         llvm_major=MAJOR, stage=lambda total, desc, unit: Bar())
    assert sum(counted) == s["modules"]
    assert os.path.getmtime(os.path.join(out, "labels.jsonl")) == mtime
    assert again["cv"] == s["cv"]


def test_a_measure_compile_that_times_out_is_a_failed_row(tmp_path, projects, toolchain):
    # a hung or slow compiler is bounded: the module's row says so and has no sizes
    from mlbridge.problems.phase_ordering.orders.labels import measure_module
    pol = _policy(tmp_path, [GOOD, BAD], 0)
    module = load(projects[0]).modules[0]
    row = measure_module("alpha", module, pol, 2, toolchain, timeout=0.001)
    assert row.error and "did not finish within" in row.error and not row.oz and not row.orders


def test_a_bad_policy_is_a_failure_in_corpus_evaluate(tmp_path, projects, toolchain):
    pol = _policy(tmp_path, [GOOD], 1, llvm_major=MAJOR + 1)
    ev = evaluate(load(projects[0]), Policy.parse(f"orders:{pol}"), toolchain, jobs=2, problem="phase-ordering")
    assert ev.scores and not any(sc.ok for sc in ev.scores)
    assert "train it again with this compiler" in ev.scores[0].policy.error


def test_evaluation_projects_are_refused(tmp_path, toolchain):
    lz4 = tmp_path / "lz4"
    lz4.mkdir()
    with pytest.raises(OrdersSetupError, match="evaluation-split"):
        train_orders(str(tmp_path / "o"), [str(lz4)], [], toolchain, llvm_major=MAJOR)
    from mlbridge.problems.phase_ordering.orders.candidates import CandidateError, from_tunes
    d = _tune_dir(tmp_path, "/somewhere/zstandard", [(3, 1)])
    with pytest.raises(CandidateError, match="evaluation-split"):
        from_tunes([d], 8)
