"""TFRecord files (TensorFlow's record framing), written and read without TensorFlow.

Each record: u64 little-endian length, masked crc32c of those 8 bytes, the
data, masked crc32c of the data. crc32c is Castagnoli's CRC; TensorFlow masks
it as ``((crc >> 15 | crc << 17) + 0xa282ead8) mod 2**32``. The checksum comes
from the ``google-crc32c`` package (C, hardware-accelerated) when installed,
else from a table-driven implementation (slow, but the same numbers).
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterator, List

from ..core.errors import ProtocolError

__all__ = ["crc32c", "masked_crc32c", "write_record", "read_records", "CRC32C_IMPLEMENTATION"]

_MASK_DELTA = 0xA282EAD8
#: refuse a record length beyond this when reading (a corrupt length field)
MAX_RECORD = 1 << 31


def _table() -> List[int]:
    poly = 0x82F63B78   # Castagnoli, reflected
    out = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        out.append(c)
    return out


_TABLE = _table()


def _crc32c_table(data: bytes) -> int:
    crc = 0xFFFFFFFF
    t = _TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


try:
    import google_crc32c as _g

    def crc32c(data: bytes) -> int:
        """CRC-32C (Castagnoli) of ``data``."""
        return int(_g.value(bytes(data)))

    CRC32C_IMPLEMENTATION = f"google-crc32c ({_g.implementation})"
except ImportError:   # pragma: no cover - depends on the environment
    crc32c = _crc32c_table
    CRC32C_IMPLEMENTATION = "table (pure Python)"


def masked_crc32c(data: bytes) -> int:
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def write_record(f: BinaryIO, data: bytes) -> int:
    """Append one record; returns the bytes written."""
    length = struct.pack("<Q", len(data))
    f.write(length)
    f.write(struct.pack("<I", masked_crc32c(length)))
    f.write(data)
    f.write(struct.pack("<I", masked_crc32c(data)))
    return len(data) + 16


def read_records(f: BinaryIO, path: str = "TFRecord") -> Iterator[bytes]:
    """The records of a TFRecord stream, checksums verified (ProtocolError otherwise)."""
    n = 0
    while True:
        head = f.read(12)
        if not head:
            return
        if len(head) < 12:
            raise ProtocolError(f"{path}: record {n}: truncated header")
        length_bytes = head[:8]
        (length,) = struct.unpack("<Q", length_bytes)
        (crc,) = struct.unpack("<I", head[8:])
        if crc != masked_crc32c(length_bytes):
            raise ProtocolError(f"{path}: record {n}: length checksum mismatch")
        if length > MAX_RECORD:
            raise ProtocolError(f"{path}: record {n}: length {length} exceeds {MAX_RECORD}")
        data = f.read(length)
        tail = f.read(4)
        if len(data) < length or len(tail) < 4:
            raise ProtocolError(f"{path}: record {n}: truncated data")
        if struct.unpack("<I", tail)[0] != masked_crc32c(data):
            raise ProtocolError(f"{path}: record {n}: data checksum mismatch")
        yield data
        n += 1
