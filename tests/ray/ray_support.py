"""Shared by the training tests (tests/ray): paths and tool checks that skip
locally but fail under CI (CI set)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT / "python", ROOT / "examples" / "train_inliner", ROOT / "examples" / "ray"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

CORPUS = sorted(str(p) for p in (ROOT / "tests" / "corpus").glob("*.c"))


def missing(what: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{what} is required under CI")
    pytest.skip(f"{what} not available")


def require_llvm() -> None:
    from mlbridge import llvm
    for name in ("clang", "opt", "llc", "llvm-size"):
        if not llvm.have_tool(name):
            missing(f"LLVM 19 tool {name}")
