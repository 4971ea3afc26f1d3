"""The -Oz heuristic as a teacher: compile each module with the mlbridge plugin
logging and no model (LLVM's development mode without a model: the stock
heuristic decides, every call site is logged with its 38 features and
``inlining_default``), and read the logs back as (features, decision) rows for
behavioral cloning."""
from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..corpus.compile import CompileOptions, CompileResult, Policy, Toolchain, compile_module, plugin_args
from ..corpus.layout import Module
from ..llvm.inliner_features import DEFAULT_DECISION, FEATURES
from ..llvm.training_log import read_training_log

OZ = Policy("oz", "oz")


def collect_oz_decisions(modules: Sequence[Module], toolchain: Toolchain, *, jobs: Optional[int] = None,
                         timeout: float = 300.0, on_done: Optional[Callable[[CompileResult], None]] = None
                         ) -> Tuple[np.ndarray, np.ndarray]:
    """Rows [m, 38] of raw features and the -Oz heuristic's decisions [m] over
    every call site the inliner considered in ``modules``."""
    if not toolchain.plugin:
        raise ValueError("logging the -Oz heuristic needs the mlbridge LLVM plugin")
    rows: List[np.ndarray] = []
    labels: List[np.ndarray] = []
    with tempfile.TemporaryDirectory(prefix="mlbridge-oz-logs-") as work:
        def log_path(m: Module) -> str:
            return os.path.join(work, f"{abs(hash(m.name)):x}.log")

        opts = CompileOptions(timeout=timeout, extra_args=lambda m: plugin_args(toolchain.plugin) + [
            "-mllvm", f"-mlbridge-inline-training-log={log_path(m)}"])

        def one(m: Module) -> Tuple[CompileResult, Any]:
            r = compile_module(m, OZ, work, toolchain, opts, tag="ozlog")
            if on_done is not None:
                on_done(r)
            if not r.ok or not os.path.exists(log_path(m)):
                return r, None
            log = read_training_log(log_path(m))
            os.unlink(log_path(m))
            if not log.observations:
                return r, None
            x = np.concatenate([np.column_stack([t.features[n].reshape(t.steps) for n in FEATURES])
                                for t in log.trajectories if t.steps])
            y = np.concatenate([t.features[DEFAULT_DECISION].reshape(t.steps) for t in log.trajectories if t.steps])
            return r, (x, y)

        with ThreadPoolExecutor(max(1, jobs or os.cpu_count() or 1)) as pool:
            for _, got in pool.map(one, modules):
                if got is not None:
                    rows.append(got[0])
                    labels.append(got[1])
    if not rows:
        return np.zeros((0, len(FEATURES)), np.int64), np.zeros(0, np.int64)
    return np.concatenate(rows), np.concatenate(labels)
