"""The json reader's simdjson path (big observations and replies, numbers
straight into numpy) gives exactly what the general orjson/stdlib path gives:
the same arrays, or a ProtocolError with the same message."""
import math

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.core.spec import TensorSpec
from mlbridge.formats import jsonfmt
from mlbridge.formats.jsonfmt import JsonFormat

import simdjson  # noqa: E402,F401  required (python/requirements-dev.txt): missing fails, never skips

FMT = JsonFormat()


def _decode(payload, simd):
    saved = (jsonfmt._simdjson, jsonfmt.SIMDJSON_MIN_BYTES)
    try:
        if simd:
            jsonfmt.SIMDJSON_MIN_BYTES = 0
        else:
            jsonfmt._simdjson = None
        return FMT.decode_payload(payload)
    finally:
        jsonfmt._simdjson, jsonfmt.SIMDJSON_MIN_BYTES = saved


def _outcome(payload, simd):
    try:
        msg = _decode(payload, simd)
    except ProtocolError as exc:
        return ("error", str(exc))
    if not hasattr(msg, "tensors"):
        return repr(msg)
    tensors = [(n, a.dtype.str, a.shape, a.tolist() if a.dtype == object else a.tobytes(), a.flags.writeable)
               for n, a in msg.tensors]
    return (type(msg).__name__, msg.id, getattr(msg, "error", None), tensors)


def _obs(data, typ="float", shape=None, kind="observation", extra=""):
    shape = [len(data.split(","))] if shape is None else shape
    return ('{"%s":{"id":7,"tensors":[{"name":"x","type":"%s","shape":%s,"data":[%s]%s}]}}'
            % (kind, typ, shape, data, extra)).encode()


CASES = [
    _obs("0.5,1.25,-3.0"),
    _obs("1,2,3"),                                   # integers in a float tensor are numbers
    _obs('"NaN",1.0,"-Infinity"'),                   # non-finite as strings
    _obs("null,1.0"),                                # null is not a number
    _obs("1e39,1.0"),                                # overflows float32
    _obs("1e39,1.0", typ="double"),
    _obs("1e400"),                                   # simdjson refuses, the general path decides
    _obs("1,2,3", typ="int64_t"),
    _obs("1,2.0,3", typ="int64_t"),                  # a float in an integer tensor
    _obs("1,true", typ="int64_t"),
    _obs("-1,2", typ="uint8_t"),
    _obs("255,256", typ="uint8_t"),
    _obs("-129,5", typ="int8_t"),
    _obs("18446744073709551615,0", typ="uint64_t"),
    _obs("9223372036854775808", typ="int64_t"),
    _obs("true,false", typ="bool"),
    _obs("0,1", typ="bool"),
    _obs('"a","b"', typ="string"),
    _obs("1,2", shape=[3]),                          # count does not match the shape
    _obs("1,2", shape=[-2]),
    _obs("1.5,2.5", kind="reply"),
    _obs("1.5,2.5", extra=',"unknown":{"deep":[1,{"a":2}]}'),
    _obs("1.5,2.5", extra=',"data":[9.0,9.0]'),      # duplicate key: both paths take the same one
    b'{"observation":{"id":7,"tensors":[]}}',
    b'{"observation":{"id":"7","tensors":[]}}',
    b'{"observation":{"id":7,"tensors":{}}}',
    b'{"reply":{"id":3,"error":"policy failed"}}',
    b'{"context":{"name":"f"}}',
    b'{"observation":{"id":7,"tensors":[{"name":"x","type":"float","shape":[2],"data":"12"}]}}',
    b'{"observation":{"id":7,"tensors":[{"name":"x","type":"nope","shape":[1],"data":[1]}]}}',
    b'[1,2,3]',
]


@pytest.mark.parametrize("payload", CASES, ids=range(len(CASES)))
def test_both_paths_agree(payload):
    assert _outcome(payload, True) == _outcome(payload, False)


def test_big_random_tensors_agree():
    rng = np.random.default_rng(3)
    feats = [TensorSpec("f", "float", (5000,)), TensorSpec("d", "double", (300,)),
             TensorSpec("i", "int64_t", (700,)), TensorSpec("u", "uint32_t", (70,))]
    arrays = [rng.standard_normal(5000).astype(np.float32), rng.standard_normal(300) * 1e300,
              rng.integers(-2**62, 2**62, 700), rng.integers(0, 2**32, 70).astype(np.uint32)]
    arrays[0][::97] = np.nan
    payload = FMT.observation_payload(11, feats, arrays)
    assert jsonfmt._decode_numeric(payload) is not None   # the simdjson path takes it
    assert _outcome(payload, True) == _outcome(payload, False)
    msg = _decode(payload, True)
    for (name, got), want in zip(msg.tensors, arrays):
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable
    assert math.isnan(msg.tensors[0][1][0])


def test_parser_reused_after_an_error():
    # A ProtocolError keeps the failing document's proxies alive in its
    # traceback; the next payload still decodes.
    bad = _obs("255,256", typ="uint8_t")
    with pytest.raises(ProtocolError) as info:
        _decode(bad, True)
    good = _decode(_obs("1,2"), True)
    assert info.value is not None
    np.testing.assert_array_equal(good.tensors[0][1], [1.0, 2.0])
