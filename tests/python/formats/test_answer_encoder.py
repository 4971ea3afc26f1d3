"""The per-session answer encoders (formats answer_encoder) accept, refuse and
encode exactly as the general path (coerce_all + reply) does."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlbridge.core.errors import SpecMismatch
from mlbridge.core.spec import TensorSpec
from mlbridge.core.values import coerce_all
from mlbridge.formats import FORMATS

NUMERIC = ["float", "double", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
           "uint64_t", "bool"]
SPECS = [TensorSpec("a", t, shape) for t in NUMERIC for shape in ([1], [], [1, 1], [2])]
NP_TYPES = [np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64, np.bool_]

values = st.one_of(
    st.integers(-(2**65), 2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from([0, 1, -1, 255, 256, 2**31, 2**63 - 1, 2**63, 3.4e38, 3.5e38, 1e300, None, "1", [1], [1.5],
                     (1,), [[1]], [1, 2]]),
    st.tuples(st.sampled_from(NP_TYPES), st.integers(-300, 300)).map(lambda t: np.array(t[1]).astype(t[0])[()]),
    st.tuples(st.sampled_from(NP_TYPES), st.sampled_from([(), (1,), (1, 1), (2,)])).map(
        lambda t: np.ones(t[1], dtype=t[0])),
)


def _general(fmt, spec, value):
    try:
        return fmt.reply(3, [spec], coerce_all(value, [spec], "advice"))
    except SpecMismatch as exc:
        return ("SpecMismatch", str(exc))


def _fast(fmt, spec, value):
    try:
        return fmt.answer_encoder([spec])(3, value)
    except SpecMismatch as exc:
        return ("SpecMismatch", str(exc))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@settings(max_examples=300, deadline=None, derandomize=True)
@given(spec=st.sampled_from(SPECS), value=values)
def test_encoder_matches_general_path(fmt, spec, value):
    f = FORMATS[fmt]
    with np.errstate(all="ignore"):
        assert _fast(f, spec, value) == _general(f, spec, value)


def test_fast_path_bytes():
    enc = FORMATS["bitstream"].answer_encoder([TensorSpec("a", "int64_t", [1])])
    assert enc(0, 5) == np.int64(5).tobytes()
    assert enc(0, np.int64(-2)) == np.int64(-2).tobytes()
    with pytest.raises(SpecMismatch):
        enc(0, 2**63)
    with pytest.raises(SpecMismatch):
        enc(0, 1.0)   # never a float into an integer tensor
    fenc = FORMATS["bitstream"].answer_encoder([TensorSpec("p", "float", [1])])
    assert fenc(0, 0.5) == np.float32(0.5).tobytes()
    with pytest.raises(SpecMismatch):
        fenc(0, 1e300)   # overflows float


@pytest.mark.parametrize("fmt", ["json", "protobuf"])
@settings(max_examples=200, deadline=None, derandomize=True)
@given(spec=st.sampled_from(SPECS), value=values, id=st.one_of(st.sampled_from([0, -1, 127, 128, 2**63 - 1, -(2**63)]),
                                                             st.integers(-(2**63), 2**63 - 1)))
def test_framed_encoder_matches_general_path_for_any_id(fmt, spec, value, id):
    """The framed formats' templates put the id (varint or text) and the lengths right."""
    f = FORMATS[fmt]
    with np.errstate(all="ignore"):
        try:
            fast = f.answer_encoder([spec])(id, value)
        except SpecMismatch as exc:
            fast = ("SpecMismatch", str(exc))
        try:
            general = f.reply(id, [spec], coerce_all(value, [spec], "advice"))
        except SpecMismatch as exc:
            general = ("SpecMismatch", str(exc))
    assert fast == general
