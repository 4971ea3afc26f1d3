"""The framed formats' per-session fast path for observations
(``FramedFormat.observation_reader``, issue 14) must give exactly what the
general path gives, or step aside (None) and let the general path decide.

Checked on: the golden vectors (written by the C++ side's rules), canonical
observations of LLVM-like feature sets, targeted edge cases each fast path
must refuse, and Hypothesis mutations of valid payloads: whenever the fast
path answers, the general path accepts the same payload with the same id and
equal arrays (dtype, shape, values, read-only).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import VECTORS

from mlbridge.core.errors import ProtocolError
from mlbridge.core.messages import Header, ObservationMessage
from mlbridge.core.spec import TensorSpec
from mlbridge.formats import get_format, jsonfmt, model_decoder_for
from mlbridge.formats.framing import FramedModelDecoder

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

INLINER = tuple(TensorSpec(f"f{i}", "int64_t", (1,)) for i in range(38))
FEATURE_SETS = {
    "inliner": INLINER,
    "floats": (TensorSpec("x", "float", (5,)), TensorSpec("y", "float", ()), TensorSpec("z", "float", (2, 3))),
    "doubles": (TensorSpec("d", "double", (3,)),),
    "int8": (TensorSpec("a", "int8_t", (4,)), TensorSpec("b", "int8_t", ())),
    "uint64": (TensorSpec("u", "uint64_t", (2,)),),
    "mixed": (TensorSpec("i", "int64_t", (1,)), TensorSpec("f", "float", (2,))),
    # LLVM 19's eviction advisor: int64 and float [1,33] features interleaved, then progress.
    "evict": tuple(TensorSpec(f"e{i}", "int64_t" if i % 3 else "float", (1, 33)) for i in range(20))
    + (TensorSpec("progress", "float", (1,)),),
    "bools": (TensorSpec("m", "bool", (3,)), TensorSpec("i", "int32_t", (1,))),
    "empty": (TensorSpec("e", "float", (0,)), TensorSpec("k", "float", (1,))),
}
ADVICE = (TensorSpec("decision", "int64_t", (1,)),)


def _values(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    if spec.type.kind == "b":
        return rng.integers(0, 2, spec.shape).astype(bool)
    if spec.type.kind == "f":
        return rng.normal(0, 100, spec.shape).astype(spec.np_dtype)
    info = np.iinfo(spec.np_dtype)
    return rng.integers(info.min, info.max, spec.shape, dtype=spec.np_dtype, endpoint=True)


def _general(fmt, feats, payload):
    """What the general path makes of ``payload``: (id, {name: array}) or the ProtocolError."""
    dec = FramedModelDecoder()
    dec.format = fmt
    dec.header = Header(tuple(feats), ADVICE)
    try:
        msg = fmt.decode_payload(memoryview(payload))
        if not isinstance(msg, ObservationMessage):
            return None
        return msg.id, dec._check(msg)
    except ProtocolError as exc:
        return exc


def _same(fast, general, feats) -> None:
    assert not isinstance(general, Exception), f"fast path accepted what the general path refuses: {general}"
    assert general is not None
    fid, ftensors = fast
    gid, gtensors = general
    assert fid == gid
    assert list(ftensors) == [s.name for s in feats]
    for s in feats:
        a, b = ftensors[s.name], gtensors[s.name]
        assert a.dtype == b.dtype == s.np_dtype and a.shape == b.shape == s.shape
        assert not a.flags.writeable
        np.testing.assert_array_equal(a, b)


def _check_payload(fmt, feats, payload) -> bool:
    read = fmt.observation_reader(feats)
    fast = read(memoryview(payload)) if read is not None else None
    if fast is not None:
        _same(fast, _general(fmt, feats, payload), feats)
    return fast is not None


# ---- canonical observations take the fast path, with the general path's result ----------
@pytest.mark.parametrize("fmt_name", ["json", "protobuf"])
@pytest.mark.parametrize("key", sorted(FEATURE_SETS))
def test_canonical_observations_match_the_general_path(fmt_name, key):
    fmt = get_format(fmt_name)
    feats = FEATURE_SETS[key]
    rng = np.random.default_rng(7)
    eligible = fmt.observation_reader(feats) is not None
    for oid in (0, 1, 127, 128, 2**31, 2**63 - 1, -1, -(2**63)):
        payload = fmt.observation_payload(oid, feats, [_values(s, rng) for s in feats])
        hit = _check_payload(fmt, feats, payload)
        # json leaves big payloads to simdjson's general path (when installed).
        big = fmt_name == "json" and jsonfmt._simdjson is not None and len(payload) >= jsonfmt.SIMDJSON_MIN_BYTES
        assert hit == (eligible and not big), (key, oid)
    # Which feature sets have a fast path: protobuf any set, json numeric ones (mixed types too).
    expected = key != "bools" if fmt_name == "json" else True
    assert eligible == expected


def test_the_inliner_message_is_decoded_as_one_record():
    fmt = get_format("protobuf")
    dec = model_decoder_for("protobuf")
    stream = fmt.preamble() + fmt.header(INLINER, ADVICE) + fmt.observation(5, INLINER, [np.array([3])] * 38)
    buf = bytearray(stream)
    pos, msgs = 0, []
    while pos < len(buf):
        msg, pos = dec.decode(buf, pos, len(buf))
        msgs.append(msg)
    obs = msgs[-1]
    assert isinstance(obs, ObservationMessage) and obs.id == 5
    assert type(obs.tensors).__name__ == "FeatureView"
    assert obs.tensors["f37"].tolist() == [3]


# ---- golden vectors: the C++ side's bytes hit the fast path ----------------------------------
with open(os.path.join(VECTORS, "manifest.json")) as _f:
    _FRAMED_TO_MODEL = [c for c in json.load(_f)["cases"]
                        if c["format"] in ("json", "protobuf") and c["direction"] == "to_model"]


@pytest.mark.parametrize("case", _FRAMED_TO_MODEL, ids=lambda c: c["name"])
def test_golden_vectors(case):
    fmt = get_format(case["format"])
    with open(os.path.join(VECTORS, case["file"]), "rb") as f:
        data = f.read()
    feats = tuple(TensorSpec.from_json(s) for s in case["features"])
    read = fmt.observation_reader(feats)
    pos, hits, observations, expected_json_hits = 8, 0, 0, 0   # after the preamble
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "little")
        payload = data[pos + 4:pos + 4 + n]
        pos += 4 + n
        general = _general(fmt, feats, payload)
        if general is None:
            if read is not None:
                assert read(memoryview(payload)) is None   # a header, context or end
            continue
        observations += 1
        big = jsonfmt._simdjson is not None and len(payload) >= jsonfmt.SIMDJSON_MIN_BYTES
        expected_json_hits += not big and b'"NaN"' not in payload and b'Infinity"' not in payload
        if read is not None:
            fast = read(memoryview(payload))
            if fast is not None:
                hits += 1
                _same(fast, general, feats)
    if read is not None and case["format"] == "protobuf":
        assert hits == observations   # the template is the C++ serializer's layout
    if read is not None and case["format"] == "json":
        # Every observation is the C++ writer's canonical form: the fast path
        # takes each one, except non-finite floats (written as strings) and
        # payloads big enough for simdjson's general path.
        assert hits == expected_json_hits


# ---- what each fast path must refuse (and the general path then decides) ---------------------
def _json_obs(tensors, oid=1, **extra):
    return json.dumps({"observation": {"id": oid, "tensors": tensors}, **extra}).encode()


def _t(name, typ, shape, data):
    return {"name": name, "type": typ, "shape": shape, "data": data}


INTS = (TensorSpec("a", "int32_t", (2,)), TensorSpec("b", "int32_t", (1,)))
FLOATS = (TensorSpec("x", "float", (2,)),)


@pytest.mark.parametrize("feats, tensors", [
    (INTS, [_t("a", "int32_t", [2], [1, 2]), _t("b", "int32_t", [1.0], [3])]),          # a float dimension
    (INTS, [_t("a", "int32_t", [2], [1, 2]), _t("b", "int32_t", [True], [3])]),         # a bool dimension
    (INTS, [_t("a", "int32_t", [2], [1, True]), _t("b", "int32_t", [1], [3])]),         # a bool value
    (INTS, [_t("a", "int32_t", [2], [1, 2.0]), _t("b", "int32_t", [1], [3])]),          # a float value
    (INTS, [_t("a", "int32_t", [2], [1, 2**31]), _t("b", "int32_t", [1], [3])]),        # out of range
    (INTS, [_t("a", "int32_t", [2], [1, 2**70]), _t("b", "int32_t", [1], [3])]),        # beyond int64
    (INTS, [_t("a", "int32_t", [2], [1, None]), _t("b", "int32_t", [1], [3])]),         # null
    (INTS, [_t("a", "int32_t", [2], "12"), _t("b", "int32_t", [1], [3])]),              # a string of length 2
    (INTS, [_t("a", "int32_t", [2], {"x": 1, "y": 2}), _t("b", "int32_t", [1], [3])]),  # an object
    (INTS, [_t("a", "int32_t", [2], [[1], [2]]), _t("b", "int32_t", [1], [3])]),        # nested lists
    (INTS, [_t("a", "int32_t", [2], [1, 2])]),                                          # a tensor missing
    (INTS, [_t("b", "int32_t", [1], [3]), _t("a", "int32_t", [2], [1, 2])]),            # order
    (INTS, [_t("a", "int", [2], [1, 2]), _t("b", "int32_t", [1], [3])]),                # a type alias
    (INTS, [_t("a", "int32_t", [2], [1, 2]), {"name": "b", "type": "int32_t", "shape": [1]}]),  # no data
    (INTS, [_t("a", "int32_t", [2], [1, 2]), [3]]),                                     # not an object
    (FLOATS, [_t("x", "float", [2], [1.0, "NaN"])]),                                    # a NaN string
    (FLOATS, [_t("x", "float", [2], [1.0, None])]),                                     # null
    (FLOATS, [_t("x", "float", [2], [1.0, 1e39])]),                                     # float32 overflow
    (FLOATS, [_t("x", "float", [2], [1.0, True])]),                                     # a bool
])
def test_json_fast_path_steps_aside(feats, tensors):
    fmt = get_format("json")
    payload = _json_obs(tensors)
    assert fmt.observation_reader(feats)(memoryview(payload)) is None


def test_json_fast_path_accepts_integers_in_float_tensors_like_the_general_path():
    fmt = get_format("json")
    payload = _json_obs([_t("x", "float", [2], [1, -2])])
    assert _check_payload(fmt, FLOATS, payload)


def test_json_fast_path_leaves_big_payloads_to_simdjson():
    from mlbridge.formats import jsonfmt
    fmt = get_format("json")
    feats = (TensorSpec("v", "float", (2000,)),)
    payload = fmt.observation_payload(3, feats, [np.full(2000, 0.125, np.float32)])
    assert len(payload) >= jsonfmt.SIMDJSON_MIN_BYTES
    read = fmt.observation_reader(feats)
    assert (read(memoryview(payload)) is None) == (jsonfmt._simdjson is not None)


def test_protobuf_fast_path_steps_aside_for_non_canonical_bytes():
    from mlbridge.formats.protobuf import pb
    fmt = get_format("protobuf")
    feats = INTS
    good = fmt.observation_payload(9, feats, [np.array([1, 2], np.int32), np.array([3], np.int32)])
    read = fmt.observation_reader(feats)
    assert read(memoryview(good)) is not None
    msg = pb.Message.FromString(good)
    msg.observation.tensors[0].string_data.append(b"x")   # an extra field
    assert read(memoryview(msg.SerializeToString())) is None
    assert isinstance(_general(fmt, feats, msg.SerializeToString()), tuple)   # accepted there, same as before
    msg = pb.Message.FromString(good)
    msg.observation.tensors[1].name = "c"
    assert read(memoryview(msg.SerializeToString())) is None
    # A bool tensor holding 2: refused by both.
    bools = (TensorSpec("m", "bool", (2,)),)
    bad = pb.Message()
    t = bad.observation.tensors.add()
    t.name, t.dtype, t.data = "m", 11, b"\x01\x02"
    t.shape.append(2)
    assert fmt.observation_reader(bools)(memoryview(bad.SerializeToString())) is None
    assert isinstance(_general(fmt, bools, bad.SerializeToString()), ProtocolError)


def test_a_bad_observation_still_gets_its_error_and_id_through_the_decoder():
    fmt = get_format("json")
    dec = model_decoder_for("json")
    bad = fmt.frame(_json_obs([_t("a", "int32_t", [2], [1, 2**31]), _t("b", "int32_t", [1], [3])], oid=4))
    buf = bytearray(fmt.preamble() + fmt.header(INTS, ADVICE) + bad)
    pos = 0
    for _ in range(2):
        _, pos = dec.decode(buf, pos, len(buf))
    with pytest.raises(ProtocolError, match="out of range"):
        dec.decode(buf, pos, len(buf))


# ---- mutations: the fast path never accepts what the general path would not ------------------
def _mutate(data: bytes, edits) -> bytes:
    out = bytearray(data)
    for kind, pos, byte in edits:
        if not out:
            break
        pos %= len(out)
        if kind == 0:
            out[pos] = byte
        elif kind == 1:
            out.insert(pos, byte)
        else:
            del out[pos]
    return bytes(out)


EDITS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1 << 16), st.integers(0, 255)), min_size=1, max_size=4)


@pytest.mark.parametrize("fmt_name", ["json", "protobuf"])
@pytest.mark.parametrize("key", ["inliner", "floats", "int8", "bools", "mixed", "evict"])
@SETTINGS
@given(edits=EDITS, seed=st.integers(0, 2**32 - 1))
def test_mutated_observations(fmt_name, key, edits, seed):
    fmt = get_format(fmt_name)
    feats = FEATURE_SETS[key]
    rng = np.random.default_rng(seed)
    payload = fmt.observation_payload(int(rng.integers(0, 1000)), feats, [_values(s, rng) for s in feats])
    _check_payload(fmt, feats, _mutate(payload, edits))


# ---- bitstream: the decoder's per-session reader (PipeServer's hot loop) ------------------
def _bitstream_decoder(feats):
    dec = model_decoder_for("bitstream")
    hdr = bytearray(get_format("bitstream").header(feats, ADVICE))
    pos = 0
    while pos < len(hdr):
        _, pos = dec.decode(hdr, pos, len(hdr))
    return dec


def _check_bitstream(feats, message: bytes, cut: int, answer: bool = False) -> None:
    """Whenever the reader answers (or refuses), decode() answers (or
    refuses) the same from the same bytes; when it asks for more, decode()
    does not accept them either. ``answer``: the bytes are one complete,
    well-formed observation, which the reader must answer itself (a reader
    that always stepped aside would pass every other check)."""
    data = bytearray(b"\n\n\n" + message[:cut])   # not at offset 0, cut anywhere
    dec = _bitstream_decoder(feats)
    try:
        got = dec.observation_reader()(data, 3, len(data))
    except ProtocolError as exc:   # a bad observation (a bool byte not 0 or 1): the same error
        got = exc
    need = dec.need
    try:
        general = _bitstream_decoder(feats).decode(data, 3, len(data))
    except ProtocolError as exc:
        general = exc
    if isinstance(got, ProtocolError):
        assert isinstance(general, ProtocolError) and str(general) == str(got)
        return
    if got is None:
        assert not answer, "the reader stepped aside from a complete observation"
        if need:   # an observation still arriving: decode() must not accept it now
            assert general is None or isinstance(general, ProtocolError)
            assert 3 + need > len(data)
        return
    assert not isinstance(general, Exception), f"the reader accepted what decode() refuses: {general}"
    assert general is not None
    oid, record, nxt = got
    msg, gnxt = general
    assert isinstance(msg, ObservationMessage) and msg.id == oid and nxt == gnxt
    for s in feats:
        a, b = record[s.name], msg.tensors[s.name]
        assert a.dtype == b.dtype == s.np_dtype and a.shape == b.shape == s.shape
        assert not a.flags.writeable
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("key", sorted(FEATURE_SETS))
def test_bitstream_reader_matches_decode(key):
    feats = FEATURE_SETS[key]
    rng = np.random.default_rng(3)
    for oid in (0, 7, 10**12):
        message = get_format("bitstream").observation(oid, feats, [_values(s, rng) for s in feats])
        for cut in range(len(message) + 1):
            _check_bitstream(feats, message, cut, answer=cut == len(message))


@pytest.mark.parametrize("key", ["inliner", "floats", "bools", "empty"])
@SETTINGS
@given(edits=EDITS, seed=st.integers(0, 2**32 - 1), cut=st.integers(0, 1 << 16))
def test_bitstream_reader_on_mutated_observations(key, edits, seed, cut):
    feats = FEATURE_SETS[key]
    rng = np.random.default_rng(seed)
    message = get_format("bitstream").observation(int(rng.integers(0, 1000)), feats, [_values(s, rng) for s in feats])
    _check_bitstream(feats, _mutate(message, edits), cut)


# ---- framed formats: the decoder's per-session reader (the same hot loop) ---------------------
def _framed_decoder(fmt, feats):
    dec = FramedModelDecoder()
    stream = bytearray(fmt.preamble() + fmt.header(feats, ADVICE))
    pos = 0
    while pos < len(stream):
        _, pos = dec.decode(stream, pos, len(stream))
    return dec


def _check_framed(fmt, feats, frame: bytes, cut: int, answer: bool = False) -> None:
    """Whenever the reader answers, decode() answers the same observation
    from the same bytes; when it asks for more, decode() cannot decide yet.
    ``answer``: a complete canonical observation frame, which the reader
    must answer itself."""
    data = bytearray(b"\0\0\0" + frame[:cut])
    dec = _framed_decoder(fmt, feats)
    read = dec.observation_reader()
    assert read is not None
    got = read(data, 3, len(data))
    need = dec.need
    try:
        general = _framed_decoder(fmt, feats).decode(data, 3, len(data))
    except ProtocolError as exc:
        general = exc
    if got is None:
        assert not answer, "the reader stepped aside from a complete observation frame"
        if need:
            assert general is None and 3 + need > len(data)
        return
    assert not isinstance(general, Exception), f"the reader accepted what decode() refuses: {general}"
    msg, gnxt = general
    oid, tensors, nxt = got
    assert isinstance(msg, ObservationMessage) and msg.id == oid and nxt == gnxt == len(data)
    for s in feats:
        a, b = tensors[s.name], msg.tensors[s.name]
        assert a.dtype == b.dtype == s.np_dtype and a.shape == b.shape == s.shape
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fmt_name", ["json", "protobuf"])
@pytest.mark.parametrize("key", ["inliner", "floats", "mixed"])
def test_framed_reader_matches_decode(fmt_name, key):
    fmt = get_format(fmt_name)
    feats = FEATURE_SETS[key]
    rng = np.random.default_rng(5)
    frame = fmt.observation(9, feats, [_values(s, rng) for s in feats])
    for cut in range(len(frame) + 1):
        _check_framed(fmt, feats, frame, cut, answer=cut == len(frame))
    # Not observations: a context, an end, the next session's preamble, a
    # length over the message limit (decode() refuses it; the reader steps aside).
    for other in (fmt.context("f"), fmt.end(), fmt.preamble(), b"\xff\xff\xff\x7f" + frame[4:]):
        _check_framed(fmt, feats, other, len(other))


@pytest.mark.parametrize("fmt_name", ["json", "protobuf"])
@SETTINGS
@given(edits=EDITS, seed=st.integers(0, 2**32 - 1), cut=st.integers(0, 1 << 16))
def test_framed_reader_on_mutated_frames(fmt_name, edits, seed, cut):
    fmt = get_format(fmt_name)
    feats = FEATURE_SETS["inliner"]
    rng = np.random.default_rng(seed)
    frame = fmt.observation(int(rng.integers(0, 1000)), feats, [_values(s, rng) for s in feats])
    _check_framed(fmt, feats, _mutate(frame, edits), cut)


def test_protobuf_template_is_built_from_the_specs_alone():
    """The specs come from a peer: a declared shape allocates nothing (a
    64 MiB feature builds its template in a few kB), one bigger than a
    message may be gets no template, and a feature set with an empty tensor
    first is still read in place with its data aligned to the first bytes
    that are data."""
    import tracemalloc
    from mlbridge.formats.protobuf import _ObservationTemplate

    tracemalloc.start()
    try:
        tpl = _ObservationTemplate([TensorSpec("x", "float", (1 << 24,))])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert tpl.size > 1 << 26 and peak < 1 << 20
    with pytest.raises(ProtocolError, match="message limit"):
        _ObservationTemplate([TensorSpec("x", "float", (1 << 40,))])
    with pytest.raises(ProtocolError, match="message limit"):
        _ObservationTemplate([TensorSpec("x", "float", (1024,))], max_bytes=4095)

    feats = (TensorSpec("e", "float", (0,)), TensorSpec("z", "int8_t", ()), TensorSpec("x", "float", (3,)))
    fmt = get_format("protobuf")
    arrays = [np.zeros(0, np.float32), np.array(5, np.int8), np.array([1, 2, 3], np.float32)]
    payload = fmt.observation_payload(9, feats, arrays)
    tpl = _ObservationTemplate(feats)
    oid, got = tpl.read(memoryview(payload))
    assert oid == 9 and got["x"].tolist() == [1, 2, 3] and int(got["z"]) == 5 and got["e"].shape == (0,)
    assert tpl.first_data == tpl.layout.offsets[1]
