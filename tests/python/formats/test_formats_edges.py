"""mlbridge.formats' entry points (get_format, detect, decode_all) and the
defaults of formats/base.py: mutation testing's gaps (docs/testing.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mlbridge.core.errors import ProtocolError
from mlbridge.core.spec import TensorSpec
from mlbridge.formats import (MAGIC, BitstreamFormat, Decoder, FramedReplyDecoder, decode_all, detect, get_format,
                              model_decoder_for)

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

FEATURES = [TensorSpec("a", "int64", (2,))]
ADVICE = [TensorSpec("d", "int64")]


def session(name):
    fmt = get_format(name)
    return fmt.preamble() + fmt.header(FEATURES, ADVICE) + fmt.observation(0, FEATURES, [np.array([1, 2])])


def test_an_unknown_format_names_the_known_ones():
    with pytest.raises(ValueError) as e:
        get_format("xml")
    assert str(e.value) == "unknown format 'xml' (known: bitstream, json, protobuf)"


def test_detect_waits_for_a_preamble_that_is_still_arriving():
    """Fewer than 8 bytes that begin like the preamble: more bytes are needed (None),
    also where the stream does not start at byte 0."""
    pre = get_format("json").preamble()
    for n in range(1, 8):
        assert detect(pre[:n]) is None, n
        assert detect(b"junk" + pre[:n], 4) is None, n
        assert detect(b"junk" + pre + b"rest", 4, 4 + n) is None, n
    assert detect(b"junk" + pre, 4) == "json"
    assert detect(b"junk" + get_format("protobuf").preamble() + b"more", 4) == "protobuf"


def test_detect_refuses_other_streams_showing_their_first_bytes():
    with pytest.raises(ProtocolError) as e:
        detect(b"MLX")
    assert str(e.value) == "unrecognized stream start b'MLX'"
    with pytest.raises(ProtocolError) as e:
        detect(b"..MLBX!", 2)
    assert str(e.value) == "unrecognized stream start b'MLBX!'"
    with pytest.raises(ProtocolError) as e:
        detect(b"..GET / HTTP/1.1\r\n", 2)
    assert str(e.value) == ("unrecognized stream start b'GET / HT' "
                            "(expected '{' for bitstream or the MLBR preamble)")
    assert MAGIC == b"MLBR"


def test_decode_all_says_where_a_stream_ends_inside_a_message():
    data = session("json")
    with pytest.raises(ProtocolError) as e:
        decode_all(data[:-3], model_decoder_for("json"))
    # the frame after the header: its length counted from where it starts, not from byte 0
    assert str(e.value) == "stream ended inside a frame (92 of 95 bytes)"
    fmt = BitstreamFormat()
    replies = fmt.reply(0, ADVICE, [np.array(1)]) + fmt.reply(1, ADVICE, [np.array(2)])
    with pytest.raises(ProtocolError) as e:
        decode_all(replies[:-1], fmt.compiler_decoder(ADVICE))
    assert str(e.value) == "stream ended inside a reply (7 of 8 bytes)"


class _NeedsMore(Decoder):
    """A decoder of the base's defaults that never completes a message."""

    def decode(self, data, pos, end):
        return None


class _Silent(_NeedsMore):
    def truncated(self, avail):
        return None


def test_decode_all_with_a_decoder_that_cannot_say_more_than_truncated():
    with pytest.raises(ProtocolError) as e:
        decode_all(b"abc", _Silent())
    assert str(e.value) == "truncated"
    with pytest.raises(ProtocolError) as e:
        decode_all(b"abc", _NeedsMore())
    assert str(e.value) == "stream ended inside a message (3 bytes of an incomplete message)"


def test_the_base_decoder_defaults():
    d = _NeedsMore(max_message=99)
    assert d.max_message == 99 and d.need == 1
    assert d.truncated(0) is None   # the stream ended at a message boundary
    assert d.truncated(1) == "stream ended inside a message (1 bytes of an incomplete message)"
    # no alignment wanted: home 0, for every id
    for dec in (d, FramedReplyDecoder(ADVICE), BitstreamFormat().compiler_decoder(ADVICE)):
        home, top = dec.aligned_home(5)
        assert home == 0 and top == math.inf


def test_decode_all_stops_at_a_second_session():
    for name in ("json", "bitstream"):
        data = session(name)
        with pytest.raises(ProtocolError) as e:
            decode_all(data + data, model_decoder_for(name))
        assert str(e.value) == f"a new session starts at byte {len(data)}"


def test_decode_all_of_zero_byte_messages_returns_one():
    """Replies to an empty advice list take no bytes: one is decoded, no endless loop."""
    got = decode_all(b"xyz", BitstreamFormat().compiler_decoder([]))
    assert isinstance(got, list) and len(got) == 1 and got[0].id == 0 and got[0].tensors == []


def test_bitstream_has_no_ack_and_no_error_replies():
    fmt = get_format("bitstream")
    assert fmt.ack() == b"" and fmt.preamble() == b"" and fmt.end() == b""
    with pytest.raises(NotImplementedError) as e:
        fmt.error(3, "boom")
    assert str(e.value) == "format bitstream cannot carry error replies"
    assert repr(fmt) == "<mlbridge format bitstream>"
