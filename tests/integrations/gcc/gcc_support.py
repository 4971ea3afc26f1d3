"""Helpers of the GCC plugin tests: paths, the compiler, the plugin arguments.

ctest passes MLBRIDGE_GCC_PLUGIN (the built mlbridge.so) and MLBRIDGE_GCC (the
gcc it was built for); without them the tests are skipped (conftest.py).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CORPUS = sorted((ROOT / "tests" / "corpus").glob("*.c"))
KERNELS = HERE / "kernels.c"
sys.path.insert(0, str(ROOT / "examples" / "c_api"))
sys.path.insert(0, str(ROOT / "tests" / "integrations" / "mlir"))
import serve  # noqa: E402  (ModelProcess and the test policies, shared with the MLIR tests)
import unroll_policy  # noqa: E402

__all__ = ["HERE", "ROOT", "CORPUS", "KERNELS", "PLUGIN", "GCC", "serve", "unroll_policy",
           "plugin_args", "gcc", "read_log"]

PLUGIN = os.environ.get("MLBRIDGE_GCC_PLUGIN")
GCC = os.environ.get("MLBRIDGE_GCC", "gcc")

def plugin_args(**args):
    """-fplugin=... plus -fplugin-arg-mlbridge-KEY=VALUE for each argument."""
    out = [f"-fplugin={PLUGIN}"]
    for key, value in args.items():
        out.append(f"-fplugin-arg-mlbridge-{key.replace('_', '-')}={value}")
    return out


def gcc(source, output, *extra, timeout=60):
    """Compiles one C file with -O2; returns the CompletedProcess."""
    cmd = [GCC, "-O2", *extra, str(source), "-o", str(output)]
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)


def read_log(path):
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]
