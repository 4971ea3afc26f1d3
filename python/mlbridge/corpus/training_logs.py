"""Where `corpus evaluate --log DIR` writes training logs, and their rewards.

In the objects setting a module's log is ``DIR/NAME.log``. In a whole-program
setting a module can belong to several programs, and the linker decides too,
so the logs of program P live in ``DIR/P/``: ``MODULE.log`` for each member's
compile (the pre-link compile under LTO) and, under LTO, ``link.ID.log`` for
each LTO backend in the linker (one under full LTO, one per module under
ThinLTO; ID is the plugin's ``{module}``). Every log of a program carries the
program's reward: its logs are one episode, scored once on the linked file.
"""
from __future__ import annotations

import dataclasses
import glob
import os
from typing import Any, Callable, List, Union

from .compile import CompileOptions, Policy, Toolchain, plugin_args
from .layout import Module
from .programs import Program
from ..problems import DEFAULT, Problem, resolve

#: the linker's logs; the plugin replaces {module} with each backend module's name
LINKER_LOG = "link.{module}.log"


def logging_options(options: CompileOptions, policy: Policy, toolchain: Toolchain,
                    path_of: Callable[[Module], str], problem: Union[str, Problem] = DEFAULT) -> CompileOptions:
    """OPTIONS plus the plugin's training log of PROBLEM's decisions at
    PATH_OF(module) for every compile (the plugin loaded for -Oz, whose stock
    heuristic is logged)."""
    load = [] if policy.uses_plugin else plugin_args(toolchain.plugin or "")
    training_log_options = resolve(problem).training_log_options

    def extra(m: Module) -> List[str]:
        path = path_of(m)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        return load + training_log_options(path)
    return dataclasses.replace(options, extra_args=extra)


def program_log_dir(log_dir: str, program: Program) -> str:
    return os.path.join(log_dir, program.name)


def member_log(folder: str, module: Module) -> str:
    return os.path.join(folder, module.name + ".log")


def linker_log(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, LINKER_LOG)


def program_logs(folder: str) -> List[str]:
    """Every training log under FOLDER (members' and the linker's)."""
    return sorted(p for p in glob.glob(os.path.join(glob.escape(folder), "**", "*.log"), recursive=True)
                  if os.path.isfile(p))


def set_rewards(paths: List[str], score: Any) -> int:
    """Writes SCORE's reward (policy vs -Oz .text) into each existing log; how many."""
    from ..llvm.training_log import set_log_reward
    done = 0
    for path in paths:
        if os.path.exists(path):
            set_log_reward(path, int(score.policy.text_bytes), int(score.baseline.text_bytes))
            done += 1
    return done
