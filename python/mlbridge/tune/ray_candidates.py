"""The tuner's candidates as Ray tasks (``mlbridge tune --ray ADDRESS``).

The search stays in the driver: each of its ``-j`` workers sends one candidate
at a time (a module and the pipeline to try) to the cluster and waits for the
answer. A task compiles the module exactly as a local candidate does
(corpus/compile.py, the module's own recorded command with the plugin) and
returns its sizes and, when it compiled, the object's bytes, which the driver
keeps if they are the module's new best. As for ``train run --ray``
(train/compiles.py), every node needs the corpus, clang and the plugin at the
same paths (a shared file system, or the same image).
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from typing import Optional, Sequence, Tuple

from ..corpus.compile import PLUGIN_ENV_PREFIXES, CompileOptions, Policy, Toolchain, compile_module
from ..corpus.layout import Module
from .callee_file import with_callees, write_callees

#: what one task answers: (stored bytes, .text, seconds, error, the object's bytes)
Answer = Tuple[Optional[int], Optional[int], float, Optional[str], Optional[bytes]]


def _candidate_task(module: Module, pipeline: str, toolchain: Toolchain, options: CompileOptions,
                    callees: Sequence[Tuple[str, int]] = ()) -> Answer:
    """One candidate on a Ray worker, in a private folder, with the worker's
    environment (the plugin's choosing variables left out, as locally)."""
    options = dataclasses.replace(options, keep_objects=True,
                                  environ={k: v for k, v in os.environ.items()
                                           if not k.startswith(PLUGIN_ENV_PREFIXES)})
    with tempfile.TemporaryDirectory(prefix="mlbridge-tune-task-") as work:
        options = with_callees(options, write_callees(callees, work, "ray"))
        r = compile_module(module, Policy.pipeline(pipeline), work, toolchain, options, tag="ray",
                           problem="phase-ordering")
        if not r.ok or not r.object_path:
            return None, None, r.seconds, r.error or "no object", None
        with open(r.object_path, "rb") as f:
            return r.stored_bytes, r.text_bytes, r.seconds, None, f.read()


class RayCandidates:
    """Candidates compiled by Ray tasks (one CPU each) on the cluster at ADDRESS
    ("local": a Ray instance on this machine with NUM_CPUS CPUs)."""

    def __init__(self, address: str, num_cpus: Optional[int] = None) -> None:
        from ..train.compiles import ray_connect
        self._ray = ray_connect(address, num_cpus)
        self._task = self._ray.remote(num_cpus=1, max_retries=2)(_candidate_task)

    def candidate(self, module: Module, pipeline: str, toolchain: Toolchain, options: CompileOptions, work: str,
                  tag: str, callees: Sequence[Tuple[str, int]] = ()
                  ) -> Tuple[Optional[int], Optional[int], float, Optional[str]]:
        """As Tuner._candidate: the object written under WORK when it compiled."""
        ref = self._task.remote(module, pipeline, toolchain, options, tuple(callees))
        try:
            # the compile's own bound, plus room for scheduling and the object's trip
            stored, text, seconds, error, data = self._ray.get(ref, timeout=options.timeout + 120)
        except Exception as exc:   # a lost node, a task past its bound: a failed candidate
            self._ray.cancel(ref, force=True)
            return None, None, 0.0, f"the Ray task failed: {type(exc).__name__}: {exc}"
        if data is None:
            return None, None, seconds, error
        fd, path = tempfile.mkstemp(dir=work, prefix=f"{tag}-", suffix=".o")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return stored, text, seconds, path
