"""Code size of an ELF object: the bytes of its ``.text`` sections (``.text`` and
``.text.*``, as ``-ffunction-sections`` splits them), read from the section
headers in Python (no ``size``/``readelf`` process per module).

The object comes from a compiler we ran, but it is still parsed as untrusted:
every offset and count is checked against the file's size.
"""
from __future__ import annotations

import struct

from ..core.errors import MLBridgeError

#: An object larger than this is refused rather than read into memory.
MAX_OBJECT_BYTES = 1 << 31
_SHT_NOBITS = 8


class ElfError(MLBridgeError, ValueError):
    """Not an ELF object, or one whose headers point outside the file."""


def text_size(path: str) -> int:
    """Sum of the sizes of the sections named ``.text`` or ``.text.*``."""
    with open(path, "rb") as f:
        data = f.read(MAX_OBJECT_BYTES + 1)
    if len(data) > MAX_OBJECT_BYTES:
        raise ElfError(f"{path}: larger than {MAX_OBJECT_BYTES} bytes")
    return text_size_of(data, path)


def text_size_of(data: bytes, what: str = "object") -> int:
    if len(data) < 16 or data[:4] != b"\x7fELF":
        raise ElfError(f"{what}: not an ELF file")
    cls, enc = data[4], data[5]
    if cls not in (1, 2) or enc not in (1, 2):
        raise ElfError(f"{what}: unknown ELF class {cls} or data encoding {enc}")
    e = "<" if enc == 1 else ">"
    if cls == 2:   # ELF64
        hdr, off_shoff, off_sh = 64, 0x28, 0x3A
        sh_fmt = e + "IIQQQQIIQQ"
    else:          # ELF32
        hdr, off_shoff, off_sh = 52, 0x20, 0x2E
        sh_fmt = e + "IIIIIIIIII"
    if len(data) < hdr:
        raise ElfError(f"{what}: truncated ELF header")
    shoff, = struct.unpack_from(e + ("Q" if cls == 2 else "I"), data, off_shoff)
    shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, off_sh)
    entry = struct.calcsize(sh_fmt)
    if shoff == 0 or shnum == 0:
        return 0
    if shentsize < entry:
        raise ElfError(f"{what}: section header entry size {shentsize} < {entry}")
    if shoff + shnum * shentsize > len(data):
        raise ElfError(f"{what}: section headers ({shnum} at {shoff}) run past the end of the file")

    def header(i: int):  # (name, type, flags, addr, offset, size, ...)
        return struct.unpack_from(sh_fmt, data, shoff + i * shentsize)

    # SHN_XINDEX (0xffff): the real string-table index is in section 0's sh_link.
    if shstrndx == 0xFFFF:
        shstrndx = header(0)[6]
    if shstrndx >= shnum:
        raise ElfError(f"{what}: section-name table index {shstrndx} out of range ({shnum} sections)")
    str_hdr = header(shstrndx)
    str_off, str_size = str_hdr[4], str_hdr[5]
    if str_hdr[1] == _SHT_NOBITS or str_off + str_size > len(data):
        raise ElfError(f"{what}: section-name table runs past the end of the file")
    names = data[str_off:str_off + str_size]
    total = 0
    for i in range(shnum):
        h = header(i)
        name_off = h[0]
        if name_off >= len(names):
            raise ElfError(f"{what}: section {i}'s name is outside the name table")
        end = names.find(b"\0", name_off)
        name = names[name_off:end if end >= 0 else len(names)]
        if name == b".text" or name.startswith(b".text."):
            total += h[5]
    return total
