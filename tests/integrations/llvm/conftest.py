"""Fixtures for the LLVM plugin tests: the plugin builds (from ctest's
environment), stock LLVM 19 tools, inlinable IR of the C corpus, and
compiles that are always bounded by a timeout."""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
MODELS = os.path.join(HERE, "models")
CORPUS = os.path.join(ROOT, "tests", "corpus")
for p in (os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "llvm_plugin")):
    if p not in sys.path:
        sys.path.insert(0, p)

import plugin_driver  # noqa: E402

PLUGIN = os.environ.get("MLBRIDGE_LLVM_PLUGIN", "")
PLUGIN_AOT = os.environ.get("MLBRIDGE_LLVM_PLUGIN_AOT", "")
PLUGIN_FULL = os.environ.get("MLBRIDGE_LLVM_PLUGIN_FULL", "")   # + onnxruntime, grpc
HAVE_ORT = os.environ.get("MLBRIDGE_LLVM_HAVE_ONNXRUNTIME") == "1"
HAVE_GRPC = os.environ.get("MLBRIDGE_LLVM_HAVE_GRPC") == "1"

if not (PLUGIN and os.path.exists(PLUGIN)):
    pytest.skip("MLBRIDGE_LLVM_PLUGIN not set (run through ctest: llvm.*)", allow_module_level=True)


def model(name: str) -> str:
    return os.path.join(MODELS, name)


def run(cmd: Sequence[str], env: Optional[Dict[str, str]] = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Runs a compiler: no stdin, output captured, killed after `timeout`."""
    full = dict(os.environ)
    for k in list(full):
        if k.startswith(("MLBRIDGE_INLINE_", "MLBRIDGE_PO_", "MLBRIDGE_TUNING")):
            del full[k]   # only what a test asks for
    full.update(env or {})
    return subprocess.run(list(cmd), stdin=subprocess.DEVNULL, capture_output=True, text=True, env=full,
                          timeout=timeout)


def opt_cmd(ir: str, out: str, *options: str, plugin: Optional[str] = None, passes: str = "default<O2>") -> List[str]:
    cmd = [plugin_driver.tool("opt")]
    if plugin is not None:
        cmd.append(f"-load-pass-plugin={plugin}")
    return cmd + list(options) + [f"-passes={passes}", ir, "-S", "-o", out]


def calls(ll_path: str) -> int:
    with open(ll_path) as f:
        return sum(1 for line in f if " call " in line and "@llvm." not in line)


@pytest.fixture(scope="session")
def ir_dir(tmp_path_factory) -> str:
    """Inlinable IR (clang -O1 without LLVM passes) of every corpus file."""
    d = str(tmp_path_factory.mktemp("ir"))
    for name in sorted(os.listdir(CORPUS)):
        if name.endswith(".c"):
            out = os.path.join(d, name[:-2] + ".ll")
            r = run([plugin_driver.tool("clang"), "-O1", "-Xclang", "-disable-llvm-passes", "-emit-llvm", "-S",
                     os.path.join(CORPUS, name), "-o", out])
            assert r.returncode == 0, r.stderr
    return d


@pytest.fixture
def interp_ir(ir_dir) -> str:
    return os.path.join(ir_dir, "interp.ll")


#: the whole-program tests' library: three corpus files linked into one shared
#: library exporting their entry points (test_settings.py, test_room.py)
DEMO_SOURCES = [os.path.join(CORPUS, f) for f in ("bits.c", "geom.c", "strhash.c")]


def demo_lib():
    from mlbridge.corpus.programs import Program
    return Program("libdemo.so", "shared", ("*",), ("bits_demo", "geom_demo", "strhash_demo"), ("m",))


@pytest.fixture(scope="module")
def lib_corpus(tmp_path_factory) -> str:
    """A corpus of DEMO_SOURCES with its programs.json (demo_lib)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "python", "helpers"))
    import mini_corpus
    from mlbridge.corpus.programs import write_programs
    root = mini_corpus.make_corpus(str(tmp_path_factory.mktemp("lib") / "corpus"), DEMO_SOURCES)
    write_programs(root, [demo_lib()])
    return root


@pytest.fixture(scope="module")
def toolchain():
    from mlbridge.corpus.compile import Toolchain
    return Toolchain.find(plugin=PLUGIN, need_plugin=True)
