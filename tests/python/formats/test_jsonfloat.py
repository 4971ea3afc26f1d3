"""Canonical float text: shortest digits of the tensor's own type, laid out like repr."""
from __future__ import annotations

import numpy as np
import pytest

from mlbridge.formats.jsonfmt import format_float32, format_float64, _relayout


def reference32(x: np.float32) -> str:
    """Slow but plain: numpy's unique scientific digits, re-laid out by hand."""
    if not np.isfinite(x):
        return {"nan": '"NaN"', "inf": '"Infinity"', "-inf": '"-Infinity"'}[str(float(x))]
    sci = np.format_float_scientific(x, unique=True, trim="-")
    mant, exp = sci.split("e")
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    e = int(exp)
    if digits == "0":
        return "-0.0" if neg else "0.0"
    sign = "-" if neg else ""
    if -4 <= e < 16:
        if e >= 0:
            whole = digits[: e + 1].ljust(e + 1, "0")
            return f"{sign}{whole}.{digits[e + 1:] or '0'}"
        return f"{sign}0.{'0' * (-e - 1)}{digits}"
    m = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{m}e{'-' if e < 0 else '+'}{abs(e):02d}"


@pytest.mark.parametrize("x,text", [
    (0.1, "0.1"), (1.0, "1.0"), (-0.0, "-0.0"), (0.0, "0.0"), (1e-05, "1e-05"), (0.0001, "0.0001"),
    (1e16, "1e+16"), (1.5e16, "1.5e+16"), (123456789.0, "123456790.0"), (3.4028235e38, "3.4028235e+38"),
    (1e-45, "1e-45"), (9.999999e15, "9999999000000000.0"), (123.5, "123.5"), (16777216.0, "16777216.0"),
    (float("nan"), '"NaN"'), (float("inf"), '"Infinity"'), (-float("inf"), '"-Infinity"'),
])
def test_float32_examples(x, text):
    assert format_float32(np.float32(x)) == text


def test_float32_random_bit_patterns():
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    for v in values:
        got = format_float32(v)
        assert got == reference32(v), (v, got)
        if np.isfinite(v):
            assert np.float32(float(got)) == v or (v == 0 and got.lstrip("-") == "0.0")


def test_float32_decades():
    for e in range(-46, 39):
        for m in (1.0, 9.999999, 1.5):
            with np.errstate(over="ignore"):
                v = np.float32(m * 10.0 ** e)
            assert format_float32(v) == reference32(v)


@pytest.mark.parametrize("x", [0.1, 1e-05, 1e16, 5e-324, 1.7976931348623157e308, -0.0, 123456789.0, 1 / 3])
def test_float64_is_repr(x):
    assert format_float64(x) == repr(x)


def test_relayout():
    assert _relayout("1.2345679e+08") == "123456790.0"
    assert _relayout("1e-04") == "0.0001"
    assert _relayout("10000000000000000.0") == "1e+16"
    assert _relayout("-0.0") == "-0.0"
