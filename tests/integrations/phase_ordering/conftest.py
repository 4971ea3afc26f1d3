"""Fixtures for the phase-ordering pass tests: the plugin (from ctest's
environment), unoptimized IR of the C corpus, and bounded opt runs."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Dict, List, Sequence

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
CORPUS = os.path.join(ROOT, "tests", "corpus")
EXAMPLE = os.path.join(ROOT, "examples", "phase_ordering")
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))

from mlbridge.problems.phase_ordering import poset  # noqa: E402

PLUGIN = os.environ.get("MLBRIDGE_LLVM_PLUGIN", "")
if not (PLUGIN and os.path.exists(PLUGIN)):
    pytest.skip("MLBRIDGE_LLVM_PLUGIN not set (run through ctest: llvm.phase_ordering.*)", allow_module_level=True)

WARNING = "warning: mlbridge-phase-order: "


def run(cmd: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess:
    """A compiler run: no stdin, output captured, killed after `timeout`, no
    MLBRIDGE_PO_* from the caller's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLBRIDGE_PO_")}
    return subprocess.run(list(cmd), stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env,
                          timeout=timeout)


def po_cmd(ir: str, out: str, steps: int, *runner_args: str) -> List[str]:
    """opt with the pass, textual output, verifying after every step, tracing."""
    return poset.opt_command(PLUGIN, ir, out, steps=steps, runner_args=runner_args,
                             extra=["-S", "-mlbridge-po-verify", "-mlbridge-po-trace"])


def reference(ir: str, out: str, actions: Sequence[int]) -> str:
    """The module after running the table's pipelines for `actions` with stock opt (no plugin)."""
    pipeline = ",".join(PIPELINES[a] for a in actions) if actions else "verify"
    r = run([poset.tool("opt"), f"-passes={pipeline}", ir, "-S", "-o", out])
    assert r.returncode == 0, r.stderr
    return body(out)


def body(ll: str) -> str:
    """Module text without the ModuleID line (it names the input file)."""
    with open(ll) as f:
        return "".join(line for line in f if not line.startswith("; ModuleID"))


def verifies(ll: str) -> bool:
    return run([poset.tool("opt"), "-passes=verify", ll, "-disable-output"]).returncode == 0


def traced_actions(stderr: str) -> List[int]:
    """Actions from -mlbridge-po-trace lines ("... step 0: instructions 758, action 2 (...)")."""
    return [int(line.split(", action ")[1].split()[0]) for line in stderr.splitlines() if ", action " in line]


def traced_instructions(stderr: str) -> List[int]:
    return [int(line.split("instructions ")[1].split(",")[0]) for line in stderr.splitlines() if ", action " in line]


def _pipelines() -> Dict[int, str]:
    """The action table, read from its source (the one place it is written)."""
    src = os.path.join(ROOT, "integrations", "llvm", "phase_ordering_actions.cc")
    text = open(src).read()
    table = text[text.index("kActions[kNumPhaseOrderActions] = {"):]
    entries = re.findall(r'\{"([a-z0-9-]+)",\s*((?:"[^"]*"\s*)+)\}', table)
    out = {}
    for i, (name, parts) in enumerate(entries):
        assert name == poset.ACTION_NAMES[i], (i, name)
        out[i] = "".join(re.findall(r'"([^"]*)"', parts))
    assert len(out) == poset.NUM_ACTIONS
    return out


PIPELINES = _pipelines()


@pytest.fixture(scope="session")
def ir_dir(tmp_path_factory) -> str:
    d = str(tmp_path_factory.mktemp("po_ir"))
    for c in sorted(os.listdir(CORPUS)):
        if c.endswith(".c"):
            poset.unoptimized_ir(os.path.join(CORPUS, c), os.path.join(d, c[:-2] + ".ll"))
    return d
