"""Where a training step's compiles run: threads on this machine, or Ray tasks
on a cluster (``mlbridge train run --ray ADDRESS``).

Both take the same jobs, ``(unit, policy, tag)``, and return one
CompiledModule per job, in order. A unit is a corpus module, or in a
whole-program setting a program (its members compiled and linked: one task).
On Ray, each task compiles with the corpus module's own command exactly as a
local compile does (corpus/compile.py), so every node needs the corpora,
clang, ld.lld and the plugin at the same paths (a shared file system, or the
same image), as ml-compiler-opt's workers do. An ONNX
policy travels with its tasks (its bytes, put in Ray's object store once per
step); a Python policy (PPO's sampling policy) answers in this process, so it
cannot run on Ray.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..corpus.compile import CompileOptions, CompiledModule, Policy, Toolchain, compile_module
from ..corpus.layout import Module
from ..corpus.settings import LINK_TIMEOUT

Job = Tuple[Module, Policy, str]


def build_unit(unit: Any, policy: Policy, work: str, toolchain: Toolchain, options: CompileOptions,
               tag: str) -> CompiledModule:
    """A training unit under POLICY: a corpus module (objects setting), or a
    program in a whole-program setting (``settings.ProgramUnit``)."""
    if isinstance(unit, Module):
        return compile_module(unit, policy, work, toolchain, options, tag=tag)
    return unit.build(policy, work, toolchain, options, tag=tag)


class LocalCompiles:
    """`jobs` compiles at a time in this process's threads."""

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def run(self, jobs: Sequence[Job], work: str, toolchain: Toolchain, options: CompileOptions) -> List[CompiledModule]:
        with ThreadPoolExecutor(self.jobs) as pool:
            return list(pool.map(lambda j: build_unit(j[0], j[1], work, toolchain, options, j[2]), jobs))

    def close(self) -> None:
        pass


def _compile_task(unit: Any, spec: str, model: Optional[bytes], toolchain: Toolchain,
                  options: CompileOptions, tag: str) -> CompiledModule:
    """One unit on a Ray worker (a module's compile, or a program's compiles and
    link): the model's bytes become a file in a private folder; the compiler
    and the linker get the worker's environment, not the driver's."""
    options = dataclasses.replace(options, environ={k: v for k, v in os.environ.items()
                                                    if not k.startswith("MLBRIDGE_INLINE_")})
    with tempfile.TemporaryDirectory(prefix="mlbridge-task-") as work:
        if model is None:
            policy = Policy("oz", spec)
        else:
            path = os.path.join(work, "policy.onnx")
            with open(path, "wb") as f:
                f.write(model)
            policy = Policy("onnx", spec, model=path)
        res = build_unit(unit, policy, work, toolchain, options, tag)
        res.stderr = res.stderr[-4000:]   # the tail says why; the whole log need not cross the network
        return res


def ray_runtime_env() -> Dict[str, Any]:
    """Ships the mlbridge package to every Ray worker process (Ray uploads it to
    other machines too), so tasks and actors import the driver's mlbridge."""
    import mlbridge
    return {"py_modules": [os.path.dirname(mlbridge.__file__)]}


def ray_connect(address: str, num_cpus: Optional[int] = None) -> Any:
    """Ray, connected to the cluster at ADDRESS ("local": a Ray instance on this
    machine with NUM_CPUS CPUs) once per process, the package shipped to workers."""
    import ray
    if not ray.is_initialized():
        kwargs: Dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "runtime_env": ray_runtime_env()}
        if address == "local":
            kwargs["num_cpus"] = num_cpus or os.cpu_count() or 1
        else:
            kwargs["address"] = address
        ray.init(**kwargs)
    return ray


class RayCompiles:
    """Compiles as Ray tasks (one CPU each) on the cluster at `address` ("local":
    a Ray instance on this machine with `num_cpus` CPUs)."""

    def __init__(self, address: str, num_cpus: Optional[int] = None) -> None:
        self._ray = ray_connect(address, num_cpus)
        self._task = self._ray.remote(num_cpus=1, max_retries=2)(_compile_task)

    def run(self, jobs: Sequence[Job], work: str, toolchain: Toolchain, options: CompileOptions) -> List[CompiledModule]:
        models: Dict[str, Any] = {}
        refs = []
        for module, policy, tag in jobs:
            if policy.kind == "python":
                raise ValueError("a Python policy answers in this process: it cannot run on Ray (ONNX policies can)")
            model = None
            if policy.kind == "onnx":
                assert policy.model is not None
                if policy.model not in models:
                    with open(policy.model, "rb") as f:
                        models[policy.model] = self._ray.put(f.read())
                model = models[policy.model]
            refs.append(self._task.remote(module, policy.spec, model, toolchain, options, tag))
        # a program's link has its own, longer bound (settings.LINK_TIMEOUT)
        per_unit = options.timeout if all(isinstance(j[0], Module) for j in jobs) else \
            options.timeout + LINK_TIMEOUT
        return list(self._ray.get(refs, timeout=per_unit * max(1, len(refs)) + 60))

    def close(self) -> None:
        pass   # the Ray connection belongs to the process; ray.shutdown() at exit
