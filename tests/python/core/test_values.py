"""What a policy may return and a client may send: checked, never truncated."""
from __future__ import annotations

import numpy as np
import pytest

from mlbridge import TensorSpec as T
from mlbridge.core.errors import SpecMismatch
from mlbridge.core.values import coerce, coerce_all

I64 = T("d", "int64_t", [1])
F32 = T("p", "float", [1])
U8 = T("u", "uint8_t", [2])
B = T("b", "bool", [])


@pytest.mark.parametrize("value,spec,want", [
    (np.int64(3), I64, [3]),
    (3, I64, [3]),
    (True, I64, [1]),
    ([3], I64, [3]),
    (np.array([3], np.int8), I64, [3]),
    (np.int32(3), F32, [3.0]),          # int32 -> float32 is not safe in numpy...
    (0.5, F32, [0.5]),
    (np.float32(0.5), F32, [0.5]),
    (2 ** 24, F32, [16777216.0]),
    ([1, 255], U8, [1, 255]),
    (np.array([1, 255], np.uint8), U8, [1, 255]),
    (True, B, True),
    (np.bool_(False), B, False),
    (float("nan"), F32, None),
])
def test_accepted(value, spec, want):
    if isinstance(value, np.int32) and spec is F32:
        with pytest.raises(SpecMismatch, match="does not cast safely"):
            coerce(value, spec, "advice")
        return
    got = coerce(value, spec, "advice")
    assert got.dtype == spec.np_dtype and got.shape == spec.shape and got.flags.c_contiguous
    if want is not None:
        assert got.tolist() == want


@pytest.mark.parametrize("value,spec,match", [
    (0.5, I64, "a float .* cannot go into a int64_t"),
    (2.0, I64, "a float"),
    (np.float64(2.0), I64, "does not cast safely"),
    (np.float64(0.5), F32, "does not cast safely"),      # numpy float64 -> float32 is lossy
    ([0.5], I64, "float values cannot go into"),
    (256, U8, "shape|range"),
    ([1, 256], U8, "out of range"),
    ([-1, 2], U8, "out of range"),
    (2 ** 64, I64, "out of range"),
    (2 ** 24 + 1, F32, "not exactly representable"),
    (1e39, F32, "overflows"),
    ([1.0, 1e39], T("v", "float", [2]), "overflows"),
    (np.array([1, 2, 3]), I64, r"got shape \[3\]"),
    (np.array([[1]]), I64, r"got shape \[1, 1\]"),
    ("yes", I64, "a str"),
    (None, I64, "None"),
    (3, B, "an integer"),
    (object(), I64, "cannot use"),
])
def test_refused(value, spec, match):
    with pytest.raises(SpecMismatch, match=match) as ei:
        coerce(value, spec, "advice")
    assert f"advice {spec.name!r}" in str(ei.value)


def test_several_specs():
    specs = [T("a", "int64_t", [1]), T("b", "float", [2])]
    a, b = coerce_all((1, [0.5, 1.5]), specs)
    assert a.tolist() == [1] and b.tolist() == [0.5, 1.5]
    a, b = coerce_all({"b": np.zeros(2, np.float32), "a": 2}, specs)
    assert a.tolist() == [2]
    with pytest.raises(SpecMismatch, match="'b' is missing"):
        coerce_all({"a": 1}, specs)
    with pytest.raises(SpecMismatch, match="unknown advice 'c'"):
        coerce_all({"a": 1, "b": [0, 0], "c": 3}, specs)
    with pytest.raises(SpecMismatch, match="2 advice tensors expected"):
        coerce_all(1, specs)
    (one,) = coerce_all({"a": 5}, specs[:1])
    assert one.tolist() == [5]


def test_strings():
    s = T("s", "string", [2])
    got = coerce(["a", b"b"], s, "feature")
    assert got.dtype == object and got.tolist() == ["a", b"b"]
    with pytest.raises(SpecMismatch, match="element 1"):
        coerce(["a", 1], s, "feature")
    assert coerce("x", T("t", "string", []), "feature").tolist() == "x"
