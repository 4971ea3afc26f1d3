"""Byte mutations for property tests of untrusted input (decoders, files the
workflow commands read): byte flips, inserts, deletes, hostile 64-bit words,
truncation. One mutator for test_decoder_properties and test_damaged_inputs."""
from __future__ import annotations

import struct
from typing import Any, Callable

from hypothesis import strategies as st

# Numbers that break naive size arithmetic.
HOSTILE = [0, 1, 2, 3, 7, 64, 65, 255, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1,
           2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -1, -(2**63)]


def mutate(draw: Callable[..., Any], data: bytes) -> bytes:
    """DATA changed by 1 to 6 mutations drawn with DRAW."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "int", "truncate"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[at:at + draw(st.integers(1, 16))]
        elif op == "int":   # a hostile 32- or 64-bit value (frame lengths, data sizes)
            v = draw(st.sampled_from(HOSTILE)) & (2**64 - 1)
            data[at:at + 8] = struct.pack("<Q", v)
        elif op == "truncate":
            del data[at:]
    return bytes(data)
