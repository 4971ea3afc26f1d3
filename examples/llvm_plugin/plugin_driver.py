"""Compile C files with stock clang-19 and the mlbridge plugin's ML inliner;
measure the result's code size. Shared by train.py, the plugin tests and
bench/llvm_overhead.py.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from mlbridge.corpus.elf import text_size  # noqa: E402,F401  (train.py and the tests measure with it)


def tool(name: str, tools_dir: Optional[str] = None) -> str:
    """LLVM tool `name` (e.g. "clang"): TOOLS_DIR/name, else name-19 on PATH."""
    tools_dir = tools_dir or os.environ.get("MLBRIDGE_LLVM_TOOLS_DIR")
    if tools_dir and os.path.exists(os.path.join(tools_dir, name)):
        return os.path.join(tools_dir, name)
    found = shutil.which(f"{name}-19") or shutil.which(name)
    if not found:
        raise FileNotFoundError(f"{name}-19 not found (set MLBRIDGE_LLVM_TOOLS_DIR)")
    return found


def plugin_args(plugin: str, runner: Optional[str] = None, **options: object) -> List[str]:
    """clang arguments that load `plugin` and choose `runner`; options map to
    -mlbridge-inline-<name> (underscores become dashes). The plugin is also
    passed as -fplugin so clang knows its -mllvm options when it parses them."""
    args = [f"-fplugin={plugin}", f"-fpass-plugin={plugin}"]
    if runner:
        args += ["-mllvm", f"-mlbridge-inline-runner={runner}"]
    for k, v in options.items():
        flag = "-mlbridge-inline-" + k.replace("_", "-")
        args += ["-mllvm", flag if v is True else f"{flag}={v}"]
    return args


def clang_command(src: str, obj: str, level: str = "-Oz", extra: Sequence[str] = ()) -> List[str]:
    return [tool("clang"), level, "-c", src, "-o", obj, *extra]


def compile_sizes(sources: Sequence[str], out_dir: str, level: str = "-Oz", extra: Sequence[str] = (),
                  env: Optional[Dict[str, str]] = None, timeout: float = 120) -> Dict[str, int]:
    """Compiles each source without a model in the loop (stock, or an
    in-process runner given in `extra`); returns .text bytes per file."""
    sizes = {}
    for src in sources:
        obj = os.path.join(out_dir, os.path.basename(src) + ".o")
        proc = subprocess.run(clang_command(src, obj, level, extra), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, env=env)
        if proc.returncode != 0:
            raise RuntimeError(f"clang failed on {src}: {proc.stderr.decode(errors='replace')}")
        sizes[os.path.basename(src)] = text_size(obj)
    return sizes
