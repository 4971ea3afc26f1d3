"""The -Oz heuristic as a teacher: compile each module with the mlbridge plugin
logging and no model (LLVM's development mode without a model: the stock
heuristic decides, every call site is logged with its 38 features and
``inlining_default``), and read the logs back as (features, decision) rows for
behavioral cloning."""
from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ...corpus.compile import CompiledModule, Toolchain
from ...corpus.layout import Module
from ...llvm.inliner_features import FEATURES
from .logged_compile import LoggedDecisions, compile_with_flips


def collect_oz_decisions(modules: Sequence[Module], toolchain: Toolchain, *, jobs: Optional[int] = None,
                         timeout: float = 300.0, on_done: Optional[Callable[[CompiledModule], None]] = None
                         ) -> Tuple[np.ndarray, np.ndarray]:
    """Rows [m, 38] of raw features and the -Oz heuristic's decisions [m] over
    every call site the inliner considered in ``modules``."""
    if not toolchain.plugin:
        raise ValueError("logging the -Oz heuristic needs the mlbridge LLVM plugin")
    with tempfile.TemporaryDirectory(prefix="mlbridge-oz-logs-") as work:
        def one(m: Module) -> Optional[LoggedDecisions]:
            r, traj = compile_with_flips(m, [], toolchain, work, timeout=timeout)
            if on_done is not None:
                on_done(r)
            return traj

        with ThreadPoolExecutor(max(1, jobs or os.cpu_count() or 1)) as pool:
            trajs: List[LoggedDecisions] = [t for t in pool.map(one, modules) if t is not None]
    if not trajs:
        return np.zeros((0, len(FEATURES)), np.int64), np.zeros(0, np.int64)
    return np.concatenate([t.x for t in trajs]), np.concatenate([t.default for t in trajs]).astype(np.int64)
