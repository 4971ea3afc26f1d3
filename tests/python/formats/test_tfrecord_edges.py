"""Issue 26, mutation testing of formats/tfrecord.py and formats/tf_example.py:
the behaviour the first mutmut run showed no test held (docs/testing.md,
"Mutation testing"). TFRecord errors that say which record broke and why,
the length limit, write_record's count; SequenceExample context features,
varint lengths of exactly 128, what int64_list can and cannot hold."""
from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.formats import tf_example, tfrecord

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation


def _records(*datas: bytes) -> bytes:
    buf = io.BytesIO()
    for d in datas:
        tfrecord.write_record(buf, d)
    return buf.getvalue()


def _header(length: int) -> bytes:
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", tfrecord.masked_crc32c(raw))


# ---- TFRecord -------------------------------------------------------------------

def test_write_record_returns_the_bytes_it_wrote():
    buf = io.BytesIO()
    for data in (b"", b"x", bytes(300)):
        before = buf.tell()
        assert tfrecord.write_record(buf, data) == buf.tell() - before == len(data) + 16


@pytest.mark.parametrize("broken", [0, 1, 2])
def test_a_corrupt_record_is_named_by_its_index(broken):
    raw = bytearray(_records(b"first", b"second", b"third"))
    # the data's first byte of record `broken`: each record is 16 bytes + its data
    at = sum(16 + n for n in (5, 6, 5)[:broken]) + 12
    raw[at] ^= 0x40
    got = []
    with pytest.raises(ProtocolError) as e:
        for rec in tfrecord.read_records(io.BytesIO(bytes(raw))):
            got.append(rec)
    assert str(e.value) == f"TFRecord: record {broken}: data checksum mismatch"
    assert got == [b"first", b"second", b"third"][:broken]


def test_errors_name_the_path_given():
    raw = bytearray(_records(b"abc"))
    raw[0] ^= 1   # the length no longer matches its checksum
    with pytest.raises(ProtocolError, match=r"^/x/y\.tfrecord: record 0: length checksum mismatch$"):
        list(tfrecord.read_records(io.BytesIO(bytes(raw)), "/x/y.tfrecord"))


@pytest.mark.parametrize("length", [tfrecord.MAX_RECORD + 1, (1 << 63) + 5, (1 << 64) - 1])
def test_a_length_beyond_the_limit_is_refused_before_reading(length):
    """A corrupt (or hostile) length with a valid checksum: refused as too long,
    whatever its top bit, not read as a (short) record."""
    with pytest.raises(ProtocolError, match=rf"^TFRecord: record 0: length {length} exceeds {tfrecord.MAX_RECORD}$"):
        list(tfrecord.read_records(io.BytesIO(_header(length) + b"data")))


def test_a_length_at_the_limit_is_allowed():
    """MAX_RECORD itself is a valid length: this stream is only truncated."""
    with pytest.raises(ProtocolError, match=r"^TFRecord: record 0: truncated data$"):
        list(tfrecord.read_records(io.BytesIO(_header(tfrecord.MAX_RECORD) + b"data")))


# ---- SequenceExample -------------------------------------------------------------

def _parse(data: bytes):
    se = tf_example.SequenceExample()
    se.ParseFromString(data)
    return se


def test_context_features_hold_every_element():
    se = tf_example.sequence_example(
        {"a": np.array([[1], [2]], np.int64)},
        context={"one": np.array(7, np.int64), "many": np.array([[1.5, 2.5], [3.5, 4.5]], np.float32),
                 "flat": [4, 5, 6]})
    back = _parse(se.SerializeToString())
    ctx = back.context.feature
    assert sorted(ctx) == ["flat", "many", "one"]
    assert list(ctx["one"].int64_list.value) == [7]
    assert list(ctx["many"].float_list.value) == [1.5, 2.5, 3.5, 4.5]
    assert list(ctx["flat"].int64_list.value) == [4, 5, 6]
    assert [list(f.int64_list.value) for f in back.feature_lists.feature_list["a"].feature] == [[1], [2]]


def test_uint64_up_to_int64_max_is_kept():
    top = np.iinfo(np.int64).max
    se = tf_example.sequence_example({"u": np.array([[0], [5], [top]], np.uint64)})
    feats = se.feature_lists.feature_list["u"].feature
    assert [list(f.int64_list.value) for f in feats] == [[0], [5], [top]]


@pytest.mark.parametrize("serialize", [False, True])
def test_uint64_beyond_int64_is_refused(serialize):
    """Not wrapped to a negative int64: by the message classes and the numpy layout alike."""
    lists = {"u": np.array([[1], [2 ** 63]], np.uint64)}
    with pytest.raises(ValueError, match=r"^uint64 value does not fit tf.train's int64_list$"):
        if serialize:
            tf_example.serialize_sequence_example(lists)
        else:
            tf_example.sequence_example(lists)


@pytest.mark.parametrize("values", [np.array([["7"], ["8"]]), np.array([[1 + 2j]], np.complex64),
                                    np.array([b"5"]), np.array([["7"]], object)])
@pytest.mark.parametrize("serialize", [False, True])
def test_non_numeric_lists_are_refused(values, serialize):
    """Strings (even of digits), bytes, complex numbers, objects: no tf.train list type."""
    with pytest.raises(ValueError, match=rf"^dtype {values.dtype} has no tf.train list type$"):
        if serialize:
            tf_example.serialize_sequence_example({"x": values})
        else:
            tf_example.sequence_example({"x": values})


def test_empty_lists():
    """No steps: an empty feature list of any type (a fix: numpy could not
    reshape an empty array to (0, -1)). Steps of empty tensors: empty features
    (nothing to take a maximum of)."""
    lists = {"i": np.zeros((0, 1), np.int64), "f": np.zeros((0, 3), np.float32), "u": np.zeros((0,), np.uint64)}
    se = tf_example.sequence_example(lists)
    back = _parse(tf_example.serialize_sequence_example(lists))
    for name in lists:
        assert len(se.feature_lists.feature_list[name].feature) == 0
        assert len(back.feature_lists.feature_list[name].feature) == 0
    for dtype in (np.int64, np.int32, np.uint64, np.bool_, np.float32):
        lists = {"e": np.zeros((2, 0), dtype)}
        data = tf_example.serialize_sequence_example(lists)
        assert data == tf_example.sequence_example(lists).SerializeToString(deterministic=True)
        feats = _parse(data).feature_lists.feature_list["e"].feature
        kind = "float_list" if dtype == np.float32 else "int64_list"
        assert [f.WhichOneof("kind") for f in feats] == [kind, kind]
        assert [len(getattr(f, kind).value) for f in feats] == [0, 0]
    assert tf_example.serialize_sequence_example({}) == b""
    assert tf_example.sequence_example({}).SerializeToString(deterministic=True) == b""


@pytest.mark.parametrize("name_len", [127, 128, 129])
def test_lengths_of_128_are_two_byte_varints(name_len):
    """A name or a list body of exactly 128 bytes (the first length a varint
    needs two bytes for): the numpy layout still gives the classes' bytes."""
    name = "n" * name_len
    lists = {name: np.arange(name_len // 8, dtype=np.int64), "v": np.ones((1, 30), np.float32)}
    # "v": one step of 30 floats, a body of 2 + 2 + 2 + 120 = 126 bytes; 31 floats: 130
    got = tf_example.serialize_sequence_example(lists)
    assert got == tf_example.sequence_example(lists).SerializeToString(deterministic=True)
    assert sorted(_parse(got).feature_lists.feature_list) == sorted(lists)
    for n in (31, 32, 33):   # feature bodies around 128 bytes
        lists = {"v": np.ones((1, n), np.float32)}
        got = tf_example.serialize_sequence_example(lists)
        assert got == tf_example.sequence_example(lists).SerializeToString(deterministic=True)
        assert list(_parse(got).feature_lists.feature_list["v"].feature[0].float_list.value) == [1.0] * n


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60, reason="long double is no wider than double here")
def test_long_double_values_are_rounded_once_to_float32():
    """1 + 2^-24 + 2^-60 is just above halfway between two float32: rounded
    once it is 1 + 2^-23; rounded first to double it is exactly halfway and
    becomes 1.0. Both layouts give the float32 nearest the value."""
    x = np.longdouble(1) + np.longdouble(2) ** -24 + np.longdouble(2) ** -60
    want = float(np.float32(1 + 2 ** -23))
    for lists in ({"f": np.array([[x, x]], np.longdouble)}, {"f": np.array([x], np.longdouble)}):
        got = _parse(tf_example.serialize_sequence_example(lists)).feature_lists.feature_list["f"].feature[0]
        assert set(got.float_list.value) == {want}
        se = tf_example.sequence_example(lists).feature_lists.feature_list["f"].feature[0]
        assert set(se.float_list.value) == {want}
