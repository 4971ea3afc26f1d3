"""Encoders and incremental decoders of the three formats, without a channel."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mlbridge import TensorSpec as T
from mlbridge.core.errors import ProtocolError
from mlbridge.formats import FORMATS, decode_all, detect, get_format, model_decoder_for
from mlbridge.formats.protobuf import pb
from mlbridge.core.messages import Header, ObservationMessage, Restart

FEATS = [T("a", "float", [2]), T("b", "int64_t", []), T("c", "bool", [3]), T("e", "double", [0])]
ADV = [T("y", "int32_t", [1])]
ARRAYS = [np.array([1.5, 10.0], np.float32), np.array(-3), np.array([True, False, True]), np.empty(0)]


def stream(fmt):
    f = get_format(fmt)
    return (f.preamble() + f.header(FEATS, ADV) + f.context("main")
            + f.observation(0, FEATS, ARRAYS) + f.observation(1, FEATS, ARRAYS) + f.end())


def check_messages(msgs, fmt):
    kinds = [type(m).__name__ for m in msgs]
    want = ["Header", "Context", "ObservationMessage", "ObservationMessage"]
    if fmt != "bitstream":
        want = ["Preamble"] + want + ["End"]
    assert kinds == want
    obs = [m for m in msgs if isinstance(m, ObservationMessage)]
    for o in obs:
        assert list(o.tensors) == ["a", "b", "c", "e"]
        for (name, want_arr), spec in zip(zip("abce", ARRAYS), FEATS):
            got = o.tensors[name]
            assert got.dtype == spec.np_dtype and got.shape == spec.shape
            assert got.tolist() == want_arr.tolist()
            assert not got.flags.writeable


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_whole_stream(fmt):
    data = stream(fmt)
    check_messages(decode_all(data, model_decoder_for(detect(data))), fmt)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_byte_by_byte(fmt):
    """Feeding one byte at a time gives the same messages (incremental decoding)."""
    data = stream(fmt)
    dec = model_decoder_for(detect(data))
    pos = 0
    msgs = []
    for i in range(len(data)):
        buf = data[: i + 1]     # bytes so far (views keep each prefix alive)
        while True:
            got = dec.decode(buf, pos, len(buf))
            if got is None:
                assert dec.need > len(buf) - pos
                break
            msgs.append(got[0])
            pos = got[1]
    assert pos == len(data) and dec.truncated(0) is None
    check_messages(msgs, fmt)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_truncation_is_reported(fmt):
    data = stream(fmt)
    cut = data[: len(data) - 3]
    with pytest.raises(ProtocolError):
        decode_all(cut, model_decoder_for(detect(cut)))


def test_detect():
    assert detect(b"") is None
    assert detect(b"{") == "bitstream"
    assert detect(b"MLB") is None
    assert detect(get_format("json").preamble()) == "json"
    assert detect(get_format("protobuf").preamble()) == "protobuf"
    with pytest.raises(ProtocolError, match="version 9.*version 1"):
        detect(b"MLBR\x09J\x00\x00")
    with pytest.raises(ProtocolError, match="unrecognized"):
        detect(b"GET / HTTP/1.1")


def test_bitstream_matches_llvm_layout():
    f = get_format("bitstream")
    feats = [T("sroa_savings", "int64_t", [1]), T("mask", "int64_t", [1, 33])]
    adv = [T("inlining_decision", "int64_t", [1])]
    assert f.header(feats, adv) == (
        b'{"features":[{"name":"sroa_savings","type":"int64_t","port":0,"shape":[1]},'
        b'{"name":"mask","type":"int64_t","port":0,"shape":[1,33]}],'
        b'"advice":{"name":"inlining_decision","type":"int64_t","port":0,"shape":[1]}}\n')
    assert f.context("") == b'{"context":""}\n'
    obs = f.observation(4, feats, [np.array([10]), np.zeros((1, 33), np.int64)])
    assert obs == b'{"observation":4}\n' + np.array([10], "<i8").tobytes() + bytes(8 * 33) + b"\n"
    assert f.reply(0, adv, [np.array([1])]) == b"\x01" + bytes(7)


def test_bitstream_reader_accepts_llvm_variants():
    dec = model_decoder_for("bitstream")
    # spacing, key order, extra keys, and the advice as a list
    hdr = (b'{ "advice": [{"shape":[1],"port":0,"type":"int64","name":"d"}], "features": '
           b'[{"type":"float32","name":"x","shape":[2]}], "extra": 1 }\n')
    msgs = decode_all(hdr + b'{ "observation" : 0 }\n' + np.array([1, 2], np.float32).tobytes() + b"\n", dec)
    h, o = msgs
    assert h.features == (T("x", "float", [2]),) and h.advice == (T("d", "int64_t", [1]),)
    assert o.tensors["x"].tolist() == [1.0, 2.0]


def test_bitstream_rejects_bad_bool_and_strings():
    f = get_format("bitstream")
    feats = [T("b", "bool", [2])]
    data = f.header(feats, ADV) + b'{"observation":0}\n\x01\x02\n'
    with pytest.raises(ProtocolError, match="bool tensor 'b'"):
        decode_all(data, model_decoder_for("bitstream"))
    with pytest.raises(ProtocolError, match="string"):
        f.header([T("s", "string", [1])], ADV)


def test_bitstream_second_header_restarts():
    f = get_format("bitstream")
    data = f.header(FEATS, ADV) + f.header(FEATS, ADV)
    dec = model_decoder_for("bitstream")
    msg, pos = dec.decode(data, 0, len(data))
    assert isinstance(msg, Header)
    msg2, pos2 = dec.decode(data, pos, len(data))
    assert isinstance(msg2, Restart) and pos2 == pos


def test_json_reader_is_lenient_but_exact():
    f = get_format("json")
    dec = model_decoder_for("json")
    hdr = {"header": {"advice": [], "features": [{"shape": [3], "type": "double", "name": "x"},
                                                  {"name": "n", "type": "uint64", "shape": [1]}],
                      "version": 1}}
    payload = json.dumps(hdr, indent=2).encode()
    obs = (b'{ "observation" : { "tensors" : [ {"data":[NaN, -Infinity, 1E2], "shape":[3], "type":"double",'
           b' "name":"x"}, {"name":"n","type":"uint64_t","shape":[1],"data":[18446744073709551615]} ],'
           b' "id": 7 } }')
    data = f.preamble() + f.frame(payload) + f.frame(obs)
    _, h, o = decode_all(data, dec)
    x = o.tensors["x"]
    assert math.isnan(x[0]) and x[1] == -math.inf and x[2] == 100.0 and o.id == 7
    assert o.tensors["n"].tolist() == [2 ** 64 - 1]


@pytest.mark.parametrize("bad,match", [
    ('{"name":"n","type":"int64_t","shape":[1],"data":[2.0]}', "non-integer"),
    ('{"name":"n","type":"int8_t","shape":[1],"data":[128]}', "out of range"),
    ('{"name":"n","type":"uint64_t","shape":[1],"data":[-1]}', "out of range"),
    ('{"name":"n","type":"uint64_t","shape":[1],"data":[18446744073709551616]}', "non-integer|range"),
    ('{"name":"n","type":"int64_t","shape":[2],"data":[1]}', "1 values for shape"),
    ('{"name":"n","type":"float","shape":[1],"data":[null]}', "not a number"),
    ('{"name":"n","type":"float","shape":[1],"data":[1e39]}', "overflows"),
    ('{"name":"n","type":"bool","shape":[1],"data":[2]}', "non-boolean"),
    ('{"name":"n","type":"string","shape":[1],"data":[1]}', "non-string"),
    ('{"name":"n","type":"float16","shape":[1],"data":[1]}', "unknown type"),
])
def test_json_tensor_values_checked(bad, match):
    f = get_format("json")
    with pytest.raises(ProtocolError, match=match):
        f.decode_payload(('{"reply":{"id":0,"tensors":[' + bad + "]}}").encode())


def test_json_canonical_bytes():
    f = get_format("json")
    specs = [T("f", "float", [4]), T("s", "string", [2]), T("b", "bool", [2]), T("u", "uint64_t", [1])]
    arrays = [np.array([0.1, -0.0, 1e-5, np.nan], np.float32), np.array(['a"\\', "é\n\x01"], dtype=object),
              np.array([True, False]), np.array([2 ** 64 - 1], np.uint64)]
    assert f.observation_payload(3, specs, arrays) == (
        '{"observation":{"id":3,"tensors":['
        '{"name":"f","type":"float","shape":[4],"data":[0.1,-0.0,1e-05,"NaN"]},'
        '{"name":"s","type":"string","shape":[2],"data":["a\\"\\\\","é\\n\\u0001"]},'
        '{"name":"b","type":"bool","shape":[2],"data":[true,false]},'
        '{"name":"u","type":"uint64_t","shape":[1],"data":[18446744073709551615]}]}}').encode()
    assert f.ack() == b'\x20\x00\x00\x00{"reply":{"id":-1,"tensors":[]}}'
    assert f.error_payload(2, "E: x") == b'{"reply":{"id":2,"error":"E: x"}}'
    assert f.end() == b'\x0a\x00\x00\x00{"end":{}}'


def test_protobuf_canonical_and_unknown_fields():
    f = get_format("protobuf")
    payload = f.observation_payload(1, ADV, [np.array([5], np.int32)])
    m = pb.Message()
    m.observation.id = 1
    t = m.observation.tensors.add()
    t.name, t.dtype = "y", pb.INT32
    t.shape.append(1)
    t.data = np.array([5], "<i4").tobytes()
    assert payload == m.SerializeToString()
    # an unknown field (number 15, varint) from a newer writer is skipped
    msg = f.decode_payload(payload + b"\x78\x01")
    assert isinstance(msg, ObservationMessage) and msg.tensors[0][1].tolist() == [5]
    with pytest.raises(ProtocolError, match="no kind"):
        f.decode_payload(b"")
    with pytest.raises(ProtocolError, match="data bytes"):
        bad = pb.Message()
        bt = bad.reply.tensors.add()
        bt.name, bt.dtype, bt.data = "y", pb.INT32, b"\x01\x02"
        bt.shape.append(1)
        f.decode_payload(bad.SerializeToString())


def test_framed_limits_and_restarts():
    dec = model_decoder_for("json", max_message=100)
    j = get_format("json")
    data = j.preamble() + (200).to_bytes(4, "little") + b"x" * 200
    with pytest.raises(ProtocolError, match="exceeds the 100-byte limit"):
        decode_all(data, dec)
    dec = model_decoder_for("json")
    head = j.preamble() + j.header(FEATS, ADV)
    for tail, kind in ((j.preamble(), "framed"), (b'{"features":[]}\n', "bitstream")):
        d = head + tail
        dec2 = model_decoder_for("json")
        msgs = []
        pos = 0
        while True:
            got = dec2.decode(d, pos, len(d))
            msgs.append(got[0])
            if isinstance(got[0], Restart):
                break
            pos = got[1]
        assert msgs[-1].format == kind and pos == len(head)


def test_framed_version_in_header_checked():
    f = get_format("protobuf")
    m = pb.Message()
    m.header.version = 2
    with pytest.raises(ProtocolError, match="version 2.*version 1"):
        decode_all(f.preamble() + f.frame(m.SerializeToString()), model_decoder_for("protobuf"))


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
def test_reply_decoder_rejects_other_messages(fmt):
    f = get_format(fmt)
    with pytest.raises(ProtocolError, match="expected a reply"):
        decode_all(f.context("x"), f.compiler_decoder(ADV))


def test_json_without_orjson():
    """orjson is optional at run time: the json module takes over."""
    import subprocess
    import sys
    from conftest import child_env
    code = (
        "import sys; sys.modules['orjson'] = None\n"
        "import numpy as np\n"
        "from mlbridge.formats import get_format, jsonfmt\n"
        "assert jsonfmt._orjson_loads is None\n"
        "from mlbridge import TensorSpec as T\n"
        "f = get_format('json')\n"
        "m = f.decode_payload(b'{\"reply\":{\"id\":1,\"tensors\":[{\"name\":\"y\",\"type\":\"float\",\"shape\":[2],\"data\":[NaN,0.1]}]}}')\n"
        "a = m.tensors[0][1]\n"
        "assert np.isnan(a[0]) and a[1] == np.float32(0.1) and a.dtype == np.float32\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, timeout=60)
    assert out.stdout.strip() == b"ok", out.stderr.decode()


def test_bitstream_header_parsed_once_per_process():
    """The same header line in a later session reuses the parsed header and
    layouts; a different header or message limit is parsed on its own, and a
    header line that is not valid still fails in every session."""
    from mlbridge.formats import bitstream as bs
    from mlbridge.formats.bitstream import BitstreamFormat, BitstreamModelDecoder

    fmt = BitstreamFormat()
    feats = [T(f"cache_probe_{i}", "int64_t", [1]) for i in range(3)]
    adv = [T("a", "int64_t", [1])]
    line = fmt.header(feats, adv)

    def first(data, max_message=1 << 20):
        dec = BitstreamModelDecoder(max_message)
        buf = bytearray(data)
        return dec, dec.decode(buf, 0, len(buf))

    d1, (h1, n1) = first(line)
    d2, (h2, n2) = first(line)
    assert n1 == n2 == len(line)
    assert h1 is h2 and d1.layout is d2.layout and list(h1.features) == feats
    d3, (h3, _) = first(line, 1 << 21)
    assert d3.layout is not d1.layout and h3 == h1
    other = fmt.header(feats[:2], adv)
    d4, (h4, _) = first(other)
    assert len(h4.features) == 2 and d4.layout.nbytes == 16
    # Still one observation after the cached header, with the right values.
    obs = fmt.observation(0, feats, [np.array([7]), np.array([8]), np.array([9])])
    buf = bytearray(line + obs)
    dec = BitstreamModelDecoder(1 << 20)
    _, pos = dec.decode(buf, 0, len(buf))
    msg, _ = dec.decode(buf, pos, len(buf))
    assert [int(msg.tensors[f"cache_probe_{i}"][0]) for i in range(3)] == [7, 8, 9]
    # A new header where an observation is expected is still a restart.
    assert type(dec.decode(bytearray(line), 0, len(line))[0]).__name__ == "Restart"
    bad = b'{"features":[{"name":"x","type":"nope","shape":[1]}]}\n'
    for _ in range(2):
        with pytest.raises(ProtocolError):
            first(bad)
    assert len(bs._HEADERS) <= bs._HEADER_CACHE_SIZE
