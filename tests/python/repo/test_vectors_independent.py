"""The golden wire vectors (tests/vectors) are written by mlbridge's own
Python encoders (generate.py): as such they are regression guards, not
proof of correctness. This file reads every ``to_model`` vector with readers
that share no code with mlbridge's decoders -- the standard library's json,
Google's protobuf runtime on the .proto's generated classes, and a bitstream
reader written from LLVM's description of the format -- and checks each
observation against the manifest. The C++ side (tests/cpp/golden_vectors_test.cc)
is the other independent reader and writer; stock opt-19's bytes are compared
with ours in test_llvm_interop.py (issue 26).
"""
from __future__ import annotations

import json
import math
import os
import struct

import numpy as np
import pytest

from conftest import VECTORS

# Element types as LLVM names them, to numpy's little-endian types.
NP = {"float": "<f4", "double": "<f8", "int8_t": "i1", "uint8_t": "u1", "int16_t": "<i2", "uint16_t": "<u2",
      "int32_t": "<i4", "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8", "bool": "?"}
SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

with open(os.path.join(VECTORS, "manifest.json")) as _f:
    CASES = [c for c in json.load(_f)["cases"] if c["direction"] == "to_model"]


def _expected(case):
    """[(id, [(name, type, shape, values)])] of the manifest's observations."""
    return [(m["id"], [(t["name"], t["type"], tuple(t["shape"]), t["data"]) for t in m["tensors"]])
            for m in case["messages"] if m["kind"] == "observation"]


def _same(typ, shape, want, got) -> None:
    if typ == "string":
        assert list(got) == want
        return
    want_arr = np.array([SPECIAL.get(v, v) if isinstance(v, str) else v for v in want],
                        dtype=NP[typ]).reshape(shape)
    if isinstance(got, list):   # JSON numbers (and "NaN", "Infinity" strings): the tensor's type
        got = np.array([SPECIAL.get(v, v) if isinstance(v, str) else v for v in got], dtype=NP[typ])
    got = np.asarray(got).reshape(shape)
    assert got.dtype == want_arr.dtype
    np.testing.assert_array_equal(got, want_arr)


def _frames(data: bytes):
    assert data[:4] == b"MLBR"   # the 8-byte preamble
    pos = 8
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        yield data[pos + 4:pos + 4 + n]
        pos += 4 + n
    assert pos == len(data)


def _read_json(data: bytes):
    out = []
    for payload in _frames(data):
        msg = json.loads(payload)
        if "observation" in msg:
            o = msg["observation"]
            out.append((o["id"], [(t["name"], t["type"], tuple(t["shape"]), t["data"]) for t in o["tensors"]]))
    return out


def _read_protobuf(data: bytes):
    from mlbridge._proto import mlbridge_pb2 as pb   # protoc's classes: Google's decoder, not ours
    names = {v.number: v.name for v in pb.DType.DESCRIPTOR.values}
    out = []
    for payload in _frames(data):
        msg = pb.Message.FromString(payload)
        if msg.WhichOneof("kind") != "observation":
            continue
        tensors = []
        for t in msg.observation.tensors:
            tensors.append((t.name, names[t.dtype], tuple(t.shape),
                            list(t.string_data) if len(t.string_data) else bytes(t.data)))
        out.append((msg.observation.id, tensors))
    return out


def _read_bitstream(data: bytes, features):
    """LLVM's interactive format: a JSON header line, then ``{"context":...}``
    lines and ``{"observation":N}`` lines each followed by every feature's
    raw little-endian bytes and a newline."""
    f = __import__("io").BytesIO(data)
    header = json.loads(f.readline())
    specs = [(s["name"], s["type"], tuple(s["shape"])) for s in header["features"]]
    assert [s[0] for s in specs] == [s["name"] for s in features]
    out = []
    while line := f.readline():
        event = json.loads(line)
        if "context" in event:
            continue
        tensors = []
        for name, typ, shape in specs:
            n = int(np.prod(shape, dtype=np.int64)) * np.dtype(NP[typ]).itemsize
            raw = f.read(n)
            assert len(raw) == n
            tensors.append((name, typ, shape, np.frombuffer(raw, NP[typ])))
        assert f.read(1) == b"\n"
        out.append((int(event["observation"]), tensors))
    return out


PB_TYPES = {"FLOAT32": "float", "FLOAT64": "double", "INT8": "int8_t", "UINT8": "uint8_t", "INT16": "int16_t",
            "UINT16": "uint16_t", "INT32": "int32_t", "UINT32": "uint32_t", "INT64": "int64_t",
            "UINT64": "uint64_t", "BOOL": "bool", "STRING": "string"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_vector_read_independently_matches_the_manifest(case):
    with open(os.path.join(VECTORS, case["file"]), "rb") as f:
        data = f.read()
    fmt = case["format"]
    if fmt == "json":
        got = _read_json(data)
    elif fmt == "protobuf":
        got = _read_protobuf(data)
    else:
        got = _read_bitstream(data, case["features"])
    want = _expected(case)
    assert [oid for oid, _ in got] == [oid for oid, _ in want]
    for (_, gts), (_, wts) in zip(got, want):
        assert [t[0] for t in gts] == [t[0] for t in wts]
        for (name, gtype, gshape, gvals), (_, wtype, wshape, wvals) in zip(gts, wts):
            gtype = PB_TYPES.get(gtype, gtype)
            assert (gtype, gshape) == (wtype, wshape), name
            if fmt == "protobuf" and wtype != "string":
                gvals = np.frombuffer(gvals, NP[wtype])
            elif fmt == "protobuf":
                gvals = [s.decode("utf-8") for s in gvals]
            _same(wtype, wshape, wvals, gvals)
