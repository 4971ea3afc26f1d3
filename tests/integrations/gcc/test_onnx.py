"""The plugin with the built-in ONNX engine: real C files, deterministic policy."""
import re

from gcc_support import CORPUS, KERNELS, gcc, plugin_args, read_log, unroll_policy

FEATURES = ["trip_count", "loop_depth", "innermost", "loop_blocks", "loop_stmts", "loop_loads",
            "loop_stores", "loop_calls", "fn_blocks", "fn_stmts", "fn_loops"]


def test_corpus_every_loop_gets_the_policys_decision(tmp_path, onnx_policy):
    assert len(CORPUS) >= 4, "tests/corpus/*.c is missing"
    log = tmp_path / "decisions.jsonl"
    for src in CORPUS:
        r = gcc(src, tmp_path / (src.stem + ".o"), "-c", *plugin_args(model=onnx_policy, log=log))
        assert r.returncode == 0, r.stderr
        assert "mlbridge" not in r.stderr, r.stderr
    records = read_log(log)
    assert {rec["file"] for rec in records} >= {str(CORPUS[0])}
    assert len(records) >= 10
    for rec in records:
        assert set(FEATURES) <= rec.keys()
        assert "error" not in rec, rec
        assert rec["applied"] is True
        assert rec["unroll"] == unroll_policy.policy(rec["trip_count"]), rec
        assert rec["loop_depth"] >= 1 and rec["loop_blocks"] >= 1 and rec["fn_loops"] >= 1
    # The corpus has loops of known and of unknown trip counts.
    assert any(rec["unroll"] == 4 for rec in records)
    assert any(rec["trip_count"] == -1 for rec in records)


def test_features_of_known_loops(tmp_path, onnx_policy):
    log = tmp_path / "decisions.jsonl"
    r = gcc(KERNELS, tmp_path / "k.o", "-c", *plugin_args(model=onnx_policy, log=log))
    assert r.returncode == 0, r.stderr
    by_fn = {}
    for rec in read_log(log):
        by_fn.setdefault(rec["function"], []).append(rec)
    assert "no_loops" not in by_fn
    assert [(x["trip_count"], x["unroll"]) for x in by_fn["scale"]] == [(100, 4)]
    assert [(x["trip_count"], x["unroll"]) for x in by_fn["saxpy"]] == [(64, 4)]
    assert [(x["trip_count"], x["unroll"]) for x in by_fn["odd"]] == [(99, 1)]
    assert [(x["trip_count"], x["unroll"]) for x in by_fn["sum"]] == [(-1, 1)]
    nest = sorted(by_fn["clear2d"], key=lambda x: x["loop_depth"])
    assert [(x["loop_depth"], x["innermost"], x["trip_count"]) for x in nest] == [(1, 0, 16), (2, 1, 12)]
    assert all(x["fn_loops"] == 2 for x in nest)
    scale = by_fn["scale"][0]
    assert (scale["loop_loads"], scale["loop_stores"], scale["loop_calls"]) == (1, 1, 0)
    assert scale["line"] == 5


def function_asm(asm, name):
    m = re.search(rf"^{name}:\n(.*?)\.size\s+{name},", asm, re.S | re.M)
    assert m, f"{name} not in the assembly"
    return m.group(1)


def test_unroll_decision_changes_the_generated_code(tmp_path, onnx_policy):
    plain = tmp_path / "plain.s"
    ml = tmp_path / "ml.s"
    assert gcc(KERNELS, plain, "-S").returncode == 0
    r = gcc(KERNELS, ml, "-S", *plugin_args(model=onnx_policy))
    assert r.returncode == 0, r.stderr
    plain_asm, ml_asm = plain.read_text(), ml.read_text()
    # scale: 100 doubles, vectorized two per mulpd; unrolled 4 times it has more multiplies.
    before = function_asm(plain_asm, "scale").count("mulpd")
    after = function_asm(ml_asm, "scale").count("mulpd")
    assert after > before >= 1, (before, after)
    # odd: the policy says 1 (do not unroll): never more code than without the plugin.
    assert function_asm(ml_asm, "odd").count("mulpd") <= function_asm(plain_asm, "odd").count("mulpd")


def test_decisions_are_deterministic(tmp_path, onnx_policy):
    outs = []
    for i in range(2):
        r = gcc(KERNELS, tmp_path / f"k{i}.s", "-S", *plugin_args(model=onnx_policy))
        assert r.returncode == 0, r.stderr
        outs.append((tmp_path / f"k{i}.s").read_text())
    assert outs[0] == outs[1]


def test_pragma_unroll_wins_over_the_model(tmp_path, onnx_policy):
    src = tmp_path / "pragma.c"
    src.write_text("void f(int *a) {\n#pragma GCC unroll 2\n  for (int i = 0; i < 64; ++i) a[i] += 1;\n}\n")
    log = tmp_path / "decisions.jsonl"
    r = gcc(src, tmp_path / "p.o", "-c", *plugin_args(model=onnx_policy, log=log))
    assert r.returncode == 0, r.stderr
    [rec] = read_log(log)
    assert rec["unroll"] == 2 and rec["applied"] is False and "pragma" in rec["error"]

