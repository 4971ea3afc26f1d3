"""Element types: LLVM wire names <-> numpy dtypes <-> protobuf enum numbers.

The table is the one in docs/protocol.md ("Data types"). Writers always emit the
LLVM name; readers also accept the numpy names as aliases.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

__all__ = [
    "DType",
    "DTYPES",
    "resolve",
    "from_proto",
    "BITSTREAM_TYPES",
]


@dataclass(frozen=True)
class DType:
    """One row of the protocol's type table."""

    llvm: str            # name on the wire ("int64_t")
    proto: int           # mlbridge.v1.DType enum number
    np_dtype: np.dtype   # little-endian numpy dtype (object for strings)
    itemsize: int        # bytes per element on the wire (0 for strings)
    bitstream: bool      # representable in the bitstream format

    @property
    def is_string(self) -> bool:
        return self.llvm == "string"

    @property
    def kind(self) -> str:
        """numpy kind letter: 'f', 'i', 'u', 'b' or 'O' (string)."""
        return self.np_dtype.kind

    def __str__(self) -> str:
        return self.llvm


def _row(llvm: str, proto: int, np_name: str) -> DType:
    if np_name == "object":
        return DType(llvm, proto, np.dtype(object), 0, False)
    # Explicit '<' so the wire layout stays little-endian on any host.
    dt = np.dtype(np_name).newbyteorder("<")
    return DType(llvm, proto, dt, dt.itemsize, True)


DTYPES: Dict[str, DType] = {
    row.llvm: row
    for row in (
        _row("float", 1, "float32"),
        _row("double", 2, "float64"),
        _row("int8_t", 3, "int8"),
        _row("uint8_t", 4, "uint8"),
        _row("int16_t", 5, "int16"),
        _row("uint16_t", 6, "uint16"),
        _row("int32_t", 7, "int32"),
        _row("uint32_t", 8, "uint32"),
        _row("int64_t", 9, "int64"),
        _row("uint64_t", 10, "uint64"),
        _row("bool", 11, "bool"),
        _row("string", 12, "object"),
    )
}

BITSTREAM_TYPES = tuple(name for name, row in DTYPES.items() if row.bitstream)

_BY_PROTO: Dict[int, DType] = {row.proto: row for row in DTYPES.values()}

# Aliases a reader accepts: numpy names, plus a few spellings users type.
_ALIASES: Dict[str, DType] = dict(DTYPES)
for _row_ in DTYPES.values():
    if _row_.llvm != "string":
        _ALIASES[np.dtype(_row_.np_dtype).name] = _row_
_ALIASES.update({
    "float32": DTYPES["float"],
    "float64": DTYPES["double"],
    "str": DTYPES["string"],
    "bytes": DTYPES["string"],
    "object": DTYPES["string"],
})


def resolve(dtype: Any) -> DType:
    """Return the table row for an LLVM name, alias, numpy dtype/type, or DType.

    Raises ValueError for anything the protocol cannot carry (e.g. float16).
    """
    if isinstance(dtype, DType):
        return dtype
    if isinstance(dtype, str):
        row = _ALIASES.get(dtype)
        if row is None:
            raise ValueError(f"unknown tensor type {dtype!r} (known: {', '.join(DTYPES)})")
        return row
    if dtype is str or dtype is bytes:
        return DTYPES["string"]
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"not a tensor type: {dtype!r}") from exc
    if dt.kind in "OUS":
        return DTYPES["string"]
    # Byte order does not matter for identity: the wire is always little-endian.
    row = _ALIASES.get(dt.newbyteorder("=").name) if dt.kind in "biuf" else None
    if row is None:
        raise ValueError(f"numpy dtype {dt} has no mlbridge wire type")
    return row


def from_proto(number: int) -> DType:
    """Table row for a protobuf DType enum number."""
    row = _BY_PROTO.get(number)
    if row is None:
        raise ValueError(f"unknown protobuf DType enum value {number}")
    return row


def lookup(name: str) -> Optional[DType]:
    """Like resolve() for wire names, but returns None when unknown."""
    return _ALIASES.get(name)
