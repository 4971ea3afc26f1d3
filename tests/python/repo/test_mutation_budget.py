"""scripts/mutation_run.py --budget (CI's fixed budget, docs/testing.md): the
run is stopped when the budget runs out, with Ctrl-C first, then SIGKILL for a
process that ignores it; no process is left behind (conftest's leak check)."""
from __future__ import annotations

import importlib.util
import os
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "mutation_run", os.path.join(HERE, "..", "..", "..", "scripts", "mutation_run.py"))
mutation_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutation_run)

PAUSE = [sys.executable, "-c", "import signal; signal.pause()"]   # never ends by itself


def test_a_run_that_ends_within_the_budget_gives_its_exit_code():
    assert mutation_run.run_with_budget([sys.executable, "-c", "raise SystemExit(3)"], 600) == 3
    assert mutation_run.run_with_budget([sys.executable, "-c", "pass"], 600) == 0


def test_a_run_past_the_budget_is_interrupted():
    assert mutation_run.run_with_budget(PAUSE, 0.2) is None


def test_a_run_that_ignores_ctrl_c_is_killed():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)   # inherited by the child from the start
    try:
        assert mutation_run.run_with_budget(PAUSE, 0.2, grace=0.2) is None
    finally:
        signal.signal(signal.SIGINT, old)
