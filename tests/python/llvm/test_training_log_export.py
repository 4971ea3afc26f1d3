"""`mlbridge log export|show`: TFRecords of tf.train.SequenceExample without
TensorFlow (checked by TensorFlow's own parser when MLBRIDGE_TF_PYTHON names a
python with TensorFlow), .npz, Parquet; TFRecord framing and crc32c vectors."""
from __future__ import annotations

import io
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.formats import tf_example, tfrecord
from mlbridge.llvm.training_log import read_training_log, relative_reward, set_log_reward
from conftest import HELPERS, VECTORS, child_env
from test_training_log import SMALL, manifest, small_row, write_log


def cli(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "mlbridge", *args], env=child_env(), capture_output=True, text=True,
                       timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


# ---- crc32c and the TFRecord framing ----------------------------------------

def test_crc32c_vectors_both_implementations():
    # RFC 3720 B.4 / the usual check value of CRC-32C
    for fn in (tfrecord.crc32c, tfrecord._crc32c_table):
        assert fn(b"123456789") == 0xE3069283
        assert fn(b"") == 0
        assert fn(bytes(32)) == 0x8A9136AA
        assert fn(bytes(range(32))) == 0x46DD794E


def test_masked_crc_and_record_layout():
    buf = io.BytesIO()
    tfrecord.write_record(buf, b"abc")
    raw = buf.getvalue()
    assert len(raw) == 8 + 4 + 3 + 4
    assert raw[:8] == struct.pack("<Q", 3)
    crc = tfrecord.crc32c(raw[:8])
    assert struct.unpack("<I", raw[8:12])[0] == ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF
    assert raw[12:15] == b"abc"
    assert list(tfrecord.read_records(io.BytesIO(raw))) == [b"abc"]


@pytest.mark.parametrize("cut,match", [(5, "truncated header"), (14, "truncated data")])
def test_truncated_tfrecord_is_refused(cut, match):
    buf = io.BytesIO()
    tfrecord.write_record(buf, b"abc")
    with pytest.raises(ProtocolError, match=match):
        list(tfrecord.read_records(io.BytesIO(buf.getvalue()[:cut])))


def test_corrupt_tfrecord_is_refused():
    buf = io.BytesIO()
    tfrecord.write_record(buf, b"abc")
    raw = bytearray(buf.getvalue())
    raw[13] ^= 1
    with pytest.raises(ProtocolError, match="data checksum"):
        list(tfrecord.read_records(io.BytesIO(bytes(raw))))


# ---- SequenceExample bytes ---------------------------------------------------

def test_sequence_example_wire_bytes_are_tensorflows():
    """Hand-computed from TensorFlow's example.proto / feature.proto field numbers:
    SequenceExample.feature_lists=2 > FeatureLists.feature_list=1 (map entry key=1,
    value=2) > FeatureList.feature=1 > Feature.int64_list=3 / float_list=2 > packed value=1."""
    se = tf_example.sequence_example({"a": np.array([[5]], np.int64)})
    assert se.SerializeToString(deterministic=True) == bytes.fromhex("120e0a0c0a016112070a051a030a0105")
    se = tf_example.sequence_example({"r": np.array([1.0], np.float32)})
    assert se.SerializeToString(deterministic=True) == bytes.fromhex("12110a0f0a0172120a0a0812060a040000803f")


@pytest.mark.parametrize("seed", range(5))
def test_fast_serializer_gives_the_message_classes_bytes(seed):
    """serialize_sequence_example (numpy layout) == the protobuf classes' deterministic bytes."""
    rng = np.random.default_rng(seed)
    steps = int(rng.integers(1, 50))
    ii = np.iinfo(np.int64)
    edge = np.array([0, 1, 127, 128, 16383, 16384, -1, -128, ii.min, ii.max], np.int64)
    lists = {
        "inlining_decision": rng.integers(0, 2, (steps, 1)),
        "edges": rng.choice(edge, (steps, 1)),
        "wide": (rng.integers(ii.min, ii.max, (steps, 1), dtype=np.int64)),
        "reward": rng.standard_normal(steps).astype(np.float32),
        "f64": rng.standard_normal((steps, 1)),
        "vec": rng.integers(-3, 3, (steps, 4)),
        "u32": rng.integers(0, 2 ** 32, (steps, 1)).astype(np.uint32),
        "b": rng.standard_normal((steps, 2)).astype(np.float32),
        "zz\u00e9": np.zeros((steps, 1), np.int64),
    }
    want = tf_example.sequence_example(lists).SerializeToString(deterministic=True)
    assert tf_example.serialize_sequence_example(lists) == want


def test_sequence_example_refuses_what_int64_cannot_hold():
    with pytest.raises(ValueError):
        tf_example.sequence_example({"u": np.array([[2 ** 64 - 1]], np.uint64)})


def test_private_pool_does_not_clash_with_the_default_pool():
    from google.protobuf import descriptor_pool
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindMessageTypeByName("tensorflow.SequenceExample")


# ---- mlbridge log export ------------------------------------------------------

def golden_copy(tmp_path, name="module.log", reward=True):
    m = manifest()
    p = str(tmp_path / name)
    shutil.copy(os.path.join(VECTORS, m["log"]), p)
    if reward:
        set_log_reward(p, m["reward"]["policy_size"], m["reward"]["baseline_size"])
    return p


def parse_record(data):
    se = tf_example.SequenceExample()
    se.ParseFromString(data)
    lists = se.feature_lists.feature_list
    out = {}
    for name in lists:
        feats = lists[name].feature
        kind = feats[0].WhichOneof("kind") if len(feats) else None
        out[name] = (kind, [list(getattr(f, kind).value) for f in feats])
    return out


def test_export_tfrecord_as_ml_compiler_opt_reads_it(tmp_path):
    m = manifest()
    p = golden_copy(tmp_path)
    r = json.loads(cli("log", "export", p, "-o", str(tmp_path / "out"), "--json").stdout)
    assert r["records"] == 1 and r["reward"] == "relative" and r["failed"] == []
    with open(r["outputs"][0], "rb") as f:
        (data,) = list(tfrecord.read_records(f))
    got = parse_record(data)
    n = len(m["observations"])
    assert set(got) == set(m["features"]) | {"delta_size", "reward"}
    for k, name in enumerate(m["features"]):
        assert got[name] == ("int64_list", [[row[k]] for row in m["observations"]])
    assert got["delta_size"] == ("int64_list", [[0]] * (n - 1) + [[m["reward"]["delta_size"]]])
    want = np.float32(relative_reward(m["reward"]["policy_size"], m["reward"]["baseline_size"]))
    assert got["reward"] == ("float_list", [[want]] * n)


def test_export_reward_modes(tmp_path):
    m = manifest()
    rewarded = golden_copy(tmp_path, "a.log")
    plain = golden_copy(tmp_path, "b.log", reward=False)
    r = json.loads(cli("log", "export", rewarded, plain, "-o", str(tmp_path / "o1"), "--json").stdout)
    assert r["reward"] == "bytes"          # auto: b.log has no sizes, one unit for all
    with open(r["outputs"][0], "rb") as f:
        recs = [parse_record(d) for d in tfrecord.read_records(f)]
    assert recs[0]["reward"][1][0] == [float(-m["reward"]["delta_size"])] and recs[1]["reward"][1][0] == [0.0]
    bad = cli("log", "export", rewarded, plain, "-o", str(tmp_path / "o2"), "--reward", "relative", check=False)
    assert bad.returncode == 1 and "no sizes" in bad.stderr and "Traceback" not in bad.stderr


def test_export_skips_broken_logs_and_says_why(tmp_path):
    good = golden_copy(tmp_path)
    broken = str(tmp_path / "broken.log")
    open(broken, "wb").write(open(good, "rb").read()[:-4])
    empty = write_log(str(tmp_path / "empty.log"), SMALL, [("", [])])
    r = cli("log", "export", str(tmp_path), "-o", str(tmp_path / "out"), "--json", check=False)
    assert r.returncode == 1
    res = json.loads(r.stdout)
    assert res["records"] == 1 and res["without_steps"] == [empty]
    assert [f["log"] for f in res["failed"]] == [broken] and "truncated" in res["failed"][0]["error"]


def test_export_logs_in_process_reports_each_log_and_refuses_with_typed_errors(tmp_path):
    """The library behind `log export`: callbacks per log and per skipped log; a
    path naming no log or an output that is a file is a LogExportError (the
    command's one-line usage error), before anything is written."""
    from mlbridge.llvm.log_export import LogExportError, export_logs, find_logs
    (tmp_path / "in").mkdir()
    good = golden_copy(tmp_path / "in")
    broken = str(tmp_path / "in" / "broken.log")
    open(broken, "wb").write(open(good, "rb").read()[:-4])
    paths = find_logs([str(tmp_path / "in")])
    assert paths == sorted([good, broken])
    seen, skipped, started = [], [], []
    r = export_logs(paths, str(tmp_path / "out"), on_start=started.append, on_log=lambda p, ok: seen.append((p, ok)),
                    on_skip=skipped.append)
    assert started == [2] and sorted(seen) == sorted([(good, True), (broken, False)])
    assert len(skipped) == 1 and broken in skipped[0] and r["records"] == 1 and r["failed"][0]["log"] == broken
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogExportError, match="no \\*.log file in this folder"):
        find_logs([str(tmp_path / "empty")])
    with pytest.raises(LogExportError, match="no such file"):
        find_logs([str(tmp_path / "nope.log")])
    (tmp_path / "file").write_text("x")
    with pytest.raises(LogExportError, match="exists and is not a folder"):
        export_logs([good], str(tmp_path / "file"))


def test_export_npz(tmp_path):
    m = manifest()
    p = golden_copy(tmp_path)
    q = write_log(str(tmp_path / "x.log"), SMALL, [("f", [small_row(0), small_row(1)]), ("g", [small_row(2)])])
    cli("log", "export", q, "-o", str(tmp_path / "small"), "--format", "npz", "--quiet")
    z = np.load(tmp_path / "small" / "training.npz")
    assert z["b"].tolist() == [[0, 0.5], [1, 0.5], [2, 0.5]]
    assert z["trajectory"].tolist() == [0, 0, 1] and z["step"].tolist() == [0, 1, 0]
    assert z["trajectory_context"].tolist() == ["f", "g"] and z["reward"].dtype == np.float32
    cli("log", "export", p, "-o", str(tmp_path / "g"), "--format", "npz", "--quiet")
    z = np.load(tmp_path / "g" / "training.npz")
    assert z["inlining_decision"].reshape(-1).tolist() == [row[-1] for row in m["observations"]]


def test_export_parquet(tmp_path):
    import pyarrow.parquet as pq   # installed by the test command (python/requirements-dev.txt): runs, never skips
    q = write_log(str(tmp_path / "x.log"), SMALL, [("f", [small_row(0), small_row(1)])])
    cli("log", "export", q, "-o", str(tmp_path / "o"), "--format", "parquet", "--quiet")
    t = pq.read_table(tmp_path / "o" / "training.parquet").to_pydict()
    assert t["a"] == [0, 10] and t["b"] == [[0.0, 0.5], [1.0, 0.5]] and t["context"] == ["f", "f"]


@pytest.mark.parametrize("fmt", ["tfrecord", "npz", "parquet"])
def test_export_of_logs_without_steps_writes_empty_outputs(tmp_path, fmt):
    empty = write_log(str(tmp_path / "empty.log"), SMALL, [("", [])])
    r = json.loads(cli("log", "export", empty, "-o", str(tmp_path / "o"), "--format", fmt, "--json").stdout)
    assert r["records"] == 0 and r["without_steps"] == [empty] and os.path.exists(r["outputs"][0])


@pytest.mark.parametrize("args,match", [
    (["log", "export", "nope.log", "-o", "x"], "nope.log: no such file"),
    (["log", "export"], "required"),
    (["log", "show", "nope.log"], "nope.log: no such file"),
    (["log", "export", "--format", "csv", "a", "-o", "x"], "invalid choice"),
])
def test_usage_errors_are_one_line(args, match):
    r = cli(*args, check=False)
    assert r.returncode == 2 and match in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_show_summarizes_the_golden_log(tmp_path):
    m = manifest()
    p = golden_copy(tmp_path)
    s = json.loads(cli("log", "show", p, "--json").stdout)
    n = len(m["observations"])
    assert s["observations"] == n and s["contexts"] == [{"name": "", "observations": n}]
    assert [f["name"] for f in s["features"]] == m["features"]
    decisions = [row[-1] for row in m["observations"]]
    assert s["decisions"]["inlining_decision"] == {str(v): decisions.count(v) for v in sorted(set(decisions))}
    assert s["reward"]["delta_size"] == m["reward"]["delta_size"] and s["ml_compiler_opt_usable"]
    text = cli("log", "show", p).stdout
    assert "inlining_decision" in text and "relative reward" in text


def test_show_a_malformed_log_is_one_line(tmp_path):
    p = str(tmp_path / "bad.log")
    open(p, "wb").write(b'{"features":[]}\n{"observation":0}\n\n')
    r = cli("log", "show", p, check=False)
    assert r.returncode == 1 and "before any context" in r.stderr and "Traceback" not in r.stderr


# ---- TensorFlow's own parser ---------------------------------------------------

def test_tensorflow_parses_the_export(tmp_path):
    """ml-compiler-opt's trainers parse with tf.io.parse_single_sequence_example:
    observation features int64 scalars, inlining_decision int64, reward float32."""
    tf_python = os.environ.get("MLBRIDGE_TF_PYTHON")
    if not tf_python:
        pytest.skip("MLBRIDGE_TF_PYTHON (a python with TensorFlow) not set")
    m = manifest()
    p = golden_copy(tmp_path)
    cli("log", "export", p, "-o", str(tmp_path / "out"), "--quiet")
    r = subprocess.run([tf_python, os.path.join(HELPERS, "tf_check_sequence_examples.py"),
                        str(tmp_path / "out" / "training.tfrecord"), json.dumps(m["features"])],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    (parsed,) = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    for k, name in enumerate(m["features"]):
        assert parsed[name] == [row[k] for row in m["observations"]]
    want = float(np.float32(relative_reward(m["reward"]["policy_size"], m["reward"]["baseline_size"])))
    assert parsed["reward"] == pytest.approx([want] * len(m["observations"]))
    assert parsed["delta_size"][-1] == m["reward"]["delta_size"]


def test_log_reading_is_vectorized_on_a_big_log(tmp_path):
    """10k observations: the reader gathers them in one copy (values checked)."""
    n = 10000
    rows = [small_row(i) for i in range(n)]
    log = read_training_log(write_log(str(tmp_path / "big.log"), SMALL, [("", rows)]))
    t = log.trajectories[0]
    assert t.steps == n and t.features["a"][-1, 0] == 10 * (n - 1)
    assert t.features["inlining_decision"].reshape(-1).sum() == n // 2
