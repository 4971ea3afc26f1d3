"""The type table and tensor specs."""
from __future__ import annotations

import numpy as np
import pytest

from mlbridge import DTYPES, ProtocolError, TensorSpec
from mlbridge import dtypes as D


def test_type_table_matches_protocol():
    rows = [(r.llvm, r.proto, r.np_dtype.name if r.llvm != "string" else "object", r.itemsize)
            for r in DTYPES.values()]
    assert rows == [
        ("float", 1, "float32", 4), ("double", 2, "float64", 8), ("int8_t", 3, "int8", 1),
        ("uint8_t", 4, "uint8", 1), ("int16_t", 5, "int16", 2), ("uint16_t", 6, "uint16", 2),
        ("int32_t", 7, "int32", 4), ("uint32_t", 8, "uint32", 4), ("int64_t", 9, "int64", 8),
        ("uint64_t", 10, "uint64", 8), ("bool", 11, "bool", 1), ("string", 12, "object", 0)]
    assert [r.bitstream for r in DTYPES.values()] == [True] * 11 + [False]


@pytest.mark.parametrize("alias,llvm", [
    ("float32", "float"), ("float64", "double"), ("int8", "int8_t"), ("uint64", "uint64_t"),
    (np.float32, "float"), (np.dtype(">i4"), "int32_t"), (bool, "bool"), (str, "string"), ("bool", "bool"),
])
def test_aliases(alias, llvm):
    assert D.resolve(alias).llvm == llvm


def test_unsupported_types():
    for bad in ("float16", np.float16, np.complex64, "int128_t"):
        with pytest.raises(ValueError):
            D.resolve(bad)
    with pytest.raises(ValueError):
        D.from_proto(0)


def test_spec_json_is_llvm_form():
    s = TensorSpec("callee_users", np.int64, [1])
    assert s.to_json() == '{"name":"callee_users","type":"int64_t","port":0,"shape":[1]}'
    assert TensorSpec("x", "float", []).to_json() == '{"name":"x","type":"float","port":0,"shape":[]}'
    assert TensorSpec('q"\\é', "bool", [2, 0]).to_json() == '{"name":"q\\"\\\\é","type":"bool","port":0,"shape":[2,0]}'
    for text in (s.to_json(), '{"shape":[1],"name":"callee_users","type":"int64"}', s.to_dict()):
        assert TensorSpec.from_json(text) == s


def test_spec_properties():
    s = TensorSpec("m", "float", [2, 3])
    assert (s.numel, s.nbytes, s.np_dtype, s.shape, hash(s) == hash(TensorSpec("m", np.float32, (2, 3))))\
        == (6, 24, np.dtype("<f4"), (2, 3), True)
    assert TensorSpec("s", "double", []).numel == 1 and TensorSpec("e", "double", [4, 0]).nbytes == 0
    with pytest.raises(ValueError):
        TensorSpec("t", "string", [1]).nbytes
    with pytest.raises(AttributeError):
        s.name = "other"


@pytest.mark.parametrize("bad", [
    '{"name":"","type":"float","shape":[1]}', '{"name":"x","type":"float","shape":[-1]}',
    '{"name":"x","type":"half","shape":[1]}', '{"name":"x","shape":[1]}', "[1]", "not json",
    '{"name":"x","type":"float","shape":1}',
])
def test_bad_specs(bad):
    with pytest.raises(ProtocolError):
        TensorSpec.from_json(bad)
