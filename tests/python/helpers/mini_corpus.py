"""Small MLGO corpora for tests, made the way a real build makes them: each C
file compiled with ``clang-19 -Oz -Xclang -fembed-bitcode=all -c``, its
``.llvmbc``/``.llvmcmd`` sections pulled out with ``llvm-objcopy-19`` into
extract_ir's layout (``NAME.o.bc``, ``NAME.o.cmd``, ``corpus_description.json``)."""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
C_FILES = sorted(os.path.join(ROOT, "tests", "corpus", f) for f in os.listdir(os.path.join(ROOT, "tests", "corpus"))
                 if f.endswith(".c"))


def llvm_tool(name: str) -> Optional[str]:
    tools = os.environ.get("MLBRIDGE_LLVM_TOOLS_DIR")
    if tools and os.path.exists(os.path.join(tools, name)):
        return os.path.join(tools, name)
    return shutil.which(f"{name}-19")


def have_tools() -> bool:
    return bool(llvm_tool("clang") and llvm_tool("llvm-objcopy"))


def make_corpus(out: str, sources: Sequence[str] = tuple(C_FILES), flags: Sequence[str] = ("-Oz",)) -> str:
    """Builds a corpus of `sources` in OUT (objects in OUT/../objs-*); returns OUT."""
    from mlbridge.corpus.layout import write_description
    clang, objcopy = llvm_tool("clang"), llvm_tool("llvm-objcopy")
    assert clang and objcopy, "clang-19 and llvm-objcopy-19 are needed"
    objs = out.rstrip("/") + "-objs"
    os.makedirs(out, exist_ok=True)
    os.makedirs(objs, exist_ok=True)
    names = []
    for src in sources:
        name = os.path.splitext(os.path.basename(src))[0] + ".o"
        obj = os.path.join(objs, name)
        subprocess.run([clang, *flags, "-Xclang", "-fembed-bitcode=all", "-c", src, "-o", obj], check=True,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        subprocess.run([objcopy, f"--dump-section=.llvmbc={os.path.join(out, name)}.bc",
                        f"--dump-section=.llvmcmd={os.path.join(out, name)}.cmd", obj], check=True,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        names.append(name)
    write_description(out, names)
    return out
