"""Issue 26, mutation testing of formats/record.py (docs/testing.md, "Mutation
testing"): the record layout's message limit (inclusive) and its errors, shapes
numpy cannot lay out, and the FeatureView a policy reads: its Mapping methods,
its repr, and the views of a record whose tensors are all empty."""
from __future__ import annotations

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.core.spec import TensorSpec
from mlbridge.formats.record import FeatureView, RecordLayout

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation


def _specs():
    return [TensorSpec("a", "int64", (2,)), TensorSpec("b", "float32"), TensorSpec("c", "bool", (3,))]


def _data():
    return np.array([1, -2], np.int64).tobytes() + np.float32(1.5).tobytes() + bytes([1, 0, 1])


def test_a_record_of_exactly_the_limit_is_accepted():
    layout = RecordLayout(_specs(), max_bytes=8 * 2 + 4 + 3)
    assert layout.nbytes == 23
    assert list(layout.view(_data(), 0)["a"]) == [1, -2]


def test_a_record_beyond_the_limit_is_refused():
    with pytest.raises(ProtocolError, match=r"^bitstream: tensors of 23 bytes per record exceed the "
                                            r"22-byte message limit$"):
        RecordLayout(_specs(), max_bytes=22)


def test_shapes_numpy_cannot_lay_out_are_a_protocol_error():
    """An empty tensor (so within any limit) with a dimension numpy's C int cannot hold."""
    spec = TensorSpec("huge", "int8", (0, 2 ** 40))
    assert spec.nbytes == 0
    with pytest.raises(ProtocolError, match=r"^bitstream: tensor shapes numpy cannot lay out \(.+\)$"):
        RecordLayout([spec])


def test_feature_view_is_a_read_only_mapping_in_header_order():
    layout = RecordLayout(_specs())
    v = layout.view(b"\xff" + _data(), 1)
    assert isinstance(v, FeatureView)
    assert list(v) == ["a", "b", "c"] and len(v) == 3
    assert "a" in v and "c" in v and "z" not in v and 0 not in v
    assert v["a"].tolist() == [1, -2] and float(v["b"]) == 1.5 and v["c"].tolist() == [True, False, True]
    assert not v["a"].flags.writeable
    with pytest.raises(KeyError) as e:
        v["z"]
    assert e.value.args == ("z",)
    assert v.get("z") is None
    assert dict(v.items())["b"] == np.float32(1.5)
    assert repr(v) == ("FeatureView({'a': array([ 1, -2]), 'b': array(1.5, dtype=float32), "
                       "'c': array([ True, False,  True])})")


def test_arrays_in_header_order():
    got = RecordLayout(_specs()).arrays(_data(), 0)
    assert [a.dtype for a in got] == [np.dtype(np.int64), np.dtype(np.float32), np.dtype(bool)]
    assert got[0].tolist() == [1, -2] and got[1].shape == () and float(got[1]) == 1.5
    assert got[2].tolist() == [True, False, True]


def test_a_record_whose_tensors_are_all_empty():
    """Nothing to read: every tensor is an empty, read-only array of its own shape and type."""
    layout = RecordLayout([TensorSpec("a", "int64", (0,)), TensorSpec("b", "float32", (2, 0))])
    assert layout.nbytes == 0
    for v in (layout.view(b"", 0), layout.record(b"", 0)):
        assert list(v) == ["a", "b"] and len(v) == 2 and "b" in v and "z" not in v
        assert v["a"].shape == (0,) and v["a"].dtype == np.int64
        assert v["b"].shape == (2, 0) and v["b"].dtype == np.float32
        assert not v["a"].flags.writeable and not v["b"].flags.writeable
        with pytest.raises(KeyError) as e:
            v["z"]
        assert e.value.args == ("z",)
        assert repr(v) == ("FeatureView({'a': array([], dtype=int64), "
                           "'b': array([], shape=(2, 0), dtype=float32)})")
    assert [a.shape for a in layout.arrays(b"", 0)] == [(0,), (2, 0)]


def test_a_record_of_one_byte():
    """The smallest record that holds data: a FeatureView over that byte."""
    layout = RecordLayout([TensorSpec("flag", "bool")])
    v = layout.view(b"\x00\x01", 1)
    assert isinstance(v, FeatureView) and list(v) == ["flag"] and len(v) == 1
    assert bool(v["flag"]) is True and v["flag"].shape == () and not v["flag"].flags.writeable
    assert bool(layout.record(b"\x00", 0)["flag"]) is False
