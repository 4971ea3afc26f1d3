"""Property tests (Hypothesis): on any bytes, every decoder entry point either
decodes or raises ProtocolError, nothing else (issue 13).

Entry points: ``formats.detect``, each format's ``model_decoder`` and
``compiler_decoder``, the framed formats' ``decode_payload``, and
``read_log``. Inputs: arbitrary bytes, the golden vectors with mutations,
and structured messages whose shapes, dtypes and sizes are hostile (rank
> 64, dimensions of 2^32 and 2^62, products that overflow). Example counts
are bounded so the suite stays fast; the pinned regressions at the end are
the leaks these tests found.
"""
from __future__ import annotations

import json
import os
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import HELPERS, VECTORS

sys.path.insert(0, HELPERS)
from mutations import HOSTILE, mutate as _mutate  # noqa: E402

import mlbridge
from mlbridge.core.errors import ProtocolError
from mlbridge.core.spec import TensorSpec
from mlbridge.formats import FORMATS, decode_all, detect, get_format
from mlbridge.formats.protobuf import pb

# hostile input (docs/testing.md, "Markers: what a test guards"): pytest -m hostile
pytestmark = pytest.mark.hostile

# MLBRIDGE_HOSTILE_EXAMPLES=N: N examples per property, as in test_damaged_inputs (longer runs)
SETTINGS = settings(max_examples=int(os.environ.get("MLBRIDGE_HOSTILE_EXAMPLES") or 300), deadline=None,
                    derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SMALL = 1 << 16      # a decoder limit that keeps every allocation small

with open(os.path.join(VECTORS, "manifest.json")) as _f:
    _CASES = json.load(_f)["cases"]
SEEDS = []
for _c in _CASES:
    with open(os.path.join(VECTORS, _c["file"]), "rb") as _f:
        SEEDS.append((_c, _f.read()))
ADVICE_SETS = [tuple(TensorSpec.from_json(s) for s in c["advice"]) for c in _CASES if c["advice"]]

DTYPES = ["float", "double", "int8_t", "uint8_t", "int16_t", "int32_t", "int64_t", "uint64_t",
          "bool", "string", "int128", ""]


# ---- checking one input --------------------------------------------------------
def _only_protocol_errors(fn, *args):
    try:
        return fn(*args)
    except ProtocolError:
        return None


def _all_entry_points(data: bytes, tmp_dir: str) -> None:
    """Every decoder on ``data``; only ProtocolError may escape."""
    _only_protocol_errors(detect, data)
    for name, fmt in FORMATS.items():
        _only_protocol_errors(decode_all, data, fmt.model_decoder(SMALL))
        for advice in ADVICE_SETS[:: max(1, len(ADVICE_SETS) // 4)]:
            if name == "bitstream" and any(s.type.is_string for s in advice):
                continue
            _only_protocol_errors(decode_all, data, fmt.compiler_decoder(advice, SMALL))
        if fmt.framed:
            _only_protocol_errors(fmt.decode_payload, data)
    _read_log(data, tmp_dir)


def _read_log(data: bytes, tmp_dir: str, replies: bytes = b"") -> None:
    path = os.path.join(tmp_dir, "log.out")
    rpath = os.path.join(tmp_dir, "log.in")
    with open(path, "wb") as f:
        f.write(data)
    with open(rpath, "wb") as f:
        f.write(replies)
    for rep in (None, rpath):
        try:
            for _ in mlbridge.read_log(path, replies=rep, max_message=SMALL):
                pass
        except ProtocolError:
            pass


# ---- strategies ----------------------------------------------------------------


@st.composite
def mutated_vector(draw):
    case, data = draw(st.sampled_from(SEEDS))
    return _mutate(draw, data)


dims = st.lists(st.sampled_from(HOSTILE), max_size=4) | st.lists(st.sampled_from([0, 1, 2]), min_size=60, max_size=70)


@st.composite
def spec_json(draw):
    return {"name": draw(st.sampled_from(["a", "b", "", "x\n"])), "type": draw(st.sampled_from(DTYPES)),
            "port": draw(st.sampled_from([0, 1, -1, 2**64])), "shape": draw(dims)}


@st.composite
def bitstream_stream(draw):
    """A header with hostile specs, then observation lines with any payload."""
    feats = draw(st.lists(spec_json(), max_size=3))
    hdr = {"features": feats}
    if draw(st.booleans()):
        hdr["advice"] = draw(spec_json())
    if draw(st.booleans()):
        hdr["score"] = draw(spec_json())
    out = json.dumps(hdr).encode() + b"\n"
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["observation", "outcome", "context"]))
        val = draw(st.sampled_from(HOSTILE + ["f"]))
        out += json.dumps({kind: val}).encode() + b"\n" + draw(st.binary(max_size=64)) + b"\n"
    return out


_ELEM = st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.booleans(), st.none(), st.text(max_size=3),
                  st.sampled_from(["NaN", "Infinity", "-Infinity"]))


@st.composite
def json_tensor(draw):
    shape = draw(dims)
    n = 1
    for d in shape:
        n *= d
    count = n if 0 <= n <= 8 else draw(st.integers(0, 4))
    return {"name": "t", "type": draw(st.sampled_from(DTYPES)), "shape": shape,
            "data": draw(st.lists(_ELEM, min_size=count, max_size=count))}


@st.composite
def json_payload(draw):
    kind = draw(st.sampled_from(["observation", "reply", "header", "context", "end"]))
    if kind in ("observation", "reply"):
        body = {"id": draw(st.sampled_from(HOSTILE)), "tensors": draw(st.lists(json_tensor(), max_size=3))}
    elif kind == "header":
        body = {"version": 1, "features": draw(st.lists(spec_json(), max_size=3)),
                "advice": draw(st.lists(spec_json(), max_size=2))}
    else:
        body = {}
    return json.dumps({kind: body}, allow_nan=True).encode()


@st.composite
def protobuf_payload(draw):
    msg = pb.Message()
    kind = draw(st.sampled_from(["observation", "reply", "header"]))
    body = getattr(msg, kind)
    body.SetInParent()
    for _ in range(draw(st.integers(0, 3))):
        t = body.tensors.add() if kind != "header" else body.features.add()
        t.name = "t"
        t.dtype = draw(st.integers(0, 14))
        t.shape.extend(d for d in draw(dims) if -(2**63) <= d < 2**63)
        if kind != "header":
            if draw(st.booleans()):
                t.data = draw(st.binary(max_size=64))
            else:
                t.string_data.extend(draw(st.lists(st.binary(max_size=4), max_size=8)))
    return msg.SerializeToString()


# String tensors: 0 bytes an element on the wire, 8 in numpy (an object array
# holds a pointer per element). A shape with a zero among huge dimensions is
# empty, yet numpy cannot shape it when the rest times 8 overflows (issue 25:
# [0, 2**60] escaped as ValueError "array is too big").
HUGE = [2**28, 2**31, 2**32, 2**59, 2**60, 2**61, 2**62, 2**63 - 1]


@st.composite
def string_shape(draw):
    """Zero, small and huge dimensions; usually at least one zero."""
    shape = draw(st.lists(st.sampled_from([0, 1, 2, 3] + HUGE), min_size=1, max_size=4))
    if draw(st.integers(0, 3)):
        shape.insert(draw(st.integers(0, len(shape))), 0)
    return shape


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@st.composite
def string_tensor_payloads(draw):
    """(format, payload) of a message with a string tensor (or a string spec in
    a header) of a zero/huge shape, in protobuf or JSON; as many strings as
    the shape holds when that is small, else a few."""
    shape = draw(string_shape())
    n = _count(shape)
    count = n if n <= 4 else draw(st.integers(0, 3))
    strings = [draw(st.sampled_from(["", "a", "xyz"])) for _ in range(count)]
    kind = draw(st.sampled_from(["observation", "reply", "header"]))
    fmt = draw(st.sampled_from(["protobuf", "json"]))
    if fmt == "protobuf":
        msg = pb.Message()
        body = getattr(msg, kind)
        body.SetInParent()
        if kind == "header":
            t = body.features.add() if draw(st.booleans()) else body.advice.add()
        else:
            t = body.tensors.add()
            t.string_data.extend(x.encode() for x in strings)
        t.name, t.dtype = "s", PB_STRING
        t.shape.extend(shape)
        return fmt, msg.SerializeToString()
    if kind == "header":
        spec = {"name": "s", "type": "string", "port": 0, "shape": shape}
        side = draw(st.sampled_from(["features", "advice"]))
        return fmt, json.dumps({"header": {"version": 1, side: [spec]}}).encode()
    t = {"name": "s", "type": "string", "shape": shape, "data": strings}
    return fmt, json.dumps({kind: {"id": 0, "tensors": [t]}}).encode()


def _check_string_payload(fmt_name: str, payload: bytes, tmp_dir: str) -> None:
    f = get_format(fmt_name)
    msg = _only_protocol_errors(f.decode_payload, payload)
    for t in getattr(msg, "tensors", None) or []:   # what decodes is what was announced
        name, arr = t
        assert arr.dtype == object and arr.size == _count(arr.shape)
    stream = f.preamble() + f.frame(payload)
    _only_protocol_errors(detect, stream)
    _only_protocol_errors(decode_all, stream, f.model_decoder(SMALL))
    _only_protocol_errors(decode_all, f.frame(payload), f.compiler_decoder((TensorSpec("s", "string", [2]),), SMALL))
    _read_log(stream, tmp_dir)


def _framed(fmt_name: str, payloads) -> bytes:
    fmt = get_format(fmt_name)
    out = fmt.preamble()
    for p in payloads:
        out += fmt.frame(p) if hasattr(fmt, "frame") else struct.pack("<I", len(p)) + p
    return out


# ---- the properties --------------------------------------------------------------
@SETTINGS
@given(data=st.binary(max_size=512))
def test_any_bytes(tmp_path_factory, data):
    _all_entry_points(data, str(tmp_path_factory.getbasetemp()))


@SETTINGS
@given(data=mutated_vector())
def test_mutated_golden_vectors(tmp_path_factory, data):
    _all_entry_points(data, str(tmp_path_factory.getbasetemp()))


@SETTINGS
@given(data=bitstream_stream())
def test_bitstream_hostile_headers(tmp_path_factory, data):
    _only_protocol_errors(decode_all, data, get_format("bitstream").model_decoder(SMALL))
    _read_log(data, str(tmp_path_factory.getbasetemp()))


@SETTINGS
@given(payload=json_payload())
def test_json_hostile_tensors(payload):
    _only_protocol_errors(get_format("json").decode_payload, payload)


@SETTINGS
@given(payload=protobuf_payload())
def test_protobuf_hostile_tensors(payload):
    _only_protocol_errors(get_format("protobuf").decode_payload, payload)


@SETTINGS
@given(case=string_tensor_payloads())
def test_string_tensors_zero_and_huge_dims(tmp_path_factory, case):
    _check_string_payload(*case, str(tmp_path_factory.getbasetemp()))


@SETTINGS
@given(case=string_tensor_payloads(), data=st.data())
def test_mutated_string_tensors(tmp_path_factory, case, data):
    """The same messages, framed, then mutated as the golden vectors are."""
    fmt_name, payload = case
    f = get_format(fmt_name)
    stream = data.draw(st.sampled_from([f.preamble(), b""])) + f.frame(payload)
    _all_entry_points(_mutate(data.draw, stream), str(tmp_path_factory.getbasetemp()))


@SETTINGS
@given(specs=st.lists(spec_json(), min_size=1, max_size=3), data=st.binary(max_size=64))
def test_compiler_decoders_hostile_advice(specs, data):
    """A compiler decoder built from a (checked) advice spec never leaks either."""
    try:
        advice = tuple(TensorSpec.from_json(s) for s in specs)
    except ProtocolError:
        return
    for fmt in FORMATS.values():
        try:
            dec = fmt.compiler_decoder(advice, SMALL)
        except ProtocolError:
            continue
        _only_protocol_errors(decode_all, data, dec)


# ---- pinned regressions: the leaks found ------------------------------------------
def _pb_tensor(dtype: int, shape, data: bytes = b"", strings=()) -> bytes:
    msg = pb.Message()
    msg.observation.SetInParent()
    t = msg.observation.tensors.add()
    t.name, t.dtype = "t", dtype
    t.shape.extend(shape)
    t.data = data
    t.string_data.extend(strings)
    return msg.SerializeToString()


PB_FLOAT, PB_STRING = 1, 12
REGRESSIONS = [
    ("protobuf rank 65", "protobuf", _pb_tensor(PB_FLOAT, [1] * 65, b"\0" * 4)),
    ("protobuf [0, 2^62, 2^62]", "protobuf", _pb_tensor(PB_FLOAT, [0, 2**62, 2**62])),
    ("protobuf string rank 65", "protobuf", _pb_tensor(PB_STRING, [1] * 65, strings=[b"x"])),
    ("protobuf string [0, 2^62, 2^62]", "protobuf", _pb_tensor(PB_STRING, [0, 2**62, 2**62])),
    ("json empty data, rank 65", "json",
     b'{"observation":{"id":0,"tensors":[{"name":"t","type":"float","shape":[' + b"1," * 64 + b'0],"data":[]}]}}'),
    ("json empty data, [0, 2^62, 2^62]", "json",
     b'{"observation":{"id":0,"tensors":[{"name":"t","type":"float","shape":[0,4611686018427387904,'
     b'4611686018427387904],"data":[]}]}}'),
    ("json data, rank 65", "json",
     b'{"observation":{"id":0,"tensors":[{"name":"t","type":"int64_t","shape":[' + b"1," * 64 + b'1],"data":[1]}]}}'),
    # issue 25: a string tensor [0, 2^60] counted 0 bytes an element where numpy needs 8
    ("protobuf string [0, 2^60] (issue 25)", "protobuf", bytes.fromhex("221312110a0173100c1a0a00808080808080808010")),
    ("protobuf string [0, 2^60]", "protobuf", _pb_tensor(PB_STRING, [0, 2**60])),
    ("protobuf string [2^60, 0, 3]", "protobuf", _pb_tensor(PB_STRING, [2**60, 0, 3])),
    ("json string [0, 2^60]", "json",
     b'{"observation":{"id":0,"tensors":[{"name":"t","type":"string","shape":[0,1152921504606846976],"data":[]}]}}'),
    ("json header string [0, 2^60]", "json",
     b'{"header":{"version":1,"features":[{"name":"t","type":"string","port":0,"shape":[0,1152921504606846976]}]}}'),
]


def _pb_header_string(shape) -> bytes:
    msg = pb.Message()
    msg.header.version = 1
    t = msg.header.advice.add()
    t.name, t.dtype = "s", PB_STRING
    t.shape.extend(shape)
    return msg.SerializeToString()


REGRESSIONS.append(("protobuf header string [0, 2^60]", "protobuf", _pb_header_string([0, 2**60])))


@pytest.mark.parametrize("fmt,payload", [(f, p) for _, f, p in REGRESSIONS], ids=[n for n, _, _ in REGRESSIONS])
def test_regression_payloads(fmt, payload):
    f = get_format(fmt)
    with pytest.raises(ProtocolError):
        f.decode_payload(payload)
    stream = f.preamble() + f.frame(payload)
    with pytest.raises(ProtocolError):
        decode_all(stream, f.model_decoder())


@pytest.mark.parametrize("shape", [[2**32], [2**31], [2**62, 4], [0, 2**63 - 1, 2**63 - 1], [1] * 65],
                         ids=["2^32", "2^31", "2^62x4", "0x2^63x2^63", "rank65"])
def test_regression_bitstream_header_dims(tmp_path, shape):
    hdr = json.dumps({"features": [{"name": "x", "type": "float", "port": 0, "shape": shape}],
                      "advice": {"name": "a", "type": "int64_t", "port": 0, "shape": [1]}}).encode() + b"\n"
    stream = hdr + b'{"observation":0}\n\n'
    with pytest.raises(ProtocolError):
        decode_all(stream, get_format("bitstream").model_decoder())
    (tmp_path / "log").write_bytes(stream)
    with pytest.raises(ProtocolError):
        list(mlbridge.read_log(tmp_path / "log"))


def test_read_log_limit_is_settable(tmp_path):
    f = get_format("bitstream")
    spec = [TensorSpec("x", "float", [1000])]
    (tmp_path / "log").write_bytes(f.header(spec, []) + f.observation(0, spec, [np.zeros(1000, np.float32)]))
    assert len(list(mlbridge.read_log(tmp_path / "log"))) == 1
    with pytest.raises(ProtocolError, match="limit"):
        list(mlbridge.read_log(tmp_path / "log", max_message=1000))


# JSON nested deeper than the standard library's recursive parser goes (orjson
# refuses it and the fallback used to raise RecursionError).
DEEP = b"[" * 100000


@pytest.mark.parametrize("where", ["bitstream header", "bitstream record", "json payload", "spec"])
def test_regression_deeply_nested_json(tmp_path, where):
    if where == "json payload":
        f = get_format("json")
        with pytest.raises(ProtocolError):
            f.decode_payload(DEEP)
        with pytest.raises(ProtocolError):
            decode_all(f.preamble() + f.frame(DEEP), f.model_decoder())
    elif where == "spec":
        with pytest.raises(ProtocolError):
            TensorSpec.from_json(DEEP)
    else:
        f = get_format("bitstream")
        spec = [TensorSpec("x", "float", [1])]
        stream = b'{"features":' + DEEP + b"\n" if where == "bitstream header" else \
            f.header(spec, []) + DEEP + b"\n"
        with pytest.raises(ProtocolError):
            decode_all(stream, f.model_decoder())
        (tmp_path / "log").write_bytes(stream)
        with pytest.raises(ProtocolError):
            list(mlbridge.read_log(tmp_path / "log"))


def test_regression_training_log_steps_times_shape(tmp_path):
    """Each step of a feature [0, 2^59] int64 fits an array, two steps do not:
    read_training_log escaped as BufferError (closing the map under a live view)
    over the ValueError of numpy's reshape (issue 25)."""
    from mlbridge.llvm.training_log import read_training_log
    path = tmp_path / "x.log"
    path.write_bytes(b'{"features":[{"name":"x","type":"int64_t","port":0,"shape":[0,576460752303423488]}]}\n'
                     b'{"context":"m"}\n{"observation":0}\n\n{"observation":1}\n\n')
    with pytest.raises(ProtocolError, match="2 steps"):
        read_training_log(path)
    with pytest.raises(ProtocolError):
        list(mlbridge.read_log(path))
