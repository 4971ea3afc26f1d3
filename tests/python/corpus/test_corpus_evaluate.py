"""mlbridge corpus evaluate without the LLVM plugin: the -Oz policy on a corpus
made from tests/corpus, the ELF reader, the baseline cache, failures reported
with their command, outputs and exit codes. (Policies through the plugin:
tests/integrations/llvm/test_corpus_evaluate.py.)"""
from __future__ import annotations

import csv
import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import HELPERS, child_env

sys.path.insert(0, HELPERS)
import mini_corpus  # noqa: E402

from mlbridge.corpus import layout  # noqa: E402
from mlbridge.corpus.compile import CompileOptions, Policy, Toolchain, cc1_args, compile_module  # noqa: E402
from mlbridge.corpus.elf import ElfError, function_sizes, text_size, text_size_of  # noqa: E402
from mlbridge.corpus.evaluate import BaselineCache, evaluate  # noqa: E402

needs_llvm = pytest.mark.skipif(not mini_corpus.have_tools(), reason="clang-19 / llvm-objcopy-19 not installed")


def cli(*args: str, cwd=None, env=None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mlbridge.cli.corpus_evaluate", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env or child_env(), stdin=subprocess.DEVNULL)


def one_line_error(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("mlbridge: error: ")
    return line


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> str:
    if not mini_corpus.have_tools():
        pytest.skip("clang-19 / llvm-objcopy-19 not installed")
    return mini_corpus.make_corpus(str(tmp_path_factory.mktemp("c") / "corpus"))


# -- ELF ----------------------------------------------------------------------------

def _elf64(sections):
    """A minimal ELF64 LE object: [(name, size)] plus the name table."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in sections) + b".shstrtab\0"
    hdrs, off = [struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)], 1
    for n, size in sections:
        hdrs.append(struct.pack("<IIQQQQIIQQ", off, 1, 6, 0, 0, size, 0, 0, 1, 0))
        off += len(n) + 1
    str_off = 64
    shoff = str_off + len(names)
    hdrs.append(struct.pack("<IIQQQQIIQQ", off, 3, 0, 0, str_off, len(names), 0, 0, 1, 0))
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    eh = ident + struct.pack("<HHIQQQIHHHHHH", 1, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(hdrs), len(hdrs) - 1)
    return eh + names + b"".join(hdrs)


def test_elf_sums_text_sections_only():
    data = _elf64([(".text", 10), (".text.f", 7), (".data", 100), (".textual", 1000), (".rodata", 5)])
    assert text_size_of(data) == 17


@pytest.mark.parametrize("mutate", [
    lambda d: b"not an elf at all",
    lambda d: d[:40],                                             # header cut short
    lambda d: d[:-10],                                            # section headers cut short
    lambda d: d[:0x3E] + struct.pack("<H", 99) + d[0x40:],        # name-table index out of range
    lambda d: d[:0x28] + struct.pack("<Q", 1 << 40) + d[0x30:],   # section headers far past the end
])
def test_elf_malformed_is_an_error(mutate):
    with pytest.raises(ElfError):
        text_size_of(mutate(_elf64([(".text", 10)])))


@needs_llvm
def test_elf_agrees_with_readelf(tmp_path):
    obj = str(tmp_path / "x.o")
    subprocess.run([mini_corpus.llvm_tool("clang"), "-Oz", "-ffunction-sections", "-c", mini_corpus.C_FILES[0],
                    "-o", obj], check=True, timeout=120)
    out = subprocess.run([mini_corpus.llvm_tool("llvm-readelf") or "llvm-readelf-19", "-S", "--wide", obj],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    expect = 0
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 5 and (parts[1] == ".text" or parts[1].startswith(".text.")):
            expect += int(parts[5], 16)
    assert expect > 0 and text_size(obj) == expect


@needs_llvm
def test_function_sizes_agree_with_llvm_nm(tmp_path):
    obj = str(tmp_path / "x.o")
    subprocess.run([mini_corpus.llvm_tool("clang"), "-Oz", "-c", mini_corpus.C_FILES[0], "-o", obj],
                   check=True, timeout=120)
    out = subprocess.run([mini_corpus.llvm_tool("llvm-nm") or "llvm-nm-19", "-S", "--defined-only", obj],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    expect = {parts[3]: int(parts[1], 16) for parts in (ln.split() for ln in out.splitlines())
              if len(parts) == 4 and parts[2] in "tT"}
    assert expect and function_sizes(obj) == expect
    assert sum(expect.values()) <= text_size(obj)


def test_function_sizes_malformed_symbol_table_is_an_error(tmp_path):
    # A symbol table linked to a section index that does not exist.
    data = bytearray(_elf64([(".text", 10), (".symtab", 48)]))
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    symtab = shoff + 2 * 64          # section 0 is null, then .text, then .symtab
    struct.pack_into("<I", data, symtab + 4, 2)          # sh_type = SHT_SYMTAB
    struct.pack_into("<I", data, symtab + 40, 99)        # sh_link = 99
    (tmp_path / "bad.o").write_bytes(bytes(data))
    with pytest.raises(ElfError, match="linked to section 99"):
        function_sizes(str(tmp_path / "bad.o"))


def test_where_summarizes_function_changes():
    from mlbridge.corpus.where import FunctionChange, summarize
    changes = [FunctionChange("a.o", "f", 100, 0), FunctionChange("a.o", "g", 0, 40),
               FunctionChange("b.o", "h", 50, 70), FunctionChange("b.o", "k", 30, 10)]
    w = summarize(changes, top=1)
    assert w["kinds"] == {"removed": {"functions": 1, "bytes": -100}, "added": {"functions": 1, "bytes": 40},
                          "shrunk": {"functions": 1, "bytes": -20}, "grown": {"functions": 1, "bytes": 20}}
    assert w["delta"] == -60 and w["changed_functions"] == 4
    assert [r["function"] for r in w["saved_most"]] == ["f"] and [r["function"] for r in w["grew_most"]] == ["g"]


# -- the recorded command ------------------------------------------------------------

def test_cc1_args_drop_what_a_recompile_must_not_replay():
    rec = ["-cc1", "-triple", "x86_64-pc-linux-gnu", "-emit-obj", "-main-file-name", "a.c", "-Oz",
           "-fembed-bitcode=all", "-dependency-file", "a.d", "-MT", "a.o", "-split-dwarf-file", "a.dwo",
           "-o", "a.o", "-x", "c", "-fthinlto-index=a.thinlto.bc", "-D", "X=1"]
    assert cc1_args(rec) == ["-cc1", "-triple", "x86_64-pc-linux-gnu", "-main-file-name", "a.c", "-Oz",
                             "-D", "X=1", "-emit-obj"]
    with pytest.raises(layout.CorpusError, match="-cc1"):
        cc1_args(["clang", "-c"])


def test_cc1_args_drop_llvm_options_that_write_files():
    """-mllvm NAME=PATH for an LLVM option that writes a file goes with its -mllvm; so
    does NAME, PATH as two pairs. Other -mllvm pairs stay, in order, whatever their value."""
    rec = ["-cc1", "-Oz", "-mllvm", "-info-output-file=/abs/info.txt", "-mllvm", "-inline-threshold=5",
           "-mllvm", "--ir-dump-directory", "-mllvm", "/abs/ir", "-mllvm", "-S", "-ftime-report",
           "-mllvm", "-dot-cfg-dir=/abs/dot", "-mllvm"]
    assert cc1_args(rec) == ["-cc1", "-Oz", "-mllvm", "-inline-threshold=5", "-mllvm", "-S", "-ftime-report",
                             "-mllvm", "-emit-obj"]


def test_a_command_that_is_not_cc1_names_its_file(tmp_path):
    """compile_module reports which file holds the bad command: the .cmd, or the
    description whose global_command_override replaces it (issue 25)."""
    from mlbridge.corpus.compile import Toolchain
    from mlbridge.corpus.layout import DESCRIPTION, Module, write_cmd
    (tmp_path / "m.bc").write_bytes(b"BC")
    write_cmd(str(tmp_path / "m.cmd"), ["clang", "-c"])
    tc = Toolchain("/nonexistent/clang-19", None, "clang 19")
    for module, path in ((Module(str(tmp_path), "m"), tmp_path / "m.cmd"),
                         (Module(str(tmp_path), "m", ["-O2"]), tmp_path / DESCRIPTION)):
        r = compile_module(module, Policy.parse("oz"), str(tmp_path), tc)
        assert not r.ok and f"{path}: the command does not start with -cc1" in r.error, r.error


def test_policy_parse_errors(tmp_path):
    from mlbridge.corpus.compile import CompileSetupError
    for bad in ("", "O2", str(tmp_path / "missing.onnx"), "python:nosuchmodule_xyz:f", "python:os"):
        with pytest.raises(CompileSetupError):
            Policy.parse(bad)
    assert Policy.parse("python:os.path:basename").fn is os.path.basename


# -- -Oz on a real (small) corpus -----------------------------------------------------

@needs_llvm
def test_oz_recompile_matches_the_original_build(corpus, tmp_path):
    """-Oz from the corpus equals the .text of the objects the build produced
    (without the embedded sections, which are not code)."""
    ev = evaluate(layout.load(corpus), Policy.parse("oz"), Toolchain.find(), jobs=2)
    assert not ev.failed and len(ev.scores) == len(mini_corpus.C_FILES)
    for s in ev.scores:
        assert s.baseline is s.policy and s.delta == 0
        assert s.baseline.text_bytes == text_size(os.path.join(corpus + "-objs", s.module))


@needs_llvm
def test_baseline_cache(corpus, tmp_path):
    cache = BaselineCache(str(tmp_path / "cache"))
    tc = Toolchain.find()
    first = evaluate(layout.load(corpus), Policy.parse("oz"), tc, jobs=2, cache=cache)
    again = evaluate(layout.load(corpus), Policy.parse("oz"), tc, jobs=2, cache=cache)
    assert not any(s.baseline_cached for s in first.scores)
    assert all(s.baseline_cached for s in again.scores)
    assert [s.baseline.text_bytes for s in first.scores] == [s.baseline.text_bytes for s in again.scores]
    # A damaged entry is a miss, compiled and rewritten.
    m = layout.load(corpus).modules[0]
    key = BaselineCache.key(m, tc, False)
    with open(os.path.join(cache.root, key[:2], key), "w") as f:
        f.write("garbage")
    assert cache.get(key) is None
    third = evaluate(layout.load(corpus), Policy.parse("oz"), tc, jobs=2, cache=cache)
    assert [s.baseline_cached for s in third.scores].count(False) == 1
    assert cache.get(key) == first.scores[0].baseline.text_bytes


@needs_llvm
def test_cli_outputs(corpus, tmp_path):
    csv_path, png = tmp_path / "r.csv", tmp_path / "r.png"
    cache = str(tmp_path / "cache")
    p = cli(corpus, "--policy", "oz", "--json", "--csv", str(csv_path), "--plot", str(png), "--cache-dir", cache, "-q")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["total"]["modules"] == data["total"]["ok"] == len(mini_corpus.C_FILES)
    assert data["total"]["delta"] == 0 and data["total"]["oz_text"] > 0
    # compiled largest first, reported in corpus order
    assert [m["module"] for m in data["modules"]] == [m.name for m in layout.load(corpus).modules]
    rows = list(csv.DictReader(open(csv_path)))
    assert [r["module"] for r in rows] == [m["module"] for m in data["modules"]]
    assert sum(int(r["oz_text"]) for r in rows) == data["total"]["oz_text"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = cli(corpus, "--policy", "oz", "--cache-dir", cache, "-q")   # all from the cache
    assert table.returncode == 0 and f"{data['total']['oz_text']:,}" in table.stdout.splitlines()[-1]


@needs_llvm
def test_garbage_module_is_reported_with_its_command(corpus, tmp_path):
    bad = tmp_path / "bad"
    c = layout.load(corpus)
    mods = [m.name for m in c.modules]
    os.makedirs(bad)
    for m in mods:
        for ext in (".bc", ".cmd"):
            with open(os.path.join(corpus, m + ext), "rb") as src, open(bad / (m + ext), "wb") as dst:
                dst.write(src.read())
    (bad / (mods[0] + ".bc")).write_bytes(b"BC\xc0\xde garbage")
    (bad / (mods[1] + ".cmd")).write_bytes(b"clang\0-c\0")
    layout.write_description(str(bad), mods)
    p = cli(str(bad), "--policy", "oz", "--json", "--no-cache", "-q")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    data = json.loads(p.stdout)
    assert data["total"]["failed"] == 2 and data["total"]["ok"] == len(mods) - 2
    assert f"module {mods[0]} failed (oz): clang failed with exit status 1" in p.stderr
    assert "command: " in p.stderr and f"-x ir {os.path.join(str(bad), mods[0])}.bc" in p.stderr
    assert f"module {mods[1]} failed (oz): cannot read the module's command" in p.stderr and "-cc1" in p.stderr
    assert "2 of 6 modules failed" in p.stderr


@needs_llvm
def test_timeout_is_reported(corpus, tmp_path):
    """A compiler that never finishes: killed after --timeout, reported with the command."""
    fake = tmp_path / "hang-clang"
    fake.write_text('#!/bin/sh\nif [ "$1" = --version ]; then echo "fake clang 0"; exit 0; fi\nexec sleep 600\n')
    fake.chmod(0o755)
    p = cli(corpus, "--policy", "oz", "--clang", str(fake), "--timeout", "0.5", "--no-cache", "-q", "--json")
    assert p.returncode == 1
    data = json.loads(p.stdout)
    assert data["total"]["failed"] == len(mini_corpus.C_FILES)
    errs = data["modules"][0]["errors"]
    assert errs[0]["timed_out"] and errs[0]["command"].startswith(str(fake))
    assert "clang did not finish within 0.5 s and was killed" in p.stderr


def test_user_errors_are_one_line(tmp_path, capsys, monkeypatch):
    """In-process (the same main() as the command): exit 2, one line, no traceback."""
    from mlbridge.cli.corpus_evaluate import main

    def err(*args: str) -> str:
        rc = main(list(args))
        out = capsys.readouterr()
        assert rc == 2, out.err
        assert "Traceback" not in out.err
        (line,) = out.err.strip().splitlines()
        assert line.startswith("mlbridge: error: ")
        return line

    assert "not a corpus" in err(str(tmp_path), "--policy", "oz")
    assert "not a folder" in err(str(tmp_path / "nope"), "--policy", "oz")
    layout.write_description(str(tmp_path), [])
    assert "no modules" in err(str(tmp_path), "--policy", "oz")
    layout.write_description(str(tmp_path), ["a.o"])
    (tmp_path / "a.o.bc").write_bytes(b"x")
    (tmp_path / "a.o.cmd").write_bytes(b"-cc1\0")
    assert "expected oz, MODEL.onnx" in err(str(tmp_path), "--policy", "O3")
    assert "no such model file" in err(str(tmp_path), "--policy", str(tmp_path / "m.onnx"))
    assert "cannot import" in err(str(tmp_path), "--policy", "python:no_such_mod_q:f")
    (tmp_path / "m.onnx").write_bytes(b"x")
    monkeypatch.delenv("MLBRIDGE_LLVM_PLUGIN", raising=False)
    line = err(str(tmp_path), "--policy", str(tmp_path / "m.onnx"), "--plugin", "/nope/lib.so")
    assert "--plugin: plugin /nope/lib.so does not exist" in line
    monkeypatch.setenv("MLBRIDGE_LLVM_PLUGIN", "/nope/env.so")
    assert "MLBRIDGE_LLVM_PLUGIN: plugin /nope/env.so" in err(str(tmp_path), "--policy", str(tmp_path / "m.onnx"))
    assert "-j must be" in err(str(tmp_path), "--policy", "oz", "-j", "0")
    assert "must end with .png" in err(str(tmp_path), "--policy", "oz", "--plot", "x.jpg")
    assert "does not exist" in err(str(tmp_path), "--policy", "oz", "--csv", "/nope/dir/x.csv")
    assert "required" in err(str(tmp_path))
    assert "clang" in err(str(tmp_path), "--policy", "oz", "--clang", "/nope/clang")


def test_standalone_command_usage_error_exit_code(tmp_path):
    """python -m mlbridge.cli.corpus_evaluate: the same errors and exit codes in a process."""
    p = cli(str(tmp_path), "--policy", "oz")
    assert "not a corpus" in one_line_error(p)


def test_extra_args_hook_applies_to_the_policy_only(corpus, tmp_path):
    """The hook --log will use: per-module extra clang arguments on the policy's compile."""
    if not mini_corpus.have_tools():
        pytest.skip("clang-19 not installed")
    c = layout.load(corpus)
    seen = []

    def extra(m):
        seen.append(m.name)
        return ["-D", "UNUSED_BY_IR=1"]

    opts = CompileOptions(extra_args=extra)
    r = compile_module(c.modules[0], Policy.parse("oz"), str(tmp_path), Toolchain.find(), opts)
    assert r.ok and "-D UNUSED_BY_IR=1" in r.command and seen == [c.modules[0].name]
    assert not os.listdir(tmp_path)   # the object is removed after measuring


@needs_llvm
def test_recorded_flags_that_write_files_write_nothing(corpus, tmp_path):
    """A .cmd asking clang for an optimization record, statistics and a time
    trace at absolute paths: the score compiles, and nothing appears there."""
    import shutil
    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    c = layout.load(str(copy))
    m = c.modules[0]
    outside = tmp_path / "outside"
    # -ftime-report makes LLVM write its timers to -info-output-file (clang-19 does, checked by hand)
    args = layout.read_cmd(m.cmd_path) + ["-opt-record-file", str(outside / "r.yaml"),
                                          f"-stats-file={outside / 's.json'}", f"-ftime-trace={outside / 't.json'}",
                                          "-ftime-report", "-mllvm", f"-info-output-file={outside / 'info.txt'}"]
    layout.write_cmd(m.cmd_path, args)
    outside.mkdir()
    p = cli(str(copy), "--policy", "oz", "--no-cache", "--json", "-q")
    assert p.returncode == 0, p.stderr
    assert list(outside.iterdir()) == []
