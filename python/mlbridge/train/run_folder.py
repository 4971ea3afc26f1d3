"""What a training run's folder holds, read and checked before any compile:
the checkpoint (``state.json``), the history (``history.jsonl``) and policy
files (``--init``, ``--propose``, ``--around``). A damaged file is a
:class:`RunSetupError` naming it, and is left as it is (never rewritten: it
may be the only copy of hours of training)."""
from __future__ import annotations

import json
import os
import warnings
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Optional, Union

import numpy as np

from ..core.errors import ArgumentError, MLBridgeError
from ..problems import DEFAULT, Problem, ProblemError, resolve
from .policy import MLPPolicy
from .report import history_problem
from .size_trainer import SizeTrainer, TrainConfig, read_history


class RunSetupError(MLBridgeError):
    """A run cannot start: a damaged checkpoint or history, a file that is not a
    policy, no toolchain, nothing to learn from. Nothing was trained."""


class RunArgumentError(RunSetupError, ArgumentError):
    """A run cannot start because of one argument (``out``, ``init``, ``clang``, ...)."""


def setup_error(exc: MLBridgeError) -> RunSetupError:
    """EXC (a corpus or toolchain error met while setting a run up) as a RunSetupError, its wording kept."""
    if isinstance(exc, ArgumentError):
        return RunArgumentError(exc.argument, exc.template)
    return RunSetupError(str(exc))


def problem_for(problem: Union[str, Problem], command: str, setting: str = "objects") -> Problem:
    """PROBLEM (a name or a Problem) if COMMAND trains or reports it in SETTING;
    a RunArgumentError naming what it cannot do otherwise."""
    try:
        found = resolve(problem)
        found.check(command, setting)
    except ProblemError as exc:
        raise RunArgumentError(exc.argument, exc.template) from None
    return found


def reason(exc: BaseException) -> str:
    """One line on why a run file could not be read."""
    if isinstance(exc, KeyError):
        text = f"no {exc.args[0]!r} in it" if exc.args else "a key is missing"
    elif isinstance(exc, OSError):
        text = f"cannot read it: {exc.strerror or exc}"
    elif isinstance(exc, json.JSONDecodeError):
        text = f"not JSON ({exc})"
    elif isinstance(exc, RecursionError):
        text = "not JSON (nested too deep)"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:300]


def policy_problem(pol: MLPPolicy, problem: Union[str, Problem] = DEFAULT) -> Optional[str]:
    """What makes a policy read from a run file unusable by the trainer of PROBLEM, or None."""
    if not all(np.isfinite(a).all() for a in (pol.params, pol.mu, pol.sigma)):
        return "it holds numbers that are not finite float32"
    if not pol.names or not set(pol.names) <= set(resolve(problem).feature_names):
        return f"its features {pol.names[:5]!r} are not the {resolve(problem).name} problem's"
    return None


def _quietly(fn: Callable[[], Any]) -> Any:
    """``fn()`` without numpy's warnings (1e308 cast to float32: judged by policy_problem)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn()


def load_policy_file(path: str, argument: str, problem: Union[str, Problem] = DEFAULT) -> MLPPolicy:
    """The policy of PROBLEM in PATH (given as ``argument``), checked; RunArgumentError otherwise."""
    try:
        pol = _quietly(lambda: MLPPolicy.load(path))
        what = policy_problem(pol, problem)
    except Exception as exc:   # whatever the file holds: one line, not a traceback
        what = reason(exc)
    if what is not None:
        raise RunArgumentError(argument, f"{{arg}} {path}: not a policy file ({what})")
    return pol


def check_run_folder(out: str) -> None:
    if os.path.lexists(out) and not os.path.isdir(out):
        raise RunArgumentError("out", f"{out}: exists and is not a folder ({{arg}} names the run folder)")


def check_checkpoint(out: str, cfg: TrainConfig, problem: Union[str, Problem] = DEFAULT) -> bool:
    """Whether OUT holds a checkpoint (state.json) to resume from. It is read
    here, before any compile, by the very code that resumes from it
    (``SizeTrainer._resume``) and checked for what the trainer assumes."""
    path = os.path.join(out, "state.json")
    if not os.path.lexists(path):
        return False
    if not os.path.isfile(path):   # a folder, a dangling link, a pipe (reading it would wait forever)
        raise RunSetupError(f"{path}: damaged checkpoint (not a regular file); left as it is: restore it, or move "
                            "it away to start a new run")
    probe: Any = SimpleNamespace(state_path=path, cfg=cfg)
    try:
        _quietly(lambda: SizeTrainer._resume(probe))
        pol = probe.policy
        pol_problem = policy_problem(pol, problem)
        if pol_problem is not None:
            problem = f"its policy: {pol_problem}"
        elif probe.es is not None and not (np.isfinite(probe.es.mean).all() and np.isfinite(probe.es.m).all()
                                           and np.isfinite(probe.es.v).all()):
            problem = "its ES state holds numbers that are not finite"
        elif (probe.es is None) == (probe.ppo is None):
            problem = "it holds neither an ES nor a PPO state" if probe.es is None else "it holds an ES and a PPO state"
        elif probe.es is not None and probe.es.mean.size != pol.params.size:
            problem = f"its ES state has {probe.es.mean.size} parameters, its policy {pol.params.size}"
        elif probe.step < 0 or probe.total_compiles < 0:
            problem = "negative step or compile count"
        else:
            return True
    except Exception as exc:   # whatever the resume code raises on this file
        problem = reason(exc)
    raise RunSetupError(f"{path}: damaged checkpoint ({problem}); left as it is: restore it, or move it away "
                        "to start a new run")


def checked_history(run_dir: str) -> List[Dict[str, Any]]:
    """RUN/history.jsonl as the trainer wrote it; a damaged one is a RunSetupError naming it."""
    path = os.path.join(run_dir, "history.jsonl")
    if os.path.lexists(path) and not os.path.isfile(path):   # a pipe would make the read wait forever
        raise RunSetupError(f"{path}: damaged history (not a regular file)")
    try:
        history = read_history(run_dir)
    except Exception as exc:   # not JSON, not UTF-8, a folder...
        raise RunSetupError(f"{path}: damaged history ({reason(exc)})") from None
    problem = history_problem(history)
    if problem is not None:
        raise RunSetupError(f"{path}: damaged history ({problem})")
    return history
