"""ELF objects read in Python, without llvm-objcopy / size processes: the named
sections an extraction needs (``.llvmbc``, ``.llvmcmd``) and the code size a score
needs (``.text`` and ``.text.*``, as ``-ffunction-sections`` splits them). A few
header reads and one read per wanted section, so both cost little more than the
bytes they return.

Objects are untrusted (a corpus comes from anyone's build): every offset and count
is checked against the file size and fixed limits before it is used; anything
malformed is an ElfError naming what.
"""
from __future__ import annotations

import io
import os
import struct
from typing import BinaryIO, Dict, Iterable, Iterator, List, Optional, Set, Tuple

from ..core.errors import MLBridgeError

ELF_MAGIC = b"\x7fELF"
SHT_NOBITS = 8
SHF_COMPRESSED = 0x800
SHN_XINDEX = 0xFFFF
#: more sections than this is not an object we want to parse
MAX_SECTIONS = 1 << 20
#: the section-name string table is read whole; bound it
MAX_SHSTRTAB = 64 << 20

#: a section header: (name, type, flags, addr, offset, size, link, info, align, entsize)
Header = Tuple[int, int, int, int, int, int, int, int, int, int]


class ElfError(MLBridgeError, ValueError):
    """Not an ELF file, or a malformed one (the message says what)."""


def is_elf(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == ELF_MAGIC


def _read_at(f: BinaryIO, offset: int, size: int, file_size: int, what: str) -> bytes:
    if offset < 0 or size < 0 or offset > file_size or size > file_size - offset:
        raise ElfError(f"{what} at offset {offset} size {size} is outside the file ({file_size} bytes)")
    f.seek(offset)
    data = f.read(size)
    if len(data) != size:
        raise ElfError(f"{what}: short read")
    return data


def _sections(f: BinaryIO, file_size: int) -> Iterator[Tuple[bytes, Header]]:
    """(name, header) of every section, names from the section-name table."""
    ident = f.read(16)
    if len(ident) < 16 or ident[:4] != ELF_MAGIC:
        raise ElfError("not an ELF file")
    cls, data_enc = ident[4], ident[5]
    if cls not in (1, 2) or data_enc not in (1, 2):
        raise ElfError(f"unknown ELF class {cls} / data encoding {data_enc}")
    end = "<" if data_enc == 1 else ">"
    if cls == 2:
        hdr = _read_at(f, 0, 64, file_size, "ELF header")
        shoff, = struct.unpack_from(end + "Q", hdr, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", hdr, 0x3A)
        sh_fmt, sh_size = end + "IIQQQQIIQQ", 64
    else:
        hdr = _read_at(f, 0, 52, file_size, "ELF header")
        shoff, = struct.unpack_from(end + "I", hdr, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", hdr, 0x2E)
        sh_fmt, sh_size = end + "IIIIIIIIII", 40
    if shoff == 0:
        return                              # no section table: no sections
    if shentsize < sh_size:
        raise ElfError(f"section header entry size {shentsize} < {sh_size}")
    if shnum == 0 or shstrndx == SHN_XINDEX:
        # extended numbering lives in section 0
        first = struct.unpack(sh_fmt, _read_at(f, shoff, sh_size, file_size, "section header 0"))
        if shnum == 0:
            shnum = first[5]
        if shstrndx == SHN_XINDEX:
            shstrndx = first[6]
    if shnum > MAX_SECTIONS:
        raise ElfError(f"{shnum} sections (limit {MAX_SECTIONS})")
    if shnum * shentsize > file_size:
        raise ElfError(f"{shnum} section headers do not fit in the file")
    if shstrndx >= shnum:
        raise ElfError(f"section name table index {shstrndx} >= {shnum} sections")
    table = _read_at(f, shoff, shnum * shentsize, file_size, "section header table")
    headers = [struct.unpack_from(sh_fmt, table, i * shentsize) for i in range(shnum)]
    strtab_hdr = headers[shstrndx]
    if strtab_hdr[5] > MAX_SHSTRTAB:
        raise ElfError(f"section name table of {strtab_hdr[5]} bytes (limit {MAX_SHSTRTAB})")
    strtab = _read_at(f, strtab_hdr[4], strtab_hdr[5], file_size, "section name table")
    for h in headers:
        name_off = h[0]
        if name_off >= len(strtab):
            continue                        # a nameless or corrupt entry is not one we want
        stop = strtab.find(b"\0", name_off)
        yield strtab[name_off:stop if stop >= 0 else len(strtab)], h


def read_sections(path: str, names: Iterable[str]) -> Dict[str, Optional[bytes]]:
    """The contents of the named sections (None for a section the object lacks)."""
    wanted = {n.encode("utf-8"): n for n in names}
    out: Dict[str, Optional[bytes]] = {n: None for n in wanted.values()}
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        for name, h in _sections(f, file_size):
            key = wanted.get(name)
            if key is None or out[key] is not None:
                continue
            if h[1] == SHT_NOBITS:
                out[key] = b""
                continue
            if h[2] & SHF_COMPRESSED:
                raise ElfError(f"section {key} is compressed (not supported)")
            out[key] = _read_at(f, h[4], h[5], file_size, f"section {key}")
    return out


def _text_size(f: BinaryIO, file_size: int) -> int:
    return sum(h[5] for name, h in _sections(f, file_size) if name == b".text" or name.startswith(b".text."))


def text_size(path: str) -> int:
    """Code bytes of an object: the sizes of its ``.text`` and ``.text.*`` sections."""
    with open(path, "rb") as f:
        try:
            return _text_size(f, os.fstat(f.fileno()).st_size)
        except ElfError as exc:
            raise ElfError(f"{path}: {exc}") from None


def text_size_of(data: bytes, what: str = "object") -> int:
    """text_size of an object held in memory."""
    try:
        return _text_size(io.BytesIO(data), len(data))
    except ElfError as exc:
        raise ElfError(f"{what}: {exc}") from None


SHF_WRITE = 0x1
SHF_ALLOC = 0x2


def _stored_sizes(f: BinaryIO, file_size: int) -> Tuple[int, int]:
    text = stored = 0
    for name, h in _sections(f, file_size):
        if name == b".text" or name.startswith(b".text."):
            text += h[5]
        # llvm-size's Berkeley text + data: every allocated section with contents
        # (code, read-only and initialized data; .bss takes no bytes in the file)
        if h[2] & SHF_ALLOC and h[1] != SHT_NOBITS:
            stored += h[5]
    return text, stored


def stored_sizes(path: str) -> Tuple[int, int]:
    """(``.text`` bytes, stored bytes) of an object or linked file. Stored bytes are
    what the program keeps on disk and in memory: llvm-size's Berkeley ``text`` +
    ``data`` (every allocated section but ``.bss``), so that moving code into
    tables (a switch into ``.rodata``) or tables into data is not counted as a win."""
    with open(path, "rb") as f:
        try:
            return _stored_sizes(f, os.fstat(f.fileno()).st_size)
        except ElfError as exc:
            raise ElfError(f"{path}: {exc}") from None


STT_FUNC = 2
SHT_SYMTAB = 2
#: a symbol table larger than this is not an object we want to parse
MAX_SYMTAB = 256 << 20


def function_sizes(path: str) -> Dict[str, int]:
    """Code bytes per function of an object: every ``STT_FUNC`` symbol defined in a
    ``.text``/``.text.*`` section, by name. Aliases (one address, several names, as
    C++ constructors have) count once, under the first name; same-named local
    functions add up. What "where the bytes went" compares between two compiles."""
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        try:
            return _function_sizes(f, file_size)
        except (ElfError, struct.error) as exc:
            raise ElfError(f"{path}: {exc}") from None


SHT_DYNSYM = 11


def _symbols(f: BinaryIO, file_size: int, sh_type: int) -> Tuple[List[Tuple[bytes, Header]], Iterator[Tuple[str, int, int, int, int]]]:
    """The sections, and (name, info, shndx, value, size) of every symbol in the
    tables of type SH_TYPE (SHT_SYMTAB or SHT_DYNSYM)."""
    sections = list(_sections(f, file_size))
    f.seek(4)
    is64, little = f.read(1) == b"\x02", f.read(1) == b"\x01"
    end = "<" if little else ">"

    def gen() -> Iterator[Tuple[str, int, int, int, int]]:
        for _, h in sections:
            if h[1] != sh_type:
                continue
            if h[5] > MAX_SYMTAB or h[6] >= len(sections):
                raise ElfError(f"symbol table of {h[5]} bytes linked to section {h[6]} (limit {MAX_SYMTAB})")
            strtab_hdr = sections[h[6]][1]
            if strtab_hdr[5] > MAX_SYMTAB:
                raise ElfError(f"symbol name table of {strtab_hdr[5]} bytes (limit {MAX_SYMTAB})")
            syms = _read_at(f, h[4], h[5], file_size, "symbol table")
            names = _read_at(f, strtab_hdr[4], strtab_hdr[5], file_size, "symbol name table")
            # Elf64_Sym: name, info, other, shndx, value, size; Elf32_Sym: name, value, size, info, other, shndx
            fmt, size = (end + "IBBHQQ", 24) if is64 else (end + "IIIBBH", 16)
            for off in range(0, len(syms) - size + 1, size):
                if is64:
                    name_off, info, _, shndx, value, sym_size = struct.unpack_from(fmt, syms, off)
                else:
                    name_off, value, sym_size, info, _, shndx = struct.unpack_from(fmt, syms, off)
                if name_off >= len(names):
                    continue
                stop = names.find(b"\0", name_off)
                name = names[name_off:stop if stop >= 0 else len(names)].decode("utf-8", "replace")
                yield name, info, shndx, value, sym_size
    return sections, gen()


def _function_sizes(f: BinaryIO, file_size: int) -> Dict[str, int]:
    sections, symbols = _symbols(f, file_size, SHT_SYMTAB)
    text = {i for i, (name, _) in enumerate(sections) if name == b".text" or name.startswith(b".text.")}
    out: Dict[str, int] = {}
    seen = set()
    for name, info, shndx, value, sym_size in symbols:
        if info & 0xF != STT_FUNC or shndx not in text or (shndx, value) in seen:
            continue
        seen.add((shndx, value))
        out[name] = out.get(name, 0) + sym_size
    return out


def defined_dynamic_symbols(path: str) -> Set[str]:
    """Names a linked file exports: its ``.dynsym`` entries defined in it."""
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        try:
            _, symbols = _symbols(f, file_size, SHT_DYNSYM)
            return {name for name, _, shndx, _, _ in symbols if shndx != 0 and name}
        except (ElfError, struct.error) as exc:
            raise ElfError(f"{path}: {exc}") from None
