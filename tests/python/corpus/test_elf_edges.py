"""Issue 26, mutation testing of corpus/elf.py (docs/testing.md, "Mutation
testing"): the ELF reader on objects built here byte by byte, in the four
layouts (32/64-bit, little/big-endian), with the header's extended numbering,
sections without bytes or compressed, symbol tables (function sizes, aliases,
exports), and the errors each malformed field gives."""
from __future__ import annotations

import struct

import pytest

from mlbridge.corpus import elf
from mlbridge.corpus.elf import ElfError

# written to kill mutants (docs/testing.md, "Mutation testing"): pytest -m mutation
pytestmark = pytest.mark.mutation

LAYOUTS = [(True, True), (True, False), (False, True), (False, False)]   # (64-bit, little-endian)
IDS = ["elf64le", "elf64be", "elf32le", "elf32be"]


def sec(name, data=b"", type=1, flags=0, link=0, info=0, size=None, entsize=0):
    return dict(name=name, data=data, type=type, flags=flags, link=link, info=info, size=size, entsize=entsize)


def build(sections, is64=True, little=True, *, xnum=False, xstrndx=False, shentsize=None, name_offsets=None):
    """An ELF object: the header, each section's bytes, the name table, then the
    section headers (a null section 0 first). ``xnum``/``xstrndx``: the section
    count / name-table index kept in section 0 (ELF's extended numbering)."""
    e = "<" if little else ">"
    sh_fmt = e + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
    eh_size = 64 if is64 else 52
    all_secs = list(sections) + [sec(".shstrtab", type=3)]
    names = b"\0"
    offs = []
    for s in all_secs:
        offs.append(len(names))
        names += s["name"].encode() + b"\0"
    all_secs[-1]["data"] = names
    body = b""
    headers = [None]
    for i, s in enumerate(all_secs):
        off = eh_size + len(body)
        size = len(s["data"]) if s["size"] is None else s["size"]
        name_off = offs[i] if name_offsets is None or i >= len(name_offsets) else name_offsets[i]
        headers.append((name_off, s["type"], s["flags"], 0, off, size, s["link"], s["info"], 1, s["entsize"]))
        body += s["data"]
    shnum = len(headers)
    shstrndx = shnum - 1
    headers[0] = (0, 0, 0, 0, 0, shnum if xnum else 0, shstrndx if xstrndx else 0, 0, 0, 0)
    shoff = eh_size + len(body)
    ent = struct.calcsize(sh_fmt) if shentsize is None else shentsize
    table = b"".join(struct.pack(sh_fmt, *h).ljust(ent, b"\0") for h in headers)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1 if little else 2, 1]) + bytes(9)
    hn, hi = (0 if xnum else shnum), (0xFFFF if xstrndx else shstrndx)
    if is64:
        eh = ident + struct.pack(e + "HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, ent, hn, hi)
    else:
        eh = ident + struct.pack(e + "HHIIIIIHHHHHH", 1, 3, 1, 0, 0, shoff, 0, 52, 0, 0, ent, hn, hi)
    return eh + body + table


def symtab(syms, is64=True, little=True):
    """(.symtab bytes, .strtab bytes) for [(name, info, shndx, value, size)] after the null symbol."""
    e = "<" if little else ">"
    strtab = b"\0"
    out = [struct.pack(e + ("IBBHQQ" if is64 else "IIIBBH"), *([0] * 6))]
    for name, info, shndx, value, size in syms:
        off = len(strtab)
        strtab += name.encode() + b"\0"
        if is64:
            out.append(struct.pack(e + "IBBHQQ", off, info, 0, shndx, value, size))
        else:
            out.append(struct.pack(e + "IIIBBH", off, value, size, info, 0, shndx))
    return b"".join(out), strtab


def write(tmp_path, data, name="x.o"):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


# ---- sections -------------------------------------------------------------------

@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_read_sections_in_every_layout(tmp_path, is64, little):
    data = build([sec(".text", b"\x90" * 5, flags=6), sec(".llvmbc", b"BC\xc0\xde"),
                  sec(".bss", type=elf.SHT_NOBITS, size=4096), sec(".llvmcmd", b"-O2\0-c"),
                  sec(".llvmbc", b"second")], is64, little)
    path = write(tmp_path, data)
    assert elf.is_elf(path)
    got = elf.read_sections(path, [".llvmbc", ".llvmcmd", ".bss", ".nope"])
    # the first section of a name wins; a section without bytes in the file is empty
    assert got == {".llvmbc": b"BC\xc0\xde", ".llvmcmd": b"-O2\0-c", ".bss": b"", ".nope": None}
    assert elf.text_size(path) == 5 == elf.text_size_of(data)


def test_a_compressed_section_is_refused(tmp_path):
    path = write(tmp_path, build([sec(".llvmcmd", b"zz", flags=elf.SHF_COMPRESSED)]))
    with pytest.raises(ElfError, match=r"^section \.llvmcmd is compressed \(not supported\)$"):
        elf.read_sections(path, [".llvmcmd"])
    # a compressed section nobody asked for is fine
    assert elf.read_sections(path, [".text"]) == {".text": None}


@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_extended_numbering(is64, little):
    """Section count and name-table index kept in section 0 (more than 0xff00
    sections), here for a small object: the same sections."""
    secs = [sec(".text", b"\0" * 3), sec(".text.a", b"\0" * 4), sec(".data", b"\0" * 50)]
    for xnum, xstrndx in ((True, False), (False, True), (True, True)):
        assert elf.text_size_of(build(secs, is64, little, xnum=xnum, xstrndx=xstrndx)) == 7


def test_text_sections_are_text_and_text_dot_anything():
    data = build([sec(".text", size=10, type=elf.SHT_NOBITS), sec(".text.hot.f", b"\0" * 7), sec(".text.", b"\0"),
                  sec(".textual", b"\0" * 100), sec("text", b"\0" * 100), sec(".rodata.text", b"\0" * 100)])
    assert elf.text_size_of(data) == 18


def test_an_object_without_a_section_table_has_no_sections(tmp_path):
    data = bytearray(build([sec(".text", b"\0" * 8)]))
    struct.pack_into("<Q", data, 0x28, 0)   # e_shoff = 0
    path = write(tmp_path, bytes(data))
    assert elf.text_size(path) == 0
    assert elf.read_sections(path, [".text"]) == {".text": None}
    assert elf.function_sizes(path) == {}


def test_section_names_past_the_table_or_unterminated(tmp_path):
    """A name offset past the name table: that section is skipped. A name
    without its NUL (the table's last bytes): read to the table's end."""
    secs = [sec(".text", b"\0" * 5), sec(".text.b", b"\0" * 6)]
    assert elf.text_size_of(build(secs)) == 11
    assert elf.text_size_of(build(secs, name_offsets=[10 ** 6])) == 6
    data = bytearray(build(secs))
    strtab_hdr = struct.unpack_from("<Q", data, 0x28)[0] + 3 * 64
    table = b"\0.text\0.text.b\0.shstrtab\0"
    assert struct.unpack_from("<Q", data, strtab_hdr + 32)[0] == len(table)
    struct.pack_into("<Q", data, strtab_hdr + 32, len(table) - 1)   # ".shstrtab" loses its NUL
    got = elf.read_sections(write(tmp_path, bytes(data)), [".shstrtab", ".text.b"])
    assert got == {".shstrtab": table[:-1], ".text.b": b"\0" * 6}


# ---- malformed headers: ElfError naming what ------------------------------------------

def _patch(data, fmt, at, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


@pytest.mark.parametrize("change,message", [
    (lambda d: d[:3] + b"X" + d[4:], r"^object: not an ELF file$"),
    (lambda d: d[:10], r"^object: not an ELF file$"),
    (lambda d: d[:4] + b"\x03" + d[5:], r"^object: unknown ELF class 3 / data encoding 1$"),
    (lambda d: d[:5] + b"\x00" + d[6:], r"^object: unknown ELF class 2 / data encoding 0$"),
    (lambda d: d[:40], r"^object: ELF header at offset 0 size 64 is outside the file \(40 bytes\)$"),
    (lambda d: _patch(d, "<H", 0x3A, 63), r"^object: section header entry size 63 < 64$"),
    (lambda d: _patch(d, "<H", 0x3E, 3), r"^object: section name table index 3 >= 3 sections$"),
    (lambda d: _patch(d, "<H", 0x3C, 5000), r"^object: 5000 section headers do not fit in the file$"),
    (lambda d: _patch(d, "<Q", 0x28, len(d) - 10),
     r"^object: section header table at offset \d+ size 192 is outside the file \(\d+ bytes\)$"),
])
def test_malformed_headers(change, message):
    data = build([sec(".text", b"\0" * 9)])
    assert elf.text_size_of(data) == 9
    with pytest.raises(ElfError, match=message):
        elf.text_size_of(change(data))


def test_malformed_32_bit_headers():
    data = build([sec(".text", b"\0" * 9)], is64=False)
    assert elf.text_size_of(data) == 9
    with pytest.raises(ElfError, match=r"^object: ELF header at offset 0 size 52 is outside the file \(40 bytes\)$"):
        elf.text_size_of(data[:40])
    with pytest.raises(ElfError, match=r"^object: section header entry size 39 < 40$"):
        elf.text_size_of(_patch(data, "<H", 0x2E, 39))


def test_extended_numbering_with_section_0_outside_the_file():
    data = build([sec(".text", b"\0")], xnum=True)
    with pytest.raises(ElfError, match=rf"^object: section header 0 at offset {len(data) + 8} size 64 is outside "
                                       rf"the file \({len(data)} bytes\)$"):
        elf.text_size_of(_patch(data, "<Q", 0x28, len(data) + 8))


@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_header_fields_with_the_top_bit_set_are_unsigned(tmp_path, is64, little):
    """Offsets, sizes and counts are unsigned: a section-table offset or a
    section offset with its top bit set is far past the end (the message says
    where), 0x8000 sections are 0x8000 sections."""
    e = "<" if little else ">"
    data = build([sec(".llvmbc", b"BC")], is64, little)
    shoff_at, count_at = (0x28, 0x3C) if is64 else (0x20, 0x30)
    far = (1 << 63) + 8 if is64 else (1 << 31) + 8
    with pytest.raises(ElfError, match=rf"^object: section header table at offset {far} size \d+ is outside"):
        elf.text_size_of(_patch(data, e + ("Q" if is64 else "I"), shoff_at, far))
    with pytest.raises(ElfError, match=r"^object: 32768 section headers do not fit in the file$"):
        elf.text_size_of(_patch(data, e + "H", count_at, 0x8000))
    shoff = struct.unpack_from(e + ("Q" if is64 else "I"), data, shoff_at)[0]
    off_at = shoff + (64 + 24 if is64 else 40 + 16)   # section 1's sh_offset
    bad = _patch(data, e + ("Q" if is64 else "I"), off_at, far)
    with pytest.raises(ElfError, match=rf"^section \.llvmbc at offset {far} size 2 is outside the file"):
        elf.read_sections(write(tmp_path, bad), [".llvmbc"])


def test_too_many_sections():
    data = build([sec(".text", b"\0")], xnum=True)
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    big = _patch(data, "<Q", shoff + 32, elf.MAX_SECTIONS + 1)   # section 0's size: the count
    with pytest.raises(ElfError, match=rf"^object: {elf.MAX_SECTIONS + 1} sections \(limit {elf.MAX_SECTIONS}\)$"):
        elf.text_size_of(big)
    at_limit = _patch(data, "<Q", shoff + 32, elf.MAX_SECTIONS)
    with pytest.raises(ElfError, match=rf"^object: {elf.MAX_SECTIONS} section headers do not fit"):
        elf.text_size_of(at_limit)


def test_a_name_table_too_big_or_outside_the_file():
    data = build([sec(".text", b"\0" * 4)])
    strtab_size_at = struct.unpack_from("<Q", data, 0x28)[0] + 2 * 64 + 32
    with pytest.raises(ElfError, match=rf"^object: section name table of {elf.MAX_SHSTRTAB + 1} bytes "
                                       rf"\(limit {elf.MAX_SHSTRTAB}\)$"):
        elf.text_size_of(_patch(data, "<Q", strtab_size_at, elf.MAX_SHSTRTAB + 1))
    with pytest.raises(ElfError, match=r"^object: section name table at offset \d+ size \d+ is outside the file"):
        elf.text_size_of(_patch(data, "<Q", strtab_size_at, elf.MAX_SHSTRTAB))


def test_a_section_outside_the_file(tmp_path):
    data = build([sec(".llvmbc", b"BC")])
    off_at = struct.unpack_from("<Q", data, 0x28)[0] + 64 + 24
    for off, size in ((len(data) + 1, 0), (len(data) - 1, 2), (len(data), 0)):
        b = _patch(_patch(data, "<Q", off_at, off), "<Q", off_at + 8, size)
        path = write(tmp_path, b)
        if off + size <= len(data):
            assert elf.read_sections(path, [".llvmbc"]) == {".llvmbc": b[off:off + size]}
        else:
            with pytest.raises(ElfError, match=rf"^section \.llvmbc at offset {off} size {size} is outside the "
                                               rf"file \({len(data)} bytes\)$"):
                elf.read_sections(path, [".llvmbc"])


def test_errors_from_a_path_name_the_file(tmp_path):
    path = write(tmp_path, b"\x7fELF" + bytes([9, 1]) + bytes(60))
    with pytest.raises(ElfError, match=r"x\.o: unknown ELF class 9"):
        elf.text_size(path)
    with pytest.raises(ElfError, match=r"x\.o: unknown ELF class 9"):
        elf.function_sizes(path)
    with pytest.raises(ElfError, match=r"x\.o: unknown ELF class 9"):
        elf.defined_dynamic_symbols(path)
    assert elf.is_elf(path) and not elf.is_elf(write(tmp_path, b"\x7fEL", "short.o"))


# ---- symbols ----------------------------------------------------------------------

STT_OBJECT, STB_GLOBAL, STB_LOCAL = 1, 1, 0


def func(bind=STB_GLOBAL):
    return (bind << 4) | elf.STT_FUNC


def _with_symbols(syms, is64=True, little=True, table_type=elf.SHT_SYMTAB):
    """Sections: 1 .text, 2 .text.g, 3 .data, 4 the symbol table, 5 its names."""
    tab, names = symtab(syms, is64, little)
    index_of_strtab = 5
    return build([sec(".text", b"\0" * 64), sec(".text.g", b"\0" * 32), sec(".data", b"\0" * 16),
                  sec(".symtab" if table_type == elf.SHT_SYMTAB else ".dynsym", tab, type=table_type,
                      link=index_of_strtab),
                  sec(".strtab" if table_type == elf.SHT_SYMTAB else ".dynstr", names, type=3)], is64, little)


@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_function_sizes(tmp_path, is64, little):
    syms = [
        ("f", func(), 1, 0, 10),
        ("f_alias", func(), 1, 0, 10),             # same address: counted once, under the first name
        ("g", func(), 2, 0, 20),
        ("local", func(STB_LOCAL), 1, 16, 3),      # same-named locals add up
        ("local", func(STB_LOCAL), 2, 24, 4),
        ("h", func(), 1, 32, 0xFFFF_FFFF if not is64 else 1 << 40),   # the size as the table says
        ("table", (STB_GLOBAL << 4) | STT_OBJECT, 3, 0, 8),          # not a function
        ("in_data", func(), 3, 8, 5),             # a function outside .text
        ("undefined", func(), 0, 0, 0),           # not defined here
    ]
    path = write(tmp_path, _with_symbols(syms, is64, little))
    assert elf.function_sizes(path) == {"f": 10, "g": 20, "local": 7, "h": 0xFFFF_FFFF if not is64 else 1 << 40}


@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_defined_dynamic_symbols(tmp_path, is64, little):
    syms = [("exported", func(), 1, 0, 4), ("data_export", (STB_GLOBAL << 4) | STT_OBJECT, 3, 0, 8),
            ("imported", func(), 0, 0, 0), ("", func(), 1, 8, 1)]
    path = write(tmp_path, _with_symbols(syms, is64, little, elf.SHT_DYNSYM))
    assert elf.defined_dynamic_symbols(path) == {"exported", "data_export"}
    assert elf.function_sizes(path) == {}   # no .symtab: no function sizes from .dynsym
    # and .symtab's symbols are not exports
    assert elf.defined_dynamic_symbols(write(tmp_path, _with_symbols(syms), "s.o")) == set()


@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_a_symbol_at_name_offset_0_has_no_name(tmp_path, is64, little):
    """Name offset 0 is the name table's leading NUL: the empty name (a
    section symbol, say), not an export, and a function counted under ""."""
    e = "<" if little else ">"
    tab, names = symtab([("exported", func(), 1, 0, 4), ("unnamed", func(), 1, 8, 6)], is64, little)
    tab = bytearray(tab)
    struct.pack_into(e + "I", tab, 2 * (24 if is64 else 16), 0)   # "unnamed": name offset 0
    for table_type, name in ((elf.SHT_DYNSYM, "d.o"), (elf.SHT_SYMTAB, "s.o")):
        data = build([sec(".text", b"\0" * 64), sec(".text.g"), sec(".data"),
                      sec(".tab", bytes(tab), type=table_type, link=5), sec(".names", names, type=3)], is64, little)
        path = write(tmp_path, data, name)
        if table_type == elf.SHT_DYNSYM:
            assert elf.defined_dynamic_symbols(path) == {"exported"}
        else:
            assert elf.function_sizes(path) == {"exported": 4, "": 6}


def test_symbol_names_past_the_table_or_unterminated(tmp_path):
    tab, names = symtab([("f", func(), 1, 0, 10), ("g", func(), 1, 8, 2)])
    tab = bytearray(tab)
    struct.pack_into("<I", tab, 24, 10 ** 6)   # "f": its name is past the name table: skipped
    data = build([sec(".text", b"\0" * 64), sec(".text.g"), sec(".data"),
                  sec(".symtab", bytes(tab), type=elf.SHT_SYMTAB, link=5), sec(".strtab", names[:-1], type=3)])
    assert elf.function_sizes(write(tmp_path, data)) == {"g": 2}   # unterminated "g" read to the end


@pytest.mark.parametrize("is64,little", LAYOUTS, ids=IDS)
def test_symbol_name_offsets_at_the_edge_and_names_not_utf8(tmp_path, is64, little):
    """A name offset equal to the name table's length, or with its top bit
    set (0xffffffff), is past the table: that symbol is skipped. A name that
    is not UTF-8 is read with replacement characters."""
    e = "<" if little else ">"
    syms = [("at_end", func(), 1, 0, 1), ("top_bit", func(), 1, 8, 2), ("x", func(), 1, 16, 3),
            ("ok", func(), 1, 24, 4)]
    tab, names = symtab(syms, is64, little)
    names = names.replace(b"\0x\0", b"\0\xff\0")   # the third name: one byte that is not UTF-8
    tab = bytearray(tab)
    entry = 24 if is64 else 16
    struct.pack_into(e + "I", tab, 1 * entry, len(names))
    struct.pack_into(e + "I", tab, 2 * entry, 0xFFFF_FFFF)
    data = build([sec(".text", b"\0" * 64), sec(".text.g"), sec(".data"),
                  sec(".symtab", bytes(tab), type=elf.SHT_SYMTAB, link=5), sec(".strtab", names, type=3)],
                 is64, little)
    assert elf.function_sizes(write(tmp_path, data)) == {"\ufffd": 3, "ok": 4}


def test_a_symbol_table_cut_mid_entry_reads_whole_entries(tmp_path):
    tab, names = symtab([("f", func(), 1, 0, 10), ("g", func(), 1, 8, 2)])
    data = build([sec(".text", b"\0" * 64), sec(".text.g"), sec(".data"),
                  sec(".symtab", tab[:-1], type=elf.SHT_SYMTAB, link=5), sec(".strtab", names, type=3)])
    assert elf.function_sizes(write(tmp_path, data)) == {"f": 10}


def test_symbol_table_limits(tmp_path):
    data = _with_symbols([("f", func(), 1, 0, 10)])
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    symtab_size_at, strtab_size_at = shoff + 4 * 64 + 32, shoff + 5 * 64 + 32
    assert elf.function_sizes(write(tmp_path, data)) == {"f": 10}
    big = _patch(data, "<Q", symtab_size_at, elf.MAX_SYMTAB + 1)
    with pytest.raises(ElfError, match=rf"symbol table of {elf.MAX_SYMTAB + 1} bytes linked to section 5 "
                                       rf"\(limit {elf.MAX_SYMTAB}\)$"):
        elf.function_sizes(write(tmp_path, big, "a.o"))
    big = _patch(data, "<Q", strtab_size_at, elf.MAX_SYMTAB + 1)
    with pytest.raises(ElfError, match=rf"symbol name table of {elf.MAX_SYMTAB + 1} bytes "
                                       rf"\(limit {elf.MAX_SYMTAB}\)$"):
        elf.function_sizes(write(tmp_path, big, "b.o"))
    for at, what in ((symtab_size_at, "symbol table"), (strtab_size_at, "symbol name table")):
        outside = _patch(data, "<Q", at, elf.MAX_SYMTAB)
        with pytest.raises(ElfError, match=rf"x\.o: {what} at offset \d+ size {elf.MAX_SYMTAB} is outside the file"):
            elf.function_sizes(write(tmp_path, outside))
    linked = _patch(data, "<I", shoff + 4 * 64 + 40, 7)   # sh_link = 7, one past the last (.shstrtab)
    with pytest.raises(ElfError, match=r"linked to section 7"):
        elf.function_sizes(write(tmp_path, linked, "c.o"))
