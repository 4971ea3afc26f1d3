"""`mlbridge corpus extract|combine` against LLVM's own tools (mlgo-utils:
extract_ir, make_corpus, combine_training_corpus) on the same inputs: objects from
tests/corpus built with clang-19 (a compile_commands.json, a folder of objects,
local and distributed ThinLTO, raw bitcode). The outputs must be the same files,
byte for byte, with the same corpus_description.json."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from typing import Dict, List

import pytest

from conftest import ROOT, child_env
from mlbridge.corpus import elf, layout
from mlbridge.corpus.combine import combine
from mlbridge.corpus.extract import STAMP

CLANG = shutil.which("clang-19")
CLANGXX = shutil.which("clang++-19")
OBJCOPY = shutil.which("llvm-objcopy-19")
LLD = shutil.which("ld.lld-19")
# LLVM's mlgo-utils: required (python/requirements-dev.txt), missing fails, never skips.
import mlgo.corpus  # noqa: F401,E402
HAVE_MLGO = True

needs_clang = pytest.mark.skipif(not (CLANG and CLANGXX), reason="clang-19 not installed")
needs_peer = pytest.mark.skipif(not (HAVE_MLGO and OBJCOPY), reason="mlgo-utils or llvm-objcopy-19 missing")
SOURCES = sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "*.c"))) + \
    sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "*.cpp")))
EMBED = ["-Oz", "-Xclang", "-fembed-bitcode=all"]
#: the ThinLTO and bitcode tests compile again: a C file, a C file with headers, the C++ file
FEW = [s for s in SOURCES if os.path.basename(s) in ("bits.c", "sort.c", "shapes.cpp")]


def mlbridge(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "mlbridge", *args], capture_output=True, text=True,
                       env=child_env(), timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"mlbridge {' '.join(args)} -> {p.returncode}\n{p.stderr}")
    return p


def peer(tool: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", f"mlgo.corpus.{tool}", *args], check=True,
                   capture_output=True, timeout=300)


def compiler(src: str) -> str:
    return CLANGXX if src.endswith(".cpp") else CLANG  # type: ignore[return-value]


def tree(root: str) -> Dict[str, bytes]:
    """Every file under ROOT (but our stamp), relative path -> bytes."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            if rel != STAMP:
                with open(p, "rb") as f:
                    out[rel] = f.read()
    return out


def sorted_description(root: str) -> dict:
    with open(os.path.join(root, layout.DESCRIPTION)) as f:
        d = json.load(f)
    d["modules"] = sorted(d["modules"])
    return d


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> str:
    """A CMake-like build: objects under CMakeFiles/corpus.dir/, a compile_commands.json
    with shell-style commands, one entry without -o (a non-compile step)."""
    if not (CLANG and CLANGXX):
        pytest.skip("clang-19 not installed")
    b = str(tmp_path_factory.mktemp("build"))
    entries = []
    for src in SOURCES:
        obj = f"CMakeFiles/corpus.dir/{os.path.basename(src)}.o"
        os.makedirs(os.path.join(b, os.path.dirname(obj)), exist_ok=True)
        cmd = [compiler(src), *EMBED, "-c", src, "-o", obj]
        subprocess.run(cmd, cwd=b, check=True, timeout=120)
        entries.append({"directory": b, "command": " ".join(cmd), "file": src})
    entries.append({"directory": b, "command": "echo generated.h", "file": "generated.h"})
    with open(os.path.join(b, "compile_commands.json"), "w") as f:
        json.dump(entries, f)
    return b


@needs_peer
def test_compile_commands_same_as_extract_ir(build, tmp_path):
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    db = os.path.join(build, "compile_commands.json")
    peer("extract_ir", "--input", db, "--input_type", "json", "--output_dir", theirs,
         "--llvm_objcopy_path", OBJCOPY)
    p = mlbridge("corpus", "extract", db, "-o", ours, "--json")
    summary = json.loads(p.stdout)
    assert summary["extracted"] == len(SOURCES) and summary["failed"] == 0
    assert summary["skipped"] == 1                     # the entry without -o, reported
    t, o = tree(theirs), tree(ours)
    assert sorted(t) == sorted(o)
    assert t == o                                      # bytes, description json included
    assert "CMakeFiles/corpus.dir/shapes.cpp.o.bc" in o
    # the layout reader reads the peer's corpus: -cc1 commands, bitcode
    c = layout.load(theirs)
    assert len(c) == len(SOURCES)
    for m in c.modules:
        assert m.command()[0] == "-cc1" and "-o" not in m.command()
        with open(m.bc, "rb") as f:
            assert f.read(4) == b"BC\xc0\xde"


@needs_peer
def test_directory_same_as_extract_ir(build, tmp_path):
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    peer("extract_ir", "--input", build, "--input_type", "directory", "--output_dir", theirs,
         "--llvm_objcopy_path", OBJCOPY, "--num_workers", "2")
    mlbridge("corpus", "extract", build, "-o", ours, "-q")
    t, o = tree(theirs), tree(ours)
    t.pop(layout.DESCRIPTION), o.pop(layout.DESCRIPTION)
    assert t == o
    # extract_ir lists a folder in glob order; ours sorts: same set, same keys
    assert sorted_description(theirs) == sorted_description(ours)
    assert json.load(open(os.path.join(ours, layout.DESCRIPTION)))["modules"] == \
        sorted_description(ours)["modules"]


@needs_peer
def test_lld_params_same_as_extract_ir(build, tmp_path):
    objs = [f"CMakeFiles/corpus.dir/{os.path.basename(s)}.o" for s in SOURCES]
    params = tmp_path / "link.params"
    params.write_text("\n".join(["-shared", "-o", "libcorpus.so", *objs, "-lm"]) + "\n")
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    peer("extract_ir", "--input", str(params), "--input_type", "params", "--obj_base_dir", build,
         "--output_dir", theirs, "--llvm_objcopy_path", OBJCOPY)
    mlbridge("corpus", "extract", str(params), "--obj-base-dir", build, "-o", ours, "-q")
    assert tree(theirs) == tree(ours) and len(layout.load(ours)) == len(SOURCES)


@needs_peer
def test_macho_through_objcopy_same_as_extract_ir(tmp_path):
    """Non-ELF objects go through --objcopy, with Mach-O's section names."""
    if not CLANGXX:
        pytest.skip("clang-19 not installed")
    d = tmp_path / "objs"
    d.mkdir()
    subprocess.run([CLANGXX, "--target=x86_64-apple-macos11", *EMBED, "-c", SOURCES[-1], "-o",
                    str(d / "shapes.o")], check=True, timeout=120)
    secs = ["__LLVM,__bitcode", "__LLVM,__cmdline"]
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    peer("extract_ir", "--input", str(d), "--input_type", "directory", "--output_dir", theirs,
         "--llvm_objcopy_path", OBJCOPY, "--bitcode_section_name", secs[0], "--cmd_section_name", secs[1])
    p = mlbridge("corpus", "extract", str(d), "-o", ours, "--json", check=False)
    assert p.returncode == 1 and "not an ELF object" in p.stdout    # without --objcopy: said so
    mlbridge("corpus", "extract", str(d), "-o", ours, "-q", "--objcopy", OBJCOPY,
             "--bitcode-section", secs[0], "--cmd-section", secs[1])
    assert tree(theirs) == tree(ours) and len(tree(ours)) == 3


@needs_peer
def test_cmd_filter_same_as_extract_ir(build, tmp_path):
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    db = os.path.join(build, "compile_commands.json")
    peer("extract_ir", "--input", db, "--output_dir", theirs, "--llvm_objcopy_path", OBJCOPY,
         "--cmd_filter", "^-fcxx-exceptions$")
    p = mlbridge("corpus", "extract", db, "-o", ours, "--cmd-filter", "^-fcxx-exceptions$", "--json")
    assert json.loads(p.stdout)["excluded"] == len(SOURCES) - 1
    assert tree(theirs) == tree(ours)
    assert layout.load(ours).modules[0].name.endswith("shapes.cpp.o")


@needs_peer
def test_raw_bitcode_same_as_make_corpus(tmp_path):
    if not CLANG:
        pytest.skip("clang-19 not installed")
    src = tmp_path / "bc"
    for s in FEW:
        out = src / ("sub" if s.endswith(".cpp") else "") / (os.path.basename(s)[:-2] + ".bc")
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([compiler(s), "-O1", "-c", "-emit-llvm", s, "-o", str(out)], check=True, timeout=120)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    peer("make_corpus", "--input_dir", str(src), "--output_dir", theirs, "--default_args", "-O2 -mcpu=x86-64")
    mlbridge("corpus", "extract", str(src), "-o", ours, "--default-args", "-O2 -mcpu=x86-64", "-q")
    t, o = tree(theirs), tree(ours)
    t.pop(layout.DESCRIPTION), o.pop(layout.DESCRIPTION)
    assert t == o and len(t) == len(FEW)
    assert sorted_description(theirs) == sorted_description(ours)
    c = layout.load(ours)
    assert c.global_command_override == ["-O2", "-mcpu=x86-64"]
    assert c.modules[0].command() == ["-O2", "-mcpu=x86-64"]


def _thin_objects(d: str) -> List[str]:
    objs = []
    for s in FEW:
        obj = os.path.basename(s) + ".o"
        subprocess.run([compiler(s), "-O2", "-flto=thin", "-c", s, "-o", obj], cwd=d, check=True, timeout=120)
        objs.append(obj)
    return objs


@needs_peer
@pytest.mark.skipif(not LLD, reason="ld.lld-19 not installed (apt-get install lld-19)")
def test_local_thinlto_same_as_extract_ir(tmp_path):
    d = str(tmp_path / "b")
    os.makedirs(d)
    objs = _thin_objects(d)
    subprocess.run([CLANG, "-flto=thin", "-shared", f"--ld-path={LLD}", "-Wl,--save-temps=import",
                    "-Wl,--thinlto-emit-index-files", *objs, "-o", "libc.so"], cwd=d, check=True, timeout=300)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    peer("extract_ir", "--thinlto_build", "local", "--obj_base_dir", d, "--output_dir", theirs)
    mlbridge("corpus", "extract", "--thinlto", "local", "--obj-base-dir", d, "-o", ours, "-q")
    t, o = tree(theirs), tree(ours)
    t.pop(layout.DESCRIPTION), o.pop(layout.DESCRIPTION)
    assert t == o and len(t) == 2 * len(FEW)      # NAME.bc + NAME.thinlto.bc
    assert sorted_description(theirs) == sorted_description(ours)
    c = layout.load(ours)
    assert c.has_thinlto and c.global_command_override == layout.UNSPECIFIED_OVERRIDE


@needs_peer
@pytest.mark.skipif(not LLD, reason="ld.lld-19 not installed (apt-get install lld-19)")
def test_distributed_thinlto_same_as_extract_ir(tmp_path):
    d = str(tmp_path / "b")
    os.makedirs(d)
    objs = _thin_objects(d)
    subprocess.run([CLANG, "-flto=thin", "-shared", f"--ld-path={LLD}", "-Wl,--thinlto-index-only",
                    *objs, "-o", "libc.so"], cwd=d, check=True, timeout=300)
    entries = []
    for obj in objs:     # the distributed backends: post-merge-pre-opt IR and the command embedded
        cmd = [CLANG, "-O2", "-c", "-x", "ir", obj, f"-fthinlto-index={obj}.thinlto.bc", "-o",
               f"native/{obj}", "-mllvm", "-lto-embed-bitcode=post-merge-pre-opt"]
        os.makedirs(os.path.join(d, "native"), exist_ok=True)
        subprocess.run(cmd, cwd=d, check=True, timeout=120)
        entries.append({"directory": d, "arguments": cmd, "file": obj})
    db = os.path.join(d, "compile_commands.json")
    with open(db, "w") as f:
        json.dump(entries, f)
    theirs, ours = str(tmp_path / "theirs"), str(tmp_path / "ours")
    peer("extract_ir", "--input", db, "--thinlto_build", "distributed", "--output_dir", theirs,
         "--llvm_objcopy_path", OBJCOPY, "--obj_base_dir", d)
    mlbridge("corpus", "extract", db, "--thinlto", "distributed", "-o", ours, "-q")
    t, o = tree(theirs), tree(ours)
    assert t == o and len(t) == 3 * len(FEW) + 1
    assert layout.load(ours).has_thinlto


@needs_peer
def test_combine_same_as_combine_training_corpus(build, tmp_path):
    """Our corpora read by the peer's combiner, and the combined description the same."""
    db = os.path.join(build, "compile_commands.json")
    root = tmp_path / "root"
    for sub in ("one", "two"):
        mlbridge("corpus", "extract", db, "-o", str(root / sub), "-q")
    peer("combine_training_corpus", "--root_dir", str(root))
    theirs = json.load(open(root / layout.DESCRIPTION))
    (root / layout.DESCRIPTION).unlink()
    ours = combine(str(root))
    theirs["modules"].sort()
    assert theirs == {**ours, "modules": sorted(ours["modules"])}
    c = layout.load(str(root))
    assert len(c) == 2 * len(SOURCES) and c.modules[0].name.startswith("one/")


def test_combine_refuses_different_corpora(tmp_path):
    for sub, thin in (("a", False), ("b", True)):
        (tmp_path / sub).mkdir()
        layout.write_description(str(tmp_path / sub), [], has_thinlto=thin)
    p = mlbridge("corpus", "combine", str(tmp_path), check=False)
    assert p.returncode == 1 and "differ" in p.stderr and "Traceback" not in p.stderr


# ---- failures are reported, never dropped ---------------------------------------------

@needs_clang
def test_object_without_bitcode_is_a_reported_failure(build, tmp_path):
    d = tmp_path / "objs"
    d.mkdir()
    shutil.copy(os.path.join(build, "CMakeFiles/corpus.dir/sort.c.o"), d / "good.o")
    subprocess.run([CLANG, "-Oz", "-c", SOURCES[0], "-o", str(d / "plain.o")], check=True, timeout=120)
    (d / "junk.o").write_bytes(b"\x7fELF\x02\x01\x01" + b"\xff" * 100)
    out = str(tmp_path / "out")
    p = mlbridge("corpus", "extract", str(d), "-o", out, "--json", check=False)
    assert p.returncode == 1
    s = json.loads(p.stdout)
    reasons = {f["module"]: f["reason"] for f in s["failures"]}
    assert "no .llvmbc section" in reasons["plain.o"]
    assert "malformed object" in reasons["junk.o"]
    assert s["modules"] == 1 and layout.load(out).modules[0].name == "good.o"
    p = mlbridge("corpus", "extract", str(d), "-o", out, check=False)
    assert "plain.o: no .llvmbc section" in p.stderr
    # --allow-missing: a missing section is a skip, a malformed object still fails
    (d / "junk.o").unlink()
    assert mlbridge("corpus", "extract", str(d), "-o", out, "--allow-missing", "-q", check=False).returncode == 0


def test_usage_errors_are_one_line(tmp_path):
    for args in (["corpus", "extract", str(tmp_path / "missing.json"), "-o", str(tmp_path / "o")],
                 ["corpus", "info", str(tmp_path)],
                 ["corpus", "extract", str(tmp_path), "-o", str(tmp_path / "o"), "-j", "0"],
                 ["corpus", "build", "no-such-recipe"]):
        p = mlbridge(*args, check=False)
        assert p.returncode == 2, (args, p.stderr)
        assert p.stderr.count("\n") == 1 and p.stderr.startswith("mlbridge: error:"), p.stderr


# ---- re-runs redo only what changed ----------------------------------------------------

@needs_clang
def test_rerun_redoes_only_changed_modules(build, tmp_path):
    b = str(tmp_path / "b")
    shutil.copytree(build, b)
    db = os.path.join(b, "compile_commands.json")
    entries = json.load(open(db))
    for e in entries:
        e["command"] = e["command"].replace(build, b)
        e["directory"] = b
    json.dump(entries, open(db, "w"))
    out = str(tmp_path / "out")
    first = json.loads(mlbridge("corpus", "extract", db, "-o", out, "--json", "-j", "1").stdout)
    assert first["extracted"] == len(SOURCES)
    again = json.loads(mlbridge("corpus", "extract", db, "-o", out, "--json").stdout)
    assert again["unchanged"] == len(SOURCES) and again["extracted"] == 0
    # one object rebuilt differently: only it is extracted again, with the new bytes
    obj = "CMakeFiles/corpus.dir/sort.c.o"
    subprocess.run([CLANG, "-O1", "-Xclang", "-fembed-bitcode=all", "-c", SOURCES[-2], "-o", obj],
                   cwd=b, check=True, timeout=120)
    third = json.loads(mlbridge("corpus", "extract", db, "-o", out, "--json").stdout)
    assert third["extracted"] == 1 and third["unchanged"] == len(SOURCES) - 1
    assert "-O1" in layout.read_cmd(os.path.join(out, obj + ".cmd"))
    # an entry gone from the build: its files go, the description follows
    json.dump([e for e in entries if "sort.c" not in e["command"]], open(db, "w"))
    mlbridge("corpus", "extract", db, "-o", out, "-q")
    assert not os.path.exists(os.path.join(out, obj + ".bc"))
    assert len(layout.load(out)) == len(SOURCES) - 1
    # an output deleted by hand is redone
    victim = layout.load(out).modules[0]
    os.unlink(victim.bc)
    fourth = json.loads(mlbridge("corpus", "extract", db, "-o", out, "--json").stdout)
    assert fourth["extracted"] == 1 and os.path.isfile(victim.bc)


# ---- the ELF reader against llvm-objcopy, and against corrupt input --------------------

@needs_clang
@pytest.mark.skipif(not OBJCOPY, reason="llvm-objcopy-19 missing")
def test_elf_reader_matches_objcopy(build, tmp_path):
    obj = os.path.join(build, "CMakeFiles/corpus.dir/shapes.cpp.o")
    got = elf.read_sections(obj, [".llvmbc", ".llvmcmd", ".text", ".nope"])
    for sec in (".llvmbc", ".llvmcmd"):
        dump = str(tmp_path / sec)
        subprocess.run([OBJCOPY, f"--dump-section={sec}={dump}", obj, os.devnull], check=True)
        assert got[sec] == open(dump, "rb").read()
    assert got[".nope"] is None
    # 32-bit big-endian objects parse too
    be = str(tmp_path / "be.o")
    subprocess.run([CLANGXX, "--target=powerpc-linux-gnu", "-Oz", "-Xclang", "-fembed-bitcode=all", "-c",
                    SOURCES[-1], "-o", be], check=True, timeout=120)     # shapes.cpp: no headers
    dump = str(tmp_path / "be.cmd")
    subprocess.run([OBJCOPY, f"--dump-section=.llvmcmd={dump}", be, os.devnull], check=True)
    assert elf.read_sections(be, [".llvmcmd"])[".llvmcmd"] == open(dump, "rb").read()


@needs_clang
def test_elf_reader_survives_corruption(build, tmp_path):
    """Truncations and byte flips of a real object: sections or ElfError, never
    another exception, never bytes from outside the file."""
    from hypothesis import given, settings, strategies as st
    data = open(os.path.join(build, "CMakeFiles/corpus.dir/bits.c.o"), "rb").read()
    path = str(tmp_path / "x.o")

    @settings(max_examples=150, deadline=None, database=None)
    @given(st.integers(0, len(data)), st.lists(st.tuples(st.integers(0, len(data) - 1), st.integers(0, 255)),
                                                 max_size=8))
    def check(cut, flips):
        b = bytearray(data)
        for at, v in flips:
            b[at] = v
        b = bytes(b[:max(cut, 4)])
        with open(path, "wb") as f:
            f.write(b)
        try:
            got = elf.read_sections(path, [".llvmbc", ".llvmcmd"])
        except elf.ElfError:
            return
        for v in got.values():
            assert v is None or v in b or v == b""
    check()


def test_hostile_compile_commands(tmp_path):
    """Object paths that would write outside the corpus are failures, not files."""
    b = tmp_path / "b"
    b.mkdir()
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([
        {"directory": str(b), "arguments": ["cc", "-c", "a.c", "-o", "../escape.o"], "file": "a.c"},
        {"directory": str(b), "arguments": ["cc", "-c", "b.c", "-o", "/etc/passwd.o"], "file": "b.c"},
        {"directory": str(b), "arguments": ["cc", "-c", "c.c", "-o"], "file": "c.c"},
        "not an object",
    ]))
    out = tmp_path / "out"
    p = mlbridge("corpus", "extract", str(db), "-o", str(out), "--json", check=False)
    assert p.returncode == 1
    s = json.loads(p.stdout)
    assert s["failed"] == 2 and s["skipped"] == 2 and s["modules"] == 0
    # the failure names the corpus folder the name would leave, with its path (issue 25)
    assert {"module": "../escape.o", "input": str(b / "../escape.o"),
            "reason": f"{out}: module name '../escape.o' leaves the corpus folder"} in s["failures"]
    assert sorted(os.listdir(tmp_path)) == ["b", "compile_commands.json", "out"]
    assert not os.path.exists("/etc/passwd.o.bc")
    assert mlbridge("corpus", "extract", str(tmp_path / "x.json"), "-o", str(out), check=False).returncode == 2
    (tmp_path / "bad.json").write_text("{not json")
    p = mlbridge("corpus", "extract", str(tmp_path / "bad.json"), "-o", str(out), check=False)
    assert p.returncode == 1 and "not JSON" in p.stderr and "Traceback" not in p.stderr
