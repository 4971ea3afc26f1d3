"""Golden vectors: generate.py reproduces the committed files byte for byte,
every file decodes to its manifest, and the manifest encodes to every file."""
from __future__ import annotations

import importlib.util
import json
import os

import numpy as np
import pytest

from conftest import VECTORS
from mlbridge import TensorSpec
from mlbridge.formats import decode_all, detect, get_format, model_decoder_for
from mlbridge.formats.jsonfmt import tensor_from_json
from mlbridge.core.messages import Context, End, Header, ObservationMessage, Preamble, Reply

with open(os.path.join(VECTORS, "manifest.json"), encoding="utf-8") as _f:
    MANIFEST = json.load(_f)
CASES = MANIFEST["cases"]


def _generator():
    spec = importlib.util.spec_from_file_location("mlbridge_vectors_generate", os.path.join(VECTORS, "generate.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_generate_reproduces_committed_files(tmp_path):
    names = _generator().write(str(tmp_path))
    committed = sorted(n for n in os.listdir(VECTORS) if n.endswith(".bin") or n == "manifest.json")
    assert sorted(names) == committed, "stale or missing vector files: re-run tests/vectors/generate.py"
    for name in names:
        with open(os.path.join(VECTORS, name), "rb") as a, open(tmp_path / name, "rb") as b:
            assert a.read() == b.read(), f"{name} differs from what generate.py writes"


def test_manifest_shape():
    assert MANIFEST["version"] == 1
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names))
    for fmt in ("bitstream", "json", "protobuf"):
        for kind in ("scalars", "vectors", "ndim", "empty", "special_floats", "int_extremes",
                     "newline_bytes", "contexts"):
            assert f"{fmt}_{kind}" in names
    assert {"json_strings", "protobuf_strings", "json_replies", "protobuf_replies", "bitstream_replies"} <= set(names)


def specs(items):
    return tuple(TensorSpec.from_json(x) for x in items)


def manifest_tensor(t):
    name, arr = tensor_from_json(t, "manifest")
    return name, arr


def same_tensor(got_name, got, want):
    name, arr = manifest_tensor(want)
    assert got_name == name
    assert got.dtype == arr.dtype and got.shape == arr.shape, (name, got.dtype, arr.dtype)
    if arr.dtype == object:
        assert got.tolist() == arr.tolist()
    else:
        assert got.tobytes() == arr.tobytes(), name


def read(case):
    with open(os.path.join(VECTORS, case["file"]), "rb") as f:
        return f.read()


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_file_decodes_to_manifest(case):
    data = read(case)
    fmt = get_format(case["format"])
    feats, adv = specs(case["features"]), specs(case["advice"])
    if case["direction"] == "to_model":
        assert detect(data) == case["format"]
        msgs = [m for m in decode_all(data, model_decoder_for(detect(data))) if not isinstance(m, Preamble)]
        want = [m for m in case["messages"] if not (m["kind"] == "end" and not fmt.framed)]
        assert len(msgs) == len(want)
        for got, w in zip(msgs, want):
            kind = w["kind"]
            if kind == "header":
                assert isinstance(got, Header) and got.features == feats and got.advice == adv
            elif kind == "context":
                assert isinstance(got, Context) and got.name == w["name"]
            elif kind == "observation":
                assert isinstance(got, ObservationMessage) and got.id == w["id"]
                assert list(got.tensors) == [t["name"] for t in w["tensors"]]
                for t in w["tensors"]:
                    same_tensor(t["name"], got.tensors[t["name"]], t)
            else:
                assert kind == "end" and isinstance(got, End)
    else:
        msgs = decode_all(data, fmt.compiler_decoder(adv))
        assert len(msgs) == len(case["messages"])
        for got, w in zip(msgs, case["messages"]):
            assert isinstance(got, Reply) and w["kind"] == "reply"
            if fmt.framed:
                assert got.id == w["id"]
            if "error" in w:
                assert got.error == w["error"] and not got.tensors
            else:
                assert got.error is None and len(got.tensors) == len(w["tensors"])
                for (name, arr), t in zip(got.tensors, w["tensors"]):
                    same_tensor(name, arr, t)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_manifest_encodes_to_file(case):
    """What the C++ suite does: encode the manifest's messages, compare bytes."""
    fmt = get_format(case["format"])
    feats, adv = specs(case["features"]), specs(case["advice"])
    out = fmt.preamble() if case["direction"] == "to_model" else b""
    for m in case["messages"]:
        kind = m["kind"]
        if kind == "header":
            out += fmt.header(feats, adv)
        elif kind == "context":
            out += fmt.context(m["name"])
        elif kind == "end":
            out += fmt.end()
        elif kind == "observation":
            out += fmt.observation(m["id"], feats, [manifest_tensor(t)[1] for t in m["tensors"]])
        elif "error" in m:
            out += fmt.error(m["id"], m["error"])
        elif m["id"] == -1 and not m["tensors"]:
            out += fmt.ack()
        else:
            out += fmt.reply(m["id"], adv, [manifest_tensor(t)[1] for t in m["tensors"]])
    assert out == read(case)


def test_nan_is_canonical_in_binary_files():
    case = next(c for c in CASES if c["name"] == "bitstream_special_floats")
    data = read(case)
    assert np.array([np.nan], "<f4").tobytes() == b"\x00\x00\xc0\x7f"
    assert b"\x00\x00\xc0\x7f" in data and b"\x00\x00\x00\x00\x00\x00\xf8\x7f" in data
