"""The type table and tensor specs."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlbridge import DTYPES, ProtocolError, TensorSpec
from mlbridge.core import dtypes as D


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


# ---- sizes: numpy's item size, string tensors included (issue 25) -----------------------
# A string element takes no byte on the wire and 8 in numpy (an object array holds
# a pointer per element): TensorSpec checks with numpy's, as the decoders do, so a
# spec no array can hold is refused where it is made, not by numpy later.
HUGE = [2**28, 2**31, 2**32, 2**59, 2**60, 2**61, 2**62, 2**63 - 1]
SETTINGS = settings(max_examples=int(os.environ.get("MLBRIDGE_HOSTILE_EXAMPLES") or 300), deadline=None,
                    derandomize=True)


@st.composite
def zero_and_huge_shape(draw):
    """Small and huge dimensions with at least one zero: an empty tensor."""
    shape = draw(st.lists(st.sampled_from([0, 1, 2, 3] + HUGE), max_size=4))
    shape.insert(draw(st.integers(0, len(shape))), 0)
    return shape


def _spec_refusal(dtype, shape):
    try:
        TensorSpec("t", dtype, shape)
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("shape,refused", [
    ([0, 2**60], True), ([2**60, 0], True), ([0, 2**62], True), ([0, 2**63 - 1], True),
    ([0, 2**31, 2**31], True), ([2**61], True),
    ([0, 2**59], False), ([0], False), ([0, 0], False), ([2**59], False), ([3, 0, 2**32], False),
])
def test_string_spec_sizes_use_numpys_item_size(shape, refused):
    problem = _spec_refusal("string", shape)
    assert (problem is not None) == refused, problem
    if refused:
        assert problem == f"tensor 't': shape {shape} is too large"
        with pytest.raises(ProtocolError, match="too large"):
            TensorSpec.from_json({"name": "t", "type": "string", "shape": shape})
    elif 0 in shape:
        assert np.empty(shape, object).size == 0


@pytest.mark.hostile   # hostile shapes; MLBRIDGE_HOSTILE_EXAMPLES=N: N examples
@SETTINGS
@given(dtype=st.sampled_from(list(DTYPES)), shape=zero_and_huge_shape())
def test_empty_spec_accepted_exactly_when_numpy_can_hold_it(dtype, shape):
    """An empty shape: TensorSpec accepts it iff numpy can make the array."""
    try:
        np.empty(shape, DTYPES[dtype].np_dtype)
        numpy_holds = True
    except ValueError:
        numpy_holds = False
    problem = _spec_refusal(dtype, shape)
    assert (problem is None) == numpy_holds, (dtype, shape, problem)


@pytest.mark.hostile   # hostile shapes; MLBRIDGE_HOSTILE_EXAMPLES=N: N examples
@SETTINGS
@given(dtype=st.sampled_from(list(DTYPES)),
       shape=st.lists(st.sampled_from([0, 1, 2, 3] + HUGE), min_size=1, max_size=4))
def test_spec_sizes_fit_numpy_and_int64(dtype, shape):
    """Any shape: accepted iff its non-zero dimensions times numpy's item size
    (8 for a string) fit int64."""
    itemsize = max(DTYPES[dtype].np_dtype.itemsize, 1)
    n = itemsize
    fits = True
    for d in shape:
        if d:
            n *= d
            fits = fits and n <= 2**63 - 1
    assert (_spec_refusal(dtype, shape) is None) == fits


@pytest.mark.hostile   # hostile shapes; MLBRIDGE_HOSTILE_EXAMPLES=N: N examples
@SETTINGS
@given(shape=zero_and_huge_shape(), fmt=st.sampled_from(["protobuf", "json"]))
def test_string_spec_limit_is_the_decoders(shape, fmt):
    """A string spec is refused exactly when a decoder refuses a string tensor
    of that shape in an observation (one limit for specs and tensors)."""
    from mlbridge.formats import get_format
    from mlbridge.formats.protobuf import pb

    if fmt == "protobuf":
        msg = pb.Message()
        t = msg.observation.tensors.add()
        t.name, t.dtype = "t", 12
        t.shape.extend(shape)
        payload = msg.SerializeToString()
    else:
        payload = json.dumps({"observation": {"id": 0, "tensors": [
            {"name": "t", "type": "string", "shape": shape, "data": []}]}}).encode()
    try:
        get_format(fmt).decode_payload(payload)
        decoder_refuses = False
    except ProtocolError as exc:
        decoder_refuses = "too large" in str(exc)
        assert decoder_refuses, str(exc)
    assert (_spec_refusal("string", shape) is not None) == decoder_refuses
