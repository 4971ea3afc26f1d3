"""Fixtures of the training tests (tests/ray)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ray_support import require_llvm  # noqa: E402


@pytest.fixture
def need_llvm() -> None:
    require_llvm()
