"""Where mlbridge's native parts are: the LLVM plugin, the tools, the MLIR tool,
the GCC plugin.

Looked for, in order, in the package's own install (``pip install .`` puts CMake's
install tree in ``mlbridge/_native``), under the Python environment's prefix
(``cmake --install build --prefix "$VIRTUAL_ENV"``), then in a source checkout's
``build/`` (a developer's tree). Callers put an explicit argument and an
environment variable first (``corpus.compile.find_plugin``). ``components()`` is
what ``mlbridge version`` prints.
"""
from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional, Tuple

_HERE = os.path.dirname(os.path.abspath(__file__))
#: (name, path under an install prefix, path under a source tree's build/)
COMPONENTS: Tuple[Tuple[str, str, str], ...] = (
    ("llvm-plugin", "lib/mlbridge/libMLBridgeLLVM.so", "libMLBridgeLLVM.so"),
    ("mlbridge-aot", "bin/mlbridge-aot", "tools/aot/mlbridge-aot"),
    ("mlbridge-replay", "bin/mlbridge-replay", "tools/mlbridge-replay"),
    ("mlbridge-bench", "bin/mlbridge-bench", "bench/mlbridge-bench"),
    ("mlir-opt", "bin/mlbridge-mlir-opt", "integrations/mlir/mlbridge-mlir-opt"),
    ("gcc-plugin", "lib/mlbridge/mlbridge.so", "integrations/gcc/mlbridge.so"),
)
#: how to get a component that is missing, in one line
HOW_TO_GET = ("install with `pip install .` at the repository root on a machine with llvm-19-dev (the build says "
              "which parts it made), or build it (cmake --build build --target MLBridgeLLVM)")


def prefixes() -> List[str]:
    """Install prefixes, nearest first: the package's own, then the environment's."""
    out = [os.path.join(_HERE, "_native")]
    for p in (sys.prefix, sys.base_prefix):
        if p not in out:
            out.append(p)
    return out


def source_tree() -> Optional[str]:
    """The source checkout this package runs from (PYTHONPATH=python), or None
    when it is installed."""
    tree = os.path.dirname(os.path.dirname(_HERE))
    return tree if os.path.isfile(os.path.join(tree, "CMakeLists.txt")) else None


def source_build() -> Optional[str]:
    """build/ of the source tree this package runs from, if it is one."""
    tree = source_tree()
    build = os.path.join(tree, "build") if tree else ""
    return build if tree and os.path.isdir(build) else None


def find(name: str) -> Optional[str]:
    """The component NAME (COMPONENTS' first column), installed or built; None if neither."""
    for comp, installed, built in COMPONENTS:
        if comp != name:
            continue
        for prefix in prefixes():
            for lib in ("lib", "lib64"):
                path = os.path.join(prefix, installed.replace("lib/", lib + "/", 1))
                if os.path.isfile(path):
                    return path
        build = source_build()
        if build and os.path.isfile(os.path.join(build, built)):
            return os.path.join(build, built)
        return None
    raise KeyError(name)


def components() -> Dict[str, Optional[str]]:
    """Every component and where it was found (None: not found)."""
    return {name: find(name) for name, _, _ in COMPONENTS}
