"""Edges of the wire decoders that mutation testing (scripts/mutation.sh,
docs/testing.md) found untested: each test names the mutant it kills.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.core.messages import PROTOCOL_VERSION, ObservationMessage, Outcome, Preamble
from mlbridge.core.spec import TensorSpec
from mlbridge.formats import get_format
from mlbridge.formats.bitstream import BitstreamModelDecoder, BitstreamReplyDecoder, parse_header
from mlbridge.formats.framing import FramedModelDecoder

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

B = get_format("bitstream")
FEATS = (TensorSpec("x", "int64_t", (4,)),)
ADVICE = (TensorSpec("d", "int64_t", (1,)),)


def _after_header(max_message: int = 1 << 20):
    dec = BitstreamModelDecoder(max_message)
    hdr = bytearray(B.header(FEATS, ADVICE))
    pos = 0
    while pos < len(hdr):
        _, pos = dec.decode(hdr, pos, len(hdr))
    return dec


def test_header_errors_say_what_is_wrong():
    """parse_header mutants 7 and 44: the messages name the missing list
    and the part (feature / advice) a type bitstream cannot carry is in."""
    with pytest.raises(ProtocolError, match=r'^bitstream: header must be an object with a "features" list$'):
        parse_header({"advice": []})
    string = {"name": "s", "type": "string", "port": 0, "shape": [1]}
    with pytest.raises(ProtocolError, match=r"bitstream: feature 's' has type string"):
        parse_header({"features": [string], "advice": {"name": "d", "type": "int64_t", "port": 0, "shape": [1]}})
    with pytest.raises(ProtocolError, match=r"bitstream: advice 's' has type string"):
        parse_header({"features": [], "advice": string})


def test_an_empty_buffer_needs_one_byte():
    """decode mutant 6: at the end of what has arrived, one more byte is
    what the decoder asks for (the caller reads that much before asking again)."""
    dec = _after_header()
    data = bytearray(b"\n\n")
    assert dec.decode(data, 2, 2) is None and dec.need == 1


def test_the_message_limit_counts_from_the_message_start():
    """_payload mutants 8 and 11: an observation that fits the limit is
    accepted wherever it starts in the buffer, and one that does not is
    refused with its own size."""
    msg = B.observation(3, FEATS, [np.arange(4, dtype=np.int64)])
    pad = b"\n" * 5000     # the observation starts far into the buffer
    data = bytearray(pad + msg)
    dec = _after_header(max_message=len(msg))
    got, nxt = dec.decode(data, len(pad), len(data))
    assert isinstance(got, ObservationMessage) and got.id == 3 and nxt == len(data)
    dec = _after_header(max_message=len(msg) - 1)
    with pytest.raises(ProtocolError, match=rf"observation of {len(msg)} bytes exceeds the limit"):
        dec.decode(data, len(pad), len(data))


def test_an_outcome_line_gives_the_score():
    """decode mutant 206: LLVM training logs' ``{"outcome":N}`` lines (a
    header with a score) decode to an Outcome with the score's value."""
    score = {"name": "reward", "type": "float", "port": 0, "shape": [1]}
    header = (b'{"features":[{"name":"x","type":"int64_t","port":0,"shape":[1]}],'
              b'"score":' + json.dumps(score).encode() + b"}\n")
    stream = bytearray(header + b'{"context":"f"}\n' + b'{"observation":0}\n' + np.int64(5).tobytes() + b"\n"
                       + b'{"outcome":0}\n' + np.float32(2.5).tobytes() + b"\n")
    dec = BitstreamModelDecoder()
    pos, msgs = 0, []
    while pos < len(stream):
        msg, pos = dec.decode(stream, pos, len(stream))
        msgs.append(msg)
    out = msgs[-1]
    assert isinstance(out, Outcome) and out.id == 0 and out.value.tolist() == [2.5]


@pytest.mark.parametrize("fmt_name", ["json", "protobuf"])
def test_the_framed_preamble_and_an_observation_before_the_header(fmt_name):
    """framing mutants decode 9 and 13, _check 4: the preamble says its
    format and version, then the decoder waits for a frame's 4-byte length;
    an observation before any header is refused, saying so."""
    fmt = get_format(fmt_name)
    dec = FramedModelDecoder()
    data = bytearray(fmt.preamble() + fmt.observation(1, FEATS, [np.arange(4, dtype=np.int64)]))
    msg, pos = dec.decode(data, 0, len(data))
    assert msg == Preamble(fmt_name, PROTOCOL_VERSION) and pos == 8 and dec.need == 4
    with pytest.raises(ProtocolError, match=rf"{fmt_name}: observation before the header"):
        dec.decode(data, pos, len(data))


def test_a_reply_stream_may_end_only_between_replies():
    """BitstreamReplyDecoder.truncated mutant 2: the stream ending with no
    reply bytes pending is a clean end (None); any byte of a reply pending is
    a truncation, said with how much arrived."""
    dec = BitstreamReplyDecoder((TensorSpec("d", "int64_t", (1,)),))
    assert dec.truncated(0) is None
    assert dec.truncated(1) == "stream ended inside a reply (1 of 8 bytes)"
    assert dec.truncated(7) == "stream ended inside a reply (7 of 8 bytes)"


# ---- json and protobuf payloads ----------------------------------------------------------
def test_json_payload_edges():
    """jsonfmt decode_payload mutants 56 and 151, _decode_numeric mutant 14:
    an observation without "tensors" has none (the session's check then
    says what is missing); a header's bad feature list is named; a payload
    big enough for simdjson with an unknown kind gets the same error as a
    small one."""
    J = get_format("json")
    assert J.decode_payload(b'{"observation":{"id":1}}') == ObservationMessage(1, [])
    with pytest.raises(ProtocolError, match="^features must be a list of tensor specs$"):
        J.decode_payload(b'{"header":{"version":1,"features":5}}')
    big = json.dumps({"bogus": {"x": [0.5] * 2000}}).encode()
    assert len(big) >= 4096
    with pytest.raises(ProtocolError, match="^json: unknown message kind 'bogus'$"):
        J.decode_payload(big)


@pytest.mark.parametrize("typ, lo, hi", [("int8_t", -2**7, 2**7 - 1), ("int32_t", -2**31, 2**31 - 1),
                                         ("int64_t", -2**63, 2**63 - 1), ("uint16_t", 0, 2**16 - 1)])
def test_json_integer_extremes_are_accepted_on_both_paths(typ, lo, hi):
    """jsonfmt _array mutant 151 and _ElementGroup.convert mutant 37: the
    smallest and largest value of the type are in range, on the general
    path and on the per-session fast path."""
    J = get_format("json")
    feats = (TensorSpec("a", typ, (2,)),)
    payload = json.dumps({"observation": {"id": 1, "tensors": [
        {"name": "a", "type": typ, "shape": [2], "data": [lo, hi]}]}}).encode()
    (name, arr), = J.decode_payload(payload).tensors
    assert arr.tolist() == [lo, hi]
    oid, got = J.observation_reader(feats).read(memoryview(payload))
    assert oid == 1 and got["a"].tolist() == [lo, hi]
    # More than 64 elements: the general path's numpy range check.
    long = json.dumps({"observation": {"id": 2, "tensors": [
        {"name": "a", "type": typ, "shape": [100], "data": [lo, hi] * 50}]}}).encode()
    (name, arr), = J.decode_payload(long).tensors
    assert arr.tolist() == [lo, hi] * 50


def test_protobuf_header_with_a_feature_twice_is_refused():
    """protobuf decode_payload mutant 66: the error names what is duplicated."""
    from mlbridge._proto import mlbridge_pb2 as pb
    m = pb.Message()
    m.header.version = 1
    for _ in range(2):
        f = m.header.features.add()
        f.name, f.dtype = "x", pb.INT64
        f.shape.append(1)
    with pytest.raises(ProtocolError, match="^duplicate feature name 'x'$"):
        get_format("protobuf").decode_payload(m.SerializeToString())


def test_format_float_uses_the_tensors_own_precision():
    """jsonfmt.format_float mutant 4: a float32 gets float32's shortest
    digits, a float64 float64's."""
    from mlbridge.core import dtypes
    from mlbridge.formats.jsonfmt import format_float
    assert format_float(np.float32(0.1), dtypes.lookup("float")) == "0.1"
    assert format_float(0.1, dtypes.lookup("double")) == "0.1"
    assert format_float(np.float32(0.1), dtypes.lookup("double")) == "0.10000000149011612"
